"""The S^1 basin detector of :mod:`solvers.core.atoms` as one compiled (numba) call.

Same algorithm and the same comparisons, in the same order, as the array reference
(``flow_pointer`` -> ``follow`` -> ``split_at_saddles`` -> ``measure_atoms`` with ``core_of``):
labels agree exactly and masses and positions to round-off (sums run left to right here,
pairwise in numpy; tests/circle/test_atoms_numba.py). A snapshot's atoms then cost a few
microseconds instead of a millisecond of small array operations (issue: cheap snapshots).

Import only through :func:`solvers.circle.atoms.detect_atoms` (numba is optional at run time).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.core.atoms_numba import _groups, _inside, _roots, split_edges, within_cap


@njit(cache=True)
def _core(cells: np.ndarray, cell_mass: np.ndarray, px: np.ndarray, py: np.ndarray, h: float,
          sx: float, sy: float, radius: float) -> tuple[float, float, float]:
    """``core_of`` on the ring: centre of mass (x, y) and the mass within ``radius``. Cells
    farther than ``radius + h`` have weight exactly 0 and are skipped (same sums)."""
    near = math.cos(min(radius + h, np.pi))
    ux, uy = sx, sy
    for _ in range(8):
        cx, cy = 0.0, 0.0
        for c in cells:
            dot = px[c] * ux + py[c] * uy
            if dot < near:
                continue
            w = max(cell_mass[c], 0.0) * _inside(math.acos(min(max(dot, -1.0), 1.0)), radius, h)
            cx += w * px[c]
            cy += w * py[c]
        norm = math.sqrt(cx * cx + cy * cy)
        if norm == 0.0:
            return ux, uy, 0.0
        nx, ny = cx / norm, cy / norm
        done = math.sqrt((nx - ux) ** 2 + (ny - uy) ** 2) < 1e-14
        ux, uy = nx, ny
        if done:
            break
    total = 0.0
    for c in cells:
        dot = px[c] * ux + py[c] * uy
        if dot >= near:
            total += max(cell_mass[c], 0.0) * _inside(math.acos(min(max(dot, -1.0), 1.0)), radius, h)
    return ux, uy, total


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
def detect_ring(face_velocity: np.ndarray, cell_mass: np.ndarray, px: np.ndarray, py: np.ndarray,
                edges: np.ndarray, nbr: np.ndarray, length: np.ndarray, contrast: float, min_mass: float,
                ratio: float, core: float, cap: float, slack: float, concentrated: float):
    """Basin atoms of a density on the ring of N cells.

    Returns ``(ok, labels (N,), mass (n,), core_mass (n,), x (n,), y (n,), diffuse)`` in
    detection order; ``ok`` False when the flow pointers form a cycle (the caller falls back to
    the reference, which raises).
    """
    n = cell_mass.size
    h = 2.0 * np.pi / n
    pointer = np.empty(n, dtype=np.int64)
    for i in range(n):
        right = face_velocity[i] > 0.0
        left = face_velocity[i - 1] < 0.0  # i - 1 = -1 wraps to the last face
        if right and left:
            pointer[i] = -1
        elif right:
            pointer[i] = (i + 1) % n
        elif left:
            pointer[i] = (i - 1) % n
        else:
            pointer[i] = i
    basin = _roots(pointer)
    owner = np.full(n, -1, dtype=np.int64)
    empty = np.zeros(0)
    if n and basin[0] == -2:
        return False, owner, empty, empty, empty, empty, 0.0
    density = cell_mass / h
    labels = split_edges(basin, density, edges, nbr, length, ratio)
    total = 0.0
    for i in range(n):
        total += cell_mass[i]
    floor = contrast * abs(total) / (2.0 * np.pi)
    order, bounds = _groups(labels)
    cos_cap = math.cos(min(cap * slack, np.pi))
    points = np.empty((n, 2))
    points[:, 0], points[:, 1] = px, py
    mass_l, core_l, x_l, y_l = [0.0], [0.0], [0.0], [0.0]
    count = 0
    keep = np.empty(n, dtype=np.int64)
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
        ux, uy, cm = _core(keep[:k], cell_mass, px, py, h, px[top], py[top], core)
        for c in keep[:k]:
            owner[c] = count
        mass_l.append(m)
        core_l.append(cm)
        x_l.append(ux)
        y_l.append(uy)
        count += 1
    mass = np.array(mass_l[1:])
    diffuse = total - mass.sum()
    return True, owner, mass, np.array(core_l[1:]), np.array(x_l[1:]), np.array(y_l[1:]), diffuse
