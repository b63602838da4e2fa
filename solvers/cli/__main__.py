"""``python -m solvers.cli``: the ``meanfield`` command line."""

from solvers.cli.main import main

raise SystemExit(main())
