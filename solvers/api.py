"""The Python API: configure, run, resume and open runs; results are :class:`xarray.Dataset`.

Everything here has the same effect as the ``meanfield`` command and returns what the
archive holds (the same variables, dimensions and attributes: ``docs/archive.md``), built in
memory. Example::

    import solvers

    ds = solvers.run("runs/demo.toml", domain__resolution=512)    # or path="out.nc"
    ds["atom_mass"].isel(time=-1)
    more = solvers.resume(ds, t_end=3000.0)                        # or resume("out.nc", ...)

Overrides are keyword arguments ``section__key=value`` (``model__beta=3``,
``perceptron__activation="gelu"``) or ``section.key`` strings in a dict
(``solvers.run(cfg, **{"model.beta": 3})``); values are Python numbers, strings, booleans or
lists, written as TOML for :func:`solvers.model.config.load_config`.

Errors: a bad argument, config value or override raises :class:`ConfigError` (a
``ValueError``) naming the parameter and the fix, as the command line's ``error: ...``; a path
that is not a readable run archive raises :class:`~solvers.io.errors.ArchiveError`; the file
system's refusals keep their ``OSError`` (``FileNotFoundError``, ``FileExistsError`` without
``overwrite``, ``PermissionError``), naming the file; a target the writer will not replace
raises :class:`~solvers.io.safe_paths.UnsafePathError`, an archive another process writes
:class:`~solvers.io.lock.ArchiveBusyError`.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from solvers.model.config import (DT_MIN_FRACTION, ConfigError, check_resolution,
                                  config_from_text, toml_value)
from solvers.model.config import load_config as _load_toml
from solvers.model.params import RunConfig
from solvers.model.validate import check_resume_overrides, validate_config
from solvers import runner

if TYPE_CHECKING:
    import xarray as xr

PATH_TYPES = (str, os.PathLike)


def _override_items(overrides: Mapping[str, Any]) -> list[str]:
    """``{"model__beta": 3, "time.t_end": 5}`` -> ``["model.beta=3", "time.t_end=5"]``."""
    items = []
    for key, value in overrides.items():
        dotted = key.replace("__", ".") if isinstance(key, str) else ""
        if "." not in dotted:
            raise ConfigError(str(key), "an override names its section: use section__key=value "
                              "(e.g. model__beta=3) or {'section.key': value}")
        try:
            items.append(f"{dotted}={toml_value(value)}")
        except (TypeError, ValueError, OverflowError, RecursionError):  # None, objects, 10**400
            raise ConfigError(dotted, f"must be a number, string, boolean or list (got "
                              f"{type(value).__name__})") from None
    return items


def _path(value: Any, name: str) -> Path:
    """A path argument (str or os.PathLike, not empty), else ConfigError naming ``name``."""
    if not isinstance(value, PATH_TYPES) or not str(os.fspath(value)).strip():
        raise ConfigError(name, f"must be a file path (str or pathlib.Path; got {value!r:.80})")
    return Path(value)


def load_config(config: str | os.PathLike | Mapping[str, Any] | RunConfig,
                **overrides: Any) -> RunConfig:
    """A validated :class:`~solvers.model.params.RunConfig`.

    Parameters
    ----------
    config : path, TOML text, dict or RunConfig
        A TOML file, TOML text, a dict of sections (``{"model": {"beta": 5}, ...}``), or a
        RunConfig (then re-read from its ``text`` so that overrides apply).
    **overrides
        ``section__key=value`` (see the module docstring).
    """
    items = _override_items(overrides)
    if isinstance(config, RunConfig):  # checked whole (a dataclasses.replace skips the reader)
        checked = validate_config(config)
        return config_from_text(checked.text, items) if items else checked
    if isinstance(config, Mapping):
        import tomli_w

        try:
            config = tomli_w.dumps(dict(config))
        except (TypeError, ValueError, OverflowError, AttributeError, RecursionError) as err:
            raise ConfigError("config", f"a dict config holds sections of TOML values "
                              f"({{'model': {{'beta': 5}}}}): {err}") from None
    if not isinstance(config, PATH_TYPES):
        raise ConfigError("config", f"must be a path, TOML text, a dict or a RunConfig (got "
                          f"{type(config).__name__})")
    return _load_toml(Path(config) if isinstance(config, os.PathLike) else config, items)


def open_run(path: str | os.PathLike) -> xr.Dataset:
    """A run archive (NetCDF) loaded into memory (incomplete trailing records dropped)."""
    from solvers.io.reading import open_run as _open

    return _open(_path(path, "path"))


def run(config: str | os.PathLike | Mapping[str, Any] | RunConfig, *,
        path: str | os.PathLike | None = None, overwrite: bool = False,
        progress: bool = False, force: bool = False, **overrides: Any) -> xr.Dataset:
    """Run a configuration and return its archive as a Dataset.

    Parameters
    ----------
    config : path, TOML text, dict or RunConfig
        See :func:`load_config`.
    path : path, optional
        Also keep the archive there (NetCDF); without it the archive is built in a temporary
        folder and removed once loaded.
    overwrite : bool
        Replace an existing ``path``, which must then be an archive this project wrote (a
        user's file, folder, link or device raises
        :class:`~solvers.io.safe_paths.UnsafePathError`); True or False only.
    progress : bool
        Show a progress bar on stderr.
    force : bool
        Run even when the estimated cost exceeds the budget
        (:data:`solvers.model.cost.BUDGET_S`, one hour; else :class:`ConfigError` with the
        estimate).
    **overrides
        ``section__key=value``.

    Returns
    -------
    xarray.Dataset
        The archive's layout (``rho(time, theta)`` on S^1, ``rho(time, theta, phi)`` on
        S^2, diagnostics, atoms, provenance attributes), plus the attributes
        ``stop_reason``, ``n_steps`` and ``wall_time_s`` of this call.
    """
    from solvers.io.safe_paths import check_bool

    overwrite = check_bool(overwrite, "overwrite")  # "no" is not False
    progress = check_bool(progress, "progress")
    force = check_bool(force, "force")
    path = None if path is None else _path(path, "path")
    cfg = load_config(config, **overrides)
    check_resolution(cfg)
    runner.check_cost(cfg, force=force)  # before anything is allocated or written
    return _simulate_to_dataset(cfg, runner.fresh_start(cfg), path, overwrite, progress,
                                append=False)


def resume(source: str | os.PathLike | xr.Dataset, *, t_end: float | None = None,
           progress: bool = False, force: bool = False, **overrides: Any) -> xr.Dataset:
    """Continue a run from its last snapshot.

    Parameters
    ----------
    source : path or Dataset
        A run archive (appended to in place, as ``meanfield run --resume``) or a Dataset
        returned by :func:`run` / :func:`open_run` (the continuation is concatenated to it
        in memory; nothing is written).
    t_end : float, optional
        New final time (default: the archived ``time.t_end``, which must not be reached yet).
    force : bool
        Run even when the estimated cost exceeds the budget (as :func:`run`).
    **overrides
        ``time__...`` and ``output__...`` only: a resumed run keeps its physics.

    Returns
    -------
    xarray.Dataset
        The whole run: the archived snapshots followed by the new ones.
    """
    from solvers.io.safe_paths import check_bool

    progress = check_bool(progress, "progress")
    force = check_bool(force, "force")
    if t_end is not None:
        if isinstance(t_end, bool) or not isinstance(t_end, (int, float, np.number)):
            raise ConfigError("t_end", f"must be a number (got {t_end!r:.80})")
        overrides = {**overrides, "time.t_end": float(t_end)}
    items = _override_items(overrides)
    check_resume_overrides(items)  # as meanfield run --resume: time.* and output.*, not the scheme
    from solvers.io import resume_slots

    if isinstance(source, PATH_TYPES):
        source = _path(source, "source")
        if not (source.is_dir() if source.suffix == ".zarr" else source.is_file()):
            raise FileNotFoundError(2, "No such file or directory", str(source))
        start, text = runner.archived_start(source)
        cfg = _resumed_config(text, items, start.after)
        _check_grid(cfg, start.rho, source)
        runner.check_cost(cfg, start.t, force=force)
        return _simulate_to_dataset(cfg, start, source, False, progress, append=True)
    last, text = _last_record(source)
    cfg = _resumed_config(text, items, float(last["time"]))
    runner.check_cost(cfg, float(last["time"]), force=force)
    _check_grid(cfg, last["rho"].values, "this Dataset")
    new = _simulate_to_dataset(cfg, runner.dataset_start(source), None, False, progress,
                               append=False)
    import xarray as xr

    # the resume slots: the new part's (they hold the state behind its last record)
    parts = _label_ragged_dims([source.drop_vars(resume_slots.SLOTS, errors="ignore"), new])
    merged = xr.concat(parts, dim="time", data_vars="minimal", coords="minimal",
                       compat="override", join="outer", combine_attrs="override")
    merged = merged.drop_vars([d for d in merged.dims if d in merged.coords and d not in source.coords])
    from solvers.studies.verdict import VERDICT_ATTRIBUTES

    # this call's result, and the verdict of the whole run (the resumed archive's, as on disk)
    merged.attrs.update({k: new.attrs[k] for k in ("stop_reason", "n_steps", "wall_time_s",
                                                   *VERDICT_ATTRIBUTES) if k in new.attrs})
    return merged


def _last_record(source: Any) -> tuple[Any, str]:
    """The last record of a run Dataset and its config text (ConfigError for anything else)."""
    import xarray as xr

    if not isinstance(source, xr.Dataset):
        raise ConfigError("source", f"must be a run archive path or a Dataset from solvers.run "
                          f"/ open_run (got {type(source).__name__})")
    if "polish_representation" in source.attrs:
        from solvers.io.reading import polished_message

        raise ConfigError("source", polished_message("this Dataset"))
    missing = [v for v in ("time", "step", "dt", "rho") if v not in source.variables]
    if "config_text" not in source.attrs or missing or source.sizes.get("time", 0) == 0:
        why = f"lacks {', '.join(missing)}" if missing else "has no config_text attribute" \
            if "config_text" not in source.attrs else "holds no snapshots"
        raise ConfigError("source", f"this Dataset {why}: pass a run archive or the Dataset "
                          "solvers.run / open_run returned")
    return source.isel(time=-1), str(source.attrs["config_text"])


def _check_grid(cfg: RunConfig, rho: np.ndarray, source: Any) -> None:
    """The archived state's shape must be the config's grid (a tampered archive is refused)."""
    why = runner.grid_mismatch(cfg, rho, source)
    if why is not None:
        raise ConfigError("source", f"{why}; the archive is damaged")


def simulate(config: RunConfig, rho0: Any, **options: Any) -> Any:
    """:func:`solvers.timestepping.loop.simulate` (the time loop on plain arrays) after
    the checks of a config file: ``config`` (e.g. made with :func:`dataclasses.replace`) is
    validated whole, ``rho0`` must be finite with the grid's shape (S^1: ``(N,)``; S^2:
    ``(nlat, nlon)``). Bad input raises :class:`ConfigError` naming the argument."""
    from solvers.io.state import grid_arrays
    from solvers.timestepping.loop import simulate as _simulate

    config = validate_config(config)
    shape = grid_arrays(config)[1].shape
    try:
        rho = np.asarray(rho0, dtype=float)
    except (TypeError, ValueError) as err:
        raise ConfigError("rho0", f"must be an array of numbers of shape {shape} ({err})") from None
    if rho.shape != shape or not np.all(np.isfinite(rho)):
        raise ConfigError("rho0", f"must be a finite grid density of shape {shape} "
                          f"(got shape {rho.shape}); build it with solvers.initial_density")
    _check_start(options, config.time.t_end)
    return _simulate(config, rho, **options)


def _check_start(options: dict[str, Any], t_end: float) -> None:
    """``0 <= t0 < t_end``, ``step0`` an integer >= 0, ``dt0`` None or > 0 (simulate's
    options)."""
    def real(value: Any) -> bool:
        try:
            return isinstance(value, (int, float, np.number)) and not isinstance(value, bool) \
                and math.isfinite(value)
        except OverflowError:  # an integer beyond any float
            return False

    if not (real(options.get("t0", 0.0)) and 0 <= options.get("t0", 0.0) < t_end):
        raise ConfigError("t0", f"must be a time in [0, time.t_end = {t_end:g}) (got "
                          f"{options['t0']!r:.80})")
    step0 = options.get("step0", 0)
    if isinstance(step0, bool) or not isinstance(step0, (int, np.integer)) or step0 < 0:
        raise ConfigError("step0", f"must be an integer >= 0 (got {step0!r:.80})")
    dt0 = options.get("dt0")
    if dt0 is not None and not (real(dt0) and DT_MIN_FRACTION * t_end <= dt0 <= t_end):
        raise ConfigError("dt0", f"must be None or a step in [{DT_MIN_FRACTION:g} t_end, t_end] "
                          f"(got {dt0!r:.80})")


def _label_ragged_dims(parts: list[xr.Dataset]) -> list[xr.Dataset]:
    """Index the dimensions whose sizes differ between ``parts`` (e.g. ``atom``), so that
    :func:`xarray.concat` pads the shorter ones with missing values."""
    ragged = {d for d in parts[0].dims if d != "time" and d not in parts[0].coords
              and len({p.sizes.get(d) for p in parts}) > 1}
    return [p.assign_coords({d: np.arange(p.sizes[d]) for d in ragged}) for p in parts]


def _resumed_config(text: str, items: list[str], t: float) -> RunConfig:
    cfg = config_from_text(text, items)  # an archive's text is never a file name
    if t >= cfg.time.t_end:
        raise ConfigError("time.t_end", f"the run already reached t = {t:g} >= t_end = "
                          f"{cfg.time.t_end:g}; pass a larger t_end")
    return cfg


def _simulate_to_dataset(cfg: RunConfig, start: runner.Start, path: str | os.PathLike | None,
                         overwrite: bool, progress: bool, append: bool,
                         check: bool = True) -> xr.Dataset:
    """Run from ``start`` into an archive (``path`` or a temporary one) and load it."""
    with tempfile.TemporaryDirectory(prefix="meanfield-") as tmp:
        target = Path(path) if path is not None else Path(tmp) / "run.nc"
        with runner.Runner(cfg, start).open(target, append=append, overwrite=overwrite) as run_:
            result = run_.run(progress=_progress(cfg, start.t) if progress else None,
                              check=check).result  # every run states its accuracy
        ds = open_run(target)
    ds.attrs.update(stop_reason=result.reason, n_steps=result.n_steps,
                    wall_time_s=round(result.wall_time, 3))
    return ds


def _progress(cfg: RunConfig, t0: float) -> Any:
    from tqdm.auto import tqdm

    bar = tqdm(total=cfg.time.t_end, initial=t0, unit="t", leave=False)

    def update(t: float, step: int, dt: float, diagnostics: Any = None) -> None:
        bar.update(min(t, bar.total) - bar.n)

    return update
