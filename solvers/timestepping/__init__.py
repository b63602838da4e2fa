"""Time stepping: the solver contract, step-size control and stopping.

- :mod:`~solvers.timestepping.integrators`: explicit Runge-Kutta schemes as validated Butcher
  tables (with Shu-Osher forms and citations).
- :mod:`~solvers.timestepping.simulation`: ``make_discretization``, ``Solver`` (``step`` does the
  bookkeeping, ``_step_impl`` the numerics), ``simulate`` and ``RunResult``.
"""
