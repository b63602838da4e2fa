"""Finite-volume cells on S^2 built on the Gauss grid of :class:`spectral.SphereBasis`.

Cell ``(j, k)`` is centred at the Gauss node ``(theta_j, phi_k)``. In ``mu = cos(theta)`` its
band spans ``[mu_{j+1/2}, mu_{j-1/2}]`` with ``mu_{1/2} = 1`` and
``mu_{j+1/2} = 1 - sum_{i <= j} w_i`` (``w`` the Gauss-Legendre weights, summing to 2), and in
longitude ``[phi_k - dphi/2, phi_k + dphi/2]``. So every cell's area equals its quadrature
weight exactly: the Gauss analysis of a grid density gives the exact moments of the measure
that puts the mass ``rho_jk * area_jk`` at the cell centre.

Polar cell merging (the reduced grid): near the poles a longitude cell is tiny
(``sin(theta) dphi``), so an explicit step limited by every cell's Courant number would shrink
like ``1/lmax^2``. In band ``j`` we merge ``r_j`` consecutive longitude cells (``r_j`` divides
``nphi``), the smallest with ``sin(theta_j) r_j dphi >= merge_ratio * dtheta_j``; a merged cell
is one finite volume (one value, stored repeated over its fine cells).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from spectral.sphere import SphereBasis


@dataclass(frozen=True)
class SphereGrid:
    """Cells, faces and the reduced (merged) polar grid.

    Parameters
    ----------
    lmax : int
        Spectral truncation; the grid is ``SphereBasis(lmax)``'s Gauss grid.
    merge_ratio : float
        Target aspect ratio ``(zonal width) / (meridional width)`` of merged polar cells
        (0 disables merging).
    """

    lmax: int
    merge_ratio: float = 0.5

    @cached_property
    def basis(self) -> SphereBasis:
        return SphereBasis(self.lmax)

    @property
    def shape(self) -> tuple[int, int]:
        return self.basis.shape

    @property
    def dphi(self) -> float:
        return 2.0 * np.pi / self.basis.nphi

    @cached_property
    def theta(self) -> np.ndarray:
        """Cell-centre colatitudes (Gauss nodes), shape (nlat,)."""
        return self.basis.theta

    @cached_property
    def phi(self) -> np.ndarray:
        """Cell-centre longitudes, shape (nphi,)."""
        return self.basis.phi

    @cached_property
    def gauss_weights(self) -> np.ndarray:
        """Gauss-Legendre weights in ``mu``, shape (nlat,), summing to 2."""
        return self.basis.weights[:, 0] / self.dphi

    @cached_property
    def mu_faces(self) -> np.ndarray:
        """``cos`` of the band boundaries from the north pole (1) to the south pole (-1), (nlat+1,)."""
        mu = 1.0 - np.concatenate([[0.0], np.cumsum(self.gauss_weights)])
        mu[-1] = -1.0
        return mu

    @cached_property
    def theta_faces(self) -> np.ndarray:
        """Band-boundary colatitudes, shape (nlat + 1,), from 0 to pi."""
        return np.arccos(np.clip(self.mu_faces, -1.0, 1.0))

    @cached_property
    def phi_faces(self) -> np.ndarray:
        """Right longitude faces ``phi_k + dphi/2``, shape (nphi,)."""
        return self.phi + 0.5 * self.dphi

    @cached_property
    def area(self) -> np.ndarray:
        """Cell areas = quadrature weights, shape (nlat, nphi), summing to 4 pi."""
        return self.basis.weights

    @cached_property
    def dtheta(self) -> np.ndarray:
        """Meridional cell widths ``theta_{j+1/2} - theta_{j-1/2}``, shape (nlat,)."""
        return np.diff(self.theta_faces)

    @cached_property
    def merge(self) -> np.ndarray:
        """Merge factor ``r_j`` of every band (a divisor of nphi), shape (nlat,)."""
        nphi = self.basis.nphi
        divisors = np.array([d for d in range(1, nphi + 1) if nphi % d == 0])
        out = np.ones(self.basis.nlat, dtype=int)
        if self.merge_ratio <= 0:
            return out
        for j, (st, dth) in enumerate(zip(np.sin(self.theta), self.dtheta)):
            ok = divisors[st * divisors * self.dphi >= self.merge_ratio * dth]
            out[j] = int(ok[0]) if ok.size else nphi
        return out

    @cached_property
    def cell_id(self) -> np.ndarray:
        """Index of the (merged) finite volume of every fine cell, shape (nlat, nphi)."""
        nphi = self.basis.nphi
        counts = nphi // self.merge
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        k = np.arange(nphi)
        return offsets[:, None] + k[None, :] // self.merge[:, None]

    @property
    def n_cells(self) -> int:
        """Number of finite volumes after merging."""
        return int(np.sum(self.basis.nphi // self.merge))

    def to_cells(self, fine: np.ndarray) -> np.ndarray:
        """Area-weighted averages of a fine-grid field over the finite volumes, shape (n_cells,)."""
        a = self.area.ravel()
        ids = self.cell_id.ravel()
        return np.bincount(ids, a * fine.ravel(), self.n_cells) / np.bincount(ids, a, self.n_cells)

    def to_fine(self, cells: np.ndarray) -> np.ndarray:
        """Finite-volume values repeated over their fine cells, shape (nlat, nphi)."""
        return cells[self.cell_id]

    def fine_cell(self, x: np.ndarray) -> np.ndarray:
        """Flat (nlat * nphi) index of the fine cell holding each point of ``x`` (n, 3), shape (n,)."""
        nlat, nphi = self.shape
        x = np.asarray(x, dtype=float).reshape(-1, 3)
        theta = np.arccos(np.clip(x[:, 2] / np.linalg.norm(x, axis=1), -1.0, 1.0))
        j = np.clip(np.searchsorted(self.theta_faces, theta, side="right") - 1, 0, nlat - 1)
        phi = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2.0 * np.pi)
        k = np.floor(phi / self.dphi + 0.5).astype(int) % nphi
        return j * nphi + k

    @cached_property
    def centres(self) -> np.ndarray:
        """Cell centres as unit vectors, row-major over (nlat, nphi), shape (nlat * nphi, 3)
        (read-only)."""
        out = self.points(self.theta, self.phi).reshape(-1, 3)
        out.flags.writeable = False
        return out

    def points(self, theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
        """Cartesian points of the outer product ``theta x phi``, shape (len(theta), len(phi), 3)."""
        st, ct = np.sin(theta)[:, None], np.cos(theta)[:, None]
        cp, sp = np.cos(phi)[None, :], np.sin(phi)[None, :]
        return np.stack(np.broadcast_arrays(st * cp, st * sp, ct), axis=-1)
