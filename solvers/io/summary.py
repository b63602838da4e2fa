"""Per-run records of a sweep, their ``.done.json`` sidecars, and the summary dataset.

A record is a JSON-ready dict: ``name``, ``archive``, ``digest`` (of the run's configuration),
``reason`` (``t_end``, ``stationary``, ``max_steps``, ``failed``, ``not run``), ``error`` (one
line), ``t_final``, ``n_steps``, ``wall_time``, ``n_atoms``, ``max_atom_mass``, ``energy``,
``mass``, ``atom_mass`` (sorted descending) and ``atom_position`` (same order; S^1 angles,
S^2 unit 3-vectors), ``resolution`` (the N of the run). With ``--auto-resolution`` also
``refinements``, ``resolution_check`` (``passed``/``failed``), ``mass_difference`` and
``resolution_levels`` (:mod:`solvers.studies.resolution`). A finished run's record is its
sidecar ``<name>.done.json``.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from solvers.model.config import ConfigError

FINISHED = ("t_end", "stationary")
NO_RESULT = ("failed", "not run")
SCALARS = ("n_atoms", "max_atom_mass", "energy", "mass", "t_final", "n_steps", "wall_time",
           "resolution", "refinements", "mass_difference")
TEXTS = ("reason", "error", "name", "archive", "resolution_check", "resolution_levels")
ATOM_NAMES = ("atom_mass", "atom_position", "atom", "xyz")  # per-atom variables, their dimensions
SUMMARY_NAMES = frozenset(SCALARS + TEXTS + ATOM_NAMES)  # no swept dimension takes these
THEOREM_3_5 = 16.0 / (16.0 + 3.0 * float(np.exp(11.0 / 8.0)))


def done_path(archive: Path) -> Path:
    """The sidecar ``<name>.done.json`` of ``<name>.nc``."""
    return archive.with_name(archive.stem + ".done.json")


def finished_record(archive: Path, digest: str) -> dict[str, Any] | None:
    """The sidecar record of a finished run of the configuration ``digest``, else None. Neither
    the sidecar nor the archive is read through a link (:mod:`solvers.io.writer_policy`)."""
    import os
    import stat

    from solvers.io.writer_policy import read_side_text

    try:
        record = json.loads(read_side_text(done_path(archive)) or "")
        archived = stat.S_ISREG(os.lstat(archive).st_mode)
    except (OSError, ValueError):
        return None
    ok = isinstance(record, dict) and archived and record.get("digest") == digest \
        and record.get("reason") in FINISHED
    return record if ok else None


def write_done(archive: Path, record: dict[str, Any]) -> None:
    """Write the sidecar atomically: built in a private folder beside it and renamed into
    place (:func:`solvers.io.safe_paths.write_text`: a link or anything but a plain file at
    ``NAME.done.json`` is refused, never written through)."""
    from solvers.io.safe_paths import write_text

    write_text(done_path(archive), json.dumps(record, indent=1))


def result_record(result: Any, name: str, archive: str, digest: str) -> dict[str, Any]:
    """Record of a :class:`~solvers.timestepping.loop.RunResult`, atoms sorted by mass (descending)."""
    d = result.final.diagnostics
    order = np.argsort(-np.asarray(d.atom_mass, dtype=float), kind="stable")
    return {"name": name, "archive": archive, "digest": digest, "reason": result.reason,
            "error": "", "t_final": float(result.final.t), "n_steps": int(result.n_steps),
            "wall_time": float(result.wall_time), "n_atoms": int(d.n_atoms),
            "max_atom_mass": float(d.max_atom_mass), "energy": float(d.energy),
            "mass": float(d.mass), "atom_mass": np.asarray(d.atom_mass)[order].tolist(),
            "atom_position": np.asarray(d.atom_position)[order].tolist()}


def failure(name: str, err: BaseException, archive: str = "") -> dict[str, Any]:
    """Record of a failed run: ``error`` is the traceback's last line (a config error's
    message as is)."""
    line = str(err) if isinstance(err, ConfigError) else \
        traceback.format_exception_only(type(err), err)[-1].strip()
    return {"name": name, "archive": archive, "reason": "failed", "error": line}


def describe(record: dict[str, Any]) -> str:
    """One progress line for a record."""
    if record["reason"] in NO_RESULT:
        return f"FAILED  {record.get('error', '')}"
    masses = " ".join(f"{m:.4f}" for m in record["atom_mass"][:6])
    more = " ..." if len(record["atom_mass"]) > 6 else ""
    check = (f"  N={record['resolution']} check {record['resolution_check']} "
             f"[{record.get('resolution_levels', '')}]" if "resolution_check" in record else "")
    return (f"{record['reason']:10s} t={record['t_final']:<9.6g} atoms={record['n_atoms']:<3d} "
            f"masses {masses}{more}  ({record['wall_time']:.1f} s){check}")


def _is_real(key: str) -> bool:
    """Whether the config key ``section.name`` is a real number (``model.beta``: float, even
    when the values were given as integers)."""
    import typing

    from solvers.model.params import RunConfig

    section, _, name = key.partition(".")
    cls = typing.get_type_hints(RunConfig).get(section)
    known = cls is not None and hasattr(cls, "__dataclass_fields__")
    hint = typing.get_type_hints(cls).get(name) if known else None
    return hint is not None and float in (typing.get_args(hint) or (hint,))


def _coordinate(values: Sequence[Any], raw: Sequence[str], real: bool = False) -> np.ndarray:
    """Coordinate values: numbers as numbers (``real``: as floats, ``beta = 1, 2`` too),
    anything else as the given text."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=float if real else None)
    return np.asarray([v if isinstance(v, str) else r for v, r in zip(values, raw)], dtype=object)


def _fill(shape: tuple[int, ...], cells: dict[tuple[int, ...], dict[str, Any]]
          ) -> dict[str, np.ndarray]:
    """Arrays of the summary variables; ``cells`` maps grid index -> record."""
    ok = [r for r in cells.values() if r["reason"] not in NO_RESULT]
    n_atom = max([1] + [len(r["atom_mass"]) for r in ok])
    # positions: angles (S^1) or unit vectors (S^2, Sd; a sweep over d pads the shorter with NaN)
    pos_shape = max((np.shape(r["atom_position"])[1:] for r in ok if r["atom_mass"]), default=())
    data = {k: np.full(shape, np.nan) for k in SCALARS}
    data["atom_mass"] = np.full(shape + (n_atom,), np.nan)
    data["atom_position"] = np.full(shape + (n_atom,) + pos_shape, np.nan)
    data.update({k: np.full(shape, "", dtype=object) for k in TEXTS})
    for index, rec in cells.items():
        for k in TEXTS:
            data[k][index] = str(rec.get(k, ""))
        if rec["reason"] in NO_RESULT:
            continue
        for k in SCALARS:
            data[k][index] = rec.get(k, np.nan)
        n = len(rec["atom_mass"])
        data["atom_mass"][index][:n] = rec["atom_mass"]
        pos = np.asarray(rec["atom_position"], dtype=float)
        if n:
            data["atom_position"][index][(slice(0, n),) + tuple(slice(0, c) for c in pos.shape[1:])] = pos
    return data


def build_summary(params: Sequence[Any], dims: Sequence[str], points: Sequence[Any],
                  records: dict[str, dict[str, Any]], base_text: str = "") -> Any:
    """The summary :class:`xarray.Dataset` of a sweep from its records.

    Parameters
    ----------
    params : sequence of :class:`solvers.studies.sweep.SweepParam`
        The swept keys with their values (one dimension each, in this order).
    dims : sequence of str
        The dimension names (:func:`solvers.studies.sweep.dim_names`).
    points : sequence of :class:`solvers.studies.sweep.SweepPoint`
        The grid (names and indices).
    records : dict
        Record by run name; a point without one is ``not run``.
    base_text : str
        The base configuration text (stored as an attribute).
    """
    import xarray as xr

    dims = list(dims)
    cells = {p.index: {"name": p.name, **records.get(p.name, {"reason": "not run",
                                                              "error": "not run"})}
             for p in points}
    data = _fill(tuple(len(p.raw) for p in params), cells)
    atom_dims = ["atom"] + (["xyz"] if data["atom_position"].ndim > len(dims) + 1 else [])
    variables = {k: (dims + (["atom"] if k == "atom_mass" else atom_dims
                             if k == "atom_position" else []), v) for k, v in data.items()}
    coords = {d: _coordinate(p.values, p.raw, _is_real(p.key)) for d, p in zip(dims, params)}
    attrs = {"swept_keys": json.dumps({d: p.key for d, p in zip(dims, params)}),
             "base_config_text": base_text, "theorem_3_5_bound": THEOREM_3_5}
    from solvers.io.cf import describe

    return describe(xr.Dataset(variables, coords=coords, attrs=attrs), "meanfield-spectral sweep summary")


def write_dataset(ds: Any, path: Path) -> None:
    """Write ``ds`` to ``path`` through the safe writer
    (:func:`solvers.io.safe_paths.write_netcdf`): built in a private folder beside it and
    renamed into place (readers never see half a file, no link is followed), and a file there
    is replaced only when this project wrote it."""
    from solvers.io.safe_paths import write_netcdf

    encoding = {k: {"dtype": str} for k, v in ds.variables.items() if v.dtype == object}
    write_netcdf(ds, path, option="the sweep", engine="netcdf4", encoding=encoding)


def open_summary(path: str | Path) -> Any:
    """Load ``summary.nc`` (or ``DIR/summary.nc`` for a sweep folder) into memory."""
    import xarray as xr

    path = Path(path)
    if path.is_dir():
        path = path / "summary.nc"
    if not path.is_file():
        raise FileNotFoundError(path)
    return xr.load_dataset(path, engine="netcdf4")
