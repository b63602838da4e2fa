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


SPHERE = Sphere()
