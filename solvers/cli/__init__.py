"""The ``meanfield`` command line: the only place that parses arguments; nothing imports it.

- :mod:`~solvers.cli.main`: ``main`` and the parser (standard library only: the commands import
  what they need when they run); :mod:`~solvers.cli.run` (``run``), :mod:`~solvers.cli.view`
  (``plot | animate | info``).
- :mod:`~solvers.cli.guard` (exit codes, one-line errors, signals), :mod:`~solvers.cli.logs`
  (``-q``/``-v``, one-line warnings), :mod:`~solvers.cli.progress` (bars on a terminal, plain
  lines elsewhere), :mod:`~solvers.cli.options` (options shared by several commands).
- :mod:`~solvers.cli.lemma51`, :mod:`~solvers.cli.converge`, :mod:`~solvers.cli.compare_particles`,
  :mod:`~solvers.cli.sweep`, :mod:`~solvers.cli.sweep_figures`: the study commands (each
  ``add_parser(subparsers)`` and ``run_command(args)``), thin layers over :mod:`solvers.studies`
  and :mod:`solvers.plots`.
- :mod:`~solvers.cli.warmup`: compile the numba kernels ahead of the first run (set-up).
- :mod:`~solvers.cli.example` (``example``: list or copy the named run configs),
  :mod:`~solvers.cli.polish` (``polish``: exact stationary atoms of a run's last snapshot).
- :mod:`~solvers.cli.continuation` (``continue``: branches of noisy stationary states).
"""

from solvers.cli.main import main

__all__ = ["main"]
