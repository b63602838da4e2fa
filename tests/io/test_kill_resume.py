"""A real `meanfield run` killed mid-way leaves a readable archive, and --resume finishes it with
the same result as an uninterrupted run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import paper_s1_toml

# the fv grid (the default method and the fv Dirac state: tests/io/test_exact_resume.py)
CONFIG = paper_s1_toml(512, 5.0, t_end=12.0, snapshot_interval=0.25,
                       time_keys='dt = 0.0025\nscheme = "fv"',
                       extra='progress = false\n[initial]\nkind = "uniform"\nmodes = [[3, 0.1]]\n')


def _records(path: Path) -> int:
    try:
        with netCDF4.Dataset(path, "r") as nc:
            return int(nc.dimensions["t"].size)
    except (OSError, RuntimeError):  # not there yet, or a copy taken mid-write (torn HDF5
        return 0  # metadata: "Can't open HDF5 attribute"); the next poll copies it again


def _meanfield(*args: str, cwd: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.Popen([sys.executable, "-m", "solvers", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_after(config: str, records: int, tmp_path: Path, wait: float) -> tuple[Path, Path, Path]:
    """Start ``meanfield run`` of ``config`` into killed.nc and SIGKILL it once the archive
    holds ``records`` records; returns the config's path, killed.nc and whole.nc."""
    cfg = tmp_path / "run.toml"
    cfg.write_text(config)
    killed, whole = tmp_path / "killed.nc", tmp_path / "whole.nc"
    proc = _meanfield("run", str(cfg), "-o", str(killed), "--no-progress", "--no-check", cwd=tmp_path)
    deadline = time.time() + wait
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        # read a copy: the live file is locked by the writer
        copy = tmp_path / "copy.nc"
        copy.write_bytes(killed.read_bytes()) if killed.exists() else None
        if copy.exists() and _records(copy) >= records:
            break
    assert proc.poll() is None, "the run finished before it could be killed: make it longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return cfg, killed, whole


@pytest.mark.slow
def test_killed_run_is_readable_and_resumes_to_the_same_state(tmp_path):
    cfg, killed, whole = _kill_after(CONFIG, 4, tmp_path, 60)
    ds = xr.open_dataset(killed)  # a plain reader: the record dimension "t" on disk
    n_killed = ds.sizes["t"]
    assert 4 <= n_killed < 49
    assert np.all(np.diff(ds["t"].values) > 0)
    assert np.allclose((ds["rho"] * ds["cell_weight"]).sum("theta"), 1.0, atol=1e-12)
    ds.close()

    resumed = _meanfield("run", "--resume", str(killed), "--no-progress", "--no-check", cwd=tmp_path)
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    straight = _meanfield("run", str(cfg), "-o", str(whole), "--no-progress", "--no-check",
                          cwd=tmp_path)
    assert straight.wait(timeout=300) == 0, straight.stderr.read()
    a, b = xr.open_dataset(killed), xr.open_dataset(whole)
    assert a.sizes["t"] == b.sizes["t"] == 49
    np.testing.assert_allclose(a["t"], b["t"])
    np.testing.assert_array_equal(a["step"], b["step"])
    # fixed dt: the resumed run takes exactly the same steps
    np.testing.assert_allclose(a["rho"].values[-1], b["rho"].values[-1], rtol=0, atol=1e-12)


DIRAC = paper_s1_toml(1024, 5.0, t_end=3000.0, snapshot_interval=1.0,
                      time_keys="stop_when_stationary = false",
                      extra='progress = false\nsync_interval = 0.2\n[atoms]\nrepresentation = "dirac"\n')


@pytest.mark.slow  # 21 s
def test_killed_dirac_run_resumes_from_its_step_state(tmp_path):
    """Adaptive steps, Dirac atoms, records interpolated between the steps: SIGKILL leaves a
    readable archive whose mass (density plus atoms) is 1, and --resume continues from the
    archived step state (density and atoms) with the uninterrupted run's steps."""
    cfg, killed, whole = _kill_after(DIRAC, 300, tmp_path, 120)
    from solvers.io.reading import open_run

    ds = open_run(killed)  # the records the archive counts complete (a kill may leave a partial block)
    n_killed = ds.sizes["time"]
    assert 300 <= n_killed < 3001
    mass = (ds["rho"] * ds["cell_weight"]).sum("theta") + ds["dirac_mass"].fillna(0.0).sum("dirac")
    assert np.allclose(mass, 1.0, atol=1e-12)
    ds.close()
    from solvers.io.reading import read_restart, read_restart_atoms

    assert read_restart(killed) is not None  # the last record lies between two steps
    assert read_restart_atoms(killed).count >= 1  # and the step state behind it has atoms

    resumed = _meanfield("run", "--resume", str(killed), "--no-progress", "--no-check", cwd=tmp_path)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    straight = _meanfield("run", str(cfg), "-o", str(whole), "--no-progress", "--no-check",
                          cwd=tmp_path)
    assert straight.wait(timeout=600) == 0, straight.stderr.read()
    a, b = xr.open_dataset(killed), xr.open_dataset(whole)
    assert a.sizes["t"] == b.sizes["t"] == 3001
    np.testing.assert_array_equal(a["step"], b["step"])
    np.testing.assert_array_equal(a["rho"].values[-1], b["rho"].values[-1])
    np.testing.assert_array_equal(a["dirac_mass"].values[-1], b["dirac_mass"].values[-1])
    np.testing.assert_array_equal(a["dirac_position"].values[-1], b["dirac_position"].values[-1])
