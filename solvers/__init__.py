"""meanfield-spectral: density-level solver for the mean-field attention + perceptron PDE.

Subpackages, lowest layer first (each imports only from the layers below it; see
tests/test_layering.py):

- ``spectral`` (top-level package): bases, transforms, kernel eigenvalues; no notion of time.
- :mod:`solvers.model`: parameters, configs, activations, the perceptron.
- :mod:`solvers.core`: what the manifolds share.
- :mod:`solvers.circle`, :mod:`solvers.sphere`, :mod:`solvers.hypersphere`: the three manifolds,
  side by side (S^1 and S^2 on grids, S^{d-1} by weighted points).
- :mod:`solvers.timestepping`: integrators and the solver.
- :mod:`solvers.io`: archives and starting states.
- :mod:`solvers.plots`: figures.
- :mod:`solvers.studies`: Lemma 5.1, convergence, sweeps, particles.
- :mod:`solvers.runner`: one run of a config, new or resumed (initial state, cost check,
  archive writer and other output handlers, time loop, verdict); the API and the CLI call it.
- :mod:`solvers.api`: the Python API re-exported here.
- :mod:`solvers.cli`: the ``meanfield`` command (imported by nothing).

The public API (imported lazily: ``import solvers`` costs almost nothing)::

    ds = solvers.run("runs/demo.toml", domain__resolution=512)   # -> xarray.Dataset
    ds = solvers.open_run("output/demo.nc")
    ds = solvers.resume(ds, t_end=3000.0)
    cfg = solvers.load_config("runs/demo.toml", model__beta=3)
    sw = solvers.sweep("runs/demo.toml", model__beta=[2, 5])       # dims beta, time, ...
    sw = solvers.open_sweep("output/sweep")                          # a `meanfield sweep` folder

Building blocks: ``simulate`` (time loop on plain arrays, its config and ``rho0`` checked), ``initial_density``, ``initial_state``,
``ArchiveWriter``, ``RunConfig``, ``ConfigError``, ``ArchiveError`` (a path that is not a
readable run archive), and ``spectral.kernel_eigenvalues``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from solvers.core.numba_cache import configure_numba_cache

configure_numba_cache()  # compiled kernels keyed by their sources (stale-cache guard)

_EXPORTS = {
    "run": "solvers.api", "resume": "solvers.api", "open_run": "solvers.api",
    "load_config": "solvers.api",
    "sweep": "solvers.studies.sweep_data", "open_sweep": "solvers.studies.sweep_data",
    "simulate": "solvers.api", "RunResult": "solvers.timestepping.loop",
    "initial_density": "solvers.io.state", "initial_state": "solvers.io.state", "ArchiveWriter": "solvers.io.archive",
    "RunConfig": "solvers.model.params", "ConfigError": "solvers.model.config",
    "ArchiveError": "solvers.io.errors",
}
__all__ = sorted(_EXPORTS) + ["__version__"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("meanfield-spectral")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _version()
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'solvers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
