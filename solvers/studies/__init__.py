"""Studies built on runs: checks, ladders, sweeps and comparisons.

- :mod:`~solvers.studies.verdict`: every run's accuracy statement (time error, the atoms at half
  the resolution, exact stationarity, warnings).
- :mod:`~solvers.studies.lemma51`, :mod:`~solvers.studies.lemma51_measures`,
  :mod:`~solvers.studies.lemma51_inversion`: the Lemma 5.1 spectral-inversion check.
- :mod:`~solvers.studies.converge`: refinement ladders in space and time.
- :mod:`~solvers.studies.sweep`: parameter sweeps on dask.distributed.
- :mod:`~solvers.studies.particles`: the particle system (any dimension).
- :mod:`~solvers.studies.compare_particles`: PDE against particles.
- :mod:`~solvers.studies.wasserstein`: exact W1 on the circle.
"""
