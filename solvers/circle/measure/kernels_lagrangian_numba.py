"""Compiled (numba) steps of the S^1 Lagrangian cells (:mod:`solvers.circle.measure.lagrangian`): one call
per right-hand side, one per step's bookkeeping, one per error test.

The flat state is ``[X, m, A, ids]`` (``n`` values each, :class:`~solvers.circle.measure.lagrangian.
LagrangianState`), followed by ``tail`` values that are carried along unchanged (the default
method's phase tag, :mod:`solvers.circle.handover`). Every function does the operations of the
numpy code it replaces, in the same order, so that the results are bitwise the same (the tests,
tests/circle/test_lagrangian_kernels.py, compare them over random states):

- :func:`cells_rhs`: :meth:`LagrangianCircleDiscretization.rhs
  <solvers.circle.measure.lagrangian_discretization.LagrangianCircleDiscretization.rhs>`: the velocity
  of the points (and of the atoms' finite-difference neighbours ``x -+ FD_STEP``) by
  :func:`velocity`, the stretch rate of the cells that carry mass and the atoms' ``|du/dx|``;
- :func:`velocity`: :func:`solvers.circle.measure.lagrangian_fields.velocity`: the closed-form Fourier
  coefficients of cells and atoms (:func:`~solvers.circle.measure.lagrangian_fields._coefficients_numba`),
  the attention field (:func:`~solvers.circle.measure.lagrangian_fields._field_numba`, or for softmax
  :func:`~solvers.circle.measure.lagrangian_fields._fields_numba` and ``f'/(beta f)``) and the perceptron
  velocity (:func:`solvers.circle.measure.kernels_dirac_numba.perceptron_velocity` at the angles mod
  ``2 pi``, numpy's ``np.mod`` to the bit). Where softmax's ``f`` falls below ``SOFTMAX_FLOOR M
  K(0)`` (the direct-sum fallback of :func:`~solvers.circle.measure.lagrangian_fields.softmax_attention`)
  the kernel says so (``low``) and the caller takes the numpy path; ``M`` is summed in order here
  (``np.sum`` sums pairwise: the threshold may differ by an ulp, which only decides which of two
  accurate values is used);
- the step's bookkeeping (``events``) is in :mod:`solvers.circle.measure.kernels_lagrangian_events_numba`:
  :meth:`~solvers.circle.measure.lagrangian_discretization.LagrangianCircleDiscretization._events`
  (normalise, :func:`~solvers.circle.measure.lagrangian.short_cells`, the held-together rule of
  :func:`~solvers.circle.measure.lagrangian.held_runs` and
  :func:`~solvers.circle.cells.holds_together`, :func:`~solvers.circle.measure.lagrangian.collapse`,
  :func:`~solvers.circle.measure.lagrangian.refine`): status 0 when nothing happens (the state is kept as
  it is), 1 with the new state, 2 where the numpy code must run (every cell short: one atom; a
  softmax run end far from the mass);
- :func:`counted_points`: the points the cells' error test counts
  (:meth:`solvers.circle.handover.SpectralToCells._cells_error_scale` and its ``_crossing``).

Compiled with ``cache=True``; imported only where the numba backend runs
(:func:`solvers.core.backend.default_backend`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.circle.measure.lagrangian_fields import (
    SOFTMAX_FLOOR,
    _coefficients_numba,
    _field_numba,
    _fields_numba,
)
from solvers.circle.measure.kernels_dirac_numba import perceptron_velocity

TWO_PI = 2.0 * np.pi

# consts of the fields (a float64 array, so that a call checks one argument, not eight):
BETA, SIGN, SOFTMAX, F_SCALE, CODE = 0, 1, 2, 3, 4  # f_scale = e^{beta + log c_K} = K(0)


@njit(cache=True, inline="always", error_model="numpy")
def _mod_two_pi(x: float) -> float:
    """``np.mod(x, 2 pi)`` to the bit (numpy's ``npy_remainder``: ``fmod``, then ``+ 2 pi`` where
    the remainder is negative, ``+0.0`` where it is zero)."""
    r = np.fmod(x, TWO_PI)
    if r != 0.0:
        if r < 0.0:
            r += TWO_PI
    else:
        r = 0.0
    return r


@njit(cache=True, error_model="numpy")
def velocity(X: np.ndarray, m: np.ndarray, A: np.ndarray, points: np.ndarray, w: np.ndarray,
             units: np.ndarray, consts: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(u, low)``: :func:`solvers.circle.measure.lagrangian_fields.velocity` at ``points`` (P,) of the
    cells and atoms ``X, m, A`` (n,) (C-contiguous); ``low``: softmax's ``f`` fell below the
    floor somewhere (``u`` is then not the reference's: take the numpy path)."""
    J = w.shape[0] - 1
    mu = _coefficients_numba(X, m, A, J)
    P = points.shape[0]
    angles = np.empty(P)
    for q in range(P):
        angles[q] = _mod_two_pi(points[q])
    v = perceptron_velocity(angles, units, int(consts[CODE]))
    sign = consts[SIGN]
    u = np.empty(P)
    if consts[SOFTMAX] != 0.0:
        g, f = _fields_numba(mu, w, consts[BETA], points)
        total_m = 0.0
        total_a = 0.0
        for k in range(X.shape[0]):
            total_m += m[k]
            total_a += A[k]
        level = SOFTMAX_FLOOR * (total_m + total_a) * consts[F_SCALE]
        for q in range(P):
            if f[q] < level:
                return u, True
        for q in range(P):
            u[q] = sign * (g[q] / f[q] + v[q])
        return u, False
    g = _field_numba(mu, w, points)
    for q in range(P):
        u[q] = sign * (g[q] + v[q])
    return u, False


@njit(cache=True, error_model="numpy")
def _split(state: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contiguous copies of ``X, m, A`` (the compiled coefficients see the same layout as from
    numpy, hence the same code)."""
    return state[:n].copy(), state[n:2 * n].copy(), state[2 * n:3 * n].copy()


@njit(cache=True, error_model="numpy")
def cells_rhs(state: np.ndarray, n: int, w: np.ndarray, units: np.ndarray, consts: np.ndarray,
              mass_floor: float, density_floor: float, fd_step: float) -> tuple[np.ndarray, float, bool]:
    """``(d state/dt, max_rate, low)`` of the flat state (``4 n + tail`` values): the points'
    velocities (every other value's derivative is 0), the largest ``|u_{k+1} - u_k| / L_k`` over
    the cells heavier than ``mass_floor`` and denser than ``density_floor``, and the largest
    ``|u(x + fd) - u(x - fd)| / (2 fd)`` over the atoms (NaN as ``np.max`` and Python's ``max``
    treat it). ``low``: see :func:`velocity` (the rest is then not computed)."""
    X, m, A = _split(state, n)
    na = 0
    for k in range(n):
        if A[k] > 0.0:
            na += 1
    points = np.empty(n + 2 * na)
    points[:n] = X
    i = 0
    for k in range(n):
        if A[k] > 0.0:
            points[n + i] = X[k] - fd_step
            points[n + na + i] = X[k] + fd_step
            i += 1
    u, low = velocity(X, m, A, points, w, units, consts)
    out = np.zeros(state.shape[0])
    if low:
        return out, 0.0, True
    out[:n] = u[:n]
    found, nan, top = False, False, 0.0
    for k in range(n):
        L = (X[k + 1] if k + 1 < n else X[0] + TWO_PI) - X[k]
        if m[k] > mass_floor and m[k] > density_floor * L:
            d = abs(u[k + 1 if k + 1 < n else 0] - u[k]) / L
            if d != d:
                nan = True
            elif not found or d > top:
                top = d
            found = True
    rate = (np.nan if nan else top) if found else 0.0
    if na:
        nan, s = False, 0.0
        for i in range(na):
            d = abs((u[n + na + i] - u[n + i]) / (2.0 * fd_step))
            if d != d:
                nan = True
            elif i == 0 or d > s:
                s = d
        if nan:
            s = np.nan
        if s > rate:
            rate = s
    return out, rate, False


@njit(cache=True, error_model="numpy")
def counted_points(state: np.ndarray, n: int, new: np.ndarray, corners: np.ndarray, band: float,
                   mass_floor: float, density_floor: float) -> np.ndarray:
    """The indices (ascending) of the points the cells' error test counts: the atoms, and the
    ends of the cells heavier than ``mass_floor`` and denser than ``density_floor``, except the
    ends whose step from ``state`` to ``new`` (flat states; ``new`` of another size: no step)
    passed within ``band`` of one of ``corners`` (``SpectralToCells._crossing``)."""
    X, m, A = state[:n], state[n:2 * n], state[2 * n:3 * n]
    full = np.empty(n, np.bool_)
    for k in range(n):
        L = (X[k + 1] if k + 1 < n else X[0] + TWO_PI) - X[k]
        full[k] = m[k] > mass_floor and m[k] > density_floor * L
    step = corners.shape[0] > 0 and new.shape[0] == state.shape[0]
    out = np.empty(n, np.int64)
    c = 0
    for k in range(n):
        counted = full[k] or full[k - 1 if k > 0 else n - 1]
        if counted and step:
            a, b = X[k], new[k]
            if a == a and b == b:  # np.minimum / np.maximum: NaN crosses nothing
                lo, hi = min(a, b) - band, max(a, b) + band
                for j in range(corners.shape[0]):
                    turns = np.floor((lo - corners[j]) / TWO_PI) + 1
                    if corners[j] + TWO_PI * turns <= hi:
                        counted = False
                        break
        if counted or A[k] > 0.0:
            out[c] = k
            c += 1
    return out[:c]
