"""S^1, measure-valued states: a density plus Dirac atoms, which carry mass exactly and are never
trapped in a grid cell.

- :mod:`~solvers.circle.measure.dirac`: the state ``mu = rho dtheta + sum_i m_i delta_{x_i}`` on the
  fixed grid and its fields; :mod:`~solvers.circle.measure.kernels_dirac_numba`: compiled.
- :mod:`~solvers.circle.measure.dirac_discretization`: ``[atoms] representation = "dirac"`` on the
  fv grid (the Discretization protocol).
- :mod:`~solvers.circle.measure.dirac_events`: capture of concentrated basins as Dirac atoms.
- :mod:`~solvers.circle.measure.dirac_diagnostics`: snapshot diagnostics of the Dirac state (S^1
  only as a module: the sphere keeps them in its ``dirac_discretization``).
- :mod:`~solvers.circle.measure.lagrangian`: moving cells with Dirac atoms at their ends;
  :mod:`~solvers.circle.measure.lagrangian_fields`: their fields in closed form;
  :mod:`~solvers.circle.measure.kernels_lagrangian_numba`: compiled (the right-hand side),
  :mod:`~solvers.circle.measure.kernels_lagrangian_events_numba`: the bookkeeping after a step,
  compiled (S^1 only, like the cells' ``kernels_lagrangian_numba``: the sphere's particles run
  the kernel series of :mod:`spectral.kernel_series_numba`).
- :mod:`~solvers.circle.measure.lagrangian_discretization`: ``time.scheme = "lagrangian"``.
- :mod:`~solvers.circle.measure.cell_energy`: the exact energy of the cells' measure (S^1 only:
  the sphere's particles have no cell geometry).
"""
