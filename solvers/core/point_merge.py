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


def merge_labels(x: np.ndarray, radius: float) -> tuple[int, np.ndarray] | None:
    """The groups of the points ``x`` (n, d) joined by pairs closer than ``radius`` (chord):
    ``(k, label (n,))`` with labels ``0 .. k-1``, or None when no two points are that close."""
    n = x.shape[0]
    pairs = cKDTree(x).query_pairs(radius, output_type="ndarray") if n > 1 else np.zeros((0, 2))
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
