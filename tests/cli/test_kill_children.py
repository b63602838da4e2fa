"""``kill -9`` of ``meanfield run`` (its verdict's companion running in a child process) and of
``meanfield sweep`` (its dask workers running) leaves no process of the project alive: every
process started under the command, captured before the kill, is gone within 5 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import fixed_step_s1_toml

ROOT = Path(__file__).resolve().parents[2]
LONG = fixed_step_s1_toml(500.0, 50.0)


def _start(*argv: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "solvers", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _descendants(proc: subprocess.Popen, at_least: int, what: str, wait: float = 60.0
                 ) -> list[psutil.Process]:
    """The processes under ``proc`` once there are ``at_least`` of them."""
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{what} ended before it could be killed"
        children = parent.children(recursive=True)
        if len(children) >= at_least:
            time.sleep(1.0)  # let them settle into their work
            return parent.children(recursive=True)
        time.sleep(0.1)
    pytest.fail(f"{what}: fewer than {at_least} child processes after {wait:g} s")


def _kill_and_check(proc: subprocess.Popen, children: list[psutil.Process]) -> None:
    os.kill(proc.pid, signal.SIGKILL)  # the command only, not its process group
    proc.wait()
    gone, alive = psutil.wait_procs(children, timeout=5.0)
    try:
        assert not alive, f"alive 5 s after kill -9 of their parent: {alive}"
    finally:
        for p in alive:
            p.kill()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@pytest.mark.skipif(_cores() < 2, reason="the companion runs in a child only on 2+ cores")
def test_kill_9_of_a_run_leaves_no_companion(tmp_path: Path) -> None:
    cfg = tmp_path / "long.toml"
    cfg.write_text(LONG)
    proc = _start("run", str(cfg), "-o", str(tmp_path / "run.nc"), "--force", "--no-progress")
    children = _descendants(proc, 1, "meanfield run")
    assert any(p.name() != "" for p in children)
    _kill_and_check(proc, children)


def test_kill_9_of_a_sweep_leaves_no_worker(tmp_path: Path) -> None:
    cfg = tmp_path / "long.toml"
    cfg.write_text(LONG)
    proc = _start("sweep", str(cfg), "--param", "model.beta=1,2", "--workers", "2",
                  "-o", str(tmp_path / "sw"))
    children = _descendants(proc, 2, "meanfield sweep")
    _kill_and_check(proc, children)
