"""S^1: the model on a uniform periodic grid of N cells.

- :mod:`~solvers.circle.handover`: ``SpectralToCells``, the default method (spectral while the
  density is smooth, then Lagrangian cells with Dirac atoms).
- :mod:`~solvers.circle.lagrangian`, :mod:`~solvers.circle.lagrangian_fields`,
  :mod:`~solvers.circle.lagrangian_discretization`: moving cells with Dirac atoms, their fields
  in closed form, and the discretisation; :mod:`~solvers.circle.cell_energy`: their exact energy.
- :mod:`~solvers.circle.problem`: ``CircleProblem``: velocities, energy, dissipation of a grid density.
- :mod:`~solvers.circle.fv`: positivity-preserving MUSCL finite volumes.
- :mod:`~solvers.circle.spectral`: pseudo-spectral transport with the 2/3 rule.
- :mod:`~solvers.circle.discretization`: ``CircleDiscretization`` (scheme registry, diagnostics).
- :mod:`~solvers.circle.atoms`: atom detection on the circle.
- :mod:`~solvers.circle.initial`: analytic initial densities (uniform + modes, von Mises).
"""
