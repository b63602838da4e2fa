"""The same atoms on fewer cells: the Dirac state against the grid density across N.

Descent, the paper's ReLU perceptron, shifted kernel (``runs/paper_s1_descent_relu_beta50.toml``
with ``model.beta`` set), to stationarity or ``t = 5000``. For each representation and N the
script prints the final atoms (position in degrees: mass), the diffuse mass, the steps, the stop
time and the best wall time of ``--repeat`` runs (each setup warmed once, nothing else running).

    .venv/bin/python benchmarks/dirac_resolution.py [--beta 10] [--repeat 3] [--t-end 5000]
        [--dirac 128,256,512,1024] [--grid 256,512,1024,2048] [--lagrangian 160,256]
        [--default 256] [--alternate]

At beta = 10 (round 8) the Dirac state gives the same two atoms at every N from 128 while the
grid density needs N = 1024 for them; at beta = 25 (round 13) the Dirac state needs N = 512 and
the grid N = 1024 for atoms within 2e-3 of the grid at N = 2048: see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.io.state import initial_density  # noqa: E402
from solvers.model.config import load_config  # noqa: E402
from solvers.timestepping.loop import simulate  # noqa: E402

CONFIG = ROOT / "runs" / "paper_s1_descent_relu_beta50.toml"


def run(beta: float, n: int, representation: str, t_end: float = 5000.0) -> tuple[float, object]:
    """Wall seconds and the result of one run (no archive); ``representation`` "lagrangian" is the
    Dirac state with ``time.scheme = "lagrangian"``, "default" the default method (no scheme:
    spectral, then Lagrangian cells with error-controlled steps), "dirac" the fv Dirac state."""
    scheme = "lagrangian" if representation == "lagrangian" else "fv"
    rep = "grid" if representation == "grid" else "dirac"
    method = [] if representation == "default" else [f'atoms.representation="{rep}"',
                                                      f'time.scheme="{scheme}"']
    text = "\n".join(line for line in CONFIG.read_text().splitlines()
                     if not line.startswith(("scheme", "cfl")))
    cfg = load_config(text, [f"model.beta={beta}", f"domain.resolution={n}", f"time.t_end={t_end}",
                             "output.progress=false"] + method)
    rho0 = initial_density(cfg)
    start = time.perf_counter()
    result = simulate(cfg, rho0)
    return time.perf_counter() - start, result


def line(beta: float, n: int, representation: str, repeat: int, t_end: float) -> str:
    """One setup: best wall time of ``repeat`` runs after a warm-up, steps, stop time, atoms."""
    run(beta, n, representation, t_end)
    best, result = min((run(beta, n, representation, t_end) for _ in range(repeat)), key=lambda r: r[0])
    return describe(n, representation, best, result)


def describe(n: int, representation: str, best: float, result) -> str:
    """The printed line of one setup: N, best wall time, steps, stop time, diffuse mass, atoms."""
    d = result.final.diagnostics
    order = np.argsort(d.atom_position)
    atoms = " ".join(f"{np.degrees(p):.1f}:{m:.4f}" for p, m in
                     zip(d.atom_position[order], d.atom_mass[order]))
    return (f"{representation:10s} N={n:5d} wall={best:6.2f}s steps={result.n_steps:6d} "
            f"t={result.final.t:6.0f} diffuse={d.diffuse_mass:.4f}  {atoms}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beta", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dirac", default="128,256,512,1024")
    parser.add_argument("--grid", default="256,512,1024,2048")
    parser.add_argument("--lagrangian", default="", help="N of the Lagrangian Dirac state (none by default)")
    parser.add_argument("--default", default="", help="N of the default method (spectral, then "
                        "Lagrangian cells; none by default)")
    parser.add_argument("--t-end", type=float, default=5000.0, help="end time (default 5000)")
    parser.add_argument("--alternate", action="store_true",
                        help="run the setups in turn, once each per round (side by side), best of "
                             "--repeat rounds, and print the first setup's wall time over each one's")
    args = parser.parse_args()
    setups = [(representation, int(s)) for representation, sizes in
              (("dirac", args.dirac), ("grid", args.grid), ("lagrangian", args.lagrangian),
               ("default", args.default)) for s in sizes.split(",") if s]
    if not args.alternate:
        for representation, n in setups:
            print(line(args.beta, n, representation, args.repeat, args.t_end), flush=True)
        return
    best: dict[tuple[str, int], tuple[float, object]] = {}
    for setup in setups:  # warm-up
        run(args.beta, setup[1], setup[0], args.t_end)
    for _ in range(args.repeat):
        for representation, n in setups:
            wall, result = run(args.beta, n, representation, args.t_end)
            if (representation, n) not in best or wall < best[representation, n][0]:
                best[representation, n] = (wall, result)
    first = best[setups[0]][0]
    for representation, n in setups:
        wall, result = best[representation, n]
        print(f"{describe(n, representation, wall, result)}  first/this {first / wall:.2f}", flush=True)


if __name__ == "__main__":
    main()
