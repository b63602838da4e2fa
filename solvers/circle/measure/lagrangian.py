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
(docs/methods.md §6.4), is carried exactly.

The velocity is that of the whole measure (:mod:`solvers.circle.measure.lagrangian_fields`, re-exported
here): its attention part from the measure's Fourier coefficients in closed form and the
Funk-Hecke multipliers (paper Lemma 5.1), ``(1/beta) f'`` for unnormalized attention and
``f' / (beta f)`` for softmax (paper eq. 2.9), ``f = K*mu``; the closed-form direct sums
(:func:`attention_gradient_reference`, :func:`potential_reference`) are the tests' reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvers.circle.cells import holds_together
from solvers.circle.measure.lagrangian_fields import (  # noqa: F401 (the state's fields, re-exported)
    BANDWIDTH_TOL,
    attention_fields,
    attention_gradient,
    attention_gradient_reference,
    gradient_weights,
    potential,
    potential_reference,
    softmax_attention,
    velocity,
)

TWO_PI = 2.0 * np.pi


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
    holds it together (:func:`~solvers.circle.cells.holds_together`: the velocity points
    into it at both its end points, or it holds one of the sink ``corners``), as for the fv
    Dirac state (:func:`solvers.circle.measure.dirac_events.forms_atom`). Otherwise
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
    # four turns from X_0 - 4 pi: the edges [-h/2, 2 pi - h/2] lie inside for any X_0 in
    # [0, 2 pi) (three turns from X_0 - 2 pi missed the mass below X_0 - 2 pi when X_0 > 2 pi - h/2)
    X = np.concatenate([state.X - 2 * TWO_PI, state.X - TWO_PI, state.X, state.X + TWO_PI,
                        [state.X[0] + 2 * TWO_PI]])
    cum = np.concatenate([[0.0], np.cumsum(np.tile(state.m, 4))])
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
