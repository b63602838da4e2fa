"""Merging of weighted points on a sphere S^{d-1}: points closer than a radius become one.

The merged point keeps the group's mass and first moment: its mass is the sum, its position the
mass-weighted mean, normalised back to the sphere (the moment's direction). Groups are the
connected components of the pairs closer than the radius (chord), so chains merge transitively.
Used by particle states and the cell-particle check (:mod:`solvers.studies.cell_particles`).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree


TREE_DIM = 8  # close pairs by a k-d tree up to this dimension, from the Gram matrix above
BLOCK = 1 << 22  # Gram matrix entries per row block


def close_pairs(x: np.ndarray, radius: float) -> np.ndarray:
    """Index pairs ``(i, j)`` of the unit vectors ``x`` (n, d) closer than ``radius`` (chord),
    shape (p, 2): by a k-d tree in up to ``TREE_DIM`` dimensions, else from the Gram matrix in
    row blocks (a k-d tree prunes little in many dimensions; there ``i < j``)."""
    n = x.shape[0]
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    if x.shape[1] <= TREE_DIM:
        return cKDTree(x).query_pairs(radius, output_type="ndarray")
    cos_min = 1.0 - 0.5 * radius * radius  # |x - y| < r  <=>  x.y > 1 - r^2 / 2
    out = []
    step = max(1, BLOCK // n)
    for lo in range(0, n, step):
        i, j = np.nonzero(x[lo : lo + step] @ x.T > cos_min)
        keep = j > i + lo
        if np.any(keep):
            out.append(np.stack([i[keep] + lo, j[keep]], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 2), dtype=np.int64)


def merge_labels(x: np.ndarray, radius: float) -> tuple[int, np.ndarray] | None:
    """The groups of the points ``x`` (n, d) joined by pairs closer than ``radius`` (chord):
    ``(k, label (n,))`` with labels ``0 .. k-1``, or None when no two points are that close."""
    n = x.shape[0]
    pairs = close_pairs(x, radius)
    if pairs.size == 0:
        return None
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)


def combine(x: np.ndarray, w: np.ndarray, k: int, label: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` groups ``label`` (n,) of the points ``x`` (n, d) of masses ``w`` as one point
    each: ``(position (k, d), mass (k,))``, the mass-weighted mean normalised to the sphere."""
    mass = np.bincount(label, weights=w, minlength=k)
    moment = np.stack([np.bincount(label, weights=w * x[:, d], minlength=k)
                       for d in range(x.shape[1])], axis=1)
    return moment / np.linalg.norm(moment, axis=1, keepdims=True), mass


def new_atom_ids(w: np.ndarray, ids: np.ndarray, min_mass: float, next_id: int
                 ) -> tuple[np.ndarray, int]:
    """``(ids, next_id)``: every point of mass ``w >= min_mass`` without an identity (-1) gets
    the next one (a new Dirac atom), in order; ``ids`` itself when none does."""
    new = np.nonzero((ids < 0) & (w >= min_mass))[0]
    if new.size:
        ids = ids.copy()
        ids[new] = next_id + np.arange(new.size)
        next_id += int(new.size)
    return ids, next_id


def merge_close(x: np.ndarray, w: np.ndarray, radius: float, ids: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge the points ``x`` (n, d) of masses ``w`` (n,) closer than ``radius``.

    Identities ``ids`` (n,) (default all -1: none): a merged group keeps the identity of its
    heaviest member that has one, else -1. Returns ``(x, w, ids)``; the inputs unchanged when
    nothing is that close.
    """
    ids = np.full(w.size, -1) if ids is None else np.asarray(ids, int)
    found = merge_labels(x, radius)
    if found is None:
        return x, w, ids
    k, label = found
    merged_x, mass = combine(x, w, k, label)
    out = np.full(k, -1)
    heaviest = np.full(k, -np.inf)
    for i in np.nonzero(ids >= 0)[0]:
        if w[i] > heaviest[label[i]]:
            heaviest[label[i]], out[label[i]] = w[i], ids[i]
    return merged_x, mass, out
