"""Weighted points on ``S^{d-1}``: the velocity, energy and dissipation of ``mu = sum_k w_k delta_{x_k}``.

A weighted empirical measure solves the continuity equation (paper eq. 2.6) exactly when every
point follows ``dx_k/dt = s V(x_k)`` with (docs/math.md §1, ``P_x = I - x x^T``, ``c_K`` the
kernel's factor: 1, or ``e^{-beta}`` for the shifted kernel)

    unnormalized attention:  V(x) = grad U(x) = c_K P_x sum_j w_j e^{beta x.x_j} x_j + grad v(x) / 2,
    softmax (paper eq. 2.9): V(x) = P_x F(x) / f(x) + grad v(x) / 2,   f(x) = c_K sum_j w_j e^{beta x.x_j},

``F`` the first sum without ``P_x``. The term ``j = k`` vanishes in ``P_x F`` (``P_x x = 0``) and
counts in ``f`` (the normaliser holds the point's own mass). The sums run over every pair, in row
blocks of at most ``BLOCK`` terms: two matrix products and one exponential per block, so the
cost of an evaluation is ``O(n^2 d)`` in any dimension, with no quadrature and no truncation.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from solvers.model import perceptron
from solvers.model.params import ModelParams

BLOCK = 1 << 22  # terms per row block of the pair sums (32 MiB)


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` (n, d) scaled to unit length."""
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _rows(n: int, m: int) -> int:
    return max(1, BLOCK // max(m, 1))


def attention_sums(x: np.ndarray, y: np.ndarray, w: np.ndarray, beta: float, log_c: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(f (n,), F (n, d))``: ``f_k = e^{log_c} sum_j w_j e^{beta x_k.y_j}`` and ``F_k`` the
    same sum of ``w_j e^{beta x_k.y_j} y_j``, at the points ``x`` (n, d) from the weighted points
    ``y`` (m, d), ``w`` (m,)."""
    n = x.shape[0]
    f, F = np.empty(n), np.empty((n, x.shape[1]))
    step = _rows(n, y.shape[0])
    wy = w[:, None] * y
    for lo in range(0, n, step):
        rows = slice(lo, lo + step)
        e = x[rows] @ y.T
        e *= beta
        e += log_c
        np.exp(e, out=e)
        f[rows] = e @ w
        F[rows] = e @ wy
    return f, F


def _tangent(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    return v - np.sum(v * x, axis=1, keepdims=True) * x


def fields(x: np.ndarray, w: np.ndarray, model: ModelParams, log_c: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(f (n,), grad U (n, d), V (n, d))`` at the points ``x`` (unit vectors) of the measure
    ``sum_k w_k delta_{x_k}``: the normaliser, the gradient of the first variation and the
    unsigned velocity (module docstring)."""
    f, F = attention_sums(x, x, w, model.beta, log_c)
    att = _tangent(x, F)
    perc = perceptron.half_gradient(model.perceptron, x)
    grad = att + perc
    vel = grad if model.attention != "softmax" else att / f[:, None] + perc
    return f, grad, vel


def velocity(x: np.ndarray, w: np.ndarray, model: ModelParams, log_c: float) -> np.ndarray:
    """``s V`` (n, d) at the points ``x`` (n, d), weights ``w`` (n,): tangent vectors."""
    if x.shape[0] == 0:
        return np.zeros_like(x)
    return model.sign * fields(x, w, model, log_c)[2]


def energy_and_dissipation(x: np.ndarray, w: np.ndarray, model: ModelParams, log_c: float
                           ) -> tuple[float, float, float, float]:
    """``(E, dissipation, transport, max speed)`` of the points: ``E = (1/(2 beta)) sum_jk w_j
    w_k K(x_j, x_k) + (1/2) sum_k w_k v(x_k)`` (paper eq. 2.7), ``sum_k w_k grad U . V`` (``dE/dt
    = s`` times it), ``sum_k w_k |V_k|`` (mass times speed: the rate of the Wasserstein-1
    distance the measure travels) and ``max_k |V_k|``."""
    if x.shape[0] == 0:
        return 0.0, 0.0, 0.0, 0.0
    f, grad, vel = fields(x, w, model, log_c)
    e = float(w @ f) / (2.0 * model.beta) + 0.5 * float(w @ perceptron.potential(model.perceptron, x))
    speed = np.linalg.norm(vel, axis=1)
    return e, float(w @ np.sum(grad * vel, axis=1)), float(w @ speed), float(speed.max())


def close_pairs(x: np.ndarray, radius: float) -> np.ndarray:
    """Index pairs ``(i, j)``, ``i < j``, of the unit vectors ``x`` (n, d) closer than ``radius``
    (chord), shape (p, 2): from the Gram matrix in row blocks (a k-d tree prunes nothing in many
    dimensions)."""
    n = x.shape[0]
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    cos_min = 1.0 - 0.5 * radius * radius  # |x - y| < r  <=>  x.y > 1 - r^2 / 2
    out = []
    step = _rows(n, n)
    for lo in range(0, n, step):
        g = x[lo : lo + step] @ x.T
        i, j = np.nonzero(g > cos_min)
        keep = j > i + lo
        if np.any(keep):
            out.append(np.stack([i[keep] + lo, j[keep]], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 2), dtype=np.int64)


def groups(x: np.ndarray, radius: float) -> tuple[int, np.ndarray]:
    """Single-linkage groups of the unit vectors ``x`` (n, d) within ``radius`` (chord):
    ``(k, label (n,))``."""
    n = x.shape[0]
    pairs = close_pairs(x, radius)
    if pairs.size == 0:
        return n, np.arange(n)
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)


def lipschitz_bound(mass: float, model: ModelParams, log_c: float) -> float:
    """A bound of the velocity's Lipschitz constant: ``M max|K''| / beta`` of the attention (as
    the grid schemes) plus the perceptron's ``sum_j |omega_j| (Lip(sigma) |a_j|^2 + max|sigma|
    |a_j|)`` (docs/math.md §5)."""
    from solvers.model.kernel import max_kernel_second_derivative

    return mass * max_kernel_second_derivative(model.beta, log_c) / model.beta + \
        perceptron.lipschitz(model.perceptron)
