"""The verdict's companion child after SHTns ran in the parent: a resumed S^2 run reads its
archive (SHTns transforms, whose OpenMP pool then runs) before it starts the companion, and a
forked child hangs in that pool at its first transform. The companion is spawned there, and
the resumed run finishes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from solvers.studies import companion as comp

ROOT = Path(__file__).resolve().parents[2]
S2 = ROOT / "runs" / "s2_descent_relu.toml"  # forms atoms: the verdict asks the companion


def test_the_companion_is_spawned_once_shtns_is_loaded(monkeypatch):
    import shtns

    sht = shtns.sht(31, 31)
    sht.set_grid(32, 64)  # starts SHTns's OpenMP pool in this process
    assert "_shtns" in sys.modules
    assert comp._start_method() == "spawn"
    monkeypatch.delitem(sys.modules, "_shtns")
    if "fork" in __import__("multiprocessing").get_all_start_methods():
        parallel = sys.modules.get("numba.np.ufunc.parallel")
        if parallel is None or not getattr(parallel, "_is_initialized", False):
            assert comp._start_method() == "fork"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the companion needs 2+ cores")
def test_a_resumed_s2_run_with_its_companion_finishes(tmp_path):
    run = tmp_path / "s2.nc"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "solvers", "-q", "run"]
    subprocess.run([*cmd, str(S2), "--set", "domain.resolution=31", "--set",
                    "time.t_end=10", "-o", str(run), "--no-check"], env=env, check=True,
                   timeout=120, capture_output=True)
    done = subprocess.run([*cmd, "--resume", str(run), "--set", "time.t_end=20"], env=env,
                          timeout=120, capture_output=True, text=True)  # hung before
    assert done.returncode == 0, done.stderr
    assert "resolution: atoms at 31 against" in done.stdout, done.stdout
