"""S^2, a density on the fixed reduced Gauss grid.

- :mod:`~solvers.sphere.grid.discretization`: ``SphereDiscretization`` (the ``fv`` and ``spectral``
  schemes behind the Discretization protocol) and the grid's snapshot diagnostics.
- :mod:`~solvers.sphere.grid.fv`: positivity-preserving MUSCL finite volumes, band by band.
- :mod:`~solvers.sphere.grid.spectral`: pseudo-spectral transport with shtns vector transforms.
- :mod:`~solvers.sphere.grid.heat`: the noise's heat semigroup, ``exp(-nu l(l+1) tau)`` per degree
  (spectral only: the fv grid's merged polar cells have no cheap exact heat step).
- :mod:`~solvers.sphere.grid.kernels_fv_numba`: the fv right-hand side, compiled.

No counterparts of the circle's ``kernels_steps_numba`` and ``diagnostics_numba``: an S^2 step's
transforms are shtns calls, which a compiled kernel cannot hold.
"""
