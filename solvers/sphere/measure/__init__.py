"""S^2, measure-valued states: a density or particles plus Dirac atoms.

- :mod:`~solvers.sphere.measure.dirac`: the state ``mu = rho dsigma + sum_i m_i delta_{x_i}`` on the
  fixed grid and its fields; :mod:`~solvers.sphere.measure.kernels_dirac_numba`: compiled ring sums.
- :mod:`~solvers.sphere.measure.dirac_discretization`: ``[atoms] representation = "dirac"`` on the
  fv grid (the Discretization contract).
- :mod:`~solvers.sphere.measure.dirac_events`: capture, absorption and merging of atoms, and the
  S^2 Dirac state that runs them between steps (capture every step; the shared sequence is
  :mod:`solvers.core.dirac_state`).
- :mod:`~solvers.sphere.measure.dirac_diagnostics`: snapshot diagnostics of the Dirac state (numpy).
- :mod:`~solvers.sphere.measure.lagrangian`: the measure as weighted particles and their fields
  (the circle splits these into ``lagrangian`` and ``lagrangian_fields``).
- :mod:`~solvers.sphere.measure.lagrangian_discretization`: ``time.scheme = "lagrangian"``.
- :mod:`~solvers.sphere.measure.lagrangian_refine`: basin-boundary refinement of the particles
  (S^2 only: the circle's cells follow the separatrices exactly).
"""
