"""Atom (cluster) detection for grid densities on S^2.

As on S^1 (:mod:`solvers.circle.atoms`): cells denser than ``contrast * M / 4 pi`` are treated as
weighted particles at their centres and grouped by single linkage within geodesic distance
``radius`` (default ``min(1/(2 beta), pi/(2 d))`` with d = 3, the paper's rule); groups holding
at least ``min_mass`` are atoms, located at their normalised centre of mass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from solvers.model.params import AtomParams


@dataclass(frozen=True)
class SphereAtoms:
    """Detected atoms, heaviest first: ``mass`` (n,), ``position`` (n, 3) unit vectors."""

    mass: np.ndarray
    position: np.ndarray

    @property
    def count(self) -> int:
        return int(self.mass.size)


def default_radius(beta: float, dim: int = 3) -> float:
    """``min(1/(2 beta), pi/(2 d))`` (paper section 4)."""
    return min(1.0 / (2.0 * beta), np.pi / (2.0 * dim))


def detect_atoms(points: np.ndarray, cell_mass: np.ndarray, area: np.ndarray, beta: float,
                 params: AtomParams, cell: float = 0.0) -> SphereAtoms:
    """Group the mass of a grid density into atoms.

    Parameters
    ----------
    points : ndarray, shape (n, 3)
        Cell centres (unit vectors).
    cell_mass : ndarray, shape (n,)
        ``rho * area`` per cell (negative values are ignored).
    area : ndarray, shape (n,)
        Cell areas (for the contrast test: density = mass / area).
    beta : float
    params : AtomParams
    cell : float
        Largest cell width (radians): the radius is never below 1.5 cells (an atom occupies
        one or two cells of the finite-volume grid).
    """
    total = float(np.sum(np.maximum(cell_mass, 0.0)))
    radius = max(params.radius if params.radius is not None else default_radius(beta), 1.5 * cell)
    idx = np.nonzero(cell_mass / area > params.contrast * total / (4.0 * np.pi))[0]
    if idx.size == 0:
        return SphereAtoms(np.zeros(0), np.zeros((0, 3)))
    pts, mass = points[idx], cell_mass[idx]
    pairs = cKDTree(pts).query_pairs(2.0 * np.sin(0.5 * radius) * (1 + 1e-12), output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(idx.size,) * 2)
    n_groups, label = connected_components(graph, directed=False)
    masses = np.bincount(label, mass, n_groups)
    centre = np.stack([np.bincount(label, mass * pts[:, i], n_groups) for i in range(3)], axis=1)
    keep = masses >= params.min_mass
    masses, centre = masses[keep], centre[keep]
    centre /= np.linalg.norm(centre, axis=1, keepdims=True)
    order = np.argsort(-masses)
    return SphereAtoms(masses[order], centre[order])
