"""Whole compiled S^1 steps against one compiled call per stage, side by side.

For each setup the script runs the solver to ``t_end`` (no snapshots, no archive) twice per
repeat, interleaved: with the whole-step kernel (:mod:`solvers.circle.grid.kernels_steps_numba`,
FFTs inside numba through rocket-fft) and stage by stage (numpy's FFTs, then one compiled call
per stage: the path before round 11). It prints the best wall time of each, their ratio, the
steps (the same in both) and the largest difference of the final states.

    .venv/bin/python benchmarks/bench_whole_steps.py [--repeat 3] [--only demo,grid25,dirac25]

Each setup runs once first to compile. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.io.state import initial_state  # noqa: E402
from solvers.model.config import load_config  # noqa: E402
from solvers.timestepping.simulation import Solver  # noqa: E402

BETA50 = "paper_s1_descent_relu_beta50.toml"
SETUPS = {  # name: (config, overrides, t_end)
    "demo": ("demo.toml", ["domain.resolution=512", 'time.scheme="fv"'], 1600.0),
    "demo_dirac": ("demo.toml", ["domain.resolution=512", 'atoms.representation="dirac"'], 1600.0),
    "grid25": (BETA50, ["model.beta=25", "domain.resolution=256", 'time.scheme="fv"'], 5000.0),
    "dirac25": (BETA50, ["model.beta=25", "domain.resolution=256", 'atoms.representation="dirac"'], 5000.0),
    "grid1024": (BETA50, ["model.beta=10", "domain.resolution=1024", 'time.scheme="fv"'], 200.0),
}


class StageByStage:
    """The rhs without its whole-step kernel (the integrator then fuses stage by stage)."""

    def __init__(self, rhs):
        self.rhs, self.fused_stage = rhs, rhs.fused_stage

    def __call__(self, *args, **kwargs):
        return self.rhs(*args, **kwargs)


def run(name: str, whole: bool) -> tuple[float, int, np.ndarray]:
    """Wall seconds of the time loop, steps, and the final grid density or, for a Dirac run,
    its atoms' masses (heaviest first: round-off moves a capture by a step, so the flat
    states of the two paths need not line up entry by entry)."""
    path, sets, t_end = SETUPS[name]
    cfg = load_config(ROOT / "runs" / path, sets + [f"time.t_end={t_end}", "output.progress=false"])
    rho0, atoms0 = initial_state(cfg)
    s = Solver(cfg, rho0, atoms0=atoms0)
    if not whole:
        s.rhs = StageByStage(s.rhs)
    start = time.perf_counter()
    while s.t < t_end:
        s.step(t_end)
    wall = time.perf_counter() - start
    atoms = s.disc.atoms(s.rho)  # None for a grid state
    final = np.sort(atoms.mass)[::-1] if atoms is not None else s.rho
    return wall, s.n_steps, final


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(SETUPS))
    args = parser.parse_args()
    print("| setup | steps | whole step s | stage by stage s | ratio | max difference (density or Dirac masses) |")
    print("|---|---|---|---|---|---|")
    for name in args.only.split(","):
        run(name, True), run(name, False)  # compile and warm both
        best = {True: np.inf, False: np.inf}
        for _ in range(args.repeat):
            for whole in (True, False):
                best[whole] = min(best[whole], run(name, whole)[0])
        _, steps_w, a = run(name, True)
        _, steps_s, b = run(name, False)
        diff = f"{np.max(np.abs(a - b)):.1e}" if a.shape == b.shape else f"atoms {a.size} / {b.size}"
        print(f"| {name} | {steps_w} / {steps_s} | {best[True]:.3f} | {best[False]:.3f} | "
              f"{best[False] / best[True]:.2f} | {diff} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
