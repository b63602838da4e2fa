"""A parameter sweep as one :class:`xarray.Dataset`: :func:`sweep` runs the product of
parameter lists in this process, :func:`open_sweep` opens the folder of ``meanfield sweep``;
both give the same layout.

Layout: one dimension per swept key, named after the key's last part (``model.beta`` ->
``beta``, ``initial.seed`` -> ``seed``; ``section__key`` when two keys share a last part or
it names a variable of the summary or of a run: ``domain.resolution`` -> ``domain__resolution``),
the coordinate's attribute ``key`` the full key (all of them: the JSON attribute
``swept_keys``). Every variable of the runs' archives (``docs/archive.md``) gains these
dimensions in front: ``rho(beta, time, theta)``, ``atom_mass(beta, time, atom)``, ...; runs
with fewer snapshots, atoms or Dirac atoms are padded with NaN (``time`` is the union of the
runs' snapshot times; ``atom`` and ``dirac`` count columns), and a run that failed is NaN
throughout. Per run: ``stop_reason`` (``t_end``, ``stationary``, ``max_steps``, ``failed``,
``not run``), ``error``, ``name``, ``t_final``, ``n_steps``, ``wall_time``, and
``final_atom_mass`` / ``final_atom_position`` on ``final_atom``: the last snapshot's atoms
sorted by mass (descending), NaN padded. When the runs' grids differ (a swept
``domain.resolution``) the variables on the grid are left out (attribute ``grid_variables``
says so). Global attributes: those all runs share.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from solvers.io.summary import NO_RESULT, build_summary, open_summary
from solvers.model.config import ConfigError, dump_toml, toml_value, tomllib
from solvers.model.params import RunConfig
from solvers.studies.sweep import (
    DEFAULT_PERTURBATION,
    SweepError,
    config_digest,
    dim_names,
    parse_param,
    point_config,
    run_point,
    sweep_digest,
    sweep_folder,
    sweep_points,
    write_summary,
)

log = logging.getLogger(__name__)
GRID_DIMS = ("theta", "phi", "nv", "wavenumber", "lm")
RAGGED = ("atom", "dirac")
# summary variable -> name in the sweep Dataset (the runs' own names stay for their records)
PER_RUN = {"reason": "stop_reason", "error": "error", "name": "name", "t_final": "t_final",
           "n_steps": "n_steps", "wall_time": "wall_time",
           "atom_mass": "final_atom_mass", "atom_position": "final_atom_position"}


def _base_document(config: Any) -> tuple[dict[str, Any], str]:
    """The parsed TOML document and text of ``config`` (path, TOML text, dict or RunConfig)."""
    if isinstance(config, RunConfig):
        text = config.text
    elif isinstance(config, Mapping):
        text = dump_toml(dict(config))
    elif isinstance(config, (str, os.PathLike)):
        text = str(config)
        if "\n" not in text and "=" not in text:  # a path, not TOML text
            if not Path(text).is_file():
                raise ConfigError("config", f"{text}: no such file (a path to a TOML config)")
            text = Path(text).read_text(encoding="utf-8")
    else:
        raise ConfigError("config", "must be a path, TOML text, a dict or a RunConfig "
                          f"(got {type(config).__name__})")
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as err:
        raise ConfigError("config", f"invalid TOML: {err}") from None


def _literal(key: str, value: Any) -> str:
    """``value`` as a TOML literal; ConfigError naming ``key`` for a value TOML cannot hold
    (None, an object)."""
    try:
        return toml_value(value)
    except (TypeError, ValueError):
        raise ConfigError(key, f"{value!r:.60} is not a config value: give a number, a string, "
                          "a boolean or a list of them") from None


def _check_arguments(path: Any, perturbation: Any, overwrite: Any = False) -> None:
    """ConfigError naming the argument of :func:`sweep` that has the wrong type or range."""
    if path is not None and (not isinstance(path, (str, os.PathLike)) or not str(path)):
        raise ConfigError("path", "must be a folder path (str or os.PathLike) or None "
                          f"(got {path!r:.60})")
    real = isinstance(perturbation, (int, float, np.integer, np.floating)) and \
        not isinstance(perturbation, (bool, np.bool_))
    if not real or not 0.0 <= float(perturbation) < 1.0:
        raise ConfigError("perturbation", "must be a number in [0, 1) (the seeded "
                          f"perturbation's size; got {perturbation!r:.60})")
    if not isinstance(overwrite, (bool, np.bool_)):
        raise ConfigError("overwrite", f"must be True or False (got {overwrite!r:.60})")


def _split(lists: Mapping[str, Any]) -> tuple[list[Any], list[str]]:
    """Swept parameters (list values) and plain overrides (anything else), keys
    ``section__key`` or ``section.key``."""
    params, overrides = [], []
    for key, value in lists.items():
        dotted = str(key).replace("__", ".")
        if "." not in dotted:
            raise ConfigError(str(key), "name the section: section__key=[v1, v2, ...] "
                              "(e.g. model__beta=[1, 5])")
        if isinstance(value, (list, tuple, np.ndarray)):
            if len(value) == 0:
                raise ConfigError(dotted, "sweeps no value: give a non-empty list")
            try:
                params.append(parse_param(f"{dotted}=" + ",".join(_literal(dotted, v)
                                                                  for v in value)))
            except SweepError as err:
                raise ConfigError(dotted, str(err)) from None
        else:
            overrides.append(f"{dotted}={_literal(dotted, value)}")
    if not params:
        raise ConfigError("sweep", "no list to sweep: pass e.g. model__beta=[1, 5]")
    return params, overrides


def sweep(config: Any, *, path: str | os.PathLike | None = None,
          perturbation: float = DEFAULT_PERTURBATION, overwrite: bool = False,
          **lists: Any) -> Any:
    """Run every combination of the listed values in this process, one after the other.

    Parameters
    ----------
    config : path, TOML text, dict or RunConfig
        The base configuration.
    path : path, optional
        A folder to keep the runs in (``<name>.nc``, ``<name>.done.json``, ``summary.nc``: the
        layout of ``meanfield sweep``, read back by :func:`open_sweep`); without it the runs
        are written in a temporary folder and removed once loaded.
    perturbation : float
        ``initial.seed``'s perturbation size (``meanfield sweep --perturbation``).
    overwrite : bool
        Replace a different sweep's files in ``path`` (only files this project wrote); without
        it a folder holding a different sweep is refused (:func:`~solvers.studies.sweep.sweep_folder`).
    **lists
        ``section__key=[v1, v2, ...]`` sweeps that key (``initial__seed=[0, 1]``: seeded
        perturbations of a uniform start); any value that is not a list is an override of
        every run (``time__t_end=50``).

    Returns
    -------
    xarray.Dataset
        The module's layout: one dimension per swept key, in the given order.
    """
    _check_arguments(path, perturbation, overwrite)
    base, text = _base_document(config)
    params, overrides = _split(lists)
    points = sweep_points(params)
    identity = sweep_digest(text, params, overrides, perturbation)
    keys = json.dumps({d: p.key for d, p in zip(dim_names(params), params)})
    # the writer policy of meanfield sweep: a checked, locked folder, no link followed
    with tempfile.TemporaryDirectory(prefix="meanfield-sweep-") as tmp, \
            sweep_folder(Path(tmp) if path is None else path, identity, text, keys,
                         overwrite) as out:
        folder = out.path
        records = {}
        for point in points:
            archive = out.entry(f"{point.name}.nc")
            records[point.name] = _run_one(base, overrides + list(point.items), archive,
                                           point.name, perturbation)
        summary = build_summary(params, dim_names(params), points, records, base_text=text)
        summary.attrs["sweep_digest"] = identity
        if path is not None:
            write_summary(summary, out.entry("summary.nc"))
        return _from_summary(summary, lambda name: _open(folder / f"{name}.nc"))


def _run_one(base: dict[str, Any], items: list[str], archive: Path, name: str,
             eps: float) -> dict[str, Any]:
    """One point's record (a bad configuration raises: the sweep's arguments are wrong)."""
    cfg = point_config(base, items, archive, False, eps)
    record = run_point(cfg, str(archive), name, config_digest(cfg))
    log.info("%s: %s", name, record["reason"])
    return record


def open_sweep(folder: str | os.PathLike) -> Any:
    """The folder of ``meanfield sweep`` (its ``summary.nc`` and run archives) in the layout of
    :func:`sweep`. Runs without an archive (failed, not run) are NaN."""
    folder = Path(folder)
    if not (folder / "summary.nc").is_file():
        raise FileNotFoundError(f"{folder}: no summary.nc (not a meanfield sweep folder?)")
    summary = open_summary(folder)
    return _from_summary(summary, lambda name: _open(folder / f"{name}.nc"))


def _open(path: Path) -> Any:
    from solvers.io.reading import open_run

    return open_run(path) if path.is_file() else None


def _from_summary(summary: Any, open_one: Callable[[str], Any]) -> Any:
    """The sweep Dataset: the runs named in ``summary`` (opened by ``open_one``), stacked."""
    dims = list(json.loads(summary.attrs["swept_keys"]))
    shape = tuple(summary.sizes[d] for d in dims)
    runs = {}
    for index in itertools.product(*(range(n) for n in shape)):
        cell = summary.isel(dict(zip(dims, index)))
        if str(cell["reason"].values) not in NO_RESULT:
            ds = open_one(str(cell["name"].values))
            if ds is not None:
                runs[index] = ds
    out = _stack(runs, dims, shape) if runs else _empty()
    per_run = summary[[k for k in PER_RUN if k in summary]].rename(
        {k: v for k, v in PER_RUN.items() if k in summary and k != v})
    per_run = per_run.rename({"atom": "final_atom"}) if "atom" in per_run.dims else per_run
    out = out.assign(per_run.drop_vars([c for c in per_run.coords if c not in dims]))
    out = out.assign_coords({d: summary[d] for d in dims})
    keys = json.loads(summary.attrs["swept_keys"])
    for d in dims:
        out[d].attrs.update(key=keys[d], long_name=f"swept parameter {keys[d]}")
    out.attrs.update(swept_keys=summary.attrs["swept_keys"],
                     base_config_text=summary.attrs.get("base_config_text", ""))
    return out


def _empty() -> Any:
    import xarray as xr

    return xr.Dataset()


def _stack(runs: dict[tuple[int, ...], Any], dims: Sequence[str], shape: tuple[int, ...]) -> Any:
    """The runs' Datasets with the sweep dimensions in front, NaN where a run is missing."""
    import xarray as xr

    parts = list(runs.values())
    grids = {tuple(p.sizes.get(d, 0) for d in GRID_DIMS) for p in parts}
    dropped = []
    if len(grids) > 1:  # a swept resolution: the grids cannot share a dimension
        dropped = sorted({str(v) for p in parts for v in p.variables
                          if set(p[v].dims) & set(GRID_DIMS)})
        parts = [p.drop_vars([v for v in dropped if v in p.variables]) for p in parts]
    # each run's resume slots (solvers.io.resume_slots) are its own restart data, not results
    parts = [p.drop_dims([d for d in p.dims if str(d).startswith("resume_")]) for p in parts]
    parts = [p.assign_coords({d: np.arange(p.sizes[d]) for d in RAGGED if d in p.dims})
             for p in parts]
    fixed = {"cell_weight"} | {str(v) for v in parts[0].data_vars if str(v).endswith("_bounds")}
    per_run = sorted({str(v) for p in parts for v in p.data_vars} - fixed)
    joined = xr.concat(parts, dim="run", join="outer", data_vars=per_run, coords="minimal",
                       compat="override", combine_attrs="drop_conflicts")
    flat = np.ravel_multi_index(np.array(list(runs)).T, shape)
    out = xr.Dataset(attrs=joined.attrs)
    for name, var in joined.variables.items():
        if "run" not in var.dims:
            out[name] = var
            continue
        values = var.transpose("run", ...).values
        if values.dtype.kind in "iub" and len(runs) < int(np.prod(shape)):  # NaN padded
            values = values.astype(float)
        fill = np.nan if values.dtype.kind in "fc" else "" if values.dtype.kind in "OSU" else 0
        full = np.full((int(np.prod(shape)),) + values.shape[1:], fill, dtype=values.dtype)
        full[flat] = values
        rest = [d for d in var.dims if d != "run"]
        out[name] = (list(dims) + rest, full.reshape(shape + values.shape[1:]), var.attrs)
    out = out.set_coords([c for c in joined.coords if c in out.data_vars])
    if dropped:
        out.attrs["grid_variables"] = "left out (the runs' grids differ): " + " ".join(dropped)
    return out.drop_vars([d for d in RAGGED if d in out.coords])
