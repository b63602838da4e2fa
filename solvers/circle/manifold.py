"""``CIRCLE``: S^1 as a :class:`~solvers.core.manifold.Manifold` (the contract is in its docstring).

``domain.resolution`` is the number N of uniform cells; points are angles ``theta`` (unit
vectors ``(cos theta, sin theta)`` where a study needs them). The circle is ordered: its
measures have exact Wasserstein distances by their distribution functions, and its atoms have
a closed-form velocity (:mod:`solvers.circle.measure.lagrangian`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.core.manifold import Manifold
from solvers.core.measure import DiracAtoms

TWO_PI = 2.0 * np.pi


def _handover() -> type:
    from solvers.circle.handover import SpectralToCells

    return SpectralToCells


def _cells() -> type:
    from solvers.circle.measure.lagrangian_discretization import LagrangianCircleDiscretization

    return LagrangianCircleDiscretization


def _dirac() -> type:
    from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization

    return DiracCircleDiscretization


def _grid() -> type:
    from solvers.circle.grid.discretization import CircleDiscretization

    return CircleDiscretization


class Circle(Manifold):
    """S^1 on N uniform cells (module docstring)."""

    name = "S1"
    dimension = 2
    surface = TWO_PI
    grid_dims = ("theta",)
    resolution_symbol = "N"
    resolution_offset = 0
    min_coarse_resolution = 64
    max_check_resolution = 4096
    stability_degree = 48
    ordered = True
    error_controlled_default = True
    precision_study = True
    angle_axes = ()  # a point is one angle t
    coefficient_convention = ("m_k = int exp(-i k t) dmu(t) (complex Fourier, not orthonormal); degree "
                              "norm |m_0|, sqrt(|m_k|^2 + |m_-k|^2) for k > 0")
    partial_sum_convention = "(1/2 pi) sum_{|k| <= L} |m_k|^2 -> int rho^2 dt"
    parseval_factor = 1.0 / (2 * np.pi)
    check_centre = (0.7,)
    check_atom = (2.0,)

    # ------------------------------------------------------------------ schemes
    def discretizations(self) -> dict[tuple[str, str], Any]:
        return {("spectral+lagrangian", "dirac"): _handover, ("lagrangian", "dirac"): _cells,
                ("fv", "dirac"): _dirac, ("fv", "grid"): _grid, ("spectral", "grid"): _grid}

    # ------------------------------------------------------------------ resolution
    def coarse_resolution(self, resolution: int) -> int | None:
        half = resolution // 2
        return None if half < self.min_coarse_resolution else half

    def refine(self, resolution: int) -> int:
        return 2 * resolution

    def minimum_resolution(self, bandwidth: int) -> int:
        return 32 * -(-3 * bandwidth // 32)  # a multiple of 32, three points per period of j*

    def grid_resolution(self, shape: tuple[int, ...]) -> int:
        return int(shape[0])

    # ------------------------------------------------------------------ grid and initial states
    def grid_arrays(self, resolution: int) -> tuple[np.ndarray, np.ndarray, None]:
        from solvers.circle.initial import cell_centers, cell_width

        return cell_centers(resolution), np.full(resolution, cell_width(resolution)), None

    def initial_density(self, initial: Any, resolution: int, point_values: bool) -> np.ndarray:
        from solvers.circle.initial import circle_initial_density

        return circle_initial_density(initial, resolution)  # the spectral scheme converts itself

    def density_from_snapshot(self, axes: Any, rho: np.ndarray, resolution: int, path: str
                              ) -> tuple[np.ndarray, float]:
        from solvers.circle.initial import cell_width, from_snapshot

        return from_snapshot(axes, rho, resolution, path), cell_width(resolution)

    def scale_density(self, rho: np.ndarray, mass: float, key: str, resolution: int) -> np.ndarray:
        from solvers.circle.initial import scale

        return scale(rho, mass, key)

    def deposit_atoms(self, rho: np.ndarray, atoms: DiracAtoms, resolution: int) -> np.ndarray:
        """Each atom into the uniform cell ``round(x / h)``."""
        from spectral import CircleBasis

        rho = rho.copy()
        basis = CircleBasis(rho.size)
        np.add.at(rho, basis.cell_of(atoms.position), atoms.mass / basis.h)
        return rho

    def snapshot_point_masses(self, axes: Any, rho: np.ndarray, path: Any
                              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Cell averages ``rho_i`` as masses ``rho_i h`` at the centres ``theta_i``."""
        theta, rho = np.asarray(axes, float), np.asarray(rho, float)
        if theta.ndim != 1 or rho.shape != theta.shape:
            raise ValueError(f"--archive: {path} is not an S1 archive (rho has shape {rho.shape})")
        h = TWO_PI / theta.size
        return theta, rho * h, float(np.sum(rho ** 2) * h)

    def positions_to_angles(self, position: np.ndarray) -> np.ndarray:
        return np.asarray(position, float).reshape(-1)

    def cell_masses(self, rho: np.ndarray, resolution: int) -> tuple[np.ndarray, np.ndarray]:
        theta = (np.arange(rho.size) + 0.5) * TWO_PI / rho.size
        return np.stack([np.cos(theta), np.sin(theta)], axis=1), rho * TWO_PI / rho.size

    def random_centers(self, rng: np.random.Generator, count: int) -> list:
        return [0.0] + (TWO_PI * rng.random(count)).tolist()

    # ------------------------------------------------------------------ atoms
    def atom_radius(self, beta: float) -> float:
        from solvers.circle.atoms import default_radius

        return default_radius(beta)

    def grid_atoms(self, config: Any, disc: Any, rho: np.ndarray
                   ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        from solvers.circle.atoms import detect_atoms

        b = disc.problem.basis
        found = detect_atoms(b.theta, rho * b.cell_weight, config.model.beta, config.atoms,
                             face_velocity=disc.problem.velocity(b.forward(rho), "face"))
        points = np.stack([np.cos(b.theta), np.sin(b.theta)], axis=1)
        return found, points, (rho * b.cell_weight).ravel(), found.labels

    def measure_atoms(self, config: Any, disc: Any, rho: np.ndarray, state: Any
                      ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        from solvers.circle.measure.dirac_diagnostics import measure_atoms

        b, atoms = disc.problem.basis, disc.atoms(state)
        u = disc.fields.face_velocity(b.forward(rho), atoms.position, atoms.mass)
        found = measure_atoms(disc, rho, atoms, u, config.atoms)
        return found, np.stack([np.cos(b.theta), np.sin(b.theta)], axis=1), rho * b.cell_weight, found.labels

    def exact_atom_speed(self, config: Any, final: Any) -> float | None:
        """The closed-form field of the cells and Dirac atoms
        (:func:`solvers.circle.measure.lagrangian.velocity`) at the atoms of ``final``."""
        from solvers.circle.measure import lagrangian as lg

        diag = final.diagnostics
        mass = np.asarray(diag.atom_mass, float).ravel()
        where = np.asarray(diag.atom_position, float)[np.isfinite(mass) & (mass > 0)]
        if where.size == 0:
            return None
        dm = np.asarray(diag.dirac_mass, float)
        state = lg.from_grid(np.asarray(final.rho, float), dm, np.asarray(diag.dirac_position, float),
                             np.asarray(diag.dirac_id, int) if dm.size else np.zeros(0, int))
        u = lg.velocity(state, config.model, lg.gradient_weights(config.model), np.asarray(where, float))
        return float(np.max(np.abs(u)))

    # ------------------------------------------------------------------ stationary states
    def top_degree(self, resolution: int) -> int:
        return resolution // 2 - 1

    def basis_size(self, top: int) -> int:
        return 2 * top + 1

    def degree_norm_factor(self, degree: int) -> float:
        return 2.0

    def rotation_modes(self, symmetric: bool) -> int:
        return 1

    # ------------------------------------------------------------------ cost figures
    def grid_spacing(self, resolution: int) -> float:
        return 2 * np.pi / resolution

    def grid_points(self, resolution: int) -> int:
        return resolution

    def step_seconds(self, resolution: int) -> float:
        return 5e-4 + 3.7e-6 * resolution

    # ------------------------------------------------------------------ angles
    def uniform_angles(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.uniform(0.0, 2.0 * np.pi, count)

    def haversine(self, a: tuple, b: tuple, antipode: bool = False) -> np.ndarray:
        return (np.cos if antipode else np.sin)(0.5 * (a[0] - b[0])) ** 2

    # ------------------------------------------------------------------ the Lemma 5.1 check
    # Coefficients are the complex Fourier ``m_k = int e^{-ikt} dmu``, k = 0..lmax (the basis
    # argument is None); samples on ``n`` uniform points ``t_i = 2 pi i / n``.
    def vmf_density_l2(self, mass: float, kappa: float) -> float:
        """``m^2 I_0(2 kappa) / (2 pi I_0(kappa)^2)``."""
        from spectral.eigenvalues import log_bessel_i

        m, k = mass, kappa
        return m * m * float(np.exp(log_bessel_i(0, 2 * k) - 2 * log_bessel_i(0, k))) / (2 * np.pi)

    def vmf_potential(self, mass: float, kappa: float, r: np.ndarray, s: float,
                      delta: np.ndarray) -> np.ndarray:
        """``m e^{-beta} I_0(r) / I_0(kappa)``."""
        from scipy.special import ive

        return mass * ive(0, r) * np.exp(delta) / ive(0, kappa)

    def check_grid_size(self, lmax: int, bandwidth: int) -> int:
        """``N >= max(2 lmax + 2, lmax + J + 1)``, a multiple of 16 (aliases of degree <= lmax
        come from degrees >= N - lmax)."""
        n = max(2 * lmax + 2, lmax + bandwidth + 1)
        return int(16 * np.ceil(n / 16))

    def check_grid(self, lmax: int, n: int) -> tuple[tuple, Any, None]:
        """Points ``(t,)``; ``forward``: ``f_k = int f e^{-ikt} dt`` by the FFT."""
        if n < 2 * lmax + 2:
            raise ValueError(f"--n: the S^1 grid needs >= 2 lmax + 2 = {2 * lmax + 2} points "
                             f"(got {n}); raise --n or lower --lmax")
        t = 2.0 * np.pi * np.arange(n) / n
        return (t,), lambda f: np.fft.fft(f)[: lmax + 1] * (2.0 * np.pi / n), None

    def per_degree(self, coeffs: np.ndarray, values: np.ndarray, basis: None) -> np.ndarray:
        return coeffs * values

    def coefficient_norms(self, coeffs: np.ndarray, basis: None) -> np.ndarray:
        """``|c_0|`` and ``sqrt(2) |c_k|`` (``+-k`` together, for a real measure)."""
        k = np.arange(np.shape(coeffs)[-1])
        return np.abs(coeffs) * np.where(k == 0, 1.0, np.sqrt(2.0))

    def uniform_coefficients(self, mass: float, lmax: int, basis: None) -> np.ndarray:
        k = np.arange(lmax + 1)
        return np.where(k == 0, mass, 0.0).astype(complex)

    def vmf_coefficients(self, mass: float, kappa: float, centre: np.ndarray,
                         scaled_lambda: np.ndarray, basis: None) -> np.ndarray:
        """``m I_k(kappa) / I_0(kappa) e^{-ik t0}``."""
        from spectral.sphere import expi

        k = np.arange(scaled_lambda.size)
        ratio = scaled_lambda[k] / scaled_lambda[0]
        return mass * ratio * expi(-k, centre[0])

    def atom_coefficients(self, angles: np.ndarray, weights: np.ndarray, symmetric: bool,
                          lmax: int, basis: None) -> np.ndarray:
        from spectral.sphere import expi

        k = np.arange(lmax + 1)
        m = expi(-k[:, None], angles[None, :]) @ weights
        return m * (1 + (-1.0) ** k) if symmetric else m


CIRCLE = Circle()
