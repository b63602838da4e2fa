"""Hostile archives: real NetCDF files and zarr stores truncated, with bytes flipped, attributes
deleted or set to junk, variables dropped or filled with junk values, files of a store removed
or rewritten. Read (``meanfield info``, :func:`solvers.open_run`) and resumed (``meanfield run
--resume``, :func:`solvers.resume`).

Properties: no traceback, no builtin exception reaching the user; the command succeeds or
prints one ``error:`` line (exit 2, or 1 for a resumed state that fails at run time); the API
returns or raises the project's errors; within the time limit.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from fuzzing import BASE, assert_clean, budget, config_text, run_cli, time_limit
from hypothesis import given
from hypothesis import strategies as st

import solvers
from solvers.io.lock import ArchiveBusyError
from solvers.io.safe_paths import UnsafePathError

ALLOWED = (solvers.ConfigError, solvers.ArchiveError, OSError, UnsafePathError,
           ArchiveBusyError)
ATTRIBUTES = ["config_text", "records_complete", "records_written", "archive_format", "manifold", "scheme",
              "method_history", "version", "kernel"]
VARIABLES = ["rho", "t", "step", "dt", "theta", "cell_weight", "atom_mass", "restart_rho",
             "records_complete", "records_written", "restart_info",
             "steps_rejected", "time_error_estimate", "mass"]
JUNK = st.one_of(st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.text(max_size=30),
                 st.sampled_from(["/etc/passwd", "[time]\nt_end = -1\n", "1e400", "",
                                  "[[[", "{}", "[[0.0, \"x\", 3]]"]))
VALUES = st.sampled_from([math.nan, -1.0, 1e300, -1e300, 0.0, math.inf])


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("archive-fuzz")
    doc = {**BASE, "initial": {"kind": "uniform", "modes": [[2, 0.1]]},
           "time": {"t_end": 0.5, "scheme": "fv"}}
    out = {}
    for suffix in (".nc", ".zarr"):
        out[suffix] = tmp / f"run{suffix}"
        solvers.run(config_text(doc), path=out[suffix])
    return out


def _edit_netcdf(path: Path, draw: st.DrawFn) -> str:
    op = draw(st.sampled_from(["truncate", "flip", "del_attr", "junk_attr", "junk_values",
                               "drop_var"]))
    if op == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[:draw(st.integers(0, len(data) - 1))])
    elif op == "flip":
        data = bytearray(path.read_bytes())
        for _ in range(draw(st.integers(1, 20))):
            data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        path.write_bytes(bytes(data))
    elif op in ("del_attr", "junk_attr"):
        name = draw(st.sampled_from(ATTRIBUTES))
        with netCDF4.Dataset(path, "a") as nc:
            if op == "del_attr" and name in nc.ncattrs():
                nc.delncattr(name)
            elif op == "junk_attr":
                nc.setncattr(name, draw(JUNK))
    elif op == "junk_values":
        name = draw(st.sampled_from(VARIABLES))
        with netCDF4.Dataset(path, "a") as nc:
            if name in nc.variables and nc[name].size:
                var = nc[name]
                flat = np.asarray(var[...], dtype=float).reshape(-1)
                flat[draw(st.integers(0, flat.size - 1))] = draw(VALUES)
                var[...] = flat.reshape(var.shape).astype(var.dtype) \
                    if var.dtype.kind == "f" else np.nan_to_num(flat).clip(-1e9, 1e9).reshape(
                        var.shape).astype(var.dtype)
    else:
        import xarray as xr

        name = draw(st.sampled_from(VARIABLES))
        ds = xr.load_dataset(path)
        if name in ds.variables and name not in ds.dims:
            ds = ds.drop_vars(name)
        path.unlink()
        ds.to_netcdf(path)
    return op


def _edit_zarr(path: Path, draw: st.DrawFn) -> str:
    files = sorted(p for p in path.rglob("*") if p.is_file())
    target = draw(st.sampled_from(files))
    op = draw(st.sampled_from(["delete", "truncate", "junk_json", "junk_attr"]))
    if op == "delete":
        target.unlink()
    elif op == "truncate":
        data = target.read_bytes()
        target.write_bytes(data[:draw(st.integers(0, max(len(data) - 1, 0)))])
    elif op == "junk_json":
        (path / "zarr.json").write_text(draw(st.sampled_from(["", "{", "[]", "null",
                                                              '{"zarr_format": 3}'])))
    else:
        meta = json.loads((path / "zarr.json").read_text())
        attrs = meta.setdefault("attributes", {})
        attrs[draw(st.sampled_from(ATTRIBUTES))] = draw(JUNK.filter(
            lambda v: not (isinstance(v, float) and not math.isfinite(v))))
        (path / "zarr.json").write_text(json.dumps(meta))
        for name in ("zarr.json",):  # the consolidated copy too, where there is one
            if "consolidated_metadata" in meta:
                meta.pop("consolidated_metadata")
                (path / name).write_text(json.dumps(meta))
    return op


def _copy(originals: dict[str, Path], suffix: str, tmp: Path) -> Path:
    target = tmp / f"hostile{suffix}"
    if suffix == ".zarr":
        shutil.copytree(originals[suffix], target)
    else:
        shutil.copy(originals[suffix], target)
    return target


@budget("archive", 40)
@given(data=st.data())
def test_hostile_archives_end_cleanly(originals: dict[str, Path], data: st.DataObject,
                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("hostile")
    suffix = data.draw(st.sampled_from([".nc", ".zarr"]))
    target = _copy(originals, suffix, tmp)
    edit = _edit_zarr if suffix == ".zarr" else _edit_netcdf
    for _ in range(data.draw(st.integers(1, 2))):
        try:
            edit(target, data.draw)
        except (OSError, RuntimeError, ValueError, AttributeError, KeyError, TypeError,
                IndexError):  # an earlier edit broke the file already: this one cannot apply
            break
    action = data.draw(st.sampled_from(["info", "resume", "api_open", "api_resume"]))
    if action in ("info", "resume"):
        argv = ["info", str(target)] if action == "info" else [
            "run", "--resume", str(target), "--set", "time.t_end=1.0", "--no-check", "-q"]
        rc, _, err = run_cli(argv)
        assert_clean(argv, rc, err)
        return
    with time_limit():
        try:
            if action == "api_open":
                solvers.open_run(target)
            else:
                solvers.resume(target, t_end=1.0)
        except ALLOWED as err:
            assert str(err) and len(str(err).splitlines()) == 1, repr(str(err))
        except (FloatingPointError, RuntimeError) as err:  # a tampered state that fails in a run
            assert type(err).__module__.startswith("solvers."), repr(err)
