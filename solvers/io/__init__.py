"""Files: the only layer that reads or writes run archives.

- :mod:`~solvers.io.archive`: ``ArchiveWriter`` (crash-safe NetCDF or zarr, resume).
- :mod:`~solvers.io.layout`: the archive's dimensions, variables and attributes, built from the
  tables of :mod:`~solvers.io.variables`.
- :mod:`~solvers.io.state`: a run's starting state (``initial_density``, from the config or
  another archive) and its grid arrays.
- :mod:`~solvers.io.summary`: the sweep summary file (``summary.nc``) and per-run records.
- :mod:`~solvers.io.netcdf_store`, :mod:`~solvers.io.zarr_store`: the two stores of an archive
  (NetCDF4 file, zarr v3 directory), :mod:`~solvers.io.zarr_checks`: a zarr store's damage checks
  and the clean-up of zarr's reads; :mod:`~solvers.io.records`: snapshots buffered as records.
- :mod:`~solvers.io.reading`: ``open_run``, ``read_snapshot``, ``read_last_state`` and the other
  readers, robust to a live writer and a crash's trailing records.
- :mod:`~solvers.io.restart`: the exact step state behind an interpolated last record.
- :mod:`~solvers.io.resume_slots`: the exact resume state behind the last record, in two slots.
- :mod:`~solvers.io.atom_history`: births, ends and mass budgets of every atom identity.
- :mod:`~solvers.io.cf`: CF-1.8 metadata of the study outputs.
- :mod:`~solvers.io.safe_paths`, :mod:`~solvers.io.lock`: writing without touching what is not
  ours (no links followed, only our archives replaced) and advisory write locks.
- :mod:`~solvers.io.writer_policy`: the one writer policy every command calls (a single output
  file: ``claim_file``; a folder of outputs: ``OutputFolder``, created, checked, locked).
- :mod:`~solvers.io.attributes`: what an archive's attributes say (the polish results as text,
  whether a continuation archive holds stability).
- :mod:`~solvers.io.errors`: the error of an archive that cannot be read as a run.
- :mod:`~solvers.io.reader_lock`: a lazy zarr reader's shared lock, so that no overwrite swaps data under it.
- :mod:`~solvers.io.runs`: the named run configurations (``runs/*.toml``).
"""
