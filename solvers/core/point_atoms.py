"""Dirac atoms on ``S^{d-1}`` in closed form: the potential's gradient at each atom, its
Jacobian, the energy and its Hessian in the atom positions (unnormalized attention).

A measure ``mu = sum_i m_i delta_{x_i} + sum_c w_c delta_{y_c}`` (atoms ``x_i`` that move, fixed
sources ``y_c``, e.g. a diffuse remainder as cell masses) has the first variation
``U(x) = (1/beta) sum c_K m_j e^{beta x.x_j} + v(x) / 2`` (docs/math.md §1, ``c_K`` the kernel's
factor: 1, or ``e^{-beta}`` for the shifted kernel). Its sphere gradient at atom i,
``g_i = P_{x_i} G_i``, ``G_i = sum_{j != i} c_K m_j e^{beta x_i.x_j} x_j + sum_c c_K w_c e^{beta x_i.y_c} y_c
+ sum_k omega_k sigma(a_k.x_i + b_k) a_k``, is the velocity of the atom up to the sign ``s`` (an
atom feels no force from itself: ``grad_x e^{beta x.x_i}`` vanishes at ``x = x_i``).

Tangent coordinates: each atom carries an orthonormal basis ``B_i`` (shape (d - 1, d)) of its
tangent plane; a step ``u_i`` (d - 1,) moves it to ``normalise(x_i + B_i^T u_i)``.

- Jacobian of ``g`` (in those coordinates): the diagonal block is the Riemannian Hessian of
  ``U_{-i}`` (``U`` without atom i's own mass), ``B_i (H_i - (x_i.G_i) I) B_i^T`` with the
  ambient Hessian ``H_i = sum_{j != i} beta c_K m_j e^{beta x_i.x_j} x_j x_j^T + ... +
  sum_k omega_k sigma'(s_k) a_k a_k^T``; the off-diagonal blocks are
  ``c_K m_j e^{beta x_i.x_j} B_i (beta x_j x_i^T + I) B_j^T``.
- The energy ``E = (1/(2 beta)) sum_{i,j} c_K m_i m_j e^{beta x_i.x_j} + (1/beta) sum_{i,c} c_K m_i w_c
  e^{beta x_i.y_c} + (1/2) sum_i m_i v(x_i)`` (fixed sources' own energy added) has the gradient
  ``m_i g_i`` and the Hessian ``diag(m) J`` (symmetric).
- ``hess_u_full``: the tangential Hessian of ``U`` at each atom *with* its own mass (the
  curvature felt by a little mass split off the atom): the diagonal block plus
  ``-c_K m_i e^{beta} I``.
- ``mass_sensitivity``: ``|d x_i / d m_j|`` at a stationary point, ``-J^{-1} dg/dm`` with
  ``dg_i/dm_j = c_K e^{beta x_i.x_j} B_i x_j`` (j != i): how much a position read off a run
  depends on the masses it was given.
ReLU and leaky ReLU give a piecewise-constant ``sigma'``: Newton is then semismooth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from solvers.model.params import ModelParams

# sigma' of every activation (the Jacobian needs it); tests check them against finite differences
# sigma' on each side of a corner (s = 0) of the non-smooth activations: (left, right)
CORNER_SLOPES = {"relu": (0.0, 1.0), "leaky_relu": (0.01, 1.0)}
CORNER_TOL = 1e-9  # an atom with |a_j.x + b_j| below this sits on unit j's corner
DSIGMA = {
    "relu": lambda s: (s > 0).astype(float),
    "leaky_relu": lambda s: np.where(s > 0, 1.0, 0.01),
    "linear": lambda s: np.ones_like(s),
    "tanh": lambda s: 1.0 - np.tanh(s) ** 2,
    "gelu": lambda s: 0.5 * special.erfc(-s / np.sqrt(2.0)) + s * np.exp(-0.5 * s * s) / np.sqrt(2 * np.pi),
}


def tangent_bases(x: np.ndarray) -> np.ndarray:
    """Orthonormal tangent bases of unit vectors ``x`` (n, d), shape (n, d - 1, d).

    S^1: the tangent ``(-x_2, x_1)``; S^2: two vectors built from the coordinate axis least
    aligned with each point (no trouble at the poles); d >= 4: the last d - 1 columns of the
    orthogonal factor of the QR factorisation of ``[x_i, I]`` (d, d + 1), whose first column
    is ``+-x_i`` (full rank for every unit vector).
    """
    x = np.asarray(x, dtype=float)
    n, d = x.shape
    if d == 2:
        return np.stack([-x[:, 1], x[:, 0]], axis=1)[:, None, :]
    if d != 3:
        stacked = np.concatenate([x[:, :, None], np.broadcast_to(np.eye(d), (n, d, d))], axis=2)
        q = np.linalg.qr(stacked)[0] if n else np.zeros((0, d, d))
        return np.swapaxes(q[:, :, 1:], 1, 2).copy()
    axis = np.eye(3)[np.argmin(np.abs(x), axis=1)]
    e1 = axis - np.sum(axis * x, axis=1, keepdims=True) * x
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True)
    return np.stack([e1, np.cross(x, e1)], axis=1)


@dataclass(frozen=True)
class AtomSystem:
    """Atoms that move (masses ``m`` (n,)) and fixed sources (``y`` (c, d), weights ``w`` (c,))
    under a model (unnormalized attention, any kernel, perceptron in ``d`` dimensions)."""

    model: ModelParams
    m: np.ndarray
    y: np.ndarray | None = None
    w: np.ndarray | None = None
    # at an atom on a corner of a ReLU-type unit (|a_j.x + b_j| < CORNER_TOL) sigma' is one-sided:
    # None: the activation's own value there; 0: the left side's; 1: the right side's
    corner_side: int | None = None

    def __post_init__(self) -> None:
        if self.model.attention != "unnormalized":
            raise ValueError("model.attention: closed-form atoms support unnormalized attention "
                             "only (softmax: not yet)")

    @property
    def c_k(self) -> float:
        return float(np.exp(-self.model.beta)) if self.model.kernel == "exp_shifted" else 1.0

    def _pairs(self, x: np.ndarray) -> np.ndarray:
        """``c_K m_j e^{beta x_i.x_j}`` with the diagonal (self) removed, shape (n, n)."""
        k = self.c_k * np.exp(self.model.beta * (x @ x.T - 1.0)) * np.exp(self.model.beta)
        np.fill_diagonal(k, 0.0)
        return k * self.m[None, :]

    def _sources(self, x: np.ndarray) -> np.ndarray:
        """``c_K w_c e^{beta x_i.y_c}``, shape (n, c) (empty without sources)."""
        if self.y is None or self.w is None or len(self.w) == 0:
            return np.zeros((x.shape[0], 0))
        return self.c_k * np.exp(self.model.beta * (x @ self.y.T)) * self.w[None, :]

    def _perceptron(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(G_perc (n, d), H_perc (n, d, d), v (n,))`` of the perceptron at the atoms."""
        p = self.model.perceptron
        n, d = x.shape
        if p.n_units == 0:
            return np.zeros((n, d)), np.zeros((n, d, d)), np.zeros(n)
        from solvers.model.activations import get_activation

        act, s = get_activation(p.activation), x @ p.a.T + p.b
        grad = (act.sigma(s) * p.omega) @ p.a
        slope = DSIGMA[p.activation](s)
        if self.corner_side is not None and p.activation in CORNER_SLOPES:
            slope = np.where(np.abs(s) < CORNER_TOL, CORNER_SLOPES[p.activation][self.corner_side], slope)
        hess = np.einsum("nk,kd,ke->nde", slope * p.omega, p.a, p.a)
        return grad, hess, act.phi(s) @ p.omega

    def ambient(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(G (n, d), H (n, d, d), K_pairs (n, n))``: ambient gradient and Hessian of ``U_{-i}``."""
        kp, ks = self._pairs(x), self._sources(x)
        g_p, h_p, _ = self._perceptron(x)
        beta = self.model.beta
        grad = kp @ x + (ks @ self.y if ks.size else 0.0) + g_p
        hess = beta * np.einsum("ij,jd,je->ide", kp, x, x) + h_p
        if ks.size:
            hess = hess + beta * np.einsum("ic,cd,ce->ide", ks, self.y, self.y)
        return grad, hess, kp

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """``g_i = P_{x_i} G_i``, tangent vectors (n, d): the atoms' velocities are ``s g``."""
        grad = self.ambient(x)[0]
        return grad - np.sum(grad * x, axis=1, keepdims=True) * x

    def jacobian(self, x: np.ndarray, bases: np.ndarray) -> np.ndarray:
        """``d g_i / d u_j`` in tangent coordinates, shape (n (d-1), n (d-1)) (module docstring)."""
        n, d = x.shape
        q = d - 1
        grad, hess, kp = self.ambient(x)
        radial = np.sum(grad * x, axis=1)
        jac = np.zeros((n, q, n, q))
        for i in range(n):
            b = bases[i]
            jac[i, :, i, :] = b @ hess[i] @ b.T - radial[i] * np.eye(q)
            for j in np.flatnonzero(kp[i]):
                coupling = kp[i, j] * (self.model.beta * np.outer(x[j], x[i]) + np.eye(d))
                jac[i, :, j, :] = b @ coupling @ bases[j].T
        return jac.reshape(n * q, n * q)

    def mass_jacobian(self, x: np.ndarray, bases: np.ndarray) -> np.ndarray:
        """``d g_i / d m_j`` in tangent coordinates, shape (n (d-1), n): ``c_K e^{beta x_i.x_j}
        B_i x_j`` for ``j != i`` (an atom's own mass exerts no force on it)."""
        n, d = x.shape
        k = self.c_k * np.exp(self.model.beta * (x @ x.T))
        np.fill_diagonal(k, 0.0)
        return (np.einsum("iqd,jd->iqj", bases, x) * k[:, None, :]).reshape(n * (d - 1), n)

    def mass_sensitivity(self, x: np.ndarray, bases: np.ndarray) -> np.ndarray:
        """``|d x_i / d m_j|`` (radians per unit mass), shape (n, n): how far atom i's stationary
        position moves when atom j's mass changes, from ``J dx = -(dg/dm) dm`` at a stationary
        point (implicit function theorem; least squares, so the symmetry modes of a singular
        ``J``, e.g. rotations without a perceptron, are left out)."""
        n, q = x.shape[0], x.shape[1] - 1
        dx = -np.linalg.lstsq(self.jacobian(x, bases), self.mass_jacobian(x, bases), rcond=1e-10)[0]
        return np.linalg.norm(dx.reshape(n, q, n), axis=1)

    def energy(self, x: np.ndarray) -> float:
        """``E`` of atoms plus sources (docs/math.md §1), sources' self-energy included."""
        beta, c = self.model.beta, self.c_k
        kp = c * np.exp(beta * (x @ x.T))
        e = 0.5 / beta * float(self.m @ kp @ self.m)
        ks = self._sources(x)
        if ks.size:
            e += float(self.m @ ks.sum(axis=1)) / beta
            e += 0.5 / beta * float(self.w @ (c * np.exp(beta * (self.y @ self.y.T))) @ self.w)
            e += 0.5 * float(self.w @ self._perceptron_values(self.y))
        return e + 0.5 * float(self.m @ self._perceptron_values(x))

    def _perceptron_values(self, y: np.ndarray) -> np.ndarray:
        """``v`` at the points ``y`` (n,): the third entry of :meth:`_perceptron`, without the
        gradient and Hessian (the snapshot energy needs only the values)."""
        p = self.model.perceptron
        if p.n_units == 0:
            return np.zeros(y.shape[0])
        from solvers.model.activations import get_activation

        return get_activation(p.activation).phi(y @ p.a.T + p.b) @ p.omega

    def on_corners(self, x: np.ndarray) -> np.ndarray:
        """Which atoms (n,) sit on a corner of a ReLU-type unit (its Hessian is one-sided there)."""
        p = self.model.perceptron
        if p.n_units == 0 or p.activation not in CORNER_SLOPES:
            return np.zeros(x.shape[0], bool)
        return np.any(np.abs(x @ p.a.T + p.b) < CORNER_TOL, axis=1)

    def hess_u_full(self, x: np.ndarray, bases: np.ndarray) -> np.ndarray:
        """Tangential Hessian of ``U`` at each atom including its own mass, shape (n, d-1, d-1)."""
        n, q = x.shape[0], x.shape[1] - 1
        jac = self.jacobian(x, bases).reshape(n, q, n, q)
        own = self.c_k * np.exp(self.model.beta) * self.m
        return np.stack([jac[i, :, i, :] - own[i] * np.eye(q) for i in range(n)])


@dataclass(frozen=True)
class NewtonResult:
    """``x`` (n, d) the stationary positions, ``residuals`` max |g| per iteration (first: the
    start), ``converged`` whether max |g| reached the tolerance."""

    x: np.ndarray
    residuals: list[float]
    converged: bool


def retract(x: np.ndarray, bases: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``normalise(x_i + B_i^T u_i)`` for tangent steps ``u`` (n, d-1)."""
    y = x + np.einsum("nq,nqd->nd", u, bases)
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def newton(system: AtomSystem, x0: np.ndarray, tol: float = 1e-13, max_iter: int = 50,
           fixed_rotation: bool = False) -> NewtonResult:
    """Solve ``g_i(x) = 0`` for every atom by Newton's method with the analytic Jacobian.

    A singular Jacobian (a symmetry: rotations when there is no perceptron) is handled by a
    least-squares step (the minimum-norm Newton step). Steps that would raise ``max |g|`` are
    halved (at most 30 times): a damped, semismooth Newton for ReLU potentials.
    """
    x = np.asarray(x0, dtype=float)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    res = [float(np.abs(system.gradient(x)).max())] if x.size else [0.0]
    for _ in range(max_iter):
        if res[-1] <= tol:
            return NewtonResult(x, res, True)
        bases = tangent_bases(x)
        g = np.einsum("nqd,nd->nq", bases, system.gradient(x)).ravel()
        step = np.linalg.lstsq(system.jacobian(x, bases), -g, rcond=1e-13)[0]
        for _halve in range(30):
            trial = retract(x, bases, step.reshape(x.shape[0], -1))
            r = float(np.abs(system.gradient(trial)).max())
            if r < res[-1] or r <= tol:
                break
            step = 0.5 * step
        x = trial
        res.append(r)
    return NewtonResult(x, res, res[-1] <= tol)
