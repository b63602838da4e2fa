"""``python -m solvers``: the ``meanfield`` command line (see :mod:`solvers.cli`)."""

from solvers.cli import main

raise SystemExit(main())
