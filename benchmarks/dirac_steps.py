"""Step sizes of the Dirac state before and after capture, against the grid density.

For each setup (descent, the paper's ReLU perceptron, shifted kernel, N = 256) the script steps
the Dirac state and the grid density side by side to ``t_end`` (no stationarity stop, no
snapshots) and prints, for the steps before the first capture (the Dirac run's first Dirac
atom) and after it: the number of steps, the median, smallest and largest step, and what held
each step after capture: the CFL condition of the faces that move mass (``faces``), that of
the Dirac atoms (an atom crosses at most a cell per step, ``atoms``), or the Lipschitz bound of
the nonlocal interaction (``rate``: ``C / L``, docs/methods.md §6.8). Counts of steps, not
timings: the figures do not depend on the machine's load.

    .venv/bin/python benchmarks/dirac_steps.py [--n 256] [--only demo,10,25,50]

What it showed (round 10, benchmarks/README.md): the first atoms are captured after 40 steps
(t = 8-10); after capture no step is held by an atom (their speeds are far below a cell per
step): the steps are held by the faces of the diffuse density and, where it is quiet, by the
rate bound (``dt = C / L = 9``). The grid density's steps are held by faces throughout, at
beta >= 10 at a nearly constant 0.38-0.56.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.core.measure import MeasureDiscretization  # noqa: E402
from solvers.io.state import initial_state  # noqa: E402
from solvers.model.config import load_config  # noqa: E402
from solvers.timestepping.simulation import Solver  # noqa: E402

SETUPS = {  # name: (config, model.beta or None, t_end)
    "demo": ("demo.toml", None, 1600.0),
    "10": ("paper_s1_descent_relu_beta50.toml", 10.0, 5000.0),
    "25": ("paper_s1_descent_relu_beta50.toml", 25.0, 5000.0),
    "50": ("paper_s1_descent_relu_beta50.toml", 50.0, 5000.0),
}


def trace(name: str, n: int, representation: str) -> dict[str, np.ndarray]:
    """Every accepted step of one run: its time, size, what proposed it, and the atom count."""
    path, beta, t_end = SETUPS[name]
    sets = [f"domain.resolution={n}", f"time.t_end={t_end}", f'atoms.representation="{representation}"',
            "output.progress=false"]
    cfg = load_config(ROOT / "runs" / path, sets + ([f"model.beta={beta}"] if beta else []))
    rho0, atoms0 = initial_state(cfg)
    s = Solver(cfg, rho0, atoms0=atoms0)
    rows = []
    while s.t < t_end:
        cause = _cause(s)
        h = s.step(t_end)
        count = s.disc.layout.count(s.rho) if isinstance(s.disc, MeasureDiscretization) else 0
        rows.append((s.t, h, cause, count))
    t, dt, cause, count = (np.array(c) for c in zip(*rows))
    return {"t": t, "dt": dt, "cause": cause, "atoms": count}


def _cause(s: Solver) -> int:
    """What sets the step the solver proposes now: 0 faces, 1 atoms, 2 the rate bound."""
    cfl = s.ssp * s.config.time.cfl / max(s._rate, 1e-300)
    if s.rate_dt <= cfl:
        return 2
    if not isinstance(s.disc, MeasureDiscretization) or s.disc.layout.count(s.rho) == 0:
        return 0
    d, b = s.disc, s.disc.problem.basis
    atoms = d.atoms(s.rho)
    rho_hat = b.forward(d.density(s.rho))
    v = np.abs(d.field.atom_gradient(rho_hat, np.mod(atoms.position, 2 * np.pi), atoms.mass))
    return 1 if float(v.max()) / b.h >= 0.999 * s._rate else 0


def summary(part: dict[str, np.ndarray], mask: np.ndarray) -> str:
    dt = part["dt"][mask]
    if dt.size == 0:
        return "no steps"
    held = np.bincount(part["cause"][mask], minlength=3)
    return (f"{dt.size:6d} steps, dt median {np.median(dt):6.3f} min {dt.min():6.3f} max {dt.max():6.3f}; "
            f"held by faces {held[0]}, atoms {held[1]}, rate bound {held[2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--only", default=",".join(SETUPS))
    args = parser.parse_args()
    for name in args.only.split(","):
        dirac, grid = trace(name, args.n, "dirac"), trace(name, args.n, "grid")
        first = np.flatnonzero(dirac["atoms"] > 0)
        t_cap = float(dirac["t"][first[0]]) if first.size else np.inf
        print(f"{name} (N = {args.n}): first capture at t = {t_cap:.1f}")
        for label, run in (("dirac", dirac), ("grid", grid)):
            before = run["t"] <= t_cap
            print(f"  {label:5s} before: {summary(run, before)}")
            print(f"  {label:5s} after:  {summary(run, ~before)}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
