"""A `meanfield sweep` killed mid-way (SIGKILL of the whole process group) resumes: finished runs
are skipped, unfinished ones are run again, and the summary is complete."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
from conftest import paper_s1_toml

CONFIG = paper_s1_toml(512, 5.0, t_end=20.0, snapshot_interval=5.0, time_keys="dt = 0.002",
                       extra="progress = false\n")


def _sweep(cfg: Path, out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.Popen([sys.executable, "-m", "solvers", "sweep", str(cfg), "--param",
                             "model.beta=1,2,3,4", "--workers", "1", "-o", str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


@pytest.mark.slow
def test_killed_sweep_resumes(tmp_path):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(CONFIG)
    out = tmp_path / "sweep"
    proc = _sweep(cfg, out)
    deadline = time.time() + 240
    while time.time() < deadline and not list(out.glob("*.done.json")):
        time.sleep(0.2)
    done_first = sorted(p.name for p in out.glob("*.done.json"))
    assert done_first, "no run finished in time"
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI, its scheduler and workers
    proc.wait()
    assert len(done_first) < 4, "the sweep finished before it could be killed: make runs longer"
    stamps = {p: (out / p).stat().st_mtime_ns for p in done_first}
    again = _sweep(cfg, out)
    log = again.communicate(timeout=600)[0]
    assert again.returncode == 0, log
    assert all((out / p).stat().st_mtime_ns == stamps[p] for p in done_first)  # skipped
    summary = xr.open_dataset(out / "summary.nc")
    assert summary.sizes["beta"] == 4
    assert float(summary["t_final"].min()) == pytest.approx(20.0)
