"""The ``meanfield`` command line: the only place that parses arguments; nothing imports it.

- :mod:`~solvers.cli.main`: ``main``, the parser, ``run | plot | animate | info``.
- :mod:`~solvers.cli.lemma51`, :mod:`~solvers.cli.converge`, :mod:`~solvers.cli.compare_particles`,
  :mod:`~solvers.cli.sweep`, :mod:`~solvers.cli.sweep_figures`: the study commands (each
  ``add_parser(subparsers)`` and ``run_command(args)``), thin layers over :mod:`solvers.studies`
  and :mod:`solvers.plots`.
"""

from solvers.cli.main import main

__all__ = ["main"]
