"""S^2: the model on a reduced Gauss grid, through shtns; mirrors :mod:`solvers.circle` module for module.

Shared by both states of the sphere (the manifold's geometry and model):

- :mod:`~solvers.sphere.manifold`: ``SPHERE``, the sphere as a ``Manifold`` object (what the
  layers above ask of a manifold).
- :mod:`~solvers.sphere.problem`: ``SphereProblem``: face velocities, energy, dissipation.
- :mod:`~solvers.sphere.cells`: ``SphereGrid``: cells whose areas are the Gauss weights, merged
  near the poles.
- :mod:`~solvers.sphere.initial`: analytic initial densities (uniform + harmonics, von Mises-Fisher).
- :mod:`~solvers.sphere.atoms`: atom detection on grid densities (compiled through
  :mod:`solvers.core.atoms_numba`, hence no ``atoms_numba`` here).
- :mod:`~solvers.sphere.kernels_sums_numba`: compiled Legendre sums of the truncated analysis
  (S^2 only: the circle's transforms are FFTs).
- :mod:`~solvers.sphere.point_spectra`: point masses and point values through the kernel's
  truncated expansion, compiled in :mod:`~solvers.sphere.kernels_points_numba` (S^2 only: the
  circle's Dirac atoms are summed mode by mode in its own measure kernels).

Subpackages, by state:

- :mod:`~solvers.sphere.grid`: a density on the fixed grid (finite volumes, pseudo-spectral).
- :mod:`~solvers.sphere.measure`: measure-valued states (a grid density or particles, plus Dirac
  atoms).

No ``handover`` module: the default S^2 method is one of these states, chosen in
:mod:`solvers.model.method`.
"""
