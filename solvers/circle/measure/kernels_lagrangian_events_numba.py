"""Compiled (numba) bookkeeping of the S^1 Lagrangian cells after each step: one call.

:func:`events` does the operations of
:meth:`~solvers.circle.measure.lagrangian_discretization.LagrangianCircleDiscretization._events`
in the same order, so that the results are bitwise the same (tests/circle/test_lagrangian_kernels.py):
normalise the positions, :func:`~solvers.circle.measure.lagrangian.short_cells`, the held-together
rule of :func:`~solvers.circle.measure.lagrangian.held_runs` and
:func:`~solvers.circle.cells.holds_together`, :func:`~solvers.circle.measure.lagrangian.collapse`,
:func:`~solvers.circle.measure.lagrangian.refine`. Status :data:`NOTHING` when nothing happens
(the state is kept as it is), :data:`CHANGED` with the new state, :data:`NUMPY` where the numpy
code must run (every cell short: one atom; a softmax run end far from the mass).
:func:`in_order` is the test that every cell has positive length.

The right-hand side and the error test's points are in
:mod:`solvers.circle.measure.kernels_lagrangian_numba` (whose :func:`velocity` the
held-together rule evaluates). Compiled with ``cache=True``; imported only where the numba
backend runs (:func:`solvers.core.backend.default_backend`).
"""

from __future__ import annotations


import numpy as np
from numba import njit

from solvers.circle.measure.kernels_lagrangian_numba import TWO_PI, _mod_two_pi, _split, velocity

NOTHING, CHANGED, NUMPY = 0, 1, 2  # events(): its status


@njit(cache=True, error_model="numpy")
def lengths(X: np.ndarray) -> np.ndarray:
    """``X_{k+1} - X_k`` (n,), the last across ``2 pi`` (:meth:`LagrangianState.lengths`)."""
    n = X.shape[0]
    L = np.empty(n)
    for k in range(n - 1):
        L[k] = X[k + 1] - X[k]
    L[n - 1] = (X[0] + TWO_PI) - X[n - 1]
    return L


@njit(cache=True, error_model="numpy")
def in_order(state: np.ndarray, n: int) -> bool:
    """Whether every cell of the flat state has positive length (``np.all(lengths() > 0)``)."""
    for k in range(n - 1):
        if not state[k + 1] - state[k] > 0.0:
            return False
    return (state[0] + TWO_PI) - state[n - 1] > 0.0


@njit(cache=True, error_model="numpy")
def _short_cells(X: np.ndarray, L: np.ndarray, A: np.ndarray, delta: float, absorb: float,
                 merge: float) -> np.ndarray:
    """:func:`solvers.circle.measure.lagrangian.short_cells`."""
    n = X.shape[0]
    short = np.zeros(n, np.bool_)
    n_atoms = 0
    for k in range(n):
        at = A[k] > 0.0 or A[k + 1 if k + 1 < n else 0] > 0.0
        short[k] = L[k] < delta or (at and L[k] < absorb)
        if A[k] > 0.0:
            n_atoms += 1
    if n_atoms > 1:
        atoms = np.empty(n_atoms, np.int64)
        i = 0
        for k in range(n):
            if A[k] > 0.0:
                atoms[i] = k
                i += 1
        for i in range(n_atoms):
            a = atoms[i]
            b = atoms[i + 1] if i + 1 < n_atoms else atoms[0]
            gap = (X[b] - X[a]) if i + 1 < n_atoms else (X[atoms[0]] + TWO_PI) - X[a]
            if gap < merge:
                if b > a:
                    short[a:b] = True
                else:
                    short[a:] = True
                    short[:b] = True
    return short


@njit(cache=True, error_model="numpy")
def _held(X: np.ndarray, m: np.ndarray, A: np.ndarray, L: np.ndarray, short: np.ndarray,
          collapse_length: float, met_length: float, corners: np.ndarray, w: np.ndarray,
          units: np.ndarray, consts: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(short, low)``: :meth:`LagrangianCircleDiscretization._held` (runs of new atoms the flow
    does not hold together stay cells, except cells shorter than ``met_length``); ``low``: a run
    end's softmax velocity needs the numpy path."""
    n = X.shape[0]
    fresh = False
    every = True
    for k in range(n):
        at = A[k] > 0.0 or A[k + 1 if k + 1 < n else 0] > 0.0
        if L[k] < collapse_length and not at:
            fresh = True
        if not short[k]:
            every = False
    if not fresh or every:
        return short, False
    # the runs of short cells (lagrangian.runs): cells first .. last, points first .. last + 1
    start = 0
    for k in range(n):
        if not short[k]:
            start = k + 1
            break
    first = np.empty(n, np.int64)
    end = np.empty(n, np.int64)
    r = 0
    k = 0
    while k < n:
        c = (start + k) % n
        if short[c]:
            f = c
            while k < n and short[(start + k) % n]:
                k += 1
            first[r] = f
            end[r] = (start + k) % n  # the point after the run's last cell
            r += 1
        else:
            k += 1
    free = np.zeros(r, np.bool_)
    n_free = 0
    for i in range(r):
        has = False
        p = first[i]
        while True:
            if A[p] != 0.0:  # .any() of the masses: nonzero
                has = True
                break
            if p == end[i]:
                break
            p = (p + 1) % n
        if not has:
            free[i] = True
            n_free += 1
    if n_free == 0:
        return short, False
    points = np.empty(2 * n_free)
    j = 0
    for i in range(r):
        if free[i]:
            points[j] = X[first[i]]
            points[n_free + j] = X[end[i]]
            j += 1
    u, low = velocity(X, m, A, points, w, units, consts)
    if low:
        return short, True
    out = short.copy()
    j = 0
    for i in range(r):
        if not free[i]:
            continue
        xa, xb = points[j], points[n_free + j]
        held = u[j] >= 0.0 and u[n_free + j] <= 0.0  # kink_faces.holds_together
        if corners.shape[0]:
            width = _mod_two_pi(xb - xa)
            for c in range(corners.shape[0]):
                if _mod_two_pi(corners[c] - xa) < width:
                    held = True
        j += 1
        if not held:
            p = first[i]
            while p != end[i]:
                out[p] = False
                p = (p + 1) % n
    for k in range(n):
        out[k] = out[k] or (short[k] and L[k] < met_length)
    return out, False


@njit(cache=True, error_model="numpy")
def _collapse(X: np.ndarray, m: np.ndarray, A: np.ndarray, ids: np.ndarray, L: np.ndarray,
              short: np.ndarray, next_id: int, mass_floor: float):
    """:func:`solvers.circle.measure.lagrangian.collapse` (not every cell short), before its final
    normalisation: ``(X, m, A, ids, next_id)``."""
    n = X.shape[0]
    r = 0
    for k in range(n):
        if not short[k]:
            r = (k + 1) % n
            break
    # rolled by r: no run wraps past the last point
    Xr, mr, Ar, Lr = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    idr = np.empty(n, np.int64)
    sr = np.empty(n, np.bool_)
    for i in range(n):
        k = (i + r) % n
        Xr[i] = X[k] if i < n - r else X[k] + TWO_PI
        mr[i], Ar[i], Lr[i], idr[i], sr[i] = m[k], A[k], L[k], ids[k], short[k]
    group = np.empty(n, np.int64)
    group[0] = 0
    for i in range(1, n):
        group[i] = group[i - 1] + (0 if sr[i - 1] else 1)
    g = group[n - 1] + 1
    # bincount: sums over each run, in order, from 0.0
    mass_a, mass_c, mom_a, mom_c = np.zeros(g), np.zeros(g), np.zeros(g), np.zeros(g)
    first = np.empty(g, np.int64)
    last = np.empty(g, np.int64)
    keep = np.full(g, -1, np.int64)
    best = np.zeros(g)
    for i in range(n):
        q = group[i]
        if i == 0 or group[i - 1] != q:
            first[q] = i
        last[q] = i
        cell = mr[i] if sr[i] else 0.0
        mass_a[q] += Ar[i]
        mass_c[q] += cell
        mom_a[q] += Ar[i] * Xr[i]
        mom_c[q] += cell * (Xr[i] + 0.5 * Lr[i])
        if idr[i] >= 0 and (keep[q] < 0 or Ar[i] >= best[q]):  # the heaviest atom (the last of ties)
            keep[q], best[q] = idr[i], Ar[i]
    out_X, out_m, out_A = np.empty(g), np.empty(g), np.empty(g)
    out_ids = np.empty(g, np.int64)
    for q in range(g):
        M = mass_a[q] + mass_c[q]
        mom = mom_a[q] + mom_c[q]
        a, b = first[q], last[q]
        out_m[q] = mr[b]
        if b > a:  # joined
            empty = False
            if keep[q] < 0:
                if M <= mass_floor:
                    empty = True
                else:
                    keep[q] = next_id
                    next_id += 1
            if empty:
                out_X[q], out_A[q] = Xr[a], 0.0
                out_m[q] += M
            else:
                out_X[q], out_A[q] = mom / (M if M > 0.0 else 1.0), M
            out_ids[q] = keep[q]
        else:
            out_X[q], out_A[q], out_ids[q] = Xr[a], Ar[a], idr[a]
    return out_X, out_m, out_A, out_ids, next_id


@njit(cache=True, error_model="numpy")
def _normalised(X: np.ndarray) -> tuple[np.ndarray, bool]:
    """:func:`solvers.circle.measure.lagrangian.normalise` of the points: ``(X, changed)``."""
    turns = np.floor(X[0] / TWO_PI)
    if turns == 0.0:
        return X, False
    return X - turns * TWO_PI, True


@njit(cache=True, error_model="numpy")
def _refine(X: np.ndarray, m: np.ndarray, A: np.ndarray, ids: np.ndarray, max_length: float,
            mass_floor: float):
    """:func:`solvers.circle.measure.lagrangian.refine`: ``(X, m, A, ids, split any)``."""
    n = X.shape[0]
    L = lengths(X)
    n_split = 0
    for k in range(n):
        if L[k] > max_length and m[k] > mass_floor:
            n_split += 1
    if n_split == 0:
        return X, m, A, ids, False
    size = n + n_split
    nX, nm, nA = np.empty(size), np.empty(size), np.empty(size)
    nids = np.empty(size, np.int64)
    j = 0
    for k in range(n):
        nX[j], nm[j], nA[j], nids[j] = X[k], m[k], A[k], ids[k]
        j += 1
        if L[k] > max_length and m[k] > mass_floor:
            kp, kn = (k - 1) % n, (k + 1) % n
            c, cp, cn = m[k] / L[k], m[kp] / L[kp], m[kn] / L[kn]
            dl = (c - cp) / (0.5 * (L[k] + L[kp]))
            dr = (cn - c) / (0.5 * (L[k] + L[kn]))
            slope = 0.0
            if dl * dr > 0:
                slope = (1.0 if dl > 0 else -1.0) * min(abs(dl), abs(dr))
            left = 0.5 * m[k] - slope * (L[k] * L[k]) / 8
            left = min(max(left, 0.0), m[k])  # np.clip(., 0, m)
            nm[j - 1] = left
            nX[j], nm[j], nA[j], nids[j] = X[k] + 0.5 * L[k], m[k] - left, 0.0, -1
            j += 1
    return nX, nm, nA, nids, True


@njit(cache=True, error_model="numpy")
def events(state: np.ndarray, n: int, lengths_h: np.ndarray, mass_floor: float, next_id: int,
           corners: np.ndarray, w: np.ndarray, units: np.ndarray, consts: np.ndarray):
    """The bookkeeping between steps of the flat state (``4 n + tail`` values):
    ``(status, new state, next_id)``. ``lengths_h`` = ``(COLLAPSE, MET, ABSORB, MERGE, REFINE)``
    times ``h``; ``corners``: the perceptron's sink corners. Status :data:`NOTHING` (the state is
    returned as it is), :data:`CHANGED`, or :data:`NUMPY` (run the numpy code)."""
    collapse_l, met_l, absorb_l, merge_l, refine_l = lengths_h[0], lengths_h[1], lengths_h[2], \
        lengths_h[3], lengths_h[4]
    X0 = state[:n].copy()
    X, moved = _normalised(X0)
    m, A = state[n:2 * n].copy(), state[2 * n:3 * n].copy()
    ids = np.empty(n, np.int64)
    for k in range(n):
        ids[k] = np.int64(np.rint(state[3 * n + k]))
    L = lengths(X)
    short = _short_cells(X, L, A, collapse_l, absorb_l, merge_l)
    some = False
    for k in range(n):
        if short[k]:
            some = True
            break
    if some:
        short, low = _held(X, m, A, L, short, collapse_l, met_l, corners, w, units, consts)
        if low:
            return NUMPY, state, next_id
        some, every = False, True
        for k in range(n):
            if short[k]:
                some = True
            else:
                every = False
        if every:
            return NUMPY, state, next_id
    if some:
        X, m, A, ids, next_id = _collapse(X, m, A, ids, L, short, next_id, mass_floor)
        X, _ = _normalised(X)
        moved = True
    X, m, A, ids, split = _refine(X, m, A, ids, refine_l, mass_floor)
    if not (moved or split):
        return NOTHING, state, next_id
    k = X.shape[0]
    tail = state.shape[0] - 4 * n
    out = np.empty(4 * k + tail)
    out[:k] = X
    out[k:2 * k] = m
    out[2 * k:3 * k] = A
    for i in range(k):
        out[3 * k + i] = float(ids[i])
    out[4 * k:] = state[4 * n:]
    return CHANGED, out, next_id
