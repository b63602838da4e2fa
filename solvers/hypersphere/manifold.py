"""``HyperSphere``: ``S^{d-1}`` by weighted points as a :class:`~solvers.core.manifold.Manifold`.

``domain.manifold = "Sd"``, ``domain.dim = d``, ``domain.points = N`` (kept as
``domain.resolution``: the resolution arithmetic of the verdict halves and doubles the number of
points). There is no grid: the pipeline sees one cell, the whole sphere
(:mod:`solvers.hypersphere.discretization`). One object per d (:func:`hypersphere`);
:data:`HYPERSPHERE` stands for the family where no d is known (a name lookup). What needs a
grid (a start from a grid density or another archive, the Lemma 5.1 check of a run archive,
stationary bases) raises a ValueError that says so; a capability answers False.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from solvers.core.manifold import Manifold
from solvers.core.measure import DiracAtoms

NO_GRID = "on Sd (weighted points) there is no grid"


def _points_class() -> type:
    from solvers.hypersphere.discretization import PointsDiscretization

    return PointsDiscretization


def _no_grid(what: str) -> ValueError:
    return ValueError(f"{what}: not available {NO_GRID}")


class HyperSphere(Manifold):
    """``S^{d-1}`` by weighted points (module docstring)."""

    name = "Sd"
    grid_dims = ("cell",)
    resolution_symbol = "N"
    resolution_key = "domain.points"
    resolution_offset = 0
    min_coarse_resolution = 256
    max_check_resolution = 1 << 17
    stability_degree = 0
    ordered = False
    error_controlled_default = True
    precision_study = False
    angle_axes = (0,)
    coefficient_convention = "degree norms of the Gegenbauer (zonal) expansion"
    partial_sum_convention = "sum_{l <= L} |m_l|^2"
    parseval_factor = 1.0
    check_centre = ()
    check_atom = ()

    def __init__(self, dimension: int) -> None:
        from solvers.hypersphere.points import sphere_area

        self.dimension = int(dimension)
        self.surface = sphere_area(max(self.dimension, 2))

    def __repr__(self) -> str:
        return f"<manifold Sd, d = {self.dimension}>"

    def discretizations(self) -> dict[tuple[str, str], Any]:
        return {("lagrangian", "dirac"): _points_class}

    # ------------------------------------------------------------------ resolution (points)
    def coarse_resolution(self, resolution: int) -> int | None:
        half = resolution // 2
        return None if half < self.min_coarse_resolution else half

    def refine(self, resolution: int) -> int:
        return 2 * resolution

    def minimum_resolution(self, bandwidth: int) -> int:
        return 2

    def grid_resolution(self, shape: tuple[int, ...]) -> int:
        raise _no_grid("the resolution of a grid")

    # ------------------------------------------------------------------ grid and initial states
    def grid_arrays(self, resolution: int) -> tuple[np.ndarray, np.ndarray, None]:
        """One cell, the whole sphere: ``theta = [0]``, ``cell_weight = [|S^{d-1}|]``."""
        return np.zeros(1), np.array([self.surface]), None

    def initial_density(self, initial: Any, resolution: int, point_values: bool) -> np.ndarray:
        """The one cell's mean density (the points themselves are drawn by the discretisation)."""
        return np.array([initial.mass / self.surface])

    def density_from_snapshot(self, axes: Any, rho: np.ndarray, resolution: int, path: str
                              ) -> tuple[np.ndarray, np.ndarray]:
        raise _no_grid("initial.kind = \"archive\"")

    def scale_density(self, rho: np.ndarray, mass: float, key: str, resolution: int) -> np.ndarray:
        return np.array([mass / self.surface])

    def deposit_atoms(self, rho: np.ndarray, atoms: DiracAtoms, resolution: int) -> np.ndarray:
        return rho

    def cell_masses(self, rho: np.ndarray, resolution: int) -> tuple[np.ndarray, np.ndarray]:
        raise _no_grid("cell masses")

    def random_centers(self, rng: np.random.Generator, count: int) -> list:
        e = np.zeros(self.dimension)
        e[-1] = 1.0
        v = rng.normal(size=(count, self.dimension))
        return [e.tolist()] + (v / np.linalg.norm(v, axis=1)[:, None]).tolist()

    # ------------------------------------------------------------------ atoms
    def atom_radius(self, beta: float) -> float:
        from solvers.hypersphere.points import cluster_radius

        return cluster_radius(beta, self.dimension)

    def grid_atoms(self, config: Any, disc: Any, rho: np.ndarray
                   ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        raise _no_grid("grid atoms")

    def measure_atoms(self, config: Any, disc: Any, rho: np.ndarray, state: Any
                      ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """The clusters of the state's points: ``(found, points (n, d), masses (n,), labels)``."""
        from types import SimpleNamespace

        from solvers.hypersphere import points as pts

        p = disc.particles(state)
        x = pts.normalise(p.position)
        mass, position = disc.clusters(x, p.mass, config.atoms)
        labels = np.full(p.count, -1)
        if mass.size:
            near = np.argmax(x @ position.T, axis=1)
            labels = np.where(np.sum(x * position[near], axis=1) > math.cos(
                self.atom_radius(config.model.beta)), near, -1)
        found = SimpleNamespace(count=int(mass.size), mass=mass, position=position, labels=labels)
        return found, x, p.mass, labels

    def exact_atom_speed(self, config: Any, final: Any) -> float | None:
        """The largest speed of an atom (a cluster) of ``final`` under the exact velocity of the
        clusters, each a point mass at its centre of mass (the points outside every cluster,
        not in a snapshot, left out: at a stationary stop they hold little mass)."""
        from solvers.hypersphere import points as pts
        from solvers.model.kernel import kernel_log_shift

        diag = final.diagnostics
        mass = np.asarray(diag.atom_mass, float).ravel()
        keep = np.isfinite(mass) & (mass > 0)
        if not np.any(keep):
            return None
        x = np.asarray(diag.atom_position, float).reshape(mass.size, -1)[keep]
        v = pts.velocity(pts.normalise(x), mass[keep], config.model, kernel_log_shift(config.model))
        return float(np.max(np.linalg.norm(v, axis=1)))

    # ------------------------------------------------------------------ stationary states
    def top_degree(self, resolution: int) -> int:
        raise _no_grid("a stationary basis")

    def basis_size(self, top: int) -> int:
        raise _no_grid("a stationary basis")

    def degree_norm_factor(self, degree: int) -> float:
        raise _no_grid("a stationary basis")

    def rotation_modes(self, symmetric: bool) -> int:
        return self.dimension * (self.dimension - 1) // 2

    # ------------------------------------------------------------------ cost figures
    def grid_spacing(self, resolution: int) -> float:
        return math.pi

    def grid_points(self, resolution: int) -> int:
        return resolution

    def step_seconds(self, resolution: int) -> float:
        """Six evaluations of the pair sums, ``n^2 (2 d + 1)`` terms each (about 1 ns a term)."""
        return 1e-3 + 6e-9 * resolution * resolution * (2 * self.dimension + 1) / 2

    # ------------------------------------------------------------------ angles
    def uniform_angles(self, rng: np.random.Generator, count: int) -> np.ndarray:
        raise _no_grid("angles")

    def haversine(self, a: tuple, b: tuple, antipode: bool = False) -> np.ndarray:
        raise _no_grid("angles")

    # ------------------------------------------------------------------ the Lemma 5.1 check
    def _lemma(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("the Lemma 5.1 check on Sd: meanfield lemma51 --dim d")

    vmf_density_l2 = vmf_potential = check_grid_size = check_grid = _lemma
    per_degree = coefficient_norms = uniform_coefficients = vmf_coefficients = _lemma
    snapshot_point_masses = positions_to_angles = atom_coefficients = _lemma


@functools.lru_cache(maxsize=None)
def hypersphere(dimension: int) -> HyperSphere:
    """The manifold object of ``S^{dimension - 1}`` by weighted points (one per d)."""
    return HyperSphere(dimension)


HYPERSPHERE = hypersphere(0)
