"""S^1: the model on a periodic grid of N cells; mirrored by :mod:`solvers.sphere` module for module.

Shared by both states of the circle (the manifold's geometry and model):

- :mod:`~solvers.circle.manifold`: ``CIRCLE``, the circle as a ``Manifold`` object (what the
  layers above ask of a manifold).
- :mod:`~solvers.circle.problem`: ``CircleProblem``: velocities, energy, dissipation of a grid density.
- :mod:`~solvers.circle.cells`: the finite-volume cells (uniform, or with faces on the ReLU
  corners of the perceptron velocity, ``time.kink_faces``).
- :mod:`~solvers.circle.initial`: analytic initial densities (uniform + modes, von Mises).
- :mod:`~solvers.circle.atoms`: atom detection on grid densities; :mod:`~solvers.circle.atoms_numba`:
  the same detector compiled (S^1 only: the sphere runs the shared detector of
  :mod:`solvers.core.atoms_numba` on its cell graph).
- :mod:`~solvers.circle.handover`: ``SpectralToCells``, the default method (spectral while the
  density is smooth, then Lagrangian cells with Dirac atoms). S^1 only: the sphere's default
  picks one of its states (:mod:`solvers.model.method`).

Subpackages, by state:

- :mod:`~solvers.circle.grid`: a density on the fixed grid (finite volumes, pseudo-spectral).
- :mod:`~solvers.circle.measure`: measure-valued states (a grid density or moving cells, plus
  Dirac atoms).
"""
