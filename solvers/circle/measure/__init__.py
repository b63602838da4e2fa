"""S^1, measure-valued states: a density plus Dirac atoms, which carry mass exactly and are never
trapped in a grid cell.

- :mod:`~solvers.circle.measure.dirac`: the state ``mu = rho dtheta + sum_i m_i delta_{x_i}`` on the
  fixed grid and its fields; :mod:`~solvers.circle.measure.kernels_dirac_numba`: compiled.
- :mod:`~solvers.circle.measure.dirac_discretization`: ``[atoms] representation = "dirac"`` on the
  fv grid (the Discretization contract).
- :mod:`~solvers.circle.measure.dirac_events`: capture, absorption and merging of atoms, and the
  S^1 Dirac state that runs them between steps (capture every 10 steps; the shared sequence is
  :mod:`solvers.core.dirac_state`).
- :mod:`~solvers.circle.measure.dirac_diagnostics`: snapshot diagnostics of the Dirac state (numpy
  and a compiled batch).
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
