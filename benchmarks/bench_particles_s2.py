"""Cost of the S^2 attention sums and of the S^2 particle runs, side by side.

1. One velocity of n particles on S^2 (beta = 1, shifted kernel, the paper's ReLU perceptron) by
   the kernel series (``spectral/kernel_series.py``) and by the pair sums
   (``ParticleSystem(attention_method="direct")``), best of ``--repeat``; n = 2048 ... 32768 (the
   cell particles of lmax 31 ... 127; pair sums skipped above ``--max-direct``).
2. ``runs/paper_s2_descent_relu_particles.toml`` (Lagrangian particles, t_end = 8000) against the
   fv Dirac run of ``runs/paper_s2_descent_relu.toml`` to its stationary stop, at ``--lmax``.

    .venv/bin/python benchmarks/bench_particles_s2.py [--lmax 63] [--repeat 3] [--skip-runs]

Run it with nothing else on the machine (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.model.config import load_config  # noqa: E402
from solvers.studies.cell_particles import cell_particles  # noqa: E402
from solvers.studies.particles import ParticleSystem  # noqa: E402

RUN = ROOT / "runs" / "paper_s2_descent_relu.toml"
PARTICLES = ROOT / "runs" / "paper_s2_descent_relu_particles.toml"


def best(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def velocities(repeat: int, max_direct: int) -> None:
    print("lmax  particles  series (s)  pairs (s)  ratio  max |difference|")
    for lmax in (31, 63, 127):
        config = load_config(str(RUN), [f"domain.resolution={lmax}"])
        x, w = cell_particles(config)
        series = ParticleSystem(config.model, attention_method="series")
        series.velocity(x, w)  # compile
        ts = best(lambda: series.velocity(x, w), repeat)
        if x.shape[0] <= max_direct:
            direct = ParticleSystem(config.model, attention_method="direct")
            td = best(lambda: direct.velocity(x, w), repeat)
            diff = float(np.abs(series.velocity(x, w) - direct.velocity(x, w)).max())
            print(f"{lmax:4d}  {x.shape[0]:9d}  {ts:10.4f}  {td:9.3f}  {td / ts:5.0f}  {diff:.1e}")
        else:
            print(f"{lmax:4d}  {x.shape[0]:9d}  {ts:10.4f}  (skipped)")


def runs(lmax: int) -> None:
    from solvers.api import run

    for name, path, over in (("fv Dirac", RUN, {"atoms__representation": "dirac"}),
                             ("particles", PARTICLES, {})):
        t0 = time.perf_counter()
        ds = run(str(path), domain__resolution=lmax, **over)
        wall = time.perf_counter() - t0
        last = ds.isel(time=-1)
        masses = [f"{m:.6f}" for m in last["atom_mass"].values if np.isfinite(m)]
        print(f"{name:10s} lmax {lmax}: t = {float(last['time']):g}, {wall:.1f} s, atoms {' '.join(masses)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lmax", type=int, default=63)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-direct", type=int, default=40000)
    ap.add_argument("--skip-runs", action="store_true")
    args = ap.parse_args()
    velocities(args.repeat, args.max_direct)
    if not args.skip_runs:
        runs(args.lmax)


if __name__ == "__main__":
    main()
