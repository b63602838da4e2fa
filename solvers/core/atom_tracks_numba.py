"""The fast path of :meth:`solvers.core.atom_tracks.AtomTracks.link` as one compiled call.

Linking runs twice per snapshot (the stop rule and the archive records) on a handful of
atoms, where a dozen small numpy calls cost more than the arithmetic. The kernel does what
:meth:`AtomTracks._same_atoms` does (the numpy reference, tested equal): build the matching
cost of every (living identity, new atom) pair and accept the pairing when each pair is the
strictly cheapest, by :data:`TIE_MARGIN`, in its row and its column. Import through
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
