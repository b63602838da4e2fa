"""A sweep on a cluster the way a user with one runs it: ``dask scheduler`` and two ``dask worker``
processes started separately, the sweep sent there with ``--scheduler``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
from conftest import paper_s1_toml

ROOT = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).parent / "dask"
CONFIG = paper_s1_toml()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"no scheduler on port {port}")


@pytest.mark.slow
@pytest.mark.skipif(not DASK.exists(), reason="the dask command is not installed")
def test_sweep_through_an_external_scheduler(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        wait_for(port)
        procs += [subprocess.Popen([str(DASK), "worker", address, "--nthreads", "1", "--no-dashboard",
                                    "--name", f"w{k}"], env=env, cwd=tmp_path,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for k in range(2)]
        config = tmp_path / "tiny.toml"
        config.write_text(CONFIG)
        done = subprocess.run([sys.executable, "-m", "solvers", "sweep", str(config), "--param",
                               "model.beta=0.5,1,2", "--scheduler", address, "-o", str(tmp_path / "out")],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        summary = xr.load_dataset(tmp_path / "out" / "summary.nc")
        assert list(summary["beta"].values) == [0.5, 1.0, 2.0]
        assert all(str(s) != "failed" for s in summary["reason"].values), summary["reason"].values
        assert (abs(summary["mass"].values - 1.0) < 1e-12).all()
    finally:
        for proc in procs[::-1]:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
