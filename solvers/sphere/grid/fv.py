"""Finite-volume transport on S^2: ``d_t rho + s div(rho g) = 0`` (paper eq. 2.6) on the reduced grid.

Cells are those of :class:`~solvers.sphere.cells.SphereGrid` (Gauss bands; polar longitude cells
merged so that no cell is much narrower in longitude than in latitude). Fluxes:

- zonal, through the longitude faces of each (merged) cell: ``u_phi(theta_j, face) rho_face dtheta_j``;
- meridional, through band boundaries, per fine longitude segment:
  ``u_theta(theta_{j+1/2}, phi_k) rho_face sin(theta_{j+1/2}) dphi``; the poles are faces of zero length.

``rho_face`` is the upwind value of a limited linear reconstruction (MUSCL, van Leer 1979) in
each direction. Given the Euler step ``dt``, the outgoing fluxes of any cell that would send out
more than it holds are scaled to its content (docs/math.md §6): every forward-Euler sub-step of an SSP
integrator keeps ``rho >= 0``, and the telescoping fluxes conserve mass to round-off. The state
is stored on the fine (nlat, nphi) grid, constant over each merged cell.

``backend="numpy"`` runs the shtns analysis and the array methods below: the reference.
``backend="numba"`` (the default when numba imports, see :mod:`solvers.core.backend`) analyses
only the degrees ``l <= L`` the kernel keeps (:meth:`SphereProblem.kernel_coefficients`),
synthesises both face velocities with one batched irfft (:meth:`SphereProblem.face_velocities`)
and does everything after them in one compiled kernel, band by band
(:func:`solvers.sphere.grid.kernels_fv_numba.sphere_fv_rhs`); the two agree to round-off
(tests/core/test_backends.py, tests/core/test_fused_paths.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.core.backend import compute_threads, resolve_backend
from solvers.core.limiters import LIMITERS
from solvers.sphere.problem import SphereProblem


@dataclass(frozen=True)
class ReducedGridMaps:
    """Index maps of the merged cells (all arrays over the n_cells finite volumes)."""

    cell_id: np.ndarray  # (nlat, nphi) -> cell
    first: np.ndarray  # flat fine index of each cell's first fine cell
    band: np.ndarray  # band j of each cell
    right: np.ndarray  # next cell east in the same band
    left: np.ndarray  # next cell west
    right_face: np.ndarray  # flat (nlat, nphi) index of the fine longitude face east of the cell
    area: np.ndarray  # cell area
    zonal_width: np.ndarray  # sin(theta_j) r_j dphi

    @classmethod
    def build(cls, problem: SphereProblem) -> "ReducedGridMaps":
        g = problem.grid
        nlat, nphi = g.shape
        ids = g.cell_id
        n = g.n_cells
        flat = np.arange(nlat * nphi).reshape(nlat, nphi)
        first = np.full(n, nlat * nphi)
        np.minimum.at(first, ids.ravel(), flat.ravel())
        band = first // nphi
        r = g.merge[band]
        k0 = first % nphi
        counts = nphi // g.merge
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        local = np.arange(n) - offsets[band]
        right = offsets[band] + (local + 1) % counts[band]
        left = offsets[band] + (local - 1) % counts[band]
        area = np.bincount(ids.ravel(), g.area.ravel(), n)
        return cls(ids, first, band, right, left, band * nphi + (k0 + r - 1), area,
                   np.sin(g.theta[band]) * r * g.dphi)


def _muscl_states(rho: np.ndarray, prev: np.ndarray, nxt: np.ndarray, limiter: str) -> tuple[np.ndarray, np.ndarray]:
    """(value at the 'next' face, value at the 'prev' face) of every cell."""
    slope = LIMITERS[limiter](rho - prev, nxt - rho)
    return rho + 0.5 * slope, rho - 0.5 * slope


class SphereFV:
    """``rhs(rho, dt=None) -> (drho_dt, max_rate)`` for the fine-layout density (nlat, nphi)."""

    def __init__(self, problem: SphereProblem, limiter: str = "mc", mass_floor: float = 1e-6,
                 backend: str | None = None) -> None:
        if limiter not in LIMITERS:
            raise ValueError(f"time.limiter: unknown limiter {limiter!r}; use one of {', '.join(LIMITERS)}")
        self.problem, self.limiter, self.mass_floor = problem, limiter, mass_floor
        self.maps = ReducedGridMaps.build(problem)
        g = problem.grid
        self.dtheta = g.dtheta
        self.face_length = np.sin(g.theta_faces)[:, None] * g.dphi * np.ones((1, g.shape[1]))
        self.face_length[[0, -1]] = 0.0  # the poles
        self.backend = resolve_backend(backend)
        if self.backend == "numba":
            from solvers.core.kernels_numba import LIMITER_CODES

            m, c = self.maps, np.ascontiguousarray
            self._code = LIMITER_CODES[limiter]
            offset = m.cell_id[:, 0]  # first cell of every band
            self._kernel_maps = (
                c(g.merge, dtype=np.int64), c(offset, dtype=np.int64), int(g.n_cells), c(self.dtheta, dtype=float),
                c(self.face_length[:, 0], dtype=float), c(m.area[offset], dtype=float),
                c(m.zonal_width[offset], dtype=float))
            # the kernel takes these per band: check that they are constant along every band
            fl = self.face_length
            if not (np.array_equal(m.area, m.area[offset][m.band]) and np.array_equal(fl, fl[:, :1] + 0 * fl)
                    and np.array_equal(m.zonal_width, m.zonal_width[offset][m.band])):
                raise RuntimeError("reduced grid: cell geometry not constant along a band")
            self.fused_stage = self._fused_stage  # read by the Shu-Osher integrator (numba only)

    def cells(self, rho: np.ndarray) -> np.ndarray:
        """Value of every finite volume (its fine cells all hold it), shape (n_cells,)."""
        return rho.ravel()[self.maps.first]

    def zonal_flux(self, rho_c: np.ndarray, u_phi: np.ndarray) -> np.ndarray:
        """Mass flux (per time) through the east face of every cell, shape (n_cells,)."""
        m = self.maps
        east, west = _muscl_states(rho_c, rho_c[m.left], rho_c[m.right], self.limiter)
        u = u_phi.ravel()[m.right_face]
        return (np.maximum(u, 0.0) * east + np.minimum(u, 0.0) * west[m.right]) * self.dtheta[m.band]

    def meridional_flux(self, rho_f: np.ndarray, u_theta: np.ndarray) -> np.ndarray:
        """Mass flux (per time, southward positive) through every band-boundary segment, (nlat+1, nphi)."""
        prev = np.vstack([rho_f[:1], rho_f[:-1]])  # polar bands: zero slope (prev = own value)
        nxt = np.vstack([rho_f[1:], rho_f[-1:]])
        south, north = _muscl_states(rho_f, prev, nxt, self.limiter)
        flux = np.zeros_like(u_theta)
        u = u_theta[1:-1]
        flux[1:-1] = np.maximum(u, 0.0) * south[:-1] + np.minimum(u, 0.0) * north[1:]
        return flux * self.face_length

    def limit(self, fz: np.ndarray, fm: np.ndarray, rho_c: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Scale outgoing fluxes so that no cell sends out more than it holds in ``dt``."""
        m, n = self.maps, rho_c.size
        out = np.maximum(fz, 0.0) + np.maximum(-fz[m.left], 0.0)
        ids = m.cell_id
        out += np.bincount(ids.ravel(), np.maximum(fm[1:], 0.0).ravel(), n)  # south faces
        out += np.bincount(ids.ravel(), np.maximum(-fm[:-1], 0.0).ravel(), n)  # north faces
        content = rho_c * m.area
        sent = dt * out
        scale = np.where(sent > content, content / np.where(sent > 0, sent, 1.0), 1.0)
        scale = np.clip(scale, 0.0, 1.0)
        fz = np.where(fz > 0, fz * scale, fz * scale[m.right])
        north_cell = np.vstack([ids[:1], ids])  # upwind of a southward flux: the band above
        south_cell = np.vstack([ids, ids[-1:]])
        fm = np.where(fm > 0, fm * scale[north_cell], fm * scale[south_cell])
        return fz, fm

    def max_rate(self, rho_c: np.ndarray, u_phi: np.ndarray, u_theta: np.ndarray) -> float:
        """max |u|/width over faces whose upwind cell holds mass, summed over the two directions."""
        m = self.maps
        floor = self.mass_floor * max(float(np.mean(rho_c)), 0.0)
        u = u_phi.ravel()[m.right_face]
        up = np.where(u > 0, rho_c, rho_c[m.right])
        wz = np.where(u > 0, m.zonal_width, m.zonal_width[m.right])
        zonal = np.abs(u) / wz
        rz = float(zonal[up > floor].max()) if np.any(up > floor) else 0.0
        rho_f = rho_c[m.cell_id]
        ut = u_theta[1:-1]
        upm = np.where(ut > 0, rho_f[:-1], rho_f[1:])
        width = np.where(ut > 0, self.dtheta[:-1, None], self.dtheta[1:, None])
        mer = np.abs(ut) / width
        rm = float(mer[upm > floor].max()) if np.any(upm > floor) else 0.0
        return rz + rm

    def __call__(self, rho: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        p = self.problem
        rho = np.ascontiguousarray(rho, dtype=float)
        f_lm = p.kernel_coefficients(rho, backend=self.backend)
        u_theta, u_phi = p.face_velocities(f_lm, backend=self.backend)
        return self.transport(rho, u_theta, u_phi, dt)

    def _fused_stage(self, rho: np.ndarray, dt: float, u0: np.ndarray, c: float, alpha: float,
                     uj: np.ndarray) -> tuple[np.ndarray, float]:
        """``((u0 + c k) + alpha (uj - u0), max_rate)`` with ``k = self(rho, dt)[0]`` (``alpha = 0``:
        ``u0 + c k``), the combination done by the fv kernel as it writes ``k``: bitwise
        :func:`solvers.timestepping.integrators._shu_osher_step`'s stage, one pass less.

        All arrays (nlat, nphi); numba backend only.
        """
        from solvers.sphere.grid.kernels_fv_numba import sphere_fv_stage

        p, c64 = self.problem, np.ascontiguousarray
        rho = c64(rho, dtype=float)
        u_theta, u_phi = p.face_velocities(p.kernel_coefficients(rho, backend="numba"), backend="numba")
        return sphere_fv_stage(rho, c64(u_phi, dtype=float), c64(u_theta, dtype=float), *self._kernel_maps,
                               self._code, float(dt), self.mass_floor, compute_threads(rho.size),
                               c64(u0, dtype=float), float(c), float(alpha), c64(uj, dtype=float), alpha != 0.0)

    def transport(self, rho: np.ndarray, u_theta: np.ndarray, u_phi: np.ndarray,
                  dt: float | None = None) -> tuple[np.ndarray, float]:
        """``(d rho/dt, max_rate)`` for given face velocities (shapes as :meth:`SphereProblem.velocity`)."""
        if self.backend == "numba":
            from solvers.sphere.grid.kernels_fv_numba import sphere_fv_rhs

            limit = dt is not None
            return sphere_fv_rhs(np.ascontiguousarray(rho, dtype=float), np.ascontiguousarray(u_phi, dtype=float),
                                 np.ascontiguousarray(u_theta, dtype=float), *self._kernel_maps, self._code,
                                 float(dt) if limit else 0.0, limit, self.mass_floor, compute_threads(rho.size))
        m = self.maps
        rho_c = self.cells(rho)
        fz = self.zonal_flux(rho_c, u_phi)
        fm = self.meridional_flux(rho_c[m.cell_id], u_theta)
        if dt is not None:
            fz, fm = self.limit(fz, fm, rho_c, dt)
        net = fz[m.left] - fz
        net += np.bincount(m.cell_id.ravel(), (fm[:-1] - fm[1:]).ravel(), rho_c.size)
        return (net / m.area)[m.cell_id], self.max_rate(rho_c, u_phi, u_theta)

