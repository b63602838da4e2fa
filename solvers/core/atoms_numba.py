"""The basin detector of :mod:`solvers.core.atoms` on any cell graph, compiled (numba).

Same algorithm and the same comparisons, in the same order, as the array reference
(``steepest_ascent`` -> ``follow`` -> ``split_at_saddles`` -> ``measure_atoms`` with
``core_of`` and ``_cell_scale_atom``): labels agree exactly, masses and positions to round-off
(sums run left to right here, pairwise or by BLAS in numpy; the tests compare the two on the
sphere's cell graph). On a 128 x 256 cell graph a snapshot's atoms cost about a millisecond
instead of 18. A manifold whose cells form a ring may build a special case on the helpers here.

Import only through the manifold modules (numba is optional at run time).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _roots(pointer: np.ndarray) -> np.ndarray:
    """Root of every cell under ``pointer`` (-1: leads to a source); all -2 on a cycle."""
    n = pointer.size
    root = np.full(n, -3, dtype=np.int64)  # -3: not yet known
    path = np.empty(n, dtype=np.int64)
    for start in range(n):
        if root[start] != -3:  # known (on an earlier path)
            continue
        k, c = 0, start
        while c >= 0 and root[c] == -3:
            if k >= n:  # longer than the ring: a cycle
                return np.full(n, -2, dtype=np.int64)
            path[k] = c
            k += 1
            nxt = pointer[c]
            if nxt == c:
                break
            c = nxt
        if c < 0:
            r = -1
        elif root[c] != -3:
            r = root[c]
        else:  # c is a root (points to itself)
            r = c
        for i in range(k):
            root[path[i]] = r
    return root


@njit(cache=True)
def _find(parent: np.ndarray, x: int) -> int:
    while parent[x] != x:
        x = parent[x]
    return x


@njit(cache=True)
def _groups(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells grouped by label (labels in 0..N-1; -1 left out), groups in ascending label and
    cells in ascending index (as a stable argsort): ``(order, bounds)``."""
    n = labels.size
    counts = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        if labels[i] >= 0:
            counts[labels[i] + 1] += 1
    start = np.cumsum(counts)
    fill = start[:-1].copy()
    order = np.empty(start[-1], dtype=np.int64)
    for i in range(n):
        if labels[i] >= 0:
            order[fill[labels[i]]] = i
            fill[labels[i]] += 1
    used = 1
    for v in range(n):
        if counts[v + 1] > 0:
            used += 1
    bounds = np.empty(used, dtype=np.int64)
    bounds[0], j = 0, 1
    for v in range(n):
        if counts[v + 1] > 0:
            bounds[j] = start[v + 1]
            j += 1
    return order, bounds


@njit(cache=True, inline="always")
def _inside(dist: float, radius: float, width: float) -> float:
    return min(max((radius - dist) / width + 0.5, 0.0), 1.0)


@njit(cache=True)
def ascent(values: np.ndarray, labels: np.ndarray, nbr: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``steepest_ascent(values, graph, labels)``: each cell's neighbour of steepest ascent
    (among equal slopes the last in edge order; on a plateau the equal neighbour of lower
    index), itself at a local maximum; moves only within equal ``labels`` (all 0: none); a cell
    labelled below 0 points to itself (no neighbour of another label is ever taken)."""
    n = values.size
    pointer = np.arange(n)
    for i in range(n):
        if labels[i] < 0:
            continue
        best, best_slope = -1, -np.inf
        for k in range(nbr.shape[1]):
            j = nbr[i, k]
            if j < 0 or not values[j] >= values[i]:  # (then no ascent: the slope is <= 0)
                continue
            slope = (values[j] - values[i]) / max(length[i, k], 1e-300)
            ok = slope > 0.0 or (values[j] == values[i] and j < i)
            if ok and labels[j] == labels[i] and slope >= best_slope:
                best, best_slope = j, slope
        if best >= 0:
            pointer[i] = best
    return pointer


@njit(cache=True)
def split_edges(labels: np.ndarray, density: np.ndarray, edges: np.ndarray, nbr: np.ndarray,
                length: np.ndarray, ratio: float) -> np.ndarray:
    """``split_at_saddles(labels, density, graph, ratio)`` over the graph's ``edges`` (E, 2)."""
    n = density.size
    peak = _roots(ascent(density, labels, nbr, length))
    for i in range(n):
        if labels[i] < 0:
            peak[i] = -1
    e = edges.shape[0]
    sad, ea, eb = np.empty(e), np.empty(e, dtype=np.int64), np.empty(e, dtype=np.int64)
    m = 0
    for k in range(e):
        i, j = edges[k, 0], edges[k, 1]
        if labels[i] == labels[j] and labels[i] >= 0 and peak[i] != peak[j]:
            s = min(density[i], density[j])
            a, b = peak[i], peak[j]
            if s >= ratio * min(density[a], density[b]):
                sad[m], ea[m], eb[m] = s, a, b
                m += 1
    parent = np.arange(n)
    for k in _argsort_descending(sad[:m]):
        ra, rb = _find(parent, ea[k]), _find(parent, eb[k])
        if ra != rb and sad[k] >= ratio * min(density[ra], density[rb]):
            if density[ra] >= density[rb]:
                parent[rb] = ra
            else:
                parent[ra] = rb
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = _find(parent, peak[i]) if peak[i] >= 0 else -1
    return out


@njit(cache=True)
def _argsort_descending(values: np.ndarray) -> np.ndarray:
    """``np.argsort(-values, kind="mergesort")``: indices by descending value, ties in index
    order, NaN last (a bottom-up merge sort; numba's own mergesort and its ``kind`` string cost
    seconds of compilation on a machine's first run)."""
    n = values.size
    order, spare = np.arange(n), np.empty(n, np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                a, b = values[order[i]], values[order[j]]
                if b > a or (a != a and b == b):  # the right one first only if strictly before
                    spare[k] = order[j]
                    j += 1
                else:
                    spare[k] = order[i]
                    i += 1
                k += 1
            while i < mid:
                spare[k] = order[i]
                i, k = i + 1, k + 1
            while j < hi:
                spare[k] = order[j]
                j, k = j + 1, k + 1
        order, spare = spare, order
        width *= 2
    return order


@njit(cache=True, inline="always")
def _dot(points: np.ndarray, a: int, unit: np.ndarray) -> float:
    dot = 0.0
    for k in range(points.shape[1]):
        dot += points[a, k] * unit[k]
    return dot


@njit(cache=True)
def core(cells: np.ndarray, cell_mass: np.ndarray, points: np.ndarray, width: np.ndarray,
         start: np.ndarray, radius: float) -> tuple[np.ndarray, float]:
    """``core_of``: centre of mass (d,) of ``cells`` within ``radius`` of it, and that mass."""
    d = points.shape[1]
    unit = start.copy()
    wide = 0.0
    for c in cells:
        wide = max(wide, width[c])
    # beyond radius + width/2 a cell's weight is exactly 0: skip it without an arccos; within
    # radius - width/2 exactly 1 (the clamp in _inside): no arccos either (the margin 1e-9 in the
    # cosine keeps (radius - dist) / width + 0.5 above 1 by far more than its rounding)
    near = math.cos(min(radius + 0.5 * wide, np.pi)) - 1e-9
    inner = math.cos(radius - 0.5 * wide) + 1e-9 if radius > 0.5 * wide else 2.0
    for _ in range(8):
        centre = np.zeros(d)
        for c in cells:
            dot = _dot(points, c, unit)
            if dot < near:
                continue
            w = max(cell_mass[c], 0.0)
            if dot <= inner:
                w *= _inside(math.acos(min(max(dot, -1.0), 1.0)), radius, width[c])
            for k in range(d):
                centre[k] += w * points[c, k]
        norm = math.sqrt(np.sum(centre * centre))
        if norm == 0.0:
            return unit, 0.0
        new = centre / norm
        done = math.sqrt(np.sum((new - unit) ** 2)) < 1e-14
        unit = new
        if done:
            break
    total = 0.0
    for c in cells:
        dot = _dot(points, c, unit)
        if dot >= near:
            w = max(cell_mass[c], 0.0)
            if dot <= inner:
                w *= _inside(math.acos(min(max(dot, -1.0), 1.0)), radius, width[c])
            total += w
    return unit, total


@njit(cache=True)
def cell_scale(cells: np.ndarray, top: int, density: np.ndarray, cell_mass: np.ndarray,
               nbr: np.ndarray, width: np.ndarray, dim: int, contrast: float, mass: float,
               concentrated: float) -> bool:
    """``_cell_scale_atom``: the peak cell and its neighbours hold ``concentrated`` of the
    region's mass, and the peak exceeds ``contrast`` times the region's mean density."""
    near, area = 0.0, 0.0
    for c in cells:
        hit = c == top
        for k in range(nbr.shape[1]):
            hit = hit or nbr[top, k] == c
        if hit:
            near += cell_mass[c]
        area += width[c] * width[c] if dim == 3 else width[c]  # width ** (dim - 1)
    if near < concentrated * mass:
        return False
    return density[top] > contrast * mass / area


@njit(cache=True)
def within_cap(group: np.ndarray, top: int, points: np.ndarray, cell_mass: np.ndarray,
               cos_cap: float, cap: float, keep: np.ndarray) -> tuple[int, float]:
    """The cells of ``group`` within ``cap`` of cell ``top`` into ``keep[:k]``, and their mass:
    ``(k, mass)`` (``cos_cap = cos(cap)``)."""
    k, m, unit = 0, 0.0, points[top]
    for c in group:
        dot = _dot(points, c, unit)
        if dot < cos_cap - 1e-9:  # surely beyond the cap (arccos only near it)
            continue
        if dot > cos_cap + 1e-9 or math.acos(min(max(dot, -1.0), 1.0)) <= cap:
            keep[k] = c
            k += 1
            m += cell_mass[c]
    return k, m


@njit(cache=True)
def detect_graph(pointer: np.ndarray, density: np.ndarray, cell_mass: np.ndarray,
                 points: np.ndarray, width: np.ndarray, edges: np.ndarray, nbr: np.ndarray,
                 length: np.ndarray, measure: float, contrast: float, min_mass: float,
                 ratio: float, core_radius: float, cap: float, slack: float,
                 concentrated: float, candidate: np.ndarray, centres: bool):
    """``detect`` with ``method = "basin"``: the atoms of the flow ``pointer`` (n,).

    ``candidate`` (n,) bool, or empty for all: only the flow's basins that hold a candidate
    cell are looked at (the atoms found there are those of the whole detection; the other
    basins' cells are labelled -1 and their mass counts as diffuse). ``centres`` False: each
    atom's position is its peak cell and its core mass 0 (no centre-of-mass iteration).

    Returns ``(ok, labels (n,), mass (k,), core_mass (k,), unit (k, d), diffuse)`` in
    detection order (ascending root cell); ``ok`` False when the pointers form a cycle (the
    caller then runs the reference, which raises).
    """
    n, d = points.shape
    owner = np.full(n, -1, dtype=np.int64)
    basin = _roots(pointer)
    if n and basin[0] == -2:
        return False, owner, np.zeros(0), np.zeros(0), np.zeros((0, d)), 0.0
    if candidate.size == n:
        wanted = np.zeros(n, dtype=np.bool_)
        for i in range(n):
            if candidate[i] and basin[i] >= 0:
                wanted[basin[i]] = True
        for i in range(n):
            if basin[i] >= 0 and not wanted[basin[i]]:
                basin[i] = -1
    labels = split_edges(basin, density, edges, nbr, length, ratio)
    total = 0.0
    for i in range(n):
        total += cell_mass[i]
    floor = contrast * abs(total) / measure
    order, bounds = _groups(labels)
    cos_cap = math.cos(min(cap * slack, np.pi))
    masses, cores = [0.0], [0.0]
    units = np.empty((bounds.size, d))
    keep = np.empty(n, dtype=np.int64)
    count = 0
    for g in range(bounds.size - 1):
        group = order[bounds[g]:bounds[g + 1]]
        top = group[0]
        for c in group:
            if density[c] > density[top]:
                top = c
        faint = density[top] <= floor
        if faint:
            m = 0.0
            for c in group:
                m += cell_mass[c]
            if m < min_mass:
                continue
        k, m = within_cap(group, top, points, cell_mass, cos_cap, cap * slack, keep)
        if m < min_mass:
            continue
        if faint and not cell_scale(keep[:k], top, density, cell_mass, nbr, width, d, contrast,
                                    m, concentrated):
            continue
        if centres:
            unit, cm = core(keep[:k], cell_mass, points, width, points[top].copy(), core_radius)
        else:
            unit, cm = points[top].copy(), 0.0
        for c in keep[:k]:
            owner[c] = count
        masses.append(m)
        cores.append(cm)
        units[count] = unit
        count += 1
    mass = np.array(masses[1:])
    return True, owner, mass, np.array(cores[1:]), units[:count].copy(), total - mass.sum()
