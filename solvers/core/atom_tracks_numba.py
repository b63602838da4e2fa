"""The fast path of :meth:`solvers.core.atom_tracks.AtomTracks.link` as one compiled call.

Linking runs twice per snapshot (the stop rule and the archive records) on a handful of
atoms, where a dozen small numpy calls cost more than the arithmetic. The kernel does what
:meth:`AtomTracks._same_atoms` does (the numpy reference, tested equal): build the matching
cost of every (living identity, new atom) pair and accept the pairing when each pair is the
strictly cheapest, by :data:`TIE_MARGIN`, in its row and its column;
:func:`continue_identities` is the whole fast path of ``link`` in one call (the living
identities, the pairing and the update). Import through
:func:`solvers.core.backend.resolve_backend` (numba is optional).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def same_atoms(unit_old: np.ndarray, mass_old: np.ndarray, unit_new: np.ndarray,
               mass_new: np.ndarray, radius: float, margin: float) -> np.ndarray:
    """Identity pairing of equally many old (n, d) and new (n, d) atoms, or an empty array.

    Returns ``row`` (n,): the new atom paired with old identity ``i`` is ``row[i]``.
    """
    n, d = unit_old.shape
    cost = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            dot = 0.0
            for k in range(d):
                dot += unit_old[i, k] * unit_new[j, k]
            dist = math.acos(min(max(dot, -1.0), 1.0))
            big = max(max(mass_new[j], mass_old[i]), 1e-300)
            cost[i, j] = np.inf if dist > radius else dist / radius + abs(mass_new[j] - mass_old[i]) / big
    row = np.empty(n, np.int64)
    for i in range(n):
        best, arg, second = np.inf, -1, np.inf
        for j in range(n):
            if cost[i, j] < best:
                best, arg, second = cost[i, j], j, best
            elif cost[i, j] < second:
                second = cost[i, j]
        if arg < 0 or not second > best + margin:
            return np.empty(0, np.int64)
        for k in range(n):  # column: every other identity strictly dearer for this atom
            if k != i and not cost[k, arg] > best + margin:
                return np.empty(0, np.int64)
        row[i] = arg
    return row


@njit(cache=True, error_model="numpy")
def continue_identities(unit: np.ndarray, mass: np.ndarray, new_unit: np.ndarray,
                        new_mass: np.ndarray, radius: float, margin: float
                        ) -> tuple[bool, np.ndarray]:
    """The fast path of ``AtomTracks.link`` whole: when every new atom (``new_unit`` (n, d),
    ``new_mass`` (n,)) continues one living identity (``mass`` finite) by :func:`same_atoms`,
    write the new units and masses into ``unit`` (k, d) and ``mass`` (k,) and return
    ``(True, ids (n,))``; else ``(False, empty)`` and nothing written."""
    alive = np.empty(mass.size, np.int64)
    m = 0
    for i in range(mass.size):
        if np.isfinite(mass[i]):
            alive[m] = i
            m += 1
    n = new_mass.size
    if m != n:
        return False, np.empty(0, np.int64)
    if n == 0:
        return True, np.empty(0, np.int64)
    d = unit.shape[1]
    unit_old, mass_old = np.empty((m, d)), np.empty(m)
    for a in range(m):  # (loops, not fancy indexing: that costs seconds of compilation)
        mass_old[a] = mass[alive[a]]
        for k in range(d):
            unit_old[a, k] = unit[alive[a], k]
    row = same_atoms(unit_old, mass_old, new_unit, new_mass, radius, margin)
    if row.size == 0:
        return False, row
    ids = np.empty(n, np.int64)
    for i in range(n):
        ids[row[i]] = alive[i]
    for j in range(n):
        for k in range(d):
            unit[ids[j], k] = new_unit[j, k]
        mass[ids[j]] = new_mass[j]
    return True, ids


@njit(cache=True, error_model="numpy")
def continue_angles(unit: np.ndarray, mass: np.ndarray, angle: np.ndarray, new_mass: np.ndarray,
                    radius: float, margin: float) -> tuple[bool, np.ndarray]:
    """:func:`continue_identities` for S^1 atoms at angles ``angle`` (n,) (unit vectors
    ``(cos, sin)``, as ``unit_vectors``)."""
    new_unit = np.empty((angle.size, 2))
    for i in range(angle.size):
        new_unit[i, 0] = math.cos(angle[i])
        new_unit[i, 1] = math.sin(angle[i])
    return continue_identities(unit, mass, new_unit, new_mass, radius, margin)


@njit(cache=True)
def record_atoms(ids: np.ndarray, mass: np.ndarray, position: np.ndarray, core: np.ndarray,
                 labels: np.ndarray, rho: np.ndarray, weight: np.ndarray, prev_ids: np.ndarray,
                 prev_mass: np.ndarray, have_prev: bool, end_time: np.ndarray, t: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A record's atom columns, cells and mass budget in one pass (``RecordBuffer._atoms``
    with ``cell_identities`` and ``mass_budget``: the same sums in the same order as their
    ``bincount``).

    Returns ``(table (5, k), cells (N,), cell_mass (N,))``. ``table`` holds by identity
    (``ids`` (n,); k = ``end_time.size`` identities so far; NaN elsewhere) the atoms' ``mass``,
    ``position`` (S^1 angles; an empty ``position`` leaves the row NaN) and ``core`` (NaN unless
    one per atom), then the mass gained and lost per identity since the previous record
    (``prev_ids``, ``prev_mass`` (N,); NaN without one, and for identities neither in ``ids``
    nor ended at ``t``: ``end_time == t``); ``cells`` each cell's identity (-1 diffuse) from
    ``labels``, ``cell_mass`` is ``rho * weight``.
    """
    n, size = labels.size, end_time.size
    table = np.full((5, size), np.nan)
    for j in range(ids.size):
        table[0, ids[j]] = mass[j]
        if position.size:
            table[1, ids[j]] = position[j]
        if core.size == ids.size:
            table[2, ids[j]] = core[j]
    cells, cell_mass = np.empty(n, np.int64), np.empty(n)
    for i in range(n):
        if labels[i] >= ids.size:
            raise IndexError("an atom label is not an index into the atoms")
        cells[i] = ids[labels[i]] if labels[i] >= 0 else -1
        cell_mass[i] = rho[i] * weight[i]
    if not have_prev:
        return table, cells, cell_mass
    g, lo = np.zeros(size), np.zeros(size)
    for i in range(n):
        if prev_ids[i] != cells[i]:
            if 0 <= cells[i] < size:
                g[cells[i]] += cell_mass[i]
            if 0 <= prev_ids[i] < size:
                lo[prev_ids[i]] += prev_mass[i]
    for k in range(size):
        if end_time[k] == t:
            table[3, k], table[4, k] = g[k], lo[k]
    for k in ids:
        table[3, k], table[4, k] = g[k], lo[k]
    return table, cells, cell_mass
