"""Weighted points on ``S^{d-1}``: velocity, energy and dissipation of ``mu = sum_k w_k delta_{x_k}``.

A weighted empirical measure solves the continuity equation (paper eq. 2.6) exactly when every
point follows ``dx_k/dt = s V(x_k)`` with (docs/math.md §1, ``P_x = I - x x^T``, ``c_K`` the
kernel's factor: 1, or ``e^{-beta}`` for the shifted kernel)

    unnormalized:  V(x) = grad U(x) = c_K P_x sum_j w_j e^{beta x.x_j} x_j + grad v(x) / 2,
    softmax (eq. 2.9):  V(x) = P_x F(x) / f(x) + grad v(x) / 2,  f(x) = c_K sum_j w_j e^{beta x.x_j},

``F`` the first sum without ``P_x``. The term ``j = k`` vanishes in ``P_x F`` (``P_x x = 0``) and
counts in ``f`` (the normaliser holds the point's own mass). :func:`attention_sums` picks, exact
to round-off in each case, the cheapest of:

- d = 2: the Fourier series ``e^{beta cos t} = sum_m I_m(beta) e^{i m t}`` cut where
  ``I_m / I_0 < FOURIER_TOL`` (moments of the measure once, ``O(n K)``);
- d = 3: the multinomial series of :mod:`spectral.kernel_series` (``O(n C(K+3, 3))``) when it has
  fewer terms than there are points;
- any d: the pair sums in row blocks of at most ``BLOCK`` terms (two matrix products and one
  exponential per block, ``O(n^2 d)``), the reference the tests compare the others with.
"""

from __future__ import annotations

import numpy as np

from solvers.core.point_merge import merge_labels
from solvers.model import perceptron
from solvers.model.params import ModelParams

BLOCK = 1 << 22  # terms per row block of the pair sums (32 MiB)
FOURIER_TOL = 1e-18  # d = 2: Fourier terms kept while I_m(beta) / I_0(beta) is above this


def sphere_area(d: int) -> float:
    """``|S^{d-1}| = 2 pi^{d/2} / Gamma(d/2)``."""
    import math

    return 2.0 * math.pi ** (d / 2.0) / math.gamma(d / 2.0)


def cluster_radius(beta: float, d: int) -> float:
    """The paper's grouping distance in ``d >= 4``: ``min(1/(2 beta), pi/(2 d))`` (geodesic)."""
    return float(min(0.5 / beta, np.pi / (2.0 * d)))


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` (n, d) scaled to unit length."""
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _rows(n: int, m: int) -> int:
    return max(1, BLOCK // max(m, 1))


def attention_sums(x: np.ndarray, y: np.ndarray, w: np.ndarray, beta: float, log_c: float,
                   method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """``(f (n,), F (n, d))``: ``f_k = e^{log_c} sum_j w_j e^{beta x_k.y_j}`` and ``F_k`` the
    same sum of ``w_j e^{beta x_k.y_j} y_j``, at the points ``x`` (n, d) from the weighted points
    ``y`` (m, d), ``w`` (m,). ``method``: ``"auto"`` (module docstring), ``"direct"`` (the pair
    sums), ``"fourier"`` (d = 2) or ``"series"`` (d = 3)."""
    d = x.shape[1]
    if method == "auto":
        from spectral.kernel_series import series_terms

        method = "fourier" if d == 2 else \
            "series" if d == 3 and series_terms(beta) < min(x.shape[0], y.shape[0]) else "direct"
    if method == "fourier":
        return _fourier_sums(x, y, w, beta, log_c)
    if method == "series":
        from spectral.kernel_series import series_field_numba

        return series_field_numba(x, y, w, beta, log_c)
    return _pair_sums(x, y, w, beta, log_c)


def fourier_degree(beta: float) -> int:
    """The last Fourier mode of :func:`_fourier_sums`: ``I_K(beta) / I_0(beta) >= FOURIER_TOL``."""
    from scipy.special import ive

    k = 1
    while ive(k + 1, beta) >= FOURIER_TOL * ive(0, beta):
        k += 1
    return k


def _fourier_sums(x: np.ndarray, y: np.ndarray, w: np.ndarray, beta: float, log_c: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """d = 2: with ``x = (cos t, sin t)``, ``y_j = (cos p_j, sin p_j)``, ``f(t) = c sum_m I_m
    M_m e^{i m t}`` and ``F_1 + i F_2 = c sum_m I_m M_{m-1} e^{i m t}``, ``M_m = sum_j w_j
    e^{-i m p_j}`` (``c = e^{log_c}``, ``|m| <= K``, :func:`fourier_degree`)."""
    from scipy.special import ive

    k = fourier_degree(beta)
    m = np.arange(-k, k + 1)
    coef = ive(np.abs(m), beta) * np.exp(beta + log_c)  # I_m(beta) c
    zy = (y[:, 0] - 1j * y[:, 1]) / np.hypot(y[:, 0], y[:, 1])  # e^{-i p_j}
    moments = _powers(zy, k + 1).T @ w  # M_{-k-1} .. M_{k+1}
    moments = moments[:-1]  # M_{-k-1} .. M_k
    zx = (x[:, 0] + 1j * x[:, 1]) / np.hypot(x[:, 0], x[:, 1])  # e^{i t}
    wave = _powers(zx, k) * coef  # (n, 2k + 1): I_m c e^{i m t}
    f = (wave @ moments[1:]).real
    g = wave @ moments[:-1]
    return f, np.stack([g.real, g.imag], axis=1)


def _powers(z: np.ndarray, k: int) -> np.ndarray:
    """``z^m`` for ``m = -k .. k`` of unit complex numbers ``z`` (n,), shape (n, 2k + 1), by
    repeated products (``z^{-m} = conj(z^m)``)."""
    up = np.cumprod(np.broadcast_to(z[:, None], (z.size, k)), axis=1)
    return np.concatenate([np.conj(up[:, ::-1]), np.ones((z.size, 1)), up], axis=1)


def _pair_sums(x: np.ndarray, y: np.ndarray, w: np.ndarray, beta: float, log_c: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`attention_sums` by the pair sums, in row blocks of at most ``BLOCK`` terms."""
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
                           ) -> tuple[float, float, np.ndarray]:
    """``(E, dissipation, speeds (n,))`` of the points: ``E = (1/(2 beta)) sum_jk w_j w_k
    K(x_j, x_k) + (1/2) sum_k w_k v(x_k)`` (paper eq. 2.7), ``sum_k w_k grad U . V`` (``dE/dt =
    s`` times it) and each point's speed ``|V_k|``."""
    if x.shape[0] == 0:
        return 0.0, 0.0, np.zeros(0)
    f, grad, vel = fields(x, w, model, log_c)
    v = perceptron.potential(model.perceptron, x)
    e = float(w @ f) / (2.0 * model.beta) + 0.5 * float(w @ v)
    return e, float(w @ np.sum(grad * vel, axis=1)), np.linalg.norm(vel, axis=1)


def groups(x: np.ndarray, radius: float) -> tuple[int, np.ndarray]:
    """Single-linkage groups of the unit vectors ``x`` (n, d) within ``radius`` (chord):
    ``(k, label (n,))``."""
    found = merge_labels(x, radius)
    return (x.shape[0], np.arange(x.shape[0])) if found is None else found


def lipschitz_bound(mass: float, model: ModelParams, log_c: float) -> float:
    """A bound of the velocity's Lipschitz constant: ``M max|K''| / beta`` of the attention (as
    the grid schemes) plus the perceptron's ``sum_j |omega_j| (Lip(sigma) |a_j|^2 + max|sigma|
    |a_j|)`` (docs/math.md §5)."""
    from solvers.model.kernel import max_kernel_second_derivative

    return mass * max_kernel_second_derivative(model.beta, log_c) / model.beta + \
        perceptron.lipschitz(model.perceptron)
