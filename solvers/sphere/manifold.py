"""``SPHERE``: S^2 as a :class:`~solvers.core.manifold.Manifold` (the contract is in its docstring).

``domain.resolution`` is the ``lmax`` of the reduced Gauss grid (:class:`~solvers.sphere.cells.SphereGrid`:
``lmax + 1`` latitudes); points are unit vectors of ``R^3`` (angles ``(theta, phi)`` on the
grid). Every method imports the grid when it is called: naming the sphere imports no transform.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.core.manifold import Manifold
from solvers.core.measure import DiracAtoms


def _grid(resolution: int) -> Any:
    from solvers.sphere.cells import SphereGrid

    return SphereGrid(resolution)


def _particles_class() -> type:
    from solvers.sphere.measure.lagrangian_discretization import LagrangianSphereDiscretization

    return LagrangianSphereDiscretization


def _dirac_class() -> type:
    from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization

    return DiracSphereDiscretization


def _grid_class() -> type:  # imported only here: shtns is not needed on S^1
    from solvers.sphere.grid.discretization import SphereDiscretization

    return SphereDiscretization


class Sphere(Manifold):
    """S^2 on the reduced Gauss grid of ``lmax`` (module docstring)."""

    name = "S2"
    dimension = 3
    surface = 4.0 * np.pi
    grid_dims = ("theta", "phi")
    resolution_symbol = "lmax"
    resolution_offset = 1  # lmax + 1 latitudes
    min_coarse_resolution = 31
    max_check_resolution = 255
    stability_degree = 16
    ordered = False
    error_controlled_default = False
    precision_study = False
    angle_axes = (2,)  # a point is (theta, phi)
    coefficient_convention = ("m_lm = int conj(Y_lm) dmu, orthonormal complex Y_lm with Condon-Shortley "
                              "phase; degree norm sqrt(sum_{m=-l..l} |m_lm|^2)")
    partial_sum_convention = "sum_{l <= L} |m_l|^2 -> int rho^2 dsigma"
    parseval_factor = 1.0
    check_centre = (1.0, 2.0)
    check_atom = (2.0, 4.0)

    # ------------------------------------------------------------------ schemes
    def discretizations(self) -> dict[tuple[str, str], Any]:
        return {("lagrangian", "dirac"): _particles_class, ("fv", "dirac"): _dirac_class,
                ("fv", "grid"): _grid_class, ("spectral", "grid"): _grid_class}

    # ------------------------------------------------------------------ resolution
    def coarse_resolution(self, resolution: int) -> int | None:
        half = (resolution + 1) // 2 - 1  # half the latitudes
        return None if half < self.min_coarse_resolution else half

    def refine(self, resolution: int) -> int:
        return 2 * (resolution + 1) - 1  # twice the latitudes

    def minimum_resolution(self, bandwidth: int) -> int:
        return bandwidth

    def grid_resolution(self, shape: tuple[int, ...]) -> int:
        return int(shape[0]) - 1

    # ------------------------------------------------------------------ grid and initial states
    def grid_arrays(self, resolution: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        grid = _grid(resolution)
        return grid.theta, grid.area, grid.phi

    def initial_density(self, initial: Any, resolution: int, point_values: bool) -> np.ndarray:
        """Cell averages, or the values at the Gauss nodes (``point_values``: the spectral
        scheme's state; cells are not rotation-invariant, so the points are sampled here)."""
        from solvers.sphere.initial import sphere_initial_density

        return sphere_initial_density(initial, _grid(resolution), point_values=point_values)

    def density_from_snapshot(self, axes: Any, rho: np.ndarray, resolution: int, path: str
                              ) -> tuple[np.ndarray, np.ndarray]:
        from solvers.sphere.initial import from_snapshot

        grid = _grid(resolution)
        return from_snapshot(axes, rho, grid, path), grid.area

    def scale_density(self, rho: np.ndarray, mass: float, key: str, resolution: int) -> np.ndarray:
        from solvers.sphere.initial import scale

        return scale(rho, mass, key, _grid(resolution))

    def deposit_atoms(self, rho: np.ndarray, atoms: DiracAtoms, resolution: int) -> np.ndarray:
        """Each atom into the fine cell that holds it."""
        rho = rho.copy()
        grid = _grid(resolution)
        flat, fine = rho.reshape(-1), grid.fine_cell(atoms.position)
        np.add.at(flat, fine, atoms.mass / grid.area.reshape(-1)[fine])
        return rho

    def snapshot_point_masses(self, axes: Any, rho: np.ndarray, path: Any
                              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Values ``rho_jk`` at the Gauss nodes ``(theta_j, phi_k)`` as masses ``rho_jk w_jk``
        (the quadrature weights, :attr:`SphereGrid.area`): their coefficients up to degree
        ``lmax`` are the Gauss projection of ``rho`` on the spherical harmonics, exact for a
        band-limited density."""
        rho = np.asarray(rho, float)
        if not (isinstance(axes, tuple) and len(axes) == 2 and rho.ndim == 2):
            raise ValueError(f"--archive: {path} is not an S2 archive (rho has shape {rho.shape})")
        grid = _grid(self.grid_resolution(rho.shape))
        theta, phi = (np.asarray(a, float) for a in axes)
        if grid.shape != rho.shape or theta.shape != grid.theta.shape or \
                not np.allclose(theta, grid.theta, rtol=0, atol=1e-12):
            raise ValueError(f"--archive: {path} is not on the S2 Gauss grid (rho has shape "
                             f"{rho.shape})")
        angles = np.stack(np.broadcast_arrays(theta[:, None], phi[None, :]), -1).reshape(-1, 2)
        return angles, (rho * grid.area).ravel(), float(np.sum(rho ** 2 * grid.area))

    def positions_to_angles(self, position: np.ndarray) -> np.ndarray:
        """``(theta, phi)`` of unit vectors ``(x, y, z)``: ``theta = atan2(|(x, y)|, z)``."""
        x, y, z = np.asarray(position, float).reshape(-1, 3).T
        return np.stack([np.arctan2(np.hypot(x, y), z), np.mod(np.arctan2(y, x), 2 * np.pi)], 1)

    def cell_masses(self, rho: np.ndarray, resolution: int) -> tuple[np.ndarray, np.ndarray]:
        g = _grid(resolution)
        return g.points(g.theta, g.phi).reshape(-1, 3), (rho * g.area).ravel()

    def random_centers(self, rng: np.random.Generator, count: int) -> list:
        vectors = rng.normal(size=(count, 3))
        return [[0.0, 0.0, 1.0]] + (vectors / np.linalg.norm(vectors, axis=1)[:, None]).tolist()

    # ------------------------------------------------------------------ atoms
    def atom_radius(self, beta: float) -> float:
        from solvers.sphere.atoms import default_radius

        return default_radius(beta)

    def grid_atoms(self, config: Any, disc: Any, rho: np.ndarray
                   ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        from solvers.sphere.atoms import detect_atoms

        g = disc.grid
        points = g.points(g.theta, g.phi).reshape(-1, 3)
        fields = disc.problem.centre_fields(rho)
        found = detect_atoms(points, rho * g.area, g.area, config.model.beta, config.atoms,
                             cell=float(max(g.dtheta.max(), g.dphi)),
                             potential=disc.flow_potential(fields))
        return found, points, (rho * g.area).ravel(), found.labels

    def measure_atoms(self, config: Any, disc: Any, rho: np.ndarray, state: Any
                      ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """The atoms of the state's own diagnostics."""
        from types import SimpleNamespace

        diag = disc.diagnostics(state, config.atoms)
        labels = np.asarray(diag.atom_labels).ravel()
        found = SimpleNamespace(count=int(diag.n_atoms), mass=np.asarray(diag.atom_mass, float),
                                position=np.asarray(diag.atom_position, float), labels=labels)
        g = disc.grid
        return found, g.points(g.theta, g.phi).reshape(-1, 3), (rho * g.area).ravel(), labels

    # ------------------------------------------------------------------ stationary states
    def top_degree(self, resolution: int) -> int:
        return resolution

    def basis_size(self, top: int) -> int:
        return (top + 1) ** 2

    def degree_norm_factor(self, degree: int) -> float:
        return np.sqrt(2 * degree + 1)

    def rotation_modes(self, symmetric: bool) -> int:
        return 2 if symmetric else 3  # the symmetric basis is Y_l0 only

    # ------------------------------------------------------------------ cost figures
    def grid_spacing(self, resolution: int) -> float:
        return np.pi / (resolution + 1)

    def grid_points(self, resolution: int) -> int:
        return (resolution + 1) * (2 * resolution + 2)

    def step_seconds(self, resolution: int) -> float:
        return 1e-3 + 0.95e-6 * self.grid_points(resolution) * max(1.0, (resolution + 1) / 128)

    # ------------------------------------------------------------------ angles
    def uniform_angles(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``(theta, phi)``: ``cos theta`` uniform in [-1, 1], then ``phi`` uniform."""
        return np.stack([np.arccos(rng.uniform(-1.0, 1.0, count)),
                         rng.uniform(0, 2 * np.pi, count)], 1)

    def haversine(self, a: tuple, b: tuple, antipode: bool = False) -> np.ndarray:
        if antipode:
            return (np.cos(0.5 * (a[0] + b[0])) ** 2
                    + np.sin(a[0]) * np.sin(b[0]) * np.cos(0.5 * (a[1] - b[1])) ** 2)
        return (np.sin(0.5 * (a[0] - b[0])) ** 2
                + np.sin(a[0]) * np.sin(b[0]) * np.sin(0.5 * (a[1] - b[1])) ** 2)

    # ------------------------------------------------------------------ the Lemma 5.1 check
    # Coefficients are ``m_lm = int conj(Y_lm) dmu`` in the order of a
    # :class:`spectral.sphere.SphereBasis` of ``lmax`` (the basis argument), sampled on its
    # Gauss grid of ``n`` latitudes.
    def vmf_density_l2(self, mass: float, kappa: float) -> float:
        """``m^2 kappa coth(kappa) / (4 pi)``."""
        m, k = mass, kappa
        return m * m * k / np.tanh(k) / (4.0 * np.pi)

    def vmf_potential(self, mass: float, kappa: float, r: np.ndarray, s: float,
                      delta: np.ndarray) -> np.ndarray:
        """``m e^{-beta} (kappa / sinh kappa) sinh(r) / r``."""
        k = kappa
        return mass * k / -np.expm1(-2.0 * k) * (np.exp(delta) - np.exp(-r - s)) / r

    def check_grid_size(self, lmax: int, bandwidth: int) -> int:
        """Gauss ``nlat >= max(32, lmax + 1, (lmax + J + 1) / 2)``, even: the quadrature is exact
        to degree ``2 nlat - 1 >= lmax + J``."""
        from spectral.sphere import SHTNS_MIN_NLAT

        n = max(SHTNS_MIN_NLAT, lmax + 1, (lmax + bandwidth + 2) // 2)
        return n + n % 2

    def check_grid(self, lmax: int, n: int) -> tuple[tuple, Any, Any]:
        """Points ``(theta (n, 1), phi (1, nphi))``; ``forward``: the shtns analysis."""
        from spectral.sphere import SHTNS_MIN_NLAT, SphereBasis, _even_fft_size

        if n < max(SHTNS_MIN_NLAT, lmax + 1):
            raise ValueError(f"--n: the S^2 grid needs nlat >= max(32, lmax + 1) = "
                             f"{max(SHTNS_MIN_NLAT, lmax + 1)} (got {n})")
        basis = SphereBasis(lmax, nlat=n, nphi=_even_fft_size(max(2 * lmax + 2, 2 * n)))
        return (basis.theta[:, None], basis.phi[None, :]), basis.forward, basis

    def per_degree(self, coeffs: np.ndarray, values: np.ndarray, basis: Any) -> np.ndarray:
        return basis.apply_diagonal(coeffs, values)

    def coefficient_norms(self, coeffs: np.ndarray, basis: Any) -> np.ndarray:
        """``sqrt(sum_{m=-l..l} |c_lm|^2)``."""
        return basis.degree_norms(coeffs)

    def uniform_coefficients(self, mass: float, lmax: int, basis: Any) -> np.ndarray:
        l = _check_basis(basis, lmax).degrees
        return np.where(l == 0, mass / np.sqrt(4 * np.pi), 0.0).astype(complex)

    def vmf_coefficients(self, mass: float, kappa: float, centre: np.ndarray,
                         scaled_lambda: np.ndarray, basis: Any) -> np.ndarray:
        """``m (kappa / sinh kappa) i_l(kappa) conj(Y_lm(e))``, ``4 pi i_l = lambda_l``."""
        l = _check_basis(basis, scaled_lambda.size - 1).degrees
        y = np.conj(basis.harmonics(centre[:, 0], centre[:, 1]))
        k = kappa  # kappa e^k / sinh k = 2k / (1 - e^{-2k})
        i_l = scaled_lambda[l] / (4 * np.pi)  # e^{-kappa} i_l(kappa)
        return mass * 2 * k / -np.expm1(-2 * k) * i_l * y[0]

    def atom_coefficients(self, angles: np.ndarray, weights: np.ndarray, symmetric: bool,
                          lmax: int, basis: Any) -> np.ndarray:
        l = _check_basis(basis, lmax).degrees
        m = weights @ np.conj(basis.harmonics(angles[:, 0], angles[:, 1]))  # (n,) @ (n, nlm)
        return m * (1 + (-1.0) ** l) if symmetric else m


def _check_basis(basis: Any, lmax: int) -> Any:
    """``basis``, a :class:`spectral.sphere.SphereBasis` of ``lmax``."""
    assert basis is not None and basis.lmax == lmax
    return basis


SPHERE = Sphere()
