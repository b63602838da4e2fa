"""Files: the only layer that reads or writes run archives.

- :mod:`~solvers.io.archive`: ``ArchiveWriter`` (crash-safe NetCDF, resume), ``open_run``,
  ``read_snapshot``, ``read_last_state``.
- :mod:`~solvers.io.layout`: the archive's dimensions, variables and attributes.
- :mod:`~solvers.io.state`: a run's starting state (``initial_density``, from the config or
  another archive) and its grid arrays.
- :mod:`~solvers.io.summary`: the sweep summary file (``summary.nc``) and per-run records.
"""
