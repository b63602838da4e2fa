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


CIRCLE = Circle()
