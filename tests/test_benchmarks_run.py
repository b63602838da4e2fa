"""The benchmark scripts still run (smoke, slow): a config limit once broke bench_s1 silently.
They measure nothing here; the figures come from running them on a quiet machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("args", [["bench_s1.py", "--quick"],
                                  ["bench_snapshots.py", "--t-end", "100", "--repeat", "1"],
                                  ["bench_peer.py"],
                                  ["bench_whole_steps.py", "--only", "demo", "--repeat", "1"],
                                  ["lagrangian_demo.py", "--n", "128", "--schemes", "lagrangian"],
                                  ["dirac_resolution.py", "--beta", "25", "--dirac", "", "--grid", "",
                                   "--lagrangian", "160", "--default", "256", "--t-end", "100",
                                   "--repeat", "1"],
                                  ["dirac_resolution.py", "--beta", "25", "--dirac", "", "--grid", "256",
                                   "--default", "256", "--t-end", "100", "--repeat", "1", "--alternate"],
                                  ["s2_cell_particles.py", "--lmax", "31", "--times", "50"],
                                  ["bench_particles_s2.py", "--skip-runs", "--repeat", "1",
                                   "--max-direct", "3000"],
                                  ["s2_basin_refine.py", "--cases", "31:1,31:2", "--t-end", "20"],
                                  ["phase_diagram.py", "--betas", "2.3:2.6:0.3", "--figure", ""],
                                  ["noise_to_atoms.py", "--segments", "1e-2:256", "--fine", "4096",
                                   "--figure", ""]])
def test_benchmark_script_runs(args):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / args[0]), *args[1:]],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
