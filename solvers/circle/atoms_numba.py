"""The S^1 basin detector of :mod:`solvers.core.atoms` as one compiled (numba) call.

Same algorithm and the same comparisons, in the same order, as the array reference
(``flow_pointer`` -> ``follow`` -> ``split_at_saddles`` -> ``measure_atoms`` with ``core_of``):
labels agree exactly and masses and positions to round-off (sums run left to right here,
pairwise in numpy; tests/circle/test_atoms_numba.py). A snapshot's atoms then cost a few
microseconds instead of a millisecond of small array operations (issue: cheap snapshots).

On a ring whose cells are in angular order (``ordered``; every grid ``2 pi i / N``) the core of
an atom is a run of consecutive cells: each of the core's fixed-point iterations visits the
cells of that run only (found by walking from the previous nearest cell), and takes an arccos
only for cells near the core's edge, where the weight is fractional. Both shortcuts skip work
whose result is known exactly (a weight 0 or 1), in the same order: the sums are bitwise those
of the scan over all of the atom's cells (``ordered`` False).

Import only through :func:`solvers.circle.atoms.detect_atoms` (numba is optional at run time).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.core.atoms_numba import _groups, _inside, _roots, split_edges, within_cap


@njit(cache=True, inline="always")
def _dot(px: np.ndarray, py: np.ndarray, c: int, ux: float, uy: float) -> float:
    return px[c] * ux + py[c] * uy


@njit(cache=True, inline="always")
def _wrap(j: int, n: int) -> int:
    """``j mod n`` for ``-n <= j < 2 n`` (no integer division)."""
    return j + n if j < 0 else (j - n if j >= n else j)


@njit(cache=True)
def _run(px: np.ndarray, py: np.ndarray, ux: float, uy: float, c0: int, near: float
         ) -> tuple[int, int]:
    """``(lo, hi)``: the run of cells ``lo..hi`` (indices mod N, ``lo <= hi < lo + N``, ``lo``
    in ``[0, N)``) with a dot product ``>= near`` around the cell nearest ``(ux, uy)``, found by
    climbing from cell ``c0``; ``lo > hi`` when there is none. Needs the cells in angular order
    (the cells near a point are then an arc)."""
    n = px.size
    best = _dot(px, py, c0, ux, uy)
    for _ in range(n):
        right, left = _wrap(c0 + 1, n), _wrap(c0 - 1, n)
        dr, dl = _dot(px, py, right, ux, uy), _dot(px, py, left, ux, uy)
        if dr > best and dr >= dl:
            c0, best = right, dr
        elif dl > best:
            c0, best = left, dl
        else:
            break
    if not best >= near:
        return 0, -1
    return _extend(px, py, ux, uy, c0, c0, near)


@njit(cache=True)
def _extend(px: np.ndarray, py: np.ndarray, ux: float, uy: float, lo: int, hi: int,
            near: float) -> tuple[int, int]:
    """The run ``lo..hi`` (its ends with dot products ``>= near``) extended both ways over the
    neighbours with dot products ``>= near`` (at most all N cells)."""
    n = px.size
    while hi - lo + 1 < n and _dot(px, py, _wrap(hi + 1, n), ux, uy) >= near:
        hi += 1
    while hi - lo + 1 < n and _dot(px, py, _wrap(lo - 1, n), ux, uy) >= near:
        lo -= 1
    if lo < 0 or lo >= n:  # keep lo in [0, n): _wrap stays valid
        shift = n if lo < 0 else -n
        lo, hi = lo + shift, hi + shift
    return lo, hi


@njit(cache=True)
def _follow(px: np.ndarray, py: np.ndarray, ux: float, uy: float, lo: int, hi: int,
            near: float) -> tuple[int, int]:
    """A run of cells holding every cell with a dot product ``>= near``, from the previous
    run ``lo..hi``: its ends trimmed of cells below ``near`` and extended over neighbours at or
    above it; from scratch (:func:`_run`) when no cell of the old run is near."""
    n = px.size
    while hi >= lo and not _dot(px, py, _wrap(hi, n), ux, uy) >= near:
        hi -= 1
    if hi < lo:
        return _run(px, py, ux, uy, _wrap(lo, n), near)
    while not _dot(px, py, _wrap(lo, n), ux, uy) >= near:
        lo += 1
    return _extend(px, py, ux, uy, lo, hi, near)


@njit(cache=True)
def _spans(lo: int, hi: int, n: int) -> tuple[int, int, int, int]:
    """The cells ``lo..hi`` (mod N, ``0 <= lo < N``) as two index ranges ``[a0, a1)``, ``[b0, b1)`` in
    ascending order."""
    if hi < lo:
        return 0, 0, 0, 0
    if hi - lo + 1 >= n:
        return 0, n, 0, 0
    if hi >= n:
        return 0, hi - n + 1, lo, n
    return lo, hi + 1, 0, 0


@njit(cache=True)
def _weighted(cells: np.ndarray, stamp: np.ndarray, tag: int, spans: tuple, cell_mass: np.ndarray,
              px: np.ndarray, py: np.ndarray, ux: float, uy: float, bounds: tuple, radius: float,
              h: float) -> tuple[float, float, float]:
    """``(sum w x, sum w y, sum w)`` over the atom's cells within ``radius + h`` of ``(ux, uy)``
    (dot product ``>= near``), ``w`` the mass times the fraction inside ``radius``: exactly 1
    for ``dot > inner`` and 0 for ``dot < outer`` (surely within ``radius -+ h/2``), else
    :func:`_inside` of the arccos. ``bounds = (near, outer, inner)``. ``stamp``: the ring's
    cells in ``spans`` (``stamp[c] == tag`` for the atom's), or empty: ``cells`` in order."""
    a0, a1, b0, b1 = spans
    near, outer, inner = bounds
    cx, cy, total = 0.0, 0.0, 0.0
    for j in range(a0, a1 + b1 - b0):
        k = j if j < a1 else b0 + j - a1
        if stamp.size:
            if stamp[k] != tag:
                continue
            c = k
        else:
            c = cells[k]
        dot = _dot(px, py, c, ux, uy)
        if dot < near:
            continue
        if dot > inner:
            w = max(cell_mass[c], 0.0)
        elif dot < outer:
            w = max(cell_mass[c], 0.0) * 0.0
        else:
            w = max(cell_mass[c], 0.0) * _inside(math.acos(min(max(dot, -1.0), 1.0)), radius, h)
        cx += w * px[c]
        cy += w * py[c]
        total += w
    return cx, cy, total


@njit(cache=True)
def _core(cells: np.ndarray, stamp: np.ndarray, tag: int, cell_mass: np.ndarray, px: np.ndarray,
          py: np.ndarray, h: float, top: int, radius: float) -> tuple[float, float, float]:
    """``core_of`` on the ring from cell ``top``: centre of mass (x, y) and the mass within
    ``radius``. Cells farther than ``radius + h`` have weight exactly 0 and are skipped."""
    n = px.size
    near = math.cos(min(radius + h, np.pi))
    # margins of 1e-9 in the dot product: far above its round-off, so the weights are exact
    bounds = (near, math.cos(min(radius + 0.5 * h, np.pi)) - 1e-9,
              math.cos(min(radius - 0.5 * h, np.pi)) + 1e-9)
    ux, uy = px[top], py[top]
    lo, hi = top, top - 1
    spans = (0, cells.size, 0, 0)
    for _ in range(8):
        if stamp.size:
            lo, hi = _run(px, py, ux, uy, top, near) if hi < lo else _follow(px, py, ux, uy, lo, hi, near)
            spans = _spans(lo, hi, n)
        cx, cy, _ = _weighted(cells, stamp, tag, spans, cell_mass, px, py, ux, uy, bounds, radius, h)
        norm = math.sqrt(cx * cx + cy * cy)
        if norm == 0.0:
            return ux, uy, 0.0
        nx, ny = cx / norm, cy / norm
        done = math.sqrt((nx - ux) ** 2 + (ny - uy) ** 2) < 1e-14
        ux, uy = nx, ny
        if done:
            break
    if stamp.size:
        lo, hi = _run(px, py, ux, uy, top, near) if hi < lo else _follow(px, py, ux, uy, lo, hi, near)
        spans = _spans(lo, hi, n)
    return ux, uy, _weighted(cells, stamp, tag, spans, cell_mass, px, py, ux, uy, bounds, radius, h)[2]


@njit(cache=True)
def _cell_scale_atom(cells, top, density, cell_mass, h, contrast, mass, concentrated):
    """:func:`solvers.core.atoms._cell_scale_atom` on the ring (neighbours: top - 1, top + 1)."""
    n = density.size
    left, right = (top - 1) % n, (top + 1) % n
    near = 0.0
    for c in cells:
        if c == top or c == left or c == right:
            near += cell_mass[c]
    if near < concentrated * mass:
        return False
    return density[top] > contrast * mass / (cells.size * h)


@njit(cache=True)
def _pointer(face_velocity: np.ndarray, cell_mass: np.ndarray) -> np.ndarray:
    """``flow_pointer``: ``i + 1``, ``i - 1``, ``i`` (a sink) or -1 (a source), shape (N,);
    sinks side by side across a face of velocity exactly 0 joined (the same rule)."""
    n = face_velocity.size
    pointer = np.empty(n, dtype=np.int64)
    for i in range(n):
        right = face_velocity[i] > 0.0
        left = face_velocity[i - 1] < 0.0  # i - 1 = -1 wraps to the last face
        if right and left:
            pointer[i] = -1
        elif right:
            pointer[i] = _wrap(i + 1, n)
        elif left:
            pointer[i] = _wrap(i - 1, n)
        else:
            pointer[i] = i
    out = pointer.copy()
    for i in range(n):
        if pointer[i] != i:
            continue
        best = i
        for k in range(2):  # right neighbour first, then left (as the reference)
            nb = _wrap(i + 1, n) if k == 0 else _wrap(i - 1, n)
            face = i if k == 0 else _wrap(i - 1, n)
            if pointer[nb] == nb and face_velocity[face] == 0.0 and (
                    cell_mass[nb] > cell_mass[best] or (cell_mass[nb] == cell_mass[best] and nb < best)):
                best = nb
        out[i] = best
    return out


@njit(cache=True)
def detect_ring(face_velocity: np.ndarray, cell_mass: np.ndarray, points: np.ndarray,
                px: np.ndarray, py: np.ndarray, edges: np.ndarray, nbr: np.ndarray,
                length: np.ndarray, ordered: bool, contrast: float, min_mass: float,
                ratio: float, core: float, cap: float, slack: float, concentrated: float):
    """Basin atoms of a density on the ring of N cells (``points`` (N, 2), ``px``, ``py`` its
    columns; ``ordered``: the cells are in angular order, see the module docstring).

    Returns ``(ok, labels (N,), atoms (4, n), diffuse, sure)``: the rows of ``atoms`` the mass,
    core mass, x and y of each atom, sorted by angle (:func:`_by_angle`; ``sure`` False when
    two angles, or an angle and the cut at 0, are too close for the order to be certain), the
    labels numbering them so; ``ok`` False when the flow pointers form a cycle (the caller falls
    back to the reference, which raises).
    """
    n = cell_mass.size
    h = 2.0 * np.pi / n
    basin = _roots(_pointer(face_velocity, cell_mass))
    if n and basin[0] == -2:
        return False, np.full(n, -1, dtype=np.int64), np.zeros((4, 0)), 0.0, True
    density = cell_mass / h
    labels = split_edges(basin, density, edges, nbr, length, ratio)
    total = 0.0
    for i in range(n):
        total += cell_mass[i]
    owner, out = _measure(labels, density, cell_mass, points, px, py, h, ordered,
                          contrast * abs(total) / (2.0 * np.pi), contrast, min_mass, core, cap,
                          slack, concentrated)
    diffuse = total - out[0].sum()  # in detection order, as the reference
    return True, owner, out, diffuse, _by_angle(owner, out)


@njit(cache=True)
def _measure(labels: np.ndarray, density: np.ndarray, cell_mass: np.ndarray, points: np.ndarray,
             px: np.ndarray, py: np.ndarray, h: float, ordered: bool, floor: float,
             contrast: float, min_mass: float, core: float, cap: float, slack: float,
             concentrated: float) -> tuple[np.ndarray, np.ndarray]:
    """``measure_atoms`` on the ring: ``(owner (N,), atoms (4, n))`` in detection order."""
    n = cell_mass.size
    owner = np.full(n, -1, dtype=np.int64)
    order, bounds = _groups(labels)
    cos_cap = math.cos(min(cap * slack, np.pi))
    out = np.empty((4, bounds.size))  # mass, core mass, x, y of each atom
    count = np.int64(0)  # (not a literal 0: _core would be compiled for it too, 1.4 s)
    keep = np.empty(n, dtype=np.int64)
    stamp = np.full(n if ordered else 0, -1, dtype=np.int64)
    for gidx in range(bounds.size - 1):
        group = order[bounds[gidx]:bounds[gidx + 1]]
        top = group[0]
        for c in group:
            if density[c] > density[top]:
                top = c
        k, m = within_cap(group, top, points, cell_mass, cos_cap, cap * slack, keep)
        if m < min_mass:
            continue
        if density[top] <= floor and not _cell_scale_atom(keep[:k], top, density, cell_mass, h,
                                                          contrast, m, concentrated):
            continue
        for c in keep[:k]:  # (loops, not fancy indexing: that costs compilation time)
            owner[c] = count
            if ordered:
                stamp[c] = count
        out[2, count], out[3, count], out[1, count] = _core(keep[:k], stamp, count, cell_mass,
                                                            px, py, h, top, core)
        out[0, count] = m
        count += 1
    return owner, out[:, :count].copy()


SURE = 1e-9  # angles this far apart keep their order whatever the arctan's last bits


@njit(cache=True)
def _by_angle(owner: np.ndarray, out: np.ndarray) -> bool:
    """Sort the atoms (columns of ``out``: mass, core mass, x, y) by ``atan2(y, x) mod 2 pi``
    in place and renumber ``owner``; True when the order is sure: consecutive angles more than
    :data:`SURE` apart, and from the cut at 0 (numpy's arctan may differ in the last bits)."""
    k = out.shape[1]
    angle = np.empty(k)
    for j in range(k):
        angle[j] = math.atan2(out[3, j], out[2, j]) % (2.0 * np.pi)
    order = np.arange(k)  # a stable insertion sort: a few atoms (np.argsort's mergesort
    for j in range(1, k):  # costs seconds of compilation on a first run)
        o, i = order[j], j - 1
        while i >= 0 and angle[order[i]] > angle[o]:
            order[i + 1] = order[i]
            i -= 1
        order[i + 1] = o
    sure = k < 2 or (angle[order[0]] > SURE and angle[order[k - 1]] < 2.0 * np.pi - SURE)
    for j in range(1, k):
        sure = sure and angle[order[j]] - angle[order[j - 1]] > SURE
    new = np.empty(k, dtype=np.int64)
    for j in range(k):
        new[order[j]] = j
    for i in range(owner.size):
        if owner[i] >= 0:
            owner[i] = new[owner[i]]
    moved = out.copy()
    for j in range(k):
        for r in range(4):
            out[r, j] = moved[r, order[j]]
    return sure
