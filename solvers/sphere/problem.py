"""The model on S^2, discretised: velocity fields at cell centres and faces, energy, dissipation.

Attention acts diagonally through the Funk-Hecke eigenvalues (paper Lemma 5.1, docs/math.md §2):
``(K*rho)_lm = lambda_l rho_lm``, ``lambda_l = 4 pi i_l(beta)`` (times ``e^{-beta}`` for the
shifted kernel). Because ``lambda_l`` falls below ``1e-17 lambda_0`` past the kernel bandwidth
``j*(beta)`` (docs/math.md §2), ``f = K*rho`` and its gradient are synthesised from degrees
``l <= L = min(lmax, j*)`` only, with normalised associated Legendre functions tabulated at the
latitudes needed (cell centres and band boundaries) and an FFT in longitude.

Velocity components: ``u_theta`` along ``e_theta`` (southward), ``u_phi`` along ``e_phi`` (eastward);
``grad f = d_theta f e_theta + (1/sin theta) d_phi f e_phi``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from solvers.core.backend import compute_threads, resolve_backend
from solvers.core.noise import free_energy
from solvers.model.kernel import kernel_log_shift, max_kernel_second_derivative
from solvers.model import perceptron
from solvers.model.params import ModelParams, PerceptronParams
from solvers.sphere.cells import SphereGrid
from solvers.sphere.point_spectra import PointSpectra
from spectral import kernel_bandwidth, kernel_eigenvalues


def tangent_frame(theta: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors ``e_theta``, ``e_phi`` on the outer product grid, each (len(theta), len(phi), 3)."""
    st, ct = np.sin(theta)[:, None], np.cos(theta)[:, None]
    cp, sp = np.cos(phi)[None, :], np.sin(phi)[None, :]
    e_theta = np.stack(np.broadcast_arrays(ct * cp, ct * sp, -st + 0 * cp), axis=-1)
    e_phi = np.stack(np.broadcast_arrays(-sp + 0 * st, cp + 0 * st, 0 * st * cp), axis=-1)
    return e_theta, e_phi


def perceptron_components(p: PerceptronParams, grid: SphereGrid, theta: np.ndarray,
                          phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Perceptron velocity ``grad v / 2`` as (u_theta, u_phi) and the potential ``v``, each (nt, np)."""
    x = grid.points(theta, phi)
    flat = x.reshape(-1, 3)
    g = perceptron.half_gradient(p, flat).reshape(x.shape)
    e_t, e_p = tangent_frame(theta, phi)
    v = perceptron.potential(p, flat).reshape(x.shape[:2])
    return np.sum(g * e_t, axis=-1), np.sum(g * e_p, axis=-1), v


@dataclass(frozen=True)
class Synthesis:
    """Evaluate ``sum_{l<=L, m} c_lm Y_lm`` and ``d_theta`` of it on ``theta x phi_k (+ shift)``.

    ``sel`` picks the stored coefficients with ``l <= L`` (shtns order), ``p``/``dp`` are
    ``Ybar_lm(theta)`` and ``d/dtheta`` of it, shape (n_theta, n_sel).
    """

    sel: np.ndarray
    m: np.ndarray
    p: np.ndarray
    dp: np.ndarray
    nphi: int
    starts: np.ndarray  # first entry of each order m (shtns stores m-major: orders are contiguous)
    m_unique: np.ndarray

    @classmethod
    def build(cls, degrees: np.ndarray, orders: np.ndarray, L: int, theta: np.ndarray, nphi: int) -> "Synthesis":
        sel = np.nonzero(degrees <= L)[0]
        l, m = degrees[sel], orders[sel]
        vals = special.sph_legendre_p(l[None, :], m[None, :], theta[:, None], diff_n=1)
        if np.any(np.diff(m) < 0):
            raise ValueError("coefficients must be stored with contiguous orders (m-major)")
        m_unique, starts = np.unique(m, return_index=True)
        return cls(sel, m, np.asarray(vals[0]), np.asarray(vals[1]), nphi, starts, m_unique)

    def __call__(self, coeffs: np.ndarray, which: str = "p", d_phi: bool = False,
                 shift: float = 0.0, row_scale: np.ndarray | None = None,
                 backend: str = "numpy") -> np.ndarray:
        """Grid values, shape (n_theta, nphi); ``d_phi`` differentiates in longitude.

        ``row_scale`` (n_theta,) multiplies row ``j`` (numba backend only: there it is folded
        into the spectrum, so it costs nothing); ``backend="numba"`` sums over degrees in one
        compiled loop (:func:`solvers.sphere.grid.kernels_fv_numba.legendre_spectrum`).
        """
        c = coeffs[self.sel]
        if d_phi:
            c = c * (1j * self.m)
        if shift:
            c = c * np.exp(1j * self.m * shift)
        table = self.p if which == "p" else self.dp
        if backend == "numba":
            from solvers.sphere.kernels_sums_numba import legendre_spectrum

            scale = np.full(table.shape[0], float(self.nphi)) if row_scale is None else self.nphi * row_scale
            spec = legendre_spectrum(table, np.ascontiguousarray(c, dtype=complex), self.starts,
                                     self.m_unique, self.nphi // 2 + 1, scale)
            return np.fft.irfft(spec, n=self.nphi, axis=1)
        if row_scale is not None:
            raise ValueError("row_scale is for the numba backend")
        spec = np.zeros((table.shape[0], self.nphi // 2 + 1), dtype=complex)
        spec[:, self.m_unique] = np.add.reduceat(table * c[None, :], self.starts, axis=1)
        return np.fft.irfft(spec, n=self.nphi, axis=1) * self.nphi


@dataclass(frozen=True)
class SphereProblem:
    """Model + finite-volume grid on S^2.

    Parameters
    ----------
    model : ModelParams
    grid : SphereGrid
    backend : {"numba", "numpy"} or None
        Implementation of the face velocities (:mod:`solvers.core.backend`; None: the default).
    """

    model: ModelParams
    grid: SphereGrid
    backend: str | None = None
    _c: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        g, b, p = self.grid, self.grid.basis, self.model.perceptron
        band = kernel_bandwidth(self.model.beta, 3, tol=1e-17)
        L = min(b.lmax, band)
        log_lam = kernel_eigenvalues(self.model.beta, np.arange(b.lmax + 1), 3, log=True)
        lam = np.exp(log_lam + kernel_log_shift(self.model))
        lam[L + 1:] = 0.0
        wt_c, wp_c, v_c = perceptron_components(p, g, g.theta, g.phi)
        wt_f, _, _ = perceptron_components(p, g, g.theta_faces, g.phi)
        _, wp_z, _ = perceptron_components(p, g, g.theta, g.phi_faces)
        object.__setattr__(self, "backend", resolve_backend(self.backend))
        self._c.update(
            L=L, exact=band <= b.lmax, kernel=lam[b.degrees], centres=Synthesis.build(b.degrees, b.orders, L, g.theta, b.nphi),
            faces=Synthesis.build(b.degrees, b.orders, L, g.theta_faces, b.nphi),
            w_theta_c=wt_c, w_phi_c=wp_c, v_c=v_c, w_theta_f=wt_f, w_phi_z=wp_z,
        )

    @property
    def sign(self) -> float:
        return self.model.sign

    @property
    def bandwidth(self) -> int:
        """Highest degree ``L`` used for the attention field."""
        return self._c["L"]

    @property
    def point_spectra(self) -> PointSpectra:
        """The expansion's operations on point masses and at points (:mod:`solvers.sphere.point_spectra`)."""
        if "points" not in self._c:
            sel, b = self._c["centres"].sel, self.grid.basis
            self._c["points"] = PointSpectra(sel, b.degrees[sel], b.orders[sel], self._c["kernel"][sel],
                                             self._c["L"], self._c["exact"], self.backend)
        return self._c["points"]

    def kernel_coefficients(self, rho: np.ndarray, backend: str | None = None) -> np.ndarray:
        """``(K*rho)_lm`` (shtns order), from the grid density (nlat, nphi).

        ``backend="numba"`` (None: the problem's) analyses degrees ``l <= L`` only, the
        ones the kernel keeps: an FFT in longitude and the Gauss-Legendre sums (compiled)
        with tabulated ``Ybar_lm``; the numpy backend runs the full shtns analysis. The two
        agree to round-off; entries with ``l > L`` are exactly 0 in both.
        """
        if (backend or self.backend) == "numba":
            return self._kernel_coefficients_truncated(rho)
        return self.grid.basis.forward(rho) * self._c["kernel"]

    def _kernel_coefficients_truncated(self, rho: np.ndarray) -> np.ndarray:
        from solvers.sphere.kernels_sums_numba import legendre_analysis, legendre_analysis_threads

        syn, g = self._c["centres"], self.grid
        if "analysis" not in self._c:
            # quadrature weight (2 pi / nphi) w_j times Ybar_lm(theta_j), and the kernel of each entry
            self._c["analysis"] = (np.ascontiguousarray(g.area[:, :1] * syn.p),
                                   np.ascontiguousarray(self._c["kernel"][syn.sel]))
        table, lam = self._c["analysis"]
        rho = np.asarray(rho, dtype=float)
        if rho.shape != g.shape:
            raise ValueError(f"rho: expected shape {g.shape} (got {rho.shape})")
        threads = compute_threads(rho.size)
        spec = np.fft.rfft(rho, axis=1)
        out = np.zeros(g.basis.nlm, dtype=complex)
        if threads > 1:
            out[syn.sel] = legendre_analysis_threads(table, spec, syn.starts, syn.m_unique, lam, threads)
        else:
            out[syn.sel] = legendre_analysis(table, spec, syn.starts, syn.m_unique, lam)
        return out

    # -- velocities ---------------------------------------------------------------------
    def _attention(self, f_lm: np.ndarray, where: str) -> np.ndarray:
        """Unsigned attention velocity component at ``where`` (see :meth:`velocity`)."""
        beta, g = self.model.beta, self.grid
        if where == "theta_faces":
            syn = self._c["faces"]
            grad, f = syn(f_lm, "dp"), syn(f_lm, "p") if self._softmax else None
        elif where == "phi_faces":
            syn = self._c["centres"]
            grad = syn(f_lm, "p", d_phi=True, shift=0.5 * g.dphi) / np.sin(g.theta)[:, None]
            f = syn(f_lm, "p", shift=0.5 * g.dphi) if self._softmax else None
        else:
            raise ValueError(where)
        return grad / (beta * f) if self._softmax else grad / beta

    @property
    def _softmax(self) -> bool:
        return self.model.attention == "softmax"

    def _velocity_numba(self, f_lm: np.ndarray, where: str) -> np.ndarray:
        """:meth:`velocity` with the degree sums compiled and the scalings fused."""
        from solvers.sphere.kernels_sums_numba import signed_ratio_sum, signed_sum

        beta, g, sign = self.model.beta, self.grid, float(self.sign)
        if "inv_sin" not in self._c:
            self._c["inv_sin"] = 1.0 / np.sin(g.theta)
            self._c["ones_c"], self._c["ones_f"] = np.ones(g.theta.size), np.ones(g.theta_faces.size)
        if where == "theta_faces":
            syn, w, ones = self._c["faces"], self._c["w_theta_f"], self._c["ones_f"]
            kw: dict = {}
            row = ones
        elif where == "phi_faces":
            syn, w, ones = self._c["centres"], self._c["w_phi_z"], self._c["ones_c"]
            kw = {"shift": 0.5 * g.dphi}
            row = self._c["inv_sin"]
        else:
            raise ValueError(where)
        which, dphi = ("dp", False) if where == "theta_faces" else ("p", True)
        if self._softmax:
            grad = syn(f_lm, which, d_phi=dphi, row_scale=row, backend="numba", **kw)
            f = syn(f_lm, "p", row_scale=ones, backend="numba", **kw)
            return signed_ratio_sum(grad, f, beta, w, sign)
        grad = syn(f_lm, which, d_phi=dphi, row_scale=row / beta, backend="numba", **kw)
        return signed_sum(grad, w, sign)

    def face_velocities(self, f_lm: np.ndarray, backend: str | None = None,
                        add: Callable[[np.ndarray], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(velocity(f_lm, "theta_faces"), velocity(f_lm, "phi_faces"))``.

        numba backend: the longitude spectra of both components (and, for softmax, of ``f``
        at both face sets) are written into one array and synthesised by one batched irfft;
        same operations per row as :meth:`velocity`. ``add(spec)`` (unnormalized attention,
        numba only) adds more unsigned attention to the rows of ``spec`` (theta faces, then phi
        faces; shape (nlat + 1 + nlat, nphi // 2 + 1)) before the synthesis: the Dirac atoms'.
        """
        if add is not None and (self._softmax or (backend or self.backend) != "numba"):
            raise ValueError("add: needs the numba backend and unnormalized attention")
        if (backend or self.backend) != "numba":
            return self.velocity(f_lm, "theta_faces", backend), self.velocity(f_lm, "phi_faces", backend)
        from solvers.sphere import kernels_sums_numba as sums

        c, beta, sign = self._c, self.model.beta, float(self.sign)
        faces, centres = c["faces"], c["centres"]
        nf, nc, nphi = faces.p.shape[0], centres.p.shape[0], centres.nphi
        if "batched" not in c:
            inv_sin = 1.0 / np.sin(self.grid.theta)
            ones_f, ones_c = np.ones(nf), np.ones(nc)
            if self._softmax:  # rows: grad_theta, grad_phi, f at theta faces, f at phi faces
                scales = [nphi * ones_f, nphi * inv_sin, nphi * ones_f, nphi * ones_c]
            else:
                scales = [nphi * (ones_f / beta), nphi * (inv_sin / beta)]
            twist = np.exp(1j * centres.m * (0.5 * self.grid.dphi))
            spec = np.zeros((2 * (nf + nc) if self._softmax else nf + nc, nphi // 2 + 1), dtype=complex)
            # the columns no order writes: zero between calls (an add writes there too)
            free = np.setdiff1d(np.arange(nphi // 2 + 1), np.union1d(faces.m_unique, centres.m_unique))
            c["batched"] = (scales, twist, spec, free)
        scales, twist, spec, free = c["batched"]
        threads = compute_threads(nc * nphi)  # the grid's size, as the fv kernel
        legendre_spectrum_into = sums.legendre_spectrum_into_threads if threads > 1 else sums.legendre_spectrum_into
        signed_sum_inplace = sums.signed_sum_inplace_threads if threads > 1 else sums.signed_sum_inplace
        signed_ratio_sum = sums.signed_ratio_sum
        coef = np.ascontiguousarray(f_lm[faces.sel], dtype=complex)
        legendre_spectrum_into(faces.dp, coef, faces.starts, faces.m_unique, scales[0], spec[:nf])
        legendre_spectrum_into(centres.p, (coef * (1j * centres.m)) * twist, centres.starts, centres.m_unique,
                               scales[1], spec[nf:nf + nc])
        if self._softmax:
            legendre_spectrum_into(faces.p, coef, faces.starts, faces.m_unique, scales[2], spec[nf + nc:2 * nf + nc])
            legendre_spectrum_into(centres.p, coef * twist, centres.starts, centres.m_unique, scales[3],
                                   spec[2 * nf + nc:])
        if add is not None:
            add(spec)
        grid = np.fft.irfft(spec, n=nphi, axis=1)
        if add is not None:  # the free columns back to 0 for the next call
            spec[:, free] = 0.0
        if self._softmax:
            return (signed_ratio_sum(grid[:nf], grid[nf + nc:2 * nf + nc], beta, c["w_theta_f"], sign),
                    signed_ratio_sum(grid[nf:nf + nc], grid[2 * nf + nc:], beta, c["w_phi_z"], sign))
        # in place: the irfft output is this call's own (rows are contiguous views)
        return signed_sum_inplace(grid[:nf], c["w_theta_f"], sign), signed_sum_inplace(grid[nf:], c["w_phi_z"], sign)

    def velocity(self, f_lm: np.ndarray, where: str, backend: str | None = None) -> np.ndarray:
        """Signed transport velocity ``s (attention + perceptron)`` (paper eq. 2.6, 2.9).

        Parameters
        ----------
        f_lm : ndarray, shape (nlm,)
            ``(K*rho)_lm`` from :meth:`kernel_coefficients`.
        where : {"theta_faces", "phi_faces"}
            ``u_theta`` on band boundaries ``(theta_{j+1/2}, phi_k)``, shape (nlat+1, nphi), or
            ``u_phi`` on longitude faces ``(theta_j, phi_k + dphi/2)``, shape (nlat, nphi).
        backend : {"numba", "numpy"} or None
            None: the problem's. The two agree to round-off.
        """
        if (backend or self.backend) == "numba":
            return self._velocity_numba(f_lm, where)
        w = self._c["w_theta_f" if where == "theta_faces" else "w_phi_z"]
        return self.sign * (self._attention(f_lm, where) + w)

    @property
    def perceptron_centres(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The perceptron at the cell centres: ``(w_theta, w_phi, v)``, its velocity's two
        components and its potential, each (nlat, nphi)."""
        return self._c["w_theta_c"], self._c["w_phi_c"], self._c["v_c"]

    @property
    def perceptron_faces(self) -> tuple[np.ndarray, np.ndarray]:
        """The perceptron's velocity at the faces: ``w_theta`` (nlat+1, nphi) on the band
        boundaries and ``w_phi`` (nlat, nphi) on the longitude faces."""
        return self._c["w_theta_f"], self._c["w_phi_z"]

    def face_kernel_fields(self, f_lm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(g_theta, g_phi, f_theta, f_phi)`` of ``f_lm`` (:meth:`kernel_coefficients`), numpy:
        the face component of ``(1/beta) grad f`` and ``f = K*rho`` on the band boundaries
        (nlat+1, nphi) and on the longitude faces (nlat, nphi)."""
        c, g, beta = self._c, self.grid, self.model.beta
        shift = 0.5 * g.dphi
        grad_t = c["faces"](f_lm, "dp") / beta
        grad_p = c["centres"](f_lm, "p", d_phi=True, shift=shift) / (beta * np.sin(g.theta)[:, None])
        return grad_t, grad_p, c["faces"](f_lm, "p"), c["centres"](f_lm, "p", shift=shift)

    def centre_values(self, f_lm: np.ndarray) -> np.ndarray:
        """``f = K*rho`` at the cell centres (nlat, nphi) from ``f_lm`` (:meth:`kernel_coefficients`)."""
        return self._c["centres"](f_lm, "p")

    def centre_fields(self, rho: np.ndarray) -> dict[str, np.ndarray]:
        """At cell centres (each (nlat, nphi)): ``f``, ``grad U`` and the unsigned velocity ``V``."""
        syn, beta = self._c["centres"], self.model.beta
        f_lm = self.kernel_coefficients(rho)
        f = self.centre_values(f_lm)
        gf_t = syn(f_lm, "dp")
        gf_p = syn(f_lm, "p", d_phi=True) / np.sin(self.grid.theta)[:, None]
        gu_t, gu_p = gf_t / beta + self._c["w_theta_c"], gf_p / beta + self._c["w_phi_c"]
        # softmax: an empty density (f = 0: all the mass in Dirac atoms) attends to nothing
        scale = np.where(f > 0, beta * f, np.inf) if self._softmax else beta
        v_t, v_p = gf_t / scale + self._c["w_theta_c"], gf_p / scale + self._c["w_phi_c"]
        return {"f": f, "grad_theta": gu_t, "grad_phi": gu_p, "vel_theta": v_t, "vel_phi": v_p}

    def lipschitz_bound(self, mass: float) -> float:
        """Attention relaxation-rate bound ``M max|K''| / beta`` (softmax: 1), docs/math.md §3.2, 6.

        The static perceptron field is left to the CFL condition (as on S^1).
        """
        beta, shift = self.model.beta, kernel_log_shift(self.model)
        return 1.0 if self._softmax else mass * max_kernel_second_derivative(beta, shift) / beta

    # -- energy ------------------------------------------------------------------------
    def energy(self, rho: np.ndarray, fields: dict | None = None) -> float:
        """``E = (1/(2 beta)) iint K drho drho + (1/2) int v drho`` (eq. 2.7), cells as point masses."""
        fields = fields or self.centre_fields(rho)
        w = rho * self.grid.area
        return float(np.sum(w * fields["f"]) / (2 * self.model.beta) + 0.5 * np.sum(w * self._c["v_c"]))

    def free_energy(self, rho: np.ndarray, energy: float | None = None) -> float:
        """``F = E - s nu int rho log rho`` (docs/noise.md §1; ``F = E`` without noise) of the
        grid density ``rho`` (nlat, nphi); ``energy``: its ``E`` when already known."""
        energy = self.energy(rho) if energy is None else energy
        return free_energy(energy, rho, self.grid.area, self.sign, self.model.noise)

    def dissipation(self, rho: np.ndarray, fields: dict | None = None) -> float:
        """``D = int grad U . V drho`` with ``dE/dt = s D`` (docs/math.md §1)."""
        c = fields or self.centre_fields(rho)
        dot = c["grad_theta"] * c["vel_theta"] + c["grad_phi"] * c["vel_phi"]
        return float(np.sum(rho * dot * self.grid.area))
