"""S^1 benchmarks: cost per step against the FFTs it needs, and wall time to stationarity.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_s1.py [--quick]``.

1. For N in {256, 1024, 4096, 16384} and both schemes: seconds per step, and its ratio to the
   time of the FFTs one step needs, measured side by side in the same process (fv: one
   rfft + irfft pair per stage, 3 for SSP-RK3 and 10 for the default SSP-RK(10,2); spectral +
   RK4: 4 stages x (2 rfft + 2 irfft)). fv is timed with both backends (``numpy``: the array
   reference; ``numba``: the compiled kernels) and both SSP integrators.
2. The paper's S^1 descent setup (beta = 5, ReLU perceptron of the particle code, kernel
   exp_shifted, uniform start; runs/paper_s1_descent.toml) from t = 0 to stationarity at
   several N, with the atom masses, to show the resolution at which the masses agree with
   a finer run to 0.01.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.circle.grid.fv import fv  # noqa: E402
from solvers.io.state import initial_density  # noqa: E402
from solvers.model.config import load_config  # noqa: E402
from solvers.timestepping.simulation import Solver  # noqa: E402
from solvers.timestepping.loop import simulate  # noqa: E402

PAIRS_PER_STAGE = {"fv": 1, "spectral": 2}  # (rfft + irfft) pairs per right-hand side


def _best_of(fn, repeats: int = 5) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def step_cost(scheme: str, n: int, steps: int, backend: str | None = None,
              integrator: str | None = None) -> tuple[float, float]:
    """(seconds per step, seconds of the FFTs one step needs), best of 5; ``backend`` for fv."""
    extra = [f"time.integrator=\"{integrator}\""] if integrator else []
    cfg = load_config(ROOT / "runs" / "paper_s1_descent.toml",
                      [f"domain.resolution={n}", f"time.scheme=\"{scheme}\"", "time.t_end=1e4"] + extra)
    solver = Solver(cfg, initial_density(cfg) * (1 + 0.1 * np.cos(3 * np.arange(n) * 2 * np.pi / n)))
    if backend is not None:
        solver.rhs = fv(solver.disc.problem, cfg.time.limiter, backend=backend)
        solver.rhs(solver.rho, 1e-3)  # compile (or load) outside the timing

    def run_steps() -> None:
        for _ in range(steps):
            solver.step(1e4)

    x = np.random.default_rng(0).random(n)

    def run_ffts() -> None:
        for _ in range(steps * PAIRS_PER_STAGE[scheme] * solver.table.stages):
            np.fft.irfft(np.fft.rfft(x), n=n)

    return _best_of(run_steps) / steps, _best_of(run_ffts) / steps


def stationarity(n: int) -> tuple[float, object]:
    cfg = load_config(ROOT / "runs" / "paper_s1_descent.toml", [f"domain.resolution={n}"])
    start = time.perf_counter()
    result = simulate(cfg, initial_density(cfg))
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer resolutions (smoke test)")
    args = parser.parse_args()
    sizes = [256, 1024] if args.quick else [256, 1024, 4096, 16384]
    print("# cost per step (best of 5)")
    print(f"{'scheme':>9} {'integrator':>10} {'backend':>7} {'N':>6} {'s/step':>10} {'FFT s/step':>11} {'ratio':>6}")
    for scheme, integ, backend in (("fv", "ssprk3", "numpy"), ("fv", "ssprk3", "numba"),
                                   ("fv", "ssprk10_2", "numba"), ("spectral", "rk4", None)):
        for n in sizes:
            per_step, ffts = step_cost(scheme, n, max(20, 40000 // n), backend, integ)
            print(f"{scheme:>9} {integ:>10} {backend or '-':>7} {n:>6} {per_step:10.3e} {ffts:11.3e} "
                  f"{per_step / ffts:6.2f}")
    print("\n# paper S^1 descent (beta = 5, ReLU, exp_shifted) to stationarity")
    print(f"{'N':>6} {'wall s':>7} {'t':>7} {'steps':>6} {'reason':>10}  atom masses")
    for n in ([256, 512] if args.quick else [256, 512, 1024, 2048]):
        wall, res = stationarity(n)
        d = res.final.diagnostics
        masses = " ".join(f"{m:.4f}" for m in d.atom_mass)
        print(f"{n:>6} {wall:7.2f} {res.final.t:7.1f} {res.n_steps:>6} {res.reason:>10}  {masses}")


if __name__ == "__main__":
    main()
