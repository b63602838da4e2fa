"""The measure-valued state on S^2: ``mu = rho dsigma + sum_i m_i delta_{x_i}`` (paper eq. 2.6).

The S^2 counterpart of :mod:`solvers.circle.measure.dirac`. A Dirac mass stays a Dirac mass, moves with
the velocity at its point and feels no force from itself (``grad_x K(x, x_i) = 0`` at ``x = x_i``):

- the density moves by the finite-volume scheme (:mod:`solvers.sphere.grid.fv`) with the velocity of
  the whole measure at the faces;
- atom i (a unit vector) moves by ``dx_i/dt = s grad U(x_i)`` (docs/math.md §1, §3.3);
- the atoms' part of the attention velocity is in closed form (no spectral truncation of a
  delta): ``(1/beta) sum_i m_i grad_x K(x, x_i) = sum_i c_K m_i e^{beta x.x_i} (x_i - (x.x_i) x)``,
  ``c_K`` = 1 or ``e^{-beta}`` (shifted kernel), projected on ``e_theta`` at the band boundaries
  and on ``e_phi`` at the longitude faces, where the grid's face velocities live;
- the density's part stays spectral on the grid (Funk-Hecke, docs/math.md §2). At the atoms it is
  the sum over the cells as point masses, ``sum_c rho_c area_c c_K e^{beta x.y_c} P_x y_c``: the
  Gauss analysis of a grid density gives the exact moments of that point-mass measure
  (docs/methods.md §6.5) and the kernel's eigenvalues past the bandwidth ``L`` are below ``1e-17
  lambda_0`` (docs/math.md §2), so this sum *is* the spectral field, evaluated off the grid
  without the ``1/sin(theta)`` of the spherical components at the poles;
- with the compiled backend and an expansion cut below round-off (:attr:`SphereMeasureField.spectral`)
  both go through the kernel's expansion instead (:mod:`solvers.sphere.point_spectra`): the
  atoms' coefficients join the density's before one synthesis at the faces, and the density's
  gradient at an atom is summed from its coefficients (the cell sums within ``1e-6`` of a pole).
  The same sums to round-off, at a fraction of the cost.

Between steps (never inside a Runge-Kutta step) capture, absorption and merging change the atoms
(:mod:`solvers.sphere.measure.dirac_events`). Here: the fields, and which cells points lie in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.core.backend import resolve_backend
from solvers.model.kernel import kernel_log_shift
from solvers.model import perceptron
from solvers.sphere.atoms import grid_edges
from solvers.sphere.grid.fv import SphereFV
from solvers.sphere.problem import SphereProblem, tangent_frame

TWO_PI = 2.0 * np.pi
FACE_KIND = {"theta_faces": 0, "phi_faces": 1}  # the component a face set carries (e_theta, e_phi)


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` (n, 3) scaled to unit length."""
    x = np.asarray(x, dtype=float).reshape(-1, 3)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@dataclass
class SphereMeasureField:
    """Velocities and potentials of a measure on S^2 (unnormalized attention).

    Parameters
    ----------
    problem : SphereProblem
    backend : {"numba", "numpy"} or None
        The sums over points: ``numba`` ring by ring (:mod:`solvers.sphere.measure.kernels_dirac_numba`),
        ``numpy`` directly (None: the problem's).
        The two agree to round-off.
    """

    problem: SphereProblem
    backend: str | None = None
    _c: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.backend = resolve_backend(self.backend or self.problem.backend)
        g = self.problem.grid
        tf = g.points(g.theta_faces, g.phi)  # band boundaries (nlat+1, nphi, 3)
        zf = g.points(g.theta, g.phi_faces)  # longitude faces (nlat, nphi, 3)
        self._c.update(
            theta_faces=(tf.reshape(-1, 3), tangent_frame(g.theta_faces, g.phi)[0].reshape(-1, 3)),
            phi_faces=(zf.reshape(-1, 3), tangent_frame(g.theta, g.phi_faces)[1].reshape(-1, 3)),
            centres=g.points(g.theta, g.phi).reshape(-1, 3),
            frame_c=tuple(e.reshape(-1, 3) for e in tangent_frame(g.theta, g.phi)),
            area=g.area.ravel(),
        )
        if self.backend == "numba":  # the rings of the faces: (colatitudes, first longitude, e_p)
            from solvers.sphere.measure.kernels_dirac_numba import bessel_terms

            self._c.update(rings_theta_faces=(g.theta_faces, float(g.phi[0])),
                           rings_phi_faces=(g.theta, float(g.phi_faces[0])),
                           rings_centres=(g.theta, float(g.phi[0])),
                           n_terms=bessel_terms(self.beta))

    @property
    def beta(self) -> float:
        return self.problem.model.beta

    @property
    def log_c(self) -> float:
        """``log c_K`` (0, or ``-beta`` for the shifted kernel)."""
        return kernel_log_shift(self.problem.model)

    @property
    def centres(self) -> np.ndarray:
        """Cell centres, shape (nlat * nphi, 3)."""
        return self._c["centres"]

    @property
    def face_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The faces as unit vectors: band boundaries ((nlat+1) nphi, 3), longitude faces
        (nlat nphi, 3)."""
        return self._c["theta_faces"][0], self._c["phi_faces"][0]

    def _weights(self, points: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``c_K m_i e^{beta p.x_i}``, shape (P, n)."""
        return np.exp(self.beta * (points @ x.T) + self.log_c) * m[None, :]

    # -- the atoms' part (closed form) ------------------------------------------------------
    def atom_potential(self, points: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``sum_i m_i K(p, x_i)`` (before the ``1/beta``) at ``points`` (P, 3): shape (P,)."""
        if m.size == 0:
            return np.zeros(points.shape[0])
        return self._weights(points, x, m).sum(axis=1)

    def atom_gradient_at(self, points: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``(1/beta) grad_p sum_i m_i K(p, x_i)`` (tangent vectors), shape (P, 3)."""
        if m.size == 0:
            return np.zeros_like(points)
        w = self._weights(points, x, m)
        return w @ x - np.sum(w * (points @ x.T), axis=1)[:, None] * points

    def _along(self, where: str, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The atoms' attention velocity along the face's unit vector (``e_theta`` / ``e_phi``)."""
        points, e = self._c[where]
        if m.size == 0:
            return np.zeros(points.shape[0])
        if self.backend == "numba":  # ring by ring (kernels_dirac_numba): the same sum to round-off
            return self._ring_values(where, FACE_KIND[where], x, m).ravel()
        return np.sum(self._weights(points, x, m) * (e @ x.T), axis=1)  # e . p = 0

    def _ring_spectrum(self, where: str, kind: int, x: np.ndarray, m: np.ndarray, scale: float,
                       out: np.ndarray | None = None) -> np.ndarray:
        """``scale`` times the longitude half spectra of the atoms' sums of ``kind`` (0: along
        ``e_theta``, 1: along ``e_phi``, 2: the potential) on the rings of ``where`` (faces or
        ``"centres"``), shape (rings, nphi // 2 + 1), added into ``out`` when given (numba)."""
        from solvers.sphere.measure.kernels_dirac_numba import ring_along_spectrum

        theta, phi0 = self._c["rings_" + where]
        if out is None:
            out = np.zeros((theta.size, self.problem.grid.shape[1] // 2 + 1), dtype=complex)
        ring_along_spectrum(theta, phi0, np.ascontiguousarray(x, dtype=float), np.asarray(m, dtype=float),
                            self.beta, self.log_c, self._c["n_terms"], kind, scale, out)
        return out

    def _ring_values(self, where: str, kind: int, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The atoms' sums of ``kind`` (:meth:`_ring_spectrum`) on the rings of ``where``,
        shape (rings, nphi)."""
        nphi = self.problem.grid.shape[1]
        return np.fft.irfft(self._ring_spectrum(where, kind, x, m, 1.0), n=nphi, axis=1) * nphi

    def face_attention(self, x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unsigned atom attention ``(u_theta (nlat+1, nphi), u_phi (nlat, nphi))`` at the faces."""
        g = self.problem.grid
        nlat, nphi = g.shape
        return (self._along("theta_faces", x, m).reshape(nlat + 1, nphi),
                self._along("phi_faces", x, m).reshape(nlat, nphi))

    def face_velocities(self, f_lm: np.ndarray, x: np.ndarray, m: np.ndarray,
                        backend: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Signed velocity of the whole measure ``(u_theta, u_phi)`` at the faces.

        ``f_lm``: the density's ``(K*rho)_lm`` (:meth:`SphereProblem.kernel_coefficients`).
        numba: the atoms' longitude spectra join the density's before its one batched irfft.
        """
        p = self.problem
        if m.size and (backend or p.backend) == "numba" and self.backend == "numba":
            if self.spectral:  # the atoms' coefficients join the density's: one synthesis
                total = np.array(f_lm, dtype=complex)
                total[p.point_spectra.sel] += p.point_spectra.coefficients(x, m)
                return p.face_velocities(total, backend="numba")
            return p.face_velocities(f_lm, backend="numba", add=lambda spec: self._add_spectra(spec, x, m))
        u_t, u_p = p.face_velocities(f_lm, backend=backend)
        if m.size:
            a_t, a_p = self.face_attention(x, m)
            u_t, u_p = u_t + p.sign * a_t, u_p + p.sign * a_p
        return u_t, u_p

    def _add_spectra(self, spec: np.ndarray, x: np.ndarray, m: np.ndarray) -> None:
        """Add the atoms' spectra to the rows (theta faces, then phi faces) of ``spec``, scaled
        as :meth:`SphereProblem.face_velocities` synthesises them (``irfft`` without ``nphi``)."""
        nf, nphi = self.problem.grid.shape[0] + 1, self.problem.grid.shape[1]
        self._ring_spectrum("theta_faces", 0, x, m, float(nphi), spec[:nf])
        self._ring_spectrum("phi_faces", 1, x, m, float(nphi), spec[nf:])

    def centre_attention(self, x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The atoms' ``(1/beta) grad sum m_i K`` at the cell centres as (theta, phi) components,
        each (nlat, nphi)."""
        shape = self.problem.grid.shape
        if self.backend == "numba" and m.size:
            return self._ring_values("centres", 0, x, m), self._ring_values("centres", 1, x, m)
        grad = self.atom_gradient_at(self.centres, x, m)
        e_t, e_p = self._c["frame_c"]
        return np.sum(grad * e_t, axis=1).reshape(shape), np.sum(grad * e_p, axis=1).reshape(shape)

    # -- the density's part at any point (cells as point masses) ----------------------------
    def _cell_sums(self, rho: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(sum_c k_c (P,), sum_c k_c y_c (P, 3))`` with ``k_c = c_K rho_c area_c e^{beta p.y_c}``."""
        w = np.asarray(rho, dtype=float).ravel() * self._c["area"]
        points = np.ascontiguousarray(points, dtype=float).reshape(-1, 3)
        if self.backend == "numba":  # ring by ring (kernels_dirac_numba): the same sum to round-off
            from solvers.sphere.measure.kernels_dirac_numba import ring_point_sums

            g = self.problem.grid
            w_hat = np.fft.rfft(w.reshape(g.shape), axis=1)
            return ring_point_sums(w_hat, g.theta, float(g.phi[0]), g.shape[1], points, self.beta,
                                   self.log_c, self._c["n_terms"])
        k = np.exp(self.beta * (points @ self.centres.T) + self.log_c) * w[None, :]
        return k.sum(axis=1), k @ self.centres

    def density_potential_at(self, rho: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``(K*rho)(p)`` at ``points`` (P, 3), shape (P,)."""
        if points.shape[0] == 0:
            return np.zeros(0)
        return self._cell_sums(rho, points)[0]

    def density_gradient_at(self, rho: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``(1/beta) grad (K*rho)(p)`` at ``points`` (P, 3): tangent vectors (P, 3)."""
        if points.shape[0] == 0:
            return np.zeros((0, 3))
        grad = self._cell_sums(rho, points)[1]
        return grad - np.sum(grad * points, axis=1, keepdims=True) * points

    @property
    def spectral(self) -> bool:
        """Whether the atoms' fields go through the kernel's expansion (numba backend, the
        expansion cut below round-off: :attr:`PointSpectra.exact`): the same sums as the closed
        forms to round-off (:mod:`solvers.sphere.point_spectra`), at a fraction of the cost."""
        if "spectral" not in self._c:
            p = self.problem
            self._c["spectral"] = (self.backend == "numba" and p.backend == "numba"
                                   and p.model.attention == "unnormalized" and p.point_spectra.exact)
        return self._c["spectral"]

    def atom_gradient(self, rho: np.ndarray, x: np.ndarray, m: np.ndarray,
                      f_lm: np.ndarray | None = None) -> np.ndarray:
        """``grad U`` at every atom, its own mass excluded (it exerts no force), shape (n, 3).

        ``f_lm``: the density's ``(K*rho)_lm`` when at hand; with :attr:`spectral` its gradient
        at the atoms is then summed from it (the cell sums only for atoms within ``1e-6`` of a
        pole)."""
        if m.size == 0:
            return np.zeros((0, 3))
        w = self._weights(x, x, m)
        np.fill_diagonal(w, 0.0)
        own = w @ x - np.sum(w * (x @ x.T), axis=1)[:, None] * x
        return (self._density_gradient(rho, x, f_lm) + own
                + perceptron.half_gradient(self.problem.model.perceptron, x))

    def _density_gradient(self, rho: np.ndarray, x: np.ndarray, f_lm: np.ndarray | None) -> np.ndarray:
        if f_lm is None or not self.spectral:
            return self.density_gradient_at(rho, x)
        ps = self.problem.point_spectra
        grad, ok = ps.gradient(f_lm[ps.sel], x)
        grad /= self.beta
        if not ok.all():
            grad[~ok] = self.density_gradient_at(rho, x[~ok])
        return grad

    def flow_potential(self, rho: np.ndarray, x: np.ndarray, m: np.ndarray,
                       f_centres: np.ndarray | None = None) -> np.ndarray:
        """``s U`` of the whole measure at the cell centres (nlat, nphi): the flow is its gradient.

        ``f_centres``: the density's ``K*rho`` at the centres (None: computed spectrally).
        """
        p = self.problem
        if f_centres is None:
            f_centres = p.centre_fields(rho)["f"]
        if self.backend == "numba" and m.size:
            f = f_centres + self._ring_values("centres", 2, x, m)
        else:
            f = f_centres + self.atom_potential(self.centres, x, m).reshape(p.grid.shape)
        return p.sign * (f / self.beta + 0.5 * p.perceptron_centres[2])


# -- cells of points -----------------------------------------------------------------------------
def locate(fv: SphereFV, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fine, cell)``: the flat fine cell (nlat * nphi indexing) and the finite volume holding
    each point of ``x`` (n, 3), each shape (n,)."""
    fine = fv.problem.grid.fine_cell(x)
    return fine, fv.maps.cell_id.ravel()[fine]


def band_widths(fv: SphereFV) -> tuple[np.ndarray, np.ndarray]:
    """``(-mu_faces (nlat + 1,), width (nlat,))``: the band search keys and the smaller width of
    every band's finite volumes (meridional ``dtheta_j``, zonal ``sin(theta_j) r_j dphi``; both
    constant along a band), for :func:`atom_widths`."""
    m, g = fv.maps, fv.problem.grid
    zonal = np.full(g.shape[0], np.inf)
    np.minimum.at(zonal, m.band, m.zonal_width)
    return -g.mu_faces, np.minimum(fv.dtheta, zonal)


def atom_widths(keys: np.ndarray, widths: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`cell_width` of the finite volumes holding the unit vectors ``x`` (n, 3), from
    their bands alone (``band_widths``): one search on ``-z`` instead of :func:`locate`."""
    j = np.searchsorted(keys, -x[:, 2], side="right") - 1
    return widths[np.clip(j, 0, widths.size - 1)]


def cell_width(fv: SphereFV, cells: np.ndarray) -> np.ndarray:
    """The smaller width (meridional ``dtheta_j``, zonal ``sin(theta_j) r_j dphi``) of finite
    volumes ``cells`` (n,): an atom crossing it in a step would skip the density there."""
    m = fv.maps
    return np.minimum(fv.dtheta[m.band[cells]], m.zonal_width[cells])


def fine_cells(fv: SphereFV, cell: int) -> np.ndarray:
    """Flat fine indices of one finite volume (its ``r_j`` longitude cells), shape (r_j,)."""
    m = fv.maps
    r = int(fv.problem.grid.merge[m.band[cell]])
    return m.first[cell] + np.arange(r)


def cell_neighbours(fv: SphereFV) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(start (n_cells + 1,), cells)`` of the finite volumes adjacent to each finite volume
    (fine-grid neighbours incl. diagonals and across the poles, :func:`grid_edges`)."""
    g, ids = fv.problem.grid, fv.maps.cell_id.ravel()
    e = ids[grid_edges(*g.shape)]
    e = e[e[:, 0] != e[:, 1]]
    n = np.int64(g.n_cells)
    # the unique ordered pairs, sorted by first then second cell: one key a n + b per pair
    # (np.unique over rows sorts structured views, about 100 times slower)
    key = np.unique(np.concatenate([e[:, 0] * n + e[:, 1], e[:, 1] * n + e[:, 0]]).astype(np.int64))
    first, second = np.divmod(key, n)
    start = np.searchsorted(first, np.arange(g.n_cells + 1))
    return start, second
