"""Atom (cluster) detection for grid densities on S^1.

The paper (section 4) groups particles within ``min(1/(2 beta), pi/4)`` on S^1 and counts the
groups; Theorem 3.5 bounds the mass of a cluster of diameter ``<= 1/(2 beta)`` (docs/math.md §5).
For a density we do the same with the cells as weighted particles, after discarding cells
whose density is below ``contrast`` times the uniform density ``M / 2 pi`` (so a smooth,
spread-out density has no atoms), and report groups holding at least ``min_mass``. The radius
is never below 1.5 cell widths (:func:`effective_radius`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.model.params import AtomParams


@dataclass(frozen=True)
class Atoms:
    """Detected atoms, sorted by position.

    mass : ndarray, shape (n_atoms,)
    position : ndarray, shape (n_atoms,)
        Circular centre of mass in [0, 2 pi).
    """

    mass: np.ndarray
    position: np.ndarray

    @property
    def count(self) -> int:
        return int(self.mass.size)


def default_radius(beta: float) -> float:
    """Grouping distance ``min(1/(2 beta), pi/4)`` on S^1 (paper section 4)."""
    return min(1.0 / (2.0 * beta), np.pi / 4.0)


def effective_radius(radius: float, cell: float) -> float:
    """The grouping radius, but at least 1.5 cell widths.

    A finite-volume atom occupies one or two cells; at large beta the paper's radius
    ``1/(2 beta)`` falls below a cell (beta = 50 at N = 256), and the two cells of one atom
    would count as two atoms.
    """
    return max(radius, 1.5 * cell)


def _groups(idx: np.ndarray, theta: np.ndarray, radius: float) -> list[np.ndarray]:
    """Single-linkage groups of the sorted cell indices ``idx`` on the circle."""
    if idx.size == 0:
        return []
    pos = theta[idx]
    gaps = np.diff(np.append(pos, pos[0] + 2.0 * np.pi))  # gap after each cell, cyclic
    breaks = np.nonzero(gaps > radius + 1e-12)[0]
    if breaks.size == 0:
        return [idx]
    start = (breaks[-1] + 1) % idx.size  # begin right after a break: no group straddles the seam
    order = np.roll(idx, -start)
    cut = np.sort((breaks - start) % idx.size) + 1
    return [g for g in np.split(order, cut) if g.size]


def detect_atoms(theta: np.ndarray, cell_mass: np.ndarray, beta: float, params: AtomParams) -> Atoms:
    """Group the mass of a grid density into atoms.

    Parameters
    ----------
    theta : ndarray, shape (N,)
        Cell centres.
    cell_mass : ndarray, shape (N,)
        ``rho_i * h`` (negative values, possible with the spectral scheme, are ignored).
    beta : float
    params : AtomParams

    Returns
    -------
    Atoms
    """
    n = theta.size
    total = float(np.sum(np.maximum(cell_mass, 0.0)))
    radius = effective_radius(params.radius if params.radius is not None else default_radius(beta),
                              2.0 * np.pi / n)
    idx = np.nonzero(cell_mass > params.contrast * total / n)[0]
    masses, positions = [], []
    for g in _groups(idx, theta, radius):
        m = float(cell_mass[g].sum())
        if m >= params.min_mass:
            z = np.sum(cell_mass[g] * np.exp(1j * theta[g]))
            masses.append(m)
            positions.append(float(np.angle(z)) % (2.0 * np.pi))
    order = np.argsort(positions)
    return Atoms(np.asarray(masses)[order], np.asarray(positions)[order])
