"""Blocks of records, the records_complete count, the CF time coordinate, the optional
spectrum, time chunks, and the zarr store (round trip, kill -9, resume)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from dataclasses import replace
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from test_archive import REPO, THETA, WEIGHT, make_config, make_snapshot, write_run

from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run, read_last_state, read_snapshot
from solvers.io.layout import MAX_CHUNK_RECORDS
from solvers.model.config import load_config
from solvers.model.params import OutputParams


def buffered(sync: float = 1000.0, spectral: bool | None = None):
    cfg = make_config(scheme="fv")  # the grid's archive (the default method's: test_zarr_dirac)
    return replace(cfg, output=OutputParams(sync_interval=sync, spectral=spectral))


def test_zarr_round_trip_matches_netcdf(tmp_path: Path) -> None:
    write_run(tmp_path / "run.nc")
    write_run(tmp_path / "run.zarr")
    a, b = open_run(tmp_path / "run.nc"), open_run(tmp_path / "run.zarr")
    assert set(a.variables) == set(b.variables) and a.sizes == b.sizes
    for name in a.variables:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    assert b.attrs["records_complete"] == 3 and b.attrs["model__beta"] == 4.0
    assert read_last_state(tmp_path / "run.zarr")[0] == 1.0
    assert read_snapshot(tmp_path / "run.zarr", 0.6)[0] == 0.5
    write_run(tmp_path / "run.zarr", atoms=(2, 0), t0=1.5, append=True)
    c = open_run(tmp_path / "run.zarr")
    np.testing.assert_allclose(c["time"], [0.0, 0.5, 1.0, 1.5, 2.0])
    assert "resumed" in c.attrs["history"]
    with pytest.raises(FileExistsError):
        write_run(tmp_path / "run.zarr")
    write_run(tmp_path / "run.zarr", atoms=(1,), overwrite=True)
    assert open_run(tmp_path / "run.zarr").sizes["time"] == 1


def test_blocks_are_counted_and_time_has_no_fill_value(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    with ArchiveWriter(path, buffered(), THETA, WEIGHT) as writer:
        for i in range(5):
            writer.write_snapshot(make_snapshot(0.5 * i))
        assert writer.n_records == 5
        with netCDF4.Dataset(path, "r", diskless=False) as nc:  # HDF5 lets a reader in here
            pass
    with netCDF4.Dataset(path) as nc:
        # the counts are 0-d variables rewritten in place, not attributes (netcdf_store)
        assert int(nc["records_complete"][...]) == 5 and int(nc["records_written"][...]) == 5
        assert "records_complete" not in nc.ncattrs()
        assert "_FillValue" not in nc["t"].ncattrs()
        assert nc["rho"].chunking()[0] > 1
        assert "rho_hat_real" not in nc.variables  # the spectrum: off by default
    with xr.open_dataset(path) as ds:
        assert "_FillValue" not in ds["t"].attrs
    with netCDF4.Dataset(path, "a") as nc:  # a block killed before it was counted
        nc["rho"][5:7, :] = np.ones((2, THETA.size))
        nc["t"][5:7] = [9.0, 9.5]
    ds = open_run(path)  # the counts read back as the attributes they were
    assert ds.sizes["time"] == 5 and read_last_state(path)[0] == 2.0
    assert ds.attrs["records_complete"] == 5 and "records_complete" not in ds.variables


def test_config_files_leave_the_spectrum_out(tmp_path: Path) -> None:
    cfg = load_config("[domain]\nresolution = 32\n")
    assert cfg.output.spectral is False and cfg.output.sync_interval == 5.0
    path = tmp_path / "run.nc"
    with ArchiveWriter(path, cfg, THETA, WEIGHT) as writer:
        writer.write_snapshot(make_snapshot(0.0))
    ds = open_run(path)
    assert "rho_hat_real" not in ds and "wavenumber" not in ds.dims
    write_run(path, atoms=(1,), t0=1.0, append=True)  # appending keeps the archive's choice
    assert "rho_hat_real" not in open_run(path)


def test_two_thousand_snapshots_give_few_chunks_and_no_warnings(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    cfg = buffered()  # t_end = 20, a snapshot every 0.01: 2001 expected
    cfg = replace(cfg, time=replace(cfg.time, t_end=20.0),
                  output=replace(cfg.output, snapshot_interval=0.01))
    with ArchiveWriter(path, cfg, THETA, WEIGHT) as writer:
        for i in range(2000):
            writer.write_snapshot(make_snapshot(0.01 * i, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with xr.open_dataset(path, chunks={}) as ds:
            assert ds.sizes["t"] == 2000
            # time chunks of MAX_CHUNK_RECORDS (64) records: 32 chunks, not 2000
            assert ds["rho"].data.npartitions == -(-2000 // MAX_CHUNK_RECORDS) == 32
            assert max(v.data.npartitions for v in ds.data_vars.values() if v.ndim) == 32


@pytest.mark.parametrize("t_end, records", [(10.0, 11), (10.5, 12), (0.2, 2), (1e6, 64)])
def test_time_chunks_follow_the_expected_snapshots(tmp_path: Path, t_end: float,
                                                   records: int) -> None:
    """Chunks of the snapshots a run expects (t = 0, every interval, t_end), at most 64: an
    archive is not padded to a preallocated chunk (51 snapshots of N = 512 took 1.2 MB)."""
    cfg = buffered()
    cfg = replace(cfg, time=replace(cfg.time, t_end=t_end))
    path = tmp_path / "run.nc"
    with ArchiveWriter(path, cfg, THETA, WEIGHT) as writer:
        for i in range(min(records, 11)):
            writer.write_snapshot(make_snapshot(float(i), 2))
    with netCDF4.Dataset(path) as nc:
        assert nc["rho"].chunking()[0] == nc["t"].chunking()[0] == records
        assert nc["atom_mass"].chunking() == [records, 8]
        data = sum(v[:].nbytes for v in nc.variables.values())
    if records <= 11:  # whole chunks written: the file holds its data and HDF5's metadata
        assert path.stat().st_size < data + 150_000


KILLED = """
import sys, time
sys.path.insert(0, {repo!r})
sys.path.insert(0, {tests!r})
from dataclasses import replace
from test_archive import THETA, WEIGHT, make_config, make_snapshot
from solvers.io.archive import ArchiveWriter
from solvers.model.params import OutputParams
cfg = replace(make_config(scheme="fv"), output=OutputParams(sync_interval={sync}))
writer = ArchiveWriter({path!r}, cfg, THETA, WEIGHT)
for i in range({k}):
    writer.write_snapshot(make_snapshot(0.5 * i, i % 4))
print("WROTE", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("name, sync, kept", [pytest.param("k.zarr", 0.0, 20, marks=pytest.mark.slow),
                                               pytest.param("k.zarr", 1000.0, 16, marks=pytest.mark.slow),
                                               ("k.nc", 1000.0, 16)])
def test_kill_9_keeps_the_synced_blocks_and_resumes(tmp_path: Path, name, sync, kept) -> None:
    """sync_interval 0: every record is on disk; a long one: the first 16 (synced one by one),
    the buffered ones after them are lost."""
    path, k = tmp_path / name, 20
    script = KILLED.format(repo=str(REPO), tests=str(REPO / "tests" / "io"), path=str(path), k=k,
                           sync=sync)
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "WROTE"
        assert open_run(path).sizes["time"] == kept
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    ds = open_run(path)
    np.testing.assert_array_equal(ds["rho"].values[kept - 1], make_snapshot(0.5 * (kept - 1)).rho)
    write_run(path, atoms=(1,), t0=10.0, append=True)  # resume after the crash
    assert read_last_state(path)[0] == 10.0 and open_run(path).sizes["time"] == kept + 1


@pytest.mark.slow
def test_cli_zarr_run_killed_and_resumed(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text("[domain]\nresolution = 64\n[model]\nbeta = 2.0\n[time]\nscheme = \"fv\"\n"
                   "t_end = 3.0\ndt = 0.001\n[output]\nsnapshot_interval = 0.01\nprogress = false\n")
    out = tmp_path / "x.zarr"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "solvers", "run"]
    proc = subprocess.Popen(cmd + [str(cfg), "-o", str(out)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            if out.exists() and open_run(out).sizes["time"] >= 3:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert open_run(out).sizes["time"] >= 3
    import solvers  # the CLI's --resume takes files only so far: resume through the API

    solvers.resume(out)
    times = open_run(out)["time"].values
    assert times[-1] == 3.0 and times.size == 301 and np.all(np.diff(times) > 0)
