"""The atoms of ``runs/paper_s2_descent_relu.toml`` by the exact particle flow from cell particles.

One particle per Gauss-grid cell, at its centre with its mass (exact quadrature of the attention
field at t = 0), moved by RK4 steps of ``--dt`` and merged when closer than 1e-4 rad
(:mod:`solvers.studies.cell_particles`). At each time the script prints the atoms (particle
groups linked below 0.05 rad): mass, colatitude and longitude in degrees, particle count and
spread (rad). The fv runs stop as "stationary" near t = 2400 with four atoms and 2-3% of the
mass left diffuse; here that diffuse mass collapses into a fifth atom (spread 6e-3 rad at
t = 3000, 1e-4 at 5000, round-off by 15000).

    .venv/bin/python benchmarks/s2_cell_particles.py [--lmax 63] [--dt 0.5] [--times 3000,5000,10000]

Counts and positions, not timings (the wall time is printed for information).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.model.config import load_config  # noqa: E402
from solvers.studies.cell_particles import particle_atoms, run_cell_particles  # noqa: E402

CONFIG = ROOT / "runs" / "paper_s2_descent_relu.toml"


def report(t: float, x: np.ndarray, w: np.ndarray) -> None:
    a = particle_atoms(x, w)
    theta = np.degrees(np.arccos(np.clip(a.position[:, 2], -1, 1)))
    phi = np.degrees(np.mod(np.arctan2(a.position[:, 1], a.position[:, 0]), 2 * np.pi))
    big = a.mass > 1e-3
    print(f"t = {t:g}: {x.shape[0]} particles, mass {w.sum():.15f}; atoms above 1e-3: {int(big.sum())}"
          f" (lighter groups: {a.mass[~big].sum():.2e})", flush=True)
    for m, th, ph, n, s in zip(a.mass[big], theta[big], phi[big], a.count[big], a.spread[big]):
        print(f"    {m:.6f}  {th:9.4f}  {ph:9.4f}  {n:6d}  {s:.1e}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lmax", type=int, default=63)
    ap.add_argument("--dt", type=float, default=0.5)
    ap.add_argument("--times", default="3000,5000,10000")
    args = ap.parse_args()
    config = load_config(str(CONFIG), [f"domain.resolution={args.lmax}"])
    times = [float(t) for t in args.times.split(",")]
    print("        mass  colatitude  longitude  particles  spread (rad)")
    run = run_cell_particles(config, times, args.dt, progress=report)
    print(f"lmax {args.lmax}: {run.steps} steps in {run.wall_time:.1f} s")


if __name__ == "__main__":
    main()
