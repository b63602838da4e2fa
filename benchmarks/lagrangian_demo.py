"""The demo's atoms across N: Lagrangian cells (``time.scheme = "lagrangian"``) against the fv
Dirac state (issue 12's target: the same five atoms at N = 128 ... 1024, masses within 1e-3,
positions within 1e-3 rad, and within 0.003 of the pure-fv basin masses at N = 2048).

``runs/demo.toml`` (paper S^1 descent, beta = 5) with ``[atoms] representation = "dirac"``, to
stationarity. Prints, per scheme and N, the atoms as the run reports them (basin masses: each
Dirac atom plus the diffuse mass of its basin; degrees: mass), the Dirac masses alone, the
steps, the stop time and the wall time of one warmed run, then the largest pairwise differences
(basin masses, Dirac masses, positions).

    .venv/bin/python benchmarks/lagrangian_demo.py [--n 128,256,512,1024] [--schemes lagrangian,fv]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.io.state import initial_density  # noqa: E402
from solvers.model.config import load_config  # noqa: E402
from solvers.timestepping.loop import simulate  # noqa: E402

CONFIG = ROOT / "runs" / "demo.toml"


def run(scheme: str, n: int) -> tuple[float, object]:
    """Wall seconds and the result of one run (no archive)."""
    cfg = load_config(CONFIG, [f"domain.resolution={n}", f'time.scheme="{scheme}"',
                               'atoms.representation="dirac"', "output.progress=false"])
    rho0 = initial_density(cfg)
    start = time.perf_counter()
    res = simulate(cfg, rho0)
    return time.perf_counter() - start, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="128,256,512,1024")
    ap.add_argument("--schemes", default="lagrangian,fv")
    args = ap.parse_args()
    sizes = [int(v) for v in args.n.split(",")]
    for scheme in args.schemes.split(","):
        run(scheme, sizes[0])  # warm the compiled kernels
        found = {}
        for n in sizes:
            wall, res = run(scheme, n)
            d = res.final.diagnostics
            o = np.argsort(d.atom_position)
            pos, basin = np.asarray(d.atom_position)[o], np.asarray(d.atom_mass)[o]
            od = np.argsort(d.dirac_position)
            dirac = np.asarray(d.dirac_mass)[od]
            found[n] = (pos, basin, dirac, np.asarray(d.dirac_position)[od])
            atoms = "  ".join(f"{np.degrees(x):.4f}: {m:.6f}" for x, m in zip(pos, basin))
            print(f"{scheme:10s} N = {n:5d}  {atoms}  (Dirac {' '.join(f'{m:.6f}' for m in dirac)})  "
                  f"{res.n_steps} steps  t = {res.final.t:g}  {wall:.2f} s")
        same = [(a, b) for a, b in itertools.combinations(sizes, 2)
                if found[a][1].size == found[b][1].size and found[a][2].size == found[b][2].size]
        if same:
            worst = [max(np.abs(found[a][i] - found[b][i]).max() for a, b in same) for i in range(4)]
            print(f"{scheme:10s} largest pairwise difference: basin masses {worst[1]:.2e}, Dirac masses "
                  f"{worst[2]:.2e}, positions {max(worst[0], worst[3]):.2e} rad ({len(same)} of "
                  f"{len(sizes) * (len(sizes) - 1) // 2} pairs have the same atoms)")


if __name__ == "__main__":
    main()
