"""Cost of the Dirac representation: the same run with ``[atoms] representation = "grid"`` and
``"dirac"``, side by side in one process (target on S^1: the Dirac run at most 2x the grid run).

Setups: ``runs/paper_s1_descent_relu_beta50.toml`` with ``time.t_end = 1000`` at N = 256 and
N = 512, and ``runs/demo.toml`` as it is (N = 512, to stationarity); with ``--s2`` (or only them,
``--only-s2``) ``runs/paper_s2_descent_relu.toml`` to stationarity at lmax 63 and 127. Each run
is warmed once (numba cache, imports), then the grid and the Dirac run alternate ``--repeat``
times; the best wall time of each is printed with the steps taken and the ratio Dirac / grid.

    .venv/bin/python benchmarks/bench_dirac.py [--repeat 3] [--quick] [--s2 | --only-s2]

``--quick``: the N = 256 setup only, one repeat (a smoke run). ``MEANFIELD_NUMPY=1`` times the
numpy reference path of both representations.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.io.state import initial_density  # noqa: E402
from solvers.model.config import load_config  # noqa: E402
from solvers.timestepping.loop import simulate  # noqa: E402

BETA50 = ROOT / "runs" / "paper_s1_descent_relu_beta50.toml"
SETUPS = {
    "beta50 N=256 t=1000": (BETA50, ["time.t_end=1000", "domain.resolution=256"]),
    "beta50 N=512 t=1000": (BETA50, ["time.t_end=1000", "domain.resolution=512"]),
    "demo N=512": (ROOT / "runs" / "demo.toml", []),
}
S2 = ROOT / "runs" / "paper_s2_descent_relu.toml"
SETUPS_S2 = {
    "s2 lmax 63": (S2, ["domain.resolution=63"]),
    "s2 lmax 127": (S2, ["domain.resolution=127"]),
}


def timed(path: Path, overrides: list[str], representation: str) -> tuple[float, int]:
    """Wall seconds of one run (no archive) and its steps."""
    cfg = load_config(path, [*overrides, f'atoms.representation="{representation}"', "output.progress=false"])
    rho0 = initial_density(cfg)
    start = time.perf_counter()
    result = simulate(cfg, rho0)
    return time.perf_counter() - start, result.n_steps


def compare(path: Path, overrides: list[str], repeat: int) -> dict[str, tuple[float, int]]:
    """Best wall time and steps of the grid and the Dirac run, alternating after one warm-up each."""
    best: dict[str, tuple[float, int]] = {}
    for rep in ("grid", "dirac"):
        timed(path, overrides, rep)
    for _ in range(repeat):
        for rep in ("grid", "dirac"):
            wall, steps = timed(path, overrides, rep)
            if rep not in best or wall < best[rep][0]:
                best[rep] = (wall, steps)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="N = 256 only, one repeat")
    parser.add_argument("--s2", action="store_true", help="also the S^2 setups")
    parser.add_argument("--only-s2", action="store_true", help="the S^2 setups only")
    args = parser.parse_args()
    setups = dict(list(SETUPS.items())[:1]) if args.quick else dict(SETUPS)
    if args.only_s2:
        setups = dict(SETUPS_S2)
    elif args.s2:
        setups.update(SETUPS_S2)
    repeat = 1 if args.quick else args.repeat
    print(f"{'setup':<22} {'grid s':>8} {'steps':>6} {'dirac s':>8} {'steps':>6} {'ratio':>6}  (best of {repeat})")
    for name, (path, overrides) in setups.items():
        best = compare(path, overrides, repeat)
        (g, gs), (d, ds) = best["grid"], best["dirac"]
        print(f"{name:<22} {g:8.3f} {gs:6d} {d:8.3f} {ds:6d} {d / g:6.2f}", flush=True)


if __name__ == "__main__":
    main()
