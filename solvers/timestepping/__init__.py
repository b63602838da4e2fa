"""Time stepping: the solver contract, step-size control and stopping.

- :mod:`~solvers.timestepping.integrators`: explicit Runge-Kutta schemes as validated Butcher
  tables (with Shu-Osher forms and citations); :mod:`~solvers.timestepping.order_conditions`:
  the order conditions they are checked against (rooted trees).
- :mod:`~solvers.timestepping.lawson`: the steps with noise (ETDRK4 for rk4, Lawson for the
  other tables), the Laplacian through its exact semigroup.
- :mod:`~solvers.timestepping.registry`: the scheme registry, one table keyed on ``(manifold, scheme,
  representation)`` (``registry_keys``, ``make_discretization``).
- :mod:`~solvers.timestepping.simulation`: ``Solver`` (``step`` does the bookkeeping,
  ``_step_impl`` the numerics, the step-size control).
- :mod:`~solvers.timestepping.loop`: ``simulate``, the time loop (snapshots, trackers, stopping),
  and ``RunResult``.
- :mod:`~solvers.timestepping.snapshot_queue`: snapshots batched on their way to the trackers.
- :mod:`~solvers.timestepping.manifolds`: ``manifold_of``, the manifold object of a config or name.
- :mod:`~solvers.timestepping.stop_rule`: when a run is stationary.
"""
