"""The model on S^1, discretised: velocity fields, energy and dissipation of a grid density.

Everything here is a function of the current grid density; time stepping lives elsewhere.
Attention is applied diagonally through the Funk-Hecke eigenvalues (paper Lemma 5.1,
docs/math.md §2): ``(K*rho)_k = lambda_k rho_k`` with ``lambda_k = 2 pi I_k(beta)`` (times
``e^{-beta}`` for the shifted kernel ``exp(beta (x.y - 1))``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.circle.cells import layout_for, sink_corners
from solvers.model.kernel import kernel_log_shift, max_kernel_second_derivative  # noqa: F401 (re-export)
from solvers.core.noise import free_energy
from solvers.model import perceptron
from solvers.model.params import ModelParams
from spectral import CircleBasis, kernel_eigenvalues


@dataclass(frozen=True)
class CircleProblem:
    """Model + grid on S^1.

    Parameters
    ----------
    model : ModelParams
    basis : CircleBasis
    kink_faces : bool
        Move the face nearest each corner of the perceptron velocity onto it
        (:mod:`solvers.circle.cells`, ``time.kink_faces``); ``faces``, ``moved_faces`` and
        ``cell_scale`` describe the result.
    one_sided_kinks : bool
        WENO5 takes one-sided stencils at the moved faces (``time.one_sided_kinks``; ``kinks``).
    """

    model: ModelParams
    basis: CircleBasis
    kink_faces: bool = False
    one_sided_kinks: bool = False
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        b, p = self.basis, self.model.perceptron
        layout = layout_for(b, p, self.kink_faces)
        lam = np.exp(kernel_eigenvalues(self.model.beta, b.wavenumbers, 2, log=True)
                     + kernel_log_shift(self.model))
        ik = 1j * b.wavenumbers.astype(float)
        ik[-1] = 0.0  # odd derivative: drop Nyquist
        half = np.exp(0.5j * b.wavenumbers * b.h)
        half[-1] = 0.0
        self._cache.update(
            kernel=lam,  # (K*rho)_k / rho_k
            d_center=ik * lam, d_face=ik * lam * half, f_face=lam * half,
            w_center=perceptron.circle_velocity(p, b.theta),
            w_face=perceptron.circle_velocity(p, layout.faces),
            v_center=perceptron.circle_potential(p, b.theta),
        )
        # the face velocity straight from the grid (rfft/N and irfft*N cancel): one complex
        # multiply, one inverse transform and one add per evaluation (unnormalised attention)
        sign = self.model.sign
        self._cache.update(m_face=sign * self._cache["d_face"] / self.model.beta,
                           sw_face=sign * self._cache["w_face"], layout=layout)
        if layout.moved.size:  # the attention at the moved faces, from the centre coefficients
            self._cache["moved_rows"] = b.evaluation_matrix(layout.faces[layout.moved])

    # -- the finite volumes -------------------------------------------------------------
    @property
    def faces(self) -> np.ndarray:
        """Right-face angles of the finite volumes, shape (N,) (``basis.faces`` unless moved)."""
        return self._cache["layout"].faces

    @property
    def moved_faces(self) -> np.ndarray:
        """Indices of the faces moved onto perceptron corners, shape (m,) (empty: uniform)."""
        return self._cache["layout"].moved

    @property
    def cell_scale(self) -> np.ndarray:
        """``h / width`` of every cell, shape (N,): the cell density is ``rho * cell_scale``."""
        return self._cache["layout"].scale

    @property
    def sink_corners(self) -> np.ndarray:
        """The perceptron corners that are sinks of its flow, angles (m,)
        (:func:`solvers.circle.cells.sink_corners`)."""
        if "sink_corners" not in self._cache:
            self._cache["sink_corners"] = sink_corners(self.model.perceptron, self.sign)
        return self._cache["sink_corners"]

    @property
    def sink_corner_cells(self) -> np.ndarray:
        """The cells holding :attr:`sink_corners` (:meth:`cell_of`), int64 (m,)."""
        if "sink_corner_cells" not in self._cache:
            self._cache["sink_corner_cells"] = self.cell_of(self.sink_corners).astype(np.int64)
        return self._cache["sink_corner_cells"]

    @property
    def kinks(self) -> np.ndarray:
        """Where the fv scheme's WENO5 reconstruction takes one-sided stencils
        (:func:`solvers.core.limiters.weno5_faces`), contiguous int64 (m,): the moved faces with
        ``one_sided_kinks``, else none."""
        if "kinks" not in self._cache:
            kinks = self.moved_faces if self.one_sided_kinks else np.zeros(0)
            self._cache["kinks"] = np.ascontiguousarray(kinks, dtype=np.int64)
        return self._cache["kinks"]

    @property
    def cell_centres(self) -> np.ndarray:
        """Centre angles of the finite volumes, shape (N,): the midpoints of their faces
        (``basis.theta`` unless a face beside the cell was moved)."""
        if "centres" not in self._cache:
            shift = self.faces - self.basis.faces  # each face's move, |shift| <= h/2
            self._cache["centres"] = self.basis.theta + 0.5 * (shift + np.roll(shift, 1))
        return self._cache["centres"]

    def cell_of(self, angles: np.ndarray) -> np.ndarray:
        """Index of the finite volume (between its left and right faces) holding each angle
        (any real angle), integer array of the shape of ``angles``; with moved faces a point
        near one can lie in the cell next to ``basis.cell_of`` (same rule as the compiled
        ``measure.kernels_dirac_numba.cell_of``)."""
        x = np.asarray(angles, dtype=float)
        c = self.basis.cell_of(x)
        if not self.moved_faces.size:
            return c
        n, f = self.basis.n, self.faces
        right = np.mod(x - f[c] + np.pi, 2.0 * np.pi) - np.pi >= 0.0
        left = np.mod(x - f[(c - 1) % n] + np.pi, 2.0 * np.pi) - np.pi < 0.0
        return (c + right - (left & ~right)) % n

    def moved_evaluation(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indices (m,) int64, rows (m, N//2 + 1) complex)``: the moved faces and the matrix that
        evaluates a trigonometric polynomial there (:meth:`moved_attention`), contiguous for the
        compiled kernels; ``m = 0`` (rows of shape (0, 1)) on the uniform grid."""
        moved = np.ascontiguousarray(self.moved_faces, dtype=np.int64)
        rows = self._cache["moved_rows"] if moved.size else np.zeros((0, 1), dtype=complex)
        return moved, np.ascontiguousarray(rows)

    def moved_attention(self, rho_hat: np.ndarray, coefficients: str = "d_center") -> np.ndarray:
        """``basis.backward(rho_hat * multiplier)`` at the moved faces, shape (m,), for the
        centre multiplier ``coefficients`` (``"d_center"``: ``beta`` times the attention; linear
        in ``rho_hat``, so any normalisation of the coefficients carries through)."""
        return np.real(self._cache["moved_rows"] @ (rho_hat * self._cache[coefficients]))

    # -- precomputed fields -------------------------------------------------------------
    @property
    def sign(self) -> float:
        return self.model.sign

    @property
    def softmax(self) -> bool:
        return self.model.attention == "softmax"

    def multipliers(self, name: str) -> np.ndarray:
        """Precomputed Fourier multipliers / perceptron fields (see ``__post_init__``)."""
        return self._cache[name]

    # -- velocities ---------------------------------------------------------------------
    def attention_field(self, rho_hat: np.ndarray, where: str) -> np.ndarray:
        """Attention velocity (before the sign ``s``) at cell centres or right faces.

        Unnormalised: ``d/dtheta (1/beta) K*rho``; softmax: ``f'/(beta f)``, ``f = K*rho``
        (paper eq. 2.9, docs/math.md §1).

        Parameters
        ----------
        rho_hat : ndarray, shape (N//2 + 1,)
        where : {"center", "face"}

        Returns
        -------
        ndarray, shape (N,)
        """
        b, beta = self.basis, self.model.beta
        if where == "center":
            d_mult, f_mult = self._cache["d_center"], self._cache["kernel"]
        else:
            d_mult, f_mult = self._cache["d_face"], self._cache["f_face"]
        moved = self.moved_faces if where == "face" else ()
        if not self.softmax:
            out = b.backward(rho_hat * d_mult)
            if len(moved):
                out[moved] = self.moved_attention(rho_hat)
            return out / beta
        both = b.backward(np.stack([rho_hat * d_mult, rho_hat * f_mult]))
        if len(moved):
            both[:, moved] = [self.moved_attention(rho_hat), self.moved_attention(rho_hat, "kernel")]
        return both[0] / (beta * both[1])

    def velocity(self, rho_hat: np.ndarray, where: str = "face") -> np.ndarray:
        """Signed transport velocity ``s (attention + perceptron)`` (eq. 2.6), shape (N,)."""
        w = self._cache["w_face" if where == "face" else "w_center"]
        return self.sign * (self.attention_field(rho_hat, where) + w)

    def face_velocity(self, rho: np.ndarray) -> np.ndarray:
        """``velocity(forward(rho), "face")`` from the grid density ``rho`` (N,), shape (N,):
        the transport's hot path (the same field to round-off, with fewer array passes)."""
        if self.softmax:
            return self.velocity(self.basis.forward(rho), "face")
        n, moved = self.basis.n, self.moved_faces
        spectrum = np.fft.rfft(rho)
        u = np.fft.irfft(spectrum * self._cache["m_face"], n=n) + self._cache["sw_face"]
        if moved.size:  # rfft(rho) = N rho_hat
            scale = self.sign / (self.model.beta * n)
            u[moved] = scale * self.moved_attention(spectrum) + self._cache["sw_face"][moved]
        return u

    def lipschitz_bound(self, mass: float) -> float:
        """Bound ``L`` of the nonlocal relaxation (or growth) rates of the attention (docs/math.md §6).

        Unnormalised: ``M max|K''| / beta`` bounds every linear rate ``r_j`` (docs/math.md §3.2);
        softmax: the rates are below ``K''(0)/(beta K(0)) = 1``. The perceptron field is static:
        the CFL condition handles it (adding its Lipschitz constant changed the paper run's atom
        masses by < 1e-4 and cost 25% more steps).
        """
        beta, shift = self.model.beta, kernel_log_shift(self.model)
        return 1.0 if self.softmax else mass * max_kernel_second_derivative(beta, shift) / beta

    # -- energy ------------------------------------------------------------------------
    def potential_gradient(self, rho_hat: np.ndarray) -> np.ndarray:
        """``grad U = d/dtheta [(1/beta) K*rho + v/2]`` at cell centres, shape (N,)."""
        b = self.basis
        return b.backward(rho_hat * self._cache["d_center"]) / self.model.beta + self._cache["w_center"]

    def energy(self, rho: np.ndarray, rho_hat: np.ndarray | None = None) -> float:
        """``E = (1/(2 beta)) iint K drho drho + (1/2) int v drho`` (paper eq. 2.7, docs/math.md §1).

        The grid density is read as point masses ``rho_i h`` at the cell centres, for which
        this is exact up to the kernel's spectral tail (< 1e-16 relative when the grid
        resolves the kernel bandwidth). ``rho_hat``: ``forward(rho)`` when already known.
        """
        b = self.basis
        rho_hat = b.forward(rho) if rho_hat is None else rho_hat
        f = b.backward(rho_hat * self._cache["kernel"])
        w = rho * b.cell_weight
        return float(np.dot(w, f) / (2.0 * self.model.beta) + 0.5 * np.dot(w, self._cache["v_center"]))

    def free_energy(self, rho: np.ndarray, energy: float | None = None) -> float:
        """``F = E - s nu int rho log rho`` (docs/noise.md §1; ``F = E`` without noise) of the
        grid density ``rho`` (N,); ``energy``: its ``E`` when already known."""
        energy = self.energy(rho) if energy is None else energy
        return free_energy(energy, rho, self.basis.cell_weight, self.sign, self.model.noise)

    def dissipation(self, rho: np.ndarray, rho_hat: np.ndarray | None = None) -> float:
        """``D = int grad U . V drho`` with ``V`` the unsigned velocity: ``dE/dt = s D``.

        Unnormalised attention: ``D = int |g|^2 drho >= 0``. Softmax, pure attention:
        ``D = int |grad f|^2 / (beta^2 f) drho`` (docs/math.md §1). With softmax and a perceptron
        ``D`` has no sign. ``rho_hat``: ``forward(rho)`` when already known.
        """
        grad_u, vel = self.centre_fields(self.basis.forward(rho) if rho_hat is None else rho_hat)
        return float(np.sum(rho * grad_u * vel * self.basis.cell_weight))

    def centre_fields(self, rho_hat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(grad U, V)`` at the cell centres, V the unsigned velocity (N,) each; one inverse
        transform for unnormalised attention, where the two are the same field."""
        grad_u = self.potential_gradient(rho_hat)
        if not self.softmax:
            return grad_u, grad_u
        return grad_u, self.sign * self.velocity(rho_hat, "center")

