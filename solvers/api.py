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
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from solvers.model.config import ConfigError, check_resolution, toml_value
from solvers.model.config import load_config as _load_toml
from solvers.model.params import RunConfig

if TYPE_CHECKING:
    import xarray as xr

RESUMABLE_SECTIONS = ("time", "output")


def _override_items(overrides: Mapping[str, Any]) -> list[str]:
    """``{"model__beta": 3, "time.t_end": 5}`` -> ``["model.beta=3", "time.t_end=5"]``."""
    items = []
    for key, value in overrides.items():
        dotted = key.replace("__", ".")
        if "." not in dotted:
            raise ConfigError(key, "an override names its section: use section__key=value "
                              "(e.g. model__beta=3) or {'section.key': value}")
        items.append(f"{dotted}={toml_value(value)}")
    return items


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
    if isinstance(config, RunConfig):
        if not config.text:
            raise ConfigError("config", "this RunConfig has no text to re-read; pass a path, "
                              "TOML text or a dict")
        config = config.text
    if isinstance(config, Mapping):
        import tomli_w

        config = tomli_w.dumps(dict(config))
    return _load_toml(Path(config) if isinstance(config, os.PathLike) else config,
                      _override_items(overrides))


def open_run(path: str | os.PathLike) -> xr.Dataset:
    """A run archive (NetCDF) loaded into memory (incomplete trailing records dropped)."""
    from solvers.io.archive import open_run as _open

    return _open(path)


def run(config: str | os.PathLike | Mapping[str, Any] | RunConfig, *,
        path: str | os.PathLike | None = None, overwrite: bool = False,
        progress: bool = False, **overrides: Any) -> xr.Dataset:
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
    from solvers.io.state import initial_state

    overwrite = check_bool(overwrite, "overwrite")  # "no" is not False
    cfg = load_config(config, **overrides)
    check_resolution(cfg)
    rho0, atoms0 = initial_state(cfg)  # atoms0: an archived measure's Dirac atoms (Dirac runs)
    return _simulate_to_dataset(cfg, {"rho": rho0, "t0": 0.0, "step0": 0, "dt0": None,
                                      "atoms0": atoms0}, path, overwrite, progress, append=False)


def resume(source: str | os.PathLike | xr.Dataset, *, t_end: float | None = None,
           progress: bool = False, **overrides: Any) -> xr.Dataset:
    """Continue a run from its last snapshot.

    Parameters
    ----------
    source : path or Dataset
        A run archive (appended to in place, as ``meanfield run --resume``) or a Dataset
        returned by :func:`run` / :func:`open_run` (the continuation is concatenated to it
        in memory; nothing is written).
    t_end : float, optional
        New final time (default: the archived ``time.t_end``, which must not be reached yet).
    **overrides
        ``time__...`` and ``output__...`` only: a resumed run keeps its physics.

    Returns
    -------
    xarray.Dataset
        The whole run: the archived snapshots followed by the new ones.
    """
    if t_end is not None:
        overrides = {**overrides, "time.t_end": float(t_end)}
    items = _override_items(overrides)
    for item in items:
        if item.split(".", 1)[0] not in RESUMABLE_SECTIONS:
            raise ConfigError(item.split("=", 1)[0], "cannot change on resume (only time.* "
                              "and output.* can); start a new run with initial.kind = \"archive\"")
    from solvers.io.restart import restart_atoms, restart_state, resume_start

    if isinstance(source, (str, os.PathLike)):
        from solvers.io import archive

        archive.check_resumable(source)
        text = archive.read_config_text(source)
        t, step, dt, rho = archive.read_last_state(source)
        state = resume_start((t, step, dt, rho), archive.read_restart(source))
        state["atoms0"] = archive.resume_atoms(source)
        state.update(archive.read_run_counts(source))  # the counts and method history go on
        cfg = _resumed_config(text, items, t)
        return _simulate_to_dataset(cfg, state, source, False, progress, append=True)
    if "polish_representation" in source.attrs:
        from solvers.io.reading import polished_message

        raise ValueError(polished_message("this Dataset"))
    last = source.isel(time=-1)
    cfg = _resumed_config(str(source.attrs["config_text"]), items, float(last["time"]))
    record = (float(last["time"]), int(last["step"]), float(last["dt"]),
              np.asarray(last["rho"].values, dtype=float))
    from solvers.io.layout import RESTART

    restart, atoms0 = None, _dirac_atoms(last)
    if RESTART in source:
        restart = restart_state(source[RESTART].attrs, source[RESTART].values, record[0])
    if restart is not None and atoms0 is not None:  # the atoms of the step state behind it
        atoms0 = restart_atoms(source[RESTART].attrs, record[0], 1 if atoms0.position.ndim == 1 else 3)
    state = {**resume_start(record, restart), "atoms0": atoms0, **_run_counts(source, last)}
    new = _simulate_to_dataset(cfg, state, None, False, progress, append=False)
    import xarray as xr

    parts = _label_ragged_dims([source, new])
    merged = xr.concat(parts, dim="time", data_vars="minimal", coords="minimal",
                       compat="override", join="outer", combine_attrs="override")
    merged = merged.drop_vars([d for d in merged.dims if d in merged.coords and d not in source.coords])
    from solvers.studies.verdict import VERDICT_ATTRIBUTES

    # this call's result, and the verdict of the whole run (the resumed archive's, as on disk)
    merged.attrs.update({k: new.attrs[k] for k in ("stop_reason", "n_steps", "wall_time_s",
                                                   *VERDICT_ATTRIBUTES) if k in new.attrs})
    return merged


def _run_counts(source: xr.Dataset, last: xr.Dataset) -> dict[str, Any]:
    """The counts a resume continues (as :func:`solvers.io.reading.read_run_counts`)."""
    import json

    def number(name: str, kind: type) -> Any:
        value = float(last[name]) if name in last else 0.0
        return kind(value) if np.isfinite(value) else kind(0)

    history = source.attrs.get("method_history")
    return {"rejected0": number("steps_rejected", int),
            "time_error0": number("time_error_estimate", float),
            "history0": json.loads(str(history)) if history else []}


def _dirac_atoms(record: xr.Dataset) -> Any:
    """The Dirac atoms (:class:`solvers.core.measure.DiracAtoms`) of one record of a
    measure-valued run (``dirac_mass`` on the ``dirac`` dimension; identities are the columns
    with a finite mass, as :func:`solvers.io.reading.read_dirac`); None for a grid run."""
    from solvers.core.measure import DiracAtoms

    if "dirac_mass" not in record:
        return None
    mass = np.asarray(record["dirac_mass"].values, dtype=float)
    ids = np.flatnonzero(np.isfinite(mass))
    if "dirac_x" in record:
        pos = np.stack([np.asarray(record[f"dirac_{c}"].values, float) for c in "xyz"], axis=1)
    else:
        pos = np.asarray(record["dirac_position"].values, dtype=float)
    return DiracAtoms(mass[ids], pos[ids], ids)


def _label_ragged_dims(parts: list[xr.Dataset]) -> list[xr.Dataset]:
    """Index the dimensions whose sizes differ between ``parts`` (e.g. ``atom``), so that
    :func:`xarray.concat` pads the shorter ones with missing values."""
    ragged = {d for d in parts[0].dims if d != "time" and d not in parts[0].coords
              and len({p.sizes.get(d) for p in parts}) > 1}
    return [p.assign_coords({d: np.arange(p.sizes[d]) for d in ragged}) for p in parts]


def _resumed_config(text: str, items: list[str], t: float) -> RunConfig:
    cfg = _load_toml(text, items)
    if t >= cfg.time.t_end:
        raise ConfigError("time.t_end", f"the run already reached t = {t:g} >= t_end = "
                          f"{cfg.time.t_end:g}; pass a larger t_end")
    return cfg


def _simulate_to_dataset(cfg: RunConfig, state: dict[str, Any], path: str | os.PathLike | None,
                         overwrite: bool, progress: bool, append: bool,
                         check: bool = True) -> xr.Dataset:
    """Simulate from ``state`` into an archive (``path`` or a temporary one) and load it."""
    from solvers.io.archive import ArchiveWriter
    from solvers.io.state import grid_arrays
    from solvers.timestepping.simulation import simulate

    theta, weight, phi = grid_arrays(cfg)
    with tempfile.TemporaryDirectory(prefix="meanfield-") as tmp:
        target = Path(path) if path is not None else Path(tmp) / "run.nc"
        mode = {"append": True} if append else {"overwrite": overwrite}
        with ArchiveWriter(target, cfg, theta, weight, phi=phi, **mode) as writer:
            result = simulate(cfg, state["rho"], t0=state["t0"], step0=state["step0"],
                              dt0=state["dt0"], trackers=[writer],
                              atoms0=state.get("atoms0"), after=state.get("after"),
                              progress=_progress(cfg, state["t0"]) if progress else None,
                              rejected0=state.get("rejected0", 0),
                              time_error0=state.get("time_error0", 0.0))
            if result.reason != "interrupted":  # every run states its accuracy
                from solvers.studies.verdict import run_verdict

                verdict = run_verdict(cfg, result, check_resolution=check, t0=state["t0"],
                                      history0=state.get("history0", ()))
                writer.set_attributes(verdict.attributes())
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
