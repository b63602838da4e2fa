"""Real processes against one archive: a second writer is refused while the first lives, an
--overwrite never truncates what a reader holds, a file-size limit leaves a readable archive,
and SIGINT/SIGTERM end a run cleanly (last completed state written, no partial record)."""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import fixed_step_s1_toml

from solvers.io.reading import open_run
from solvers.io.lock import lock_path

ROOT = Path(__file__).resolve().parents[2]

# a snapshot every step: the worst case for Ctrl-C inside the NetCDF library
# (on the fv grid: the archive's machinery, at the grid's cheap steps)
def every_step(t_end: float) -> str:
    return fixed_step_s1_toml(t_end, 0.001, scheme="fv")


def start(*args: str, cwd: Path, fsize: int | None = None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.Popen([sys.executable, "-m", "solvers", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=limit)  # noqa: PLW1509  (no threads here)


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def wait_for_records(path: Path, proc: subprocess.Popen, n: int = 3, timeout: float = 60) -> None:
    """Wait until the writer has synced ``n`` records (read through open_run's copy)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        try:
            if path.exists() and open_run(path).sizes["time"] >= n:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()


@pytest.fixture()
def config(tmp_path: Path) -> Path:
    cfg = tmp_path / "run.toml"
    cfg.write_text(every_step(60.0))
    return cfg


def assert_one_line(err: str, *words: str) -> None:
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


@pytest.mark.slow  # 14 s: the CI's slow step
def test_overwrite_of_a_live_run_is_refused_and_the_run_survives(tmp_path, config) -> None:
    out = tmp_path / "x.nc"
    # long enough to outlive the two refused processes (t_end 60: 60,000 fixed steps)
    first = start("run", str(config), "-o", str(out), "--set", "time.t_end=60", "--set",
                  "output.snapshot_interval=0.1", cwd=tmp_path)
    wait_for_records(out, first)
    # paused (alive, lock held) while the two others try: with compiled whole steps the 60,000
    # steps could end before two Python start-ups, and the resume then rightly succeeded
    os.kill(first.pid, signal.SIGSTOP)
    try:
        rc, _, err = finish(start("run", str(config), "-o", str(out), "--overwrite", "--set",
                                  "time.t_end=1", cwd=tmp_path))
        assert rc == 2
        assert_one_line(err, "being written by another process", f"pid {first.pid}")
        rc, _, err = finish(start("run", "--resume", str(out), "--set", "time.t_end=70",
                                  cwd=tmp_path))
        assert rc == 2
        assert_one_line(err, "being written by another process")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    rc, _, err = finish(first)
    assert rc == 0, err
    ds = open_run(out)
    assert ds.sizes["time"] == 601 and float(ds["time"][-1]) == 60.0
    assert not lock_path(out).exists()


@pytest.mark.slow
def test_overwrite_while_a_reader_holds_the_file_keeps_the_reader_intact(tmp_path, config) -> None:
    out = tmp_path / "x.nc"
    rc, _, err = finish(start("run", str(config), "-o", str(out), "--set", "time.t_end=0.5",
                              cwd=tmp_path))
    assert rc == 0, err
    with netCDF4.Dataset(out, "r") as held:
        rc, _, err = finish(start("run", str(config), "-o", str(out), "--overwrite", "--set",
                                  "time.t_end=0.2", cwd=tmp_path))
        assert rc == 0, err
        assert held.dimensions["t"].size == 501  # the old file, whole
        assert float(held["t"][-1]) == pytest.approx(0.5)
    assert open_run(out).sizes["time"] == 201
    assert not list(tmp_path.glob(".x.nc.*"))  # no temporary or lock file left


@pytest.mark.slow
def test_file_size_limit_leaves_a_readable_archive(tmp_path, config) -> None:
    # 2 MiB: uncompressed time chunks (256 records, ~0.4 MB at N = 64) are allocated whole
    out = tmp_path / "x.nc"
    rc, _, err = finish(start("run", str(config), "-o", str(out), "--set",
                              "domain.resolution=64", cwd=tmp_path, fsize=2 << 20))
    assert rc == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "file-size limit" in err and f"--resume {out}" in err and "time.cfl" not in err
    ds = xr.open_dataset(out)  # a plain reader: every record complete
    assert ds.sizes["t"] > 10 and np.all(np.isfinite(ds["t"].values))
    ds.close()


def interrupt_once(tmp_path: Path, config: Path, k: int, sig: int) -> None:
    out = tmp_path / f"int{k}.nc"
    proc = start("run", str(config), "-o", str(out), cwd=tmp_path)
    wait_for_records(out, proc, n=1)
    time.sleep(random.uniform(0.0, 0.4))
    proc.send_signal(sig)
    rc, _, err = finish(proc, timeout=30)
    assert rc == 128 + sig, err
    assert "Traceback" not in err and f"continue with: meanfield run --resume {out}" in err, err
    ds = xr.open_dataset(out)  # a plain reader: no partial record at the end
    times = ds["t"].values
    assert np.all(np.isfinite(times)) and np.all(np.diff(times) > 0)
    ds.close()
    assert not lock_path(out).exists()


@pytest.mark.parametrize("sig, times", [pytest.param(signal.SIGINT, 2, marks=pytest.mark.slow),
                                        (signal.SIGTERM, 1)])
def test_signal_ends_the_run_cleanly(tmp_path, config, sig, times) -> None:
    random.seed(sig)
    for k in range(times):
        interrupt_once(tmp_path, config, k, sig)


@pytest.mark.slow
def test_sigint_with_a_snapshot_every_step_is_never_swallowed(tmp_path, config) -> None:
    random.seed(1)
    for k in range(40):
        interrupt_once(tmp_path, config, k, signal.SIGINT)


@pytest.mark.slow
def test_interrupted_run_resumes(tmp_path, config) -> None:
    out = tmp_path / "x.nc"
    # 10000 steps: long enough to be interrupted after 5 records (dt = 0.001 took 0.7 s in all)
    proc = start("run", str(config), "-o", str(out), "--set", "time.t_end=2", "--set",
                 "output.snapshot_interval=0.01", "--set", "time.dt=0.0002", cwd=tmp_path)
    wait_for_records(out, proc, n=5)
    proc.send_signal(signal.SIGINT)
    rc, _, err = finish(proc)
    assert rc == 130, err
    rc, _, err = finish(start("run", "--resume", str(out), cwd=tmp_path))
    assert rc == 0, err
    times = open_run(out)["time"].values
    assert times[-1] == 2.0 and 150 < times.size < 210 and np.all(np.diff(times) > 0)
