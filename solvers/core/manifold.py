"""``Manifold``: what a manifold provides to the layers above it (the contract of a manifold).

A run's ``[domain] manifold`` names one of the manifolds ``S^{d-1}``; the code above the
manifolds' own packages asks the manifold object for everything that differs between them,
instead of comparing the name. :func:`solvers.timestepping.manifolds.manifold_of` gives the
object of a config or of an archive's ``manifold`` attribute.

Implementing a manifold (one subclass, one instance, in the manifold's own package):

- **Schemes.** :meth:`discretizations` (the registry entries of the manifold: ``(scheme,
  representation)`` -> a function that imports and returns the discretisation class, so that
  a run imports only the scheme it runs; :mod:`solvers.timestepping.registry` looks them up).
- **Identity.** ``name`` (the archive's ``manifold`` attribute and the config's
  ``domain.manifold``), ``dimension`` d (the manifold is ``S^{d-1}``, its points unit vectors
  of ``R^d``), ``surface`` ``|S^{d-1}|``, ``grid_dims`` (the archive's names of the grid axes)
  ``resolution_symbol`` (how ``domain.resolution`` is written: ``N`` or ``lmax``) and
  ``resolution_key`` (the config key that sets it: ``domain.resolution``, ``domain.points``).
- **Resolution arithmetic.** :meth:`coarse_resolution` (the verdict's half-resolution run,
  ``None`` below ``min_coarse_resolution``), :meth:`refine` (the next level of a resolution
  check, capped by ``max_check_resolution``), ``resolution_offset`` (the grid has
  ``resolution + offset`` rings: a refinement ladder has a constant ratio of those),
  :meth:`minimum_resolution` (the coarsest grid that resolves a kernel bandwidth),
  :meth:`grid_resolution` (the resolution of a grid of a given shape).
- **Grid and initial states.** :meth:`grid_arrays` (the axes the archive writer records),
  :meth:`initial_density` (the analytic densities of ``[initial]``), :meth:`density_from_snapshot`,
  :meth:`scale_density` and :meth:`deposit_atoms` (a start from another run's archive),
  :meth:`cell_masses` (one point mass per cell), :meth:`random_centers` (seeded points).
- **Atoms.** :meth:`atom_radius` (the default grouping radius), :meth:`grid_atoms` and
  :meth:`measure_atoms` (the run's own detector on a grid or measure-valued state),
  :meth:`exact_atom_speed` (the verdict's stationarity check; ``None`` where there is no closed
  form).
- **Stationary states.** :meth:`top_degree` (largest degree a grid resolves),
  :meth:`basis_size`, :meth:`degree_norm_factor`, :meth:`rotation_modes` and
  ``stability_degree`` (the default largest degree of a stability basis).
  The real bases themselves are built in :mod:`solvers.studies.stationary_basis`.
- **Cost figures.** :meth:`grid_spacing`, :meth:`grid_points` and :meth:`step_seconds`, the
  per-manifold numbers of the cost model.
- **Angles.** ``angle_axes`` (the trailing shape of one point's angles: ``()`` for one
  angle, ``(2,)`` for ``(theta, phi)``), :meth:`uniform_angles` (seeded points, uniform on the
  manifold), :meth:`haversine` (``sin^2(gamma/2)`` of the geodesic angle ``gamma`` from angles,
  to a few ulps).
- **The Lemma 5.1 check** (:mod:`solvers.studies.lemma51`: invert ``f = K * mu`` degree by
  degree). Conventions: ``coefficient_convention``, ``partial_sum_convention`` (the report's
  text) and ``parseval_factor`` ``c`` (``c sum_l |m_l|^2 -> int rho^2``); test points:
  ``check_centre`` (the vMF mean direction) and ``check_atom`` (the atom of the injectivity
  test), as angles. Closed forms of the von Mises-Fisher density: :meth:`vmf_density_l2`,
  :meth:`vmf_potential`. The spectral side: :meth:`check_grid_size`, :meth:`check_grid` (points,
  forward transform and basis), :meth:`per_degree`, :meth:`coefficient_norms`, and the exact
  coefficients :meth:`uniform_coefficients`, :meth:`vmf_coefficients`, :meth:`atom_coefficients`.
- **Capabilities** (a study that needs one asks; a manifold without it answers False and the
  study skips it): ``ordered`` (a cyclic order of points: the exact Wasserstein distance of
  two measures by their distribution functions, particle placement by quantiles and grouping
  by angle), ``error_controlled_default`` (the default method's steps are error-controlled),
  ``precision_study`` (the Lemma 5.1 check has a multi-precision version: samples on uniform
  angles, a DFT and ``lambda_k`` in mpmath).

Plots stay in :mod:`solvers.plots` (above the manifolds): the figures of a manifold are chosen
there, keyed on its object. Everything a method needs from the manifold's own package is
imported inside the method, so that naming a manifold imports nothing heavy (the sphere's
transforms are imported only when a sphere grid is built).
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from solvers.core.measure import DiracAtoms


class Manifold(abc.ABC):
    """One manifold ``S^{d-1}`` with its grid and model (module docstring: the contract)."""

    name: str
    dimension: int
    surface: float
    grid_dims: tuple[str, ...]
    resolution_symbol: str
    resolution_key: str = "domain.resolution"  # the config key a user raises
    resolution_offset: int
    min_coarse_resolution: int
    max_check_resolution: int
    stability_degree: int
    ordered: bool
    error_controlled_default: bool
    precision_study: bool
    angle_axes: tuple[int, ...]
    coefficient_convention: str
    partial_sum_convention: str
    parseval_factor: float
    check_centre: tuple[float, ...]
    check_atom: tuple[float, ...]

    @abc.abstractmethod
    def discretizations(self) -> dict[tuple[str, str], Any]:
        """``{(scheme, representation): loader}``: each loader imports and returns the
        discretisation class (:class:`solvers.core.discretization.Discretization`) of that entry."""

    def __repr__(self) -> str:
        return f"<manifold {self.name}>"

    # ------------------------------------------------------------------ resolution
    @abc.abstractmethod
    def coarse_resolution(self, resolution: int) -> int | None:
        """The verdict's half resolution (None below ``min_coarse_resolution``)."""

    @abc.abstractmethod
    def refine(self, resolution: int) -> int:
        """The next, finer level of a resolution check."""

    @abc.abstractmethod
    def minimum_resolution(self, bandwidth: int) -> int:
        """The coarsest resolution for a kernel of bandwidth ``j*`` (the config's check)."""

    @abc.abstractmethod
    def grid_resolution(self, shape: tuple[int, ...]) -> int:
        """``domain.resolution`` of a quadrature grid of ``shape``."""

    # ------------------------------------------------------------------ grid and initial states
    @abc.abstractmethod
    def grid_arrays(self, resolution: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(theta, cell_weight, phi)`` of the run's grid: the archive's axes and cell weights
        (``phi`` None on a one-axis grid); ``cell_weight`` has the grid's shape."""

    @abc.abstractmethod
    def initial_density(self, initial: Any, resolution: int, point_values: bool) -> np.ndarray:
        """The analytic initial density of ``initial`` (``InitialParams``) on the grid,
        scaled to ``initial.mass``; ``point_values``: grid values instead of cell averages
        (where the two differ)."""

    @abc.abstractmethod
    def density_from_snapshot(self, axes: Any, rho: np.ndarray, resolution: int, path: str
                              ) -> tuple[np.ndarray, np.ndarray | float]:
        """``(rho, cell_weight)``: an archived density moved onto the run's grid."""

    @abc.abstractmethod
    def scale_density(self, rho: np.ndarray, mass: float, key: str, resolution: int) -> np.ndarray:
        """``rho`` checked (errors name ``key``) and scaled to total mass ``mass``."""

    @abc.abstractmethod
    def deposit_atoms(self, rho: np.ndarray, atoms: DiracAtoms, resolution: int) -> np.ndarray:
        """A copy of ``rho`` with each atom's mass added to the cell that holds it."""

    @abc.abstractmethod
    def cell_masses(self, rho: np.ndarray, resolution: int) -> tuple[np.ndarray, np.ndarray]:
        """``(x (cells, d), mass (cells,))``: the cells' centres as unit vectors and their
        masses ``rho * cell weight``, flattened."""

    @abc.abstractmethod
    def random_centers(self, rng: np.random.Generator, count: int) -> list:
        """``[initial] centers`` entries: the fixed first centre (angle 0, the north pole),
        then ``count`` points drawn uniformly from ``rng``."""

    # ------------------------------------------------------------------ atoms
    @abc.abstractmethod
    def atom_radius(self, beta: float) -> float:
        """The default radius of an atom (``atoms.radius`` unset)."""

    @abc.abstractmethod
    def grid_atoms(self, config: Any, disc: Any, rho: np.ndarray
                   ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """``(atoms, points (cells, d), cell_mass (cells,), labels (cells,))`` of a grid state
        by the run's own detector (``disc``: the run's discretisation)."""

    @abc.abstractmethod
    def measure_atoms(self, config: Any, disc: Any, rho: np.ndarray, state: Any
                      ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`grid_atoms` of a measure-valued ``state`` of ``disc``."""

    def exact_atom_speed(self, config: Any, final: Any) -> float | None:
        """Largest speed of an atom of ``final`` under the exact velocity of its measure
        (None: no closed form on this manifold, or no atoms)."""
        return None

    # ------------------------------------------------------------------ stationary states
    @abc.abstractmethod
    def top_degree(self, resolution: int) -> int:
        """The largest degree of a stationary basis on the grid of ``resolution``."""

    @abc.abstractmethod
    def basis_size(self, top: int) -> int:
        """Functions of the full basis of degrees ``<= top``."""

    @abc.abstractmethod
    def degree_norm_factor(self, degree: int) -> float:
        """``|int Y_k rho| / M = norm_k / (factor x_0)`` of the real basis' coefficients."""

    @abc.abstractmethod
    def rotation_modes(self, symmetric: bool) -> int:
        """Neutral rotations of a non-uniform state (``symmetric``: in the symmetric basis)."""

    # ------------------------------------------------------------------ cost figures
    @abc.abstractmethod
    def grid_spacing(self, resolution: int) -> float:
        """The grid's spacing (rad) in the cost model's CFL bound."""

    @abc.abstractmethod
    def grid_points(self, resolution: int) -> int:
        """Points of the grid (the cost of a step and of a snapshot)."""

    @abc.abstractmethod
    def step_seconds(self, resolution: int) -> float:
        """The cost model's seconds per time step."""

    # ------------------------------------------------------------------ angles
    @abc.abstractmethod
    def uniform_angles(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` points drawn uniformly from ``rng``, as angles: shape
        ``(count,) + angle_axes``."""

    @abc.abstractmethod
    def haversine(self, a: tuple, b: tuple, antipode: bool = False) -> np.ndarray:
        """``sin^2(gamma/2) = (1 - x.y)/2`` of the points with angles ``a`` and ``b`` (tuples of
        one array per angle; broadcasts), to a few ulps.

        ``antipode``: the same for ``x`` and ``-y``, ``(1 + x.y)/2``, written with the angles of
        ``y`` itself (the antipode's angles rounded in double would break the symmetry at the
        1e-16 level).
        """

    # ------------------------------------------------------------------ the Lemma 5.1 check
    @abc.abstractmethod
    def vmf_density_l2(self, mass: float, kappa: float) -> float:
        """``int rho^2`` of the von Mises-Fisher density of ``mass`` and concentration ``kappa``."""

    @abc.abstractmethod
    def vmf_potential(self, mass: float, kappa: float, r: np.ndarray, s: float,
                      delta: np.ndarray) -> np.ndarray:
        """``e^{-beta} (K * mu)`` of the vMF density: the closed form in ``r = |beta x + kappa e|``,
        ``s = beta + kappa`` and ``delta = r - s`` (computed without cancellation)."""

    @abc.abstractmethod
    def check_grid_size(self, lmax: int, bandwidth: int) -> int:
        """The check's grid size (points or latitudes) that integrates every product of a degree
        ``<= lmax`` and a degree ``< lmax + bandwidth`` without aliasing."""

    @abc.abstractmethod
    def check_grid(self, lmax: int, n: int) -> tuple[tuple, Any, Any]:
        """``(points, forward, basis)`` of the check's grid of size ``n``: ``points`` the angle
        arrays (broadcastable), ``forward`` the transform ``f -> f_l`` of samples on them,
        ``basis`` what the coefficient methods take (None where they need only ``lmax``).

        Raises
        ------
        ValueError
            (naming ``--n``) where ``n`` is too small for ``lmax``.
        """

    @abc.abstractmethod
    def per_degree(self, coeffs: np.ndarray, values: np.ndarray, basis: Any) -> np.ndarray:
        """``coeffs`` with each coefficient of degree ``l`` multiplied by ``values[l]``."""

    @abc.abstractmethod
    def coefficient_norms(self, coeffs: np.ndarray, basis: Any) -> np.ndarray:
        """The norm of each degree's coefficients (last axis: the coefficients), shape (lmax + 1,)."""

    @abc.abstractmethod
    def uniform_coefficients(self, mass: float, lmax: int, basis: Any) -> np.ndarray:
        """Exact coefficients (complex) of the uniform measure of ``mass``."""

    @abc.abstractmethod
    def vmf_coefficients(self, mass: float, kappa: float, centre: np.ndarray,
                         scaled_lambda: np.ndarray, basis: Any) -> np.ndarray:
        """Exact coefficients of the vMF density of ``mass``, ``kappa`` and mean direction
        ``centre`` (angles, shape ``(1,) + angle_axes``); ``scaled_lambda`` (lmax + 1,): the
        scaled eigenvalues ``e^{-kappa} lambda_l(kappa)``."""

    @abc.abstractmethod
    def snapshot_point_masses(self, axes: Any, rho: np.ndarray, path: Any
                              ) -> tuple[np.ndarray, np.ndarray, float]:
        """A run snapshot's density as point masses, for the Lemma 5.1 check of a run archive.

        Parameters
        ----------
        axes : ndarray or tuple
            The grid axes as :func:`solvers.io.reading.read_snapshot` returns them.
        rho : ndarray
            The density on that grid.
        path : str or Path
            The archive, named in errors.

        Returns
        -------
        angles : ndarray, shape ``(n,) + angle_axes``
            The grid's nodes.
        masses : ndarray, shape (n,)
            ``rho`` times the node's quadrature weight (its cell's size). Their coefficients
            are the grid quadrature of ``rho`` against the basis: the density's projection on
            the basis up to the grid's own degree.
        l2 : float
            ``int rho^2 dsigma`` by the same quadrature.

        Raises
        ------
        ValueError
            (naming ``--archive``) where ``axes`` and ``rho`` are not a grid of this manifold.
        """

    @abc.abstractmethod
    def positions_to_angles(self, position: np.ndarray) -> np.ndarray:
        """Angles, shape ``(n,) + angle_axes``, of archived Dirac positions (S^1: angles
        (n,); S^2: unit vectors (n, 3))."""

    @abc.abstractmethod
    def atom_coefficients(self, angles: np.ndarray, weights: np.ndarray, symmetric: bool,
                          lmax: int, basis: Any) -> np.ndarray:
        """Exact coefficients of atoms of ``weights`` at ``angles`` (shape
        ``(n,) + angle_axes``); ``symmetric``: each with its antipode of the same weight."""
