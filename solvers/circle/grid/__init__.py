"""S^1, a density on the fixed grid of N cells.

- :mod:`~solvers.circle.grid.discretization`: ``CircleDiscretization`` (the ``fv`` and
  ``spectral`` schemes behind the Discretization protocol) and the grid's snapshot diagnostics.
- :mod:`~solvers.circle.grid.fv`: positivity-preserving MUSCL / WENO5 finite volumes.
- :mod:`~solvers.circle.grid.spectral`: pseudo-spectral transport with the 2/3 rule.
- :mod:`~solvers.circle.grid.heat`: the noise's heat semigroup (exact Laplacian for spectral, the
  three-point one's exponential for fv).
- :mod:`~solvers.circle.grid.kernels_fv_numba`: the fv right-hand side and stage, compiled.
- :mod:`~solvers.circle.grid.kernels_steps_numba`: whole fv steps, FFTs included, in one compiled
  call (S^1 only: numpy's FFT inside numba through rocket-fft; the sphere's transforms are shtns).
- :mod:`~solvers.circle.grid.diagnostics_numba`: the snapshot diagnostics' reductions, compiled
  (S^1 only: the sphere's diagnostics are dominated by its transforms).
"""
