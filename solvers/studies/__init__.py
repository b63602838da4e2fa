"""Studies built on runs: checks, ladders, sweeps and comparisons.

- :mod:`~solvers.studies.verdict`: every run's accuracy statement (time error, the atoms' error
  bar from runs at half and a quarter of the resolution, exact stationarity, warnings) and its
  state at the final time; :mod:`~solvers.studies.verdict_runs`: its check runs (resolution
  ladder, Richardson time check) and the comparison of their atoms;
  :mod:`~solvers.studies.companion`: the check runs in processes beside the main run.
- :mod:`~solvers.studies.step_timing`: a config's step timed on this machine at first use, cached
  for the cost estimate.
- :mod:`~solvers.studies.lemma51`, :mod:`~solvers.studies.lemma51_measures`,
  :mod:`~solvers.studies.lemma51_inversion`: the Lemma 5.1 spectral-inversion check;
  :mod:`~solvers.studies.lemma51_gegenbauer`: the same on S^{d-1}, any d, in the Gegenbauer
  (zonal) basis (``meanfield lemma51 --dim d``).
- :mod:`~solvers.studies.converge`: refinement ladders in space and time.
- :mod:`~solvers.studies.sweep`: parameter sweeps on dask.distributed;
  :mod:`~solvers.studies.sweep_params`: their ``--param`` values, counted before expanded;
  :mod:`~solvers.studies.sweep_folder`: their folder under the writer policy, and the workers cap.
- :mod:`~solvers.studies.sweep_data`: ``solvers.sweep`` and ``open_sweep``: a sweep as one Dataset.
- :mod:`~solvers.studies.particles`: the particle system (any dimension).
- :mod:`~solvers.studies.compare_particles`: PDE against particles; :mod:`~solvers.studies.compare_report`: its report as text.
- :mod:`~solvers.studies.wasserstein`: exact W1 on the circle.
- :mod:`~solvers.studies.polish`: exact stationary atoms by Newton's method;
  :mod:`~solvers.studies.polish_points`: the same for an Sd archive's Dirac atoms (any d), and
  the dispatch of ``meanfield polish`` between the manifolds.
- :mod:`~solvers.studies.converge_report`, :mod:`~solvers.studies.distances`,
  :mod:`~solvers.studies.orders`: the ladders' reports, distances between runs, observed orders.
- :mod:`~solvers.studies.cluster`: the dask client of a sweep;
  :mod:`~solvers.studies.resolution`: the resolution check of one sweep point.
- :mod:`~solvers.studies.cell_particles`: an independent particle check from the grid's cells.
- :mod:`~solvers.studies.stationary`, :mod:`~solvers.studies.stationary_basis`: stationary states
  with noise and Newton's method for them.
- :mod:`~solvers.studies.stationary_linear`: the noisy PDE linearised at a stationary state
  (leading eigenvalues, stability).
- :mod:`~solvers.studies.continuation`: pseudo-arclength continuation with fold and branch-point
  detection; :mod:`~solvers.studies.continuation_run`: the driver of ``meanfield continue``;
  :mod:`~solvers.studies.continuation_archive`: its NetCDF archive.
"""
