"""Lagrangian finite volumes on S^1: cells that move with the flow, and Dirac atoms at their ends.

On the circle the continuity equation (paper eq. 2.6) is solved exactly by its characteristics:
the mass between two material points never changes. The state is therefore

- ``n`` points ``X_0 < X_1 < ... < X_{n-1} < X_0 + 2 pi`` (unwrapped angles) moving with
  ``dX_k/dt = s dU/dx(X_k)``;
- the mass ``m_k`` of the moving cell ``[X_k, X_{k+1}]`` (``X_n = X_0 + 2 pi``), spread
  uniformly over it (density ``m_k / (X_{k+1} - X_k)``), constant in time;
- a Dirac mass ``A_k >= 0`` at each point (identity ``ids_k``, ``-1`` where there is none).

This is the "evolving diffeomorphism" view of Carrillo & Moll, SIAM J. Sci. Comput. 31 (2009),
and of Carrillo, Ranetbauer & Wolfram, J. Comput. Phys. 327 (2016), with the atoms added: a
cell whose ends meet becomes (or joins) a Dirac mass, conserving mass and first moment. No
mass crosses a cell boundary, so the sub-cell position of mass is never smeared: in particular
the layer of mass beside a ReLU corner, whose share decides where a watershed falls
(docs/schemes.md), is carried exactly.

The velocity is that of the whole measure. Its attention part uses the measure's Fourier
coefficients ``mu_j = int e^{-i j y} dmu`` in closed form (a uniform cell gives
``m e^{-i j c} sinc(j L / 2)``, ``c`` its midpoint and ``L`` its length; an atom ``A e^{-i j x}``)
and the Funk-Hecke multipliers (paper Lemma 5.1, docs/math.md §2):
``dU_att/dx (p) = (1/beta) sum_{j != 0} i j lambda_j / (2 pi) mu_j e^{i j p}``, truncated where
``lambda_j / lambda_0 < 1e-18`` (the kernel is smooth, so this is exact to round-off). The
function :func:`attention_gradient_reference` sums the closed forms directly,
``(1/beta) (m_k / L_k) (K(p, X_k) - K(p, X_{k+1}))`` per cell and ``-A_i sin(p - x_i) K(p, x_i)``
per atom (``K(p, y) = c_K e^{beta cos(p - y)}``): an independent computation the tests compare
against. The coefficients and the field are compiled (numba) or numpy
(``MEANFIELD_NUMPY=1``, :mod:`solvers.core.backend`); the two agree to round-off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; the numpy path is the reference
    numba = None

from solvers.circle.kink_faces import holds_together
from solvers.core.kernel import kernel_log_shift
from solvers.model import perceptron
from solvers.model.params import ModelParams
from spectral import kernel_bandwidth, kernel_eigenvalues

TWO_PI = 2.0 * np.pi
BANDWIDTH_TOL = 1e-18  # multipliers below this (relative to lambda_0) are left out


@dataclass(frozen=True)
class LagrangianState:
    """The unpacked state: ``X`` (n,) increasing angles, ``m`` (n,) cell masses, ``A`` (n,) atom
    masses at the points, ``ids`` (n,) int atom identities (``-1``: no atom)."""

    X: np.ndarray
    m: np.ndarray
    A: np.ndarray
    ids: np.ndarray

    @property
    def n(self) -> int:
        return int(self.X.size)

    def pack(self) -> np.ndarray:
        """Flat state ``[X, m, A, ids]``, shape (4 n,): masses and ids have zero time derivative,
        so every Runge-Kutta stage keeps them bitwise."""
        return np.concatenate([self.X, self.m, self.A, self.ids.astype(float)])

    @staticmethod
    def unpack(state: np.ndarray) -> "LagrangianState":
        n = state.size // 4
        return LagrangianState(state[:n], state[n:2 * n], state[2 * n:3 * n],
                               np.rint(state[3 * n:]).astype(int))

    def lengths(self) -> np.ndarray:
        """``X_{k+1} - X_k`` (n,), the last one across ``2 pi``."""
        return np.diff(np.append(self.X, self.X[0] + TWO_PI))


def following(a: np.ndarray) -> np.ndarray:
    """``a[k + 1]`` at ``k``, cyclic (``np.roll(a, -1)``, without its generic-axis overhead)."""
    return np.concatenate((a[1:], a[:1]))


def preceding(a: np.ndarray) -> np.ndarray:
    """``a[k - 1]`` at ``k``, cyclic (``np.roll(a, 1)``)."""
    return np.concatenate((a[-1:], a[:-1]))


def gradient_weights(model: ModelParams) -> np.ndarray:
    """``lambda_j / (2 pi beta)`` for ``j = 0 .. J`` (shifted kernel included), ``J`` the first degree
    with ``lambda_J / lambda_0 < BANDWIDTH_TOL``: ``dU_att/dx = sum_{j != 0} i j w_j mu_j e^{ijp}``."""
    J = kernel_bandwidth(model.beta, 2, BANDWIDTH_TOL)
    log_lam = kernel_eigenvalues(model.beta, np.arange(J + 1), 2, log=True) + kernel_log_shift(model)
    return np.exp(log_lam) / (TWO_PI * model.beta)


def _coefficients_numpy(X: np.ndarray, m: np.ndarray, A: np.ndarray, J: int) -> np.ndarray:
    """``mu_j``, ``j = 0 .. J`` (J + 1,) complex, of the cells and atoms of the state."""
    L = np.diff(np.append(X, X[0] + TWO_PI))
    mid = X + 0.5 * L
    j = np.arange(J + 1)[:, None]
    half = 0.5 * j * L[None, :]
    sinc = np.where(half == 0.0, 1.0, np.sin(half) / np.where(half == 0.0, 1.0, half))
    return (np.exp(-1j * j * mid) * sinc) @ m + np.exp(-1j * j * X) @ A


def _field_numpy(mu: np.ndarray, w: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``sum_{j != 0} i j w_j mu_j e^{i j p}`` at ``points`` (P,), real."""
    j = np.arange(1, w.size)
    terms = (1j * j * w[1:] * mu[1:])[None, :] * np.exp(1j * np.outer(points, j))
    return 2.0 * terms.sum(axis=1).real


if numba is not None:
    # reassociation lets the sums over cells run in SIMD lanes (the order of a floating-point
    # sum, nothing else: agrees with the numpy path to round-off)
    @numba.njit(cache=True, fastmath={"reassoc", "nsz", "contract"})
    def _coefficients_numba(X, m, A, J):  # pragma: no cover - compiled; compared with numpy in tests
        """``mu_j`` as :func:`_coefficients_numpy`: for each ``j`` one pass over the cells,
        ``e^{-i j c}`` and ``e^{i j L/2}`` (whose imaginary part is ``sin(j L/2)``) advanced by
        one rotation per cell (split real and imaginary arrays); the atoms after, only where
        ``A > 0``."""
        n = X.shape[0]
        mu = np.zeros(J + 1, np.complex128)
        em_re, em_im, eh_re, eh_im, scale = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        total = 0.0
        for k in range(n):
            L = (X[k + 1] if k + 1 < n else X[0] + 2.0 * np.pi) - X[k]
            mid = X[k] + 0.5 * L
            em_re[k], em_im[k] = np.cos(mid), -np.sin(mid)
            eh_re[k], eh_im[k] = np.cos(0.5 * L), np.sin(0.5 * L)
            scale[k] = m[k] / (0.5 * L) if L > 0.0 else 0.0
            total += m[k] + A[k]
        mu[0] = total
        pm_re, pm_im, ph_re, ph_im = em_re.copy(), em_im.copy(), eh_re.copy(), eh_im.copy()
        for j in range(1, J + 1):
            acc_re = acc_im = 0.0
            for k in range(n):
                w = scale[k] * ph_im[k]
                acc_re += w * pm_re[k]
                acc_im += w * pm_im[k]
                r = pm_re[k] * em_re[k] - pm_im[k] * em_im[k]
                pm_im[k] = pm_re[k] * em_im[k] + pm_im[k] * em_re[k]
                pm_re[k] = r
                r = ph_re[k] * eh_re[k] - ph_im[k] * eh_im[k]
                ph_im[k] = ph_re[k] * eh_im[k] + ph_im[k] * eh_re[k]
                ph_re[k] = r
            mu[j] = complex(acc_re / j, acc_im / j)
        for k in range(n):
            if A[k] != 0.0:
                e_x = np.exp(-1j * X[k])
                p = e_x
                for j in range(1, J + 1):
                    mu[j] += A[k] * p
                    p *= e_x
        return mu

    @numba.njit(cache=True)
    def _field_numba(mu, w, points):  # pragma: no cover - compiled
        """:func:`_field_numpy`: for each ``j`` one pass over the points (each its own sum, so
        the pass runs in SIMD lanes), ``e^{i j p}`` advanced by one rotation."""
        J = w.shape[0] - 1
        e_re, e_im = np.cos(points), np.sin(points)
        p_re, p_im = e_re.copy(), e_im.copy()
        acc = np.zeros(points.shape[0])
        for j in range(1, J + 1):
            a, b = j * w[j] * mu[j].real, j * w[j] * mu[j].imag
            for q in range(points.shape[0]):
                acc[q] -= a * p_im[q] + b * p_re[q]  # Im(mu_j e^{ijp}) j w_j
                r = p_re[q] * e_re[q] - p_im[q] * e_im[q]
                p_im[q] = p_re[q] * e_im[q] + p_im[q] * e_re[q]
                p_re[q] = r
        return 2.0 * acc


def attention_gradient(state: LagrangianState, w: np.ndarray, points: np.ndarray,
                       compiled: bool = True) -> np.ndarray:
    """``(1/beta) d/dp (K*mu)(p)`` at ``points`` (P,) for the measure of ``state`` (spectral, exact
    to round-off past the kernel's bandwidth); ``compiled``: numba when it imports."""
    J = w.size - 1
    if compiled and numba is not None:
        mu = _coefficients_numba(state.X, state.m, state.A, J)
        return _field_numba(mu, w, np.ascontiguousarray(points, dtype=float))
    return _field_numpy(_coefficients_numpy(state.X, state.m, state.A, J), w, np.asarray(points, float))


def attention_gradient_reference(state: LagrangianState, model: ModelParams,
                                 points: np.ndarray) -> np.ndarray:
    """The same field by the closed forms (direct sums, numpy; the tests' independent value).

    A uniform cell ``[a, b]`` of density ``c``: ``(1/beta) d/dp int_a^b c K(p, y) dy =
    (c/beta) (K(p, a) - K(p, b))`` (``d_p K = -d_y K``); an atom: ``-A sin(p - x) K(p, x)``,
    ``K(p, y) = c_K e^{beta cos(p - y)}``.
    """
    beta, shift = model.beta, kernel_log_shift(model)
    p = np.asarray(points, float)[:, None]
    X, L = state.X, state.lengths()
    c = np.divide(state.m, L, out=np.zeros_like(L), where=L > 0)
    ka = np.exp(beta * np.cos(p - X[None, :]) + shift)
    kb = np.exp(beta * np.cos(p - (X + L)[None, :]) + shift)
    cells = ((ka - kb) @ c) / beta
    atoms = -(np.sin(p - X[None, :]) * ka) @ state.A
    return cells + atoms


def velocity(state: LagrangianState, model: ModelParams, w: np.ndarray, points: np.ndarray,
             compiled: bool = True,
             perceptron_velocity: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Transport velocity ``s dU/dx`` of the whole measure at ``points`` (P,): attention plus the
    perceptron's ``v'/2`` (paper eq. 2.7), ``s = +1`` ascent, ``-1`` descent.
    ``perceptron_velocity(angles)``: the perceptron's part (default
    :func:`solvers.model.perceptron.circle_velocity`; the compiled
    :meth:`solvers.circle.dirac.CompiledCircleField.perceptron_velocity` does the same operations)."""
    angles = np.mod(points, TWO_PI)
    v = perceptron.circle_velocity(model.perceptron, angles) if perceptron_velocity is None \
        else perceptron_velocity(angles)
    return model.sign * (attention_gradient(state, w, points, compiled) + v)


# -- between steps: atoms from meeting points, refinement of stretched cells -------------------
def normalise(state: LagrangianState) -> LagrangianState:
    """The same measure with ``X_0`` in ``[0, 2 pi)`` (a whole turn subtracted from every point)."""
    turns = np.floor(state.X[0] / TWO_PI)
    if turns == 0.0:
        return state
    return LagrangianState(state.X - turns * TWO_PI, state.m, state.A, state.ids)


def short_cells(state: LagrangianState, delta: float, absorb: float, merge: float) -> np.ndarray:
    """Which cells (n,) :func:`collapse` closes: those shorter than ``delta`` (their ends met: a
    new atom), those beside an atom shorter than ``absorb`` (absorption), and every cell between
    two consecutive atoms closer than ``merge`` (merging)."""
    L = state.lengths()
    at = state.A > 0
    short = (L < delta) | ((at | following(at)) & (L < absorb))
    k = np.nonzero(at)[0]
    if k.size > 1:
        gap = np.diff(np.append(state.X[k], state.X[k[0]] + TWO_PI))
        for a, b, g in zip(k, np.roll(k, -1), gap):
            if g < merge:
                short[a:b if b > a else None] = True
                if b < a:
                    short[:b] = True
    return short


def runs(short: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The runs of consecutive ``short`` cells (n,), not all short: ``(first, last)`` cell
    indices (r,) of each, in order around the circle (a run may wrap past the last cell)."""
    n = short.size
    r = (int(np.nonzero(~short)[0][0]) + 1) % n  # a run starts here or later: none wraps in the roll
    s = np.roll(short, -r).astype(np.int8)
    edges = np.diff(np.concatenate([[0], s, [0]]))
    first, last = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0] - 1
    return (first + r) % n, (last + r) % n


def held_runs(state: LagrangianState, short: np.ndarray, corners: np.ndarray,
              velocity: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``short`` (n,) without the runs that would make a new atom the flow does not hold together.

    A run of short cells without an atom becomes an atom (:func:`collapse`) only when the flow
    holds it together (:func:`~solvers.circle.kink_faces.holds_together`: the velocity points
    into it at both its end points, or it holds one of the sink ``corners``), as for the fv
    Dirac state (:func:`solvers.circle.dirac_capture.forms_atom`). Otherwise
    its cells stay cells: under descent a cluster pressed together by a passing wave spreads
    again. Runs with an atom (absorption, merging) are kept. ``velocity(x)`` gives the flow
    velocity at the angles ``x`` (P,).
    """
    first, last = runs(short)
    n = state.n
    ends = (last + 1) % n
    free = np.array([not state.A[_points(f, e, n)].any() for f, e in zip(first, ends)], dtype=bool)
    if not free.any():
        return short
    xa, xb = state.X[first[free]], state.X[ends[free]]
    u = velocity(np.concatenate([xa, xb]))
    held = holds_together(xa, xb, u[:xa.size], u[xa.size:], corners)
    out = short.copy()
    for f, e in zip(first[free][~held], ends[free][~held]):
        out[_points(f, e, n)[:-1]] = False
    return out


def _points(first: int, end: int, n: int) -> np.ndarray:
    """The point indices from ``first`` to ``end`` (inclusive), wrapping past ``n - 1``."""
    return np.arange(first, first + np.mod(end - first, n) + 1) % n


def collapse(state: LagrangianState, short: np.ndarray, next_id: int,
             mass_floor: float = 0.0) -> tuple[LagrangianState, int]:
    """Join every run of points linked by ``short`` cells (n,) into one point carrying a Dirac
    atom: its mass is the run's atoms plus its cells, its position their centre of mass (the first
    moment is kept; a uniform cell's mass sits at its midpoint). The atom keeps the identity of
    the run's heaviest atom, or takes ``next_id`` when the run had none. A run without atoms that
    holds at most ``mass_floor`` makes no atom: its point stays a plain point and its mass joins
    the next cell. Returns the new state and the next free identity."""
    if not short.any():
        return state, next_id
    n, L = state.n, state.lengths()
    if short.all():  # everything met in one point
        M = state.A.sum() + state.m.sum()
        mom = np.sum(state.A * state.X) + np.sum(state.m * (state.X + 0.5 * L))
        keep, next_id = _identity(state.A, state.ids, next_id)
        one = LagrangianState(np.array([mom / M]), np.zeros(1), np.array([M]), np.array([keep]))
        return normalise(one), next_id
    r = (int(np.nonzero(~short)[0][0]) + 1) % n  # roll so that no run wraps past the last point
    X = np.concatenate([state.X[r:], state.X[:r] + TWO_PI])
    m, A, ids, short, L = (np.roll(a, -r) for a in (state.m, state.A, state.ids, short, L))
    group = np.cumsum(np.concatenate([[True], ~short[:-1]])) - 1  # each point's run
    g = int(group[-1]) + 1
    cells = np.where(short, m, 0.0)  # a short cell belongs to the run of its left point
    M = np.bincount(group, A, g) + np.bincount(group, cells, g)
    mom = np.bincount(group, A * X, g) + np.bincount(group, cells * (X + 0.5 * L), g)
    first = np.searchsorted(group, np.arange(g))
    last = np.append(first[1:], n) - 1
    joined = last > first
    out_m = m[last].copy()  # the cell after each run
    # the identity of each run's heaviest atom (-1: none)
    keep = np.full(g, -1)
    has = np.nonzero(ids >= 0)[0]
    order = has[np.lexsort((A[has], group[has]))]
    keep[group[order]] = ids[order]  # the last write per run is its heaviest atom
    atomless = joined & (keep < 0)
    empty = atomless & (M <= mass_floor)  # nothing to make an atom of: a plain point
    fresh = atomless & ~empty
    keep[fresh] = next_id + np.arange(int(fresh.sum()))
    next_id += int(fresh.sum())
    out_X = np.where(joined & ~empty, mom / np.where(M > 0, M, 1.0), X[first])
    out_A = np.where(joined, np.where(empty, 0.0, M), A[first])
    out_m[empty] += M[empty]
    new = LagrangianState(out_X, out_m, out_A, np.where(joined, keep, ids[first]))
    return normalise(new), next_id


def _identity(A: np.ndarray, ids: np.ndarray, next_id: int) -> tuple[int, int]:
    """The identity of the heaviest atom among ``ids >= 0``, or ``next_id`` (then used up)."""
    has = ids >= 0
    if has.any():
        return int(ids[has][np.argmax(A[has])]), next_id
    return next_id, next_id + 1


def refine(state: LagrangianState, max_length: float, mass_floor: float) -> LagrangianState:
    """Split every cell longer than ``max_length`` that holds more than ``mass_floor`` at its
    midpoint. The halves' masses follow a linear density with the minmod slope of the three
    cells' densities (never negative, their sum the cell's mass exactly): a stretched cell that
    straddles a watershed sends each half to its own side."""
    L = state.lengths()
    split = (L > max_length) & (state.m > mass_floor)
    if not split.any():
        return state
    c = state.m / L
    dl = (c - preceding(c)) / (0.5 * (L + preceding(L)))
    dr = (following(c) - c) / (0.5 * (L + following(L)))
    slope = np.where(dl * dr > 0, np.sign(dl) * np.minimum(np.abs(dl), np.abs(dr)), 0.0)
    left = np.clip(0.5 * state.m - slope * L ** 2 / 8, 0.0, state.m)
    k = np.nonzero(split)[0]
    X = np.insert(state.X, k + 1, state.X[k] + 0.5 * L[k])
    m = state.m.copy()
    m[k] = left[k]
    m = np.insert(m, k + 1, state.m[k] - left[k])
    A = np.insert(state.A, k + 1, 0.0)
    ids = np.insert(state.ids, k + 1, -1)
    return LagrangianState(X, m, A, ids)


# -- to and from the grid ---------------------------------------------------------------------
def cell_masses(state: LagrangianState, n_cells: int) -> np.ndarray:
    """Mass of the diffuse part in each uniform cell ``[(i - 1/2) h, (i + 1/2) h]`` (N,): the
    cumulative mass is piecewise linear between the points, so this is exact."""
    h = TWO_PI / n_cells
    X = np.concatenate([state.X - TWO_PI, state.X, state.X + TWO_PI, [state.X[0] + 2 * TWO_PI]])
    cum = np.concatenate([[0.0], np.cumsum(np.tile(state.m, 3))])
    edges = (np.arange(n_cells + 1) - 0.5) * h
    return np.diff(np.interp(edges, X, cum))


def from_grid(rho: np.ndarray, atom_mass: np.ndarray, atom_position: np.ndarray,
              atom_ids: np.ndarray) -> LagrangianState:
    """A state whose cells are the uniform grid's (densities ``rho`` (N,)), with each atom a point
    of its own that splits the cell it falls in (the halves by length)."""
    n = rho.size
    h = TWO_PI / n
    X = (np.arange(n) + 0.5) * h
    m = np.roll(np.asarray(rho, float) * h, -1)  # cell [X_k, X_{k+1}] is grid cell k + 1
    A, ids = np.zeros(n), np.full(n, -1)
    for mass, x, i in zip(atom_mass, np.mod(atom_position, TWO_PI), atom_ids):
        x = x if x >= X[0] else x + TWO_PI
        k = int(np.searchsorted(X, x, side="right")) - 1
        end = X[k + 1] if k + 1 < X.size else X[0] + TWO_PI
        if x == X[k]:
            A[k] += mass; ids[k] = i
            continue
        share = (x - X[k]) / (end - X[k])
        X = np.insert(X, k + 1, x)
        m = np.insert(m, k + 1, m[k] * (1 - share)); m[k] *= share
        A = np.insert(A, k + 1, mass); ids = np.insert(ids, k + 1, i)
    return LagrangianState(X, m, A, ids)
