"""S^2: the model on a reduced Gauss grid, through shtns.

- :mod:`~solvers.sphere.grid`: ``SphereGrid``: cells whose areas are the Gauss weights, merged near the poles.
- :mod:`~solvers.sphere.problem`: ``SphereProblem``: face velocities, energy, dissipation.
- :mod:`~solvers.sphere.fv`: positivity-preserving MUSCL finite volumes.
- :mod:`~solvers.sphere.spectral`: pseudo-spectral transport with shtns vector transforms.
- :mod:`~solvers.sphere.discretization`: ``SphereDiscretization`` (scheme registry, diagnostics).
- :mod:`~solvers.sphere.atoms`: atom detection on the sphere.
- :mod:`~solvers.sphere.initial`: analytic initial densities (uniform + harmonics, von Mises-Fisher).
"""
