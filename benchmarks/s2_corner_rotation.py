"""Is the S^2 Dirac run's lmax-63 error a sub-cell effect of the ReLU corners?

``runs/paper_s2_descent_relu.toml`` with Dirac atoms at lmax 63 and 127, its perceptron rotated
about the polar axis by ``--degrees`` (default 0, 0.7, 1.4: a quarter and a half of a longitude
cell at lmax 63), so that the corner great circles cross the cells at other places. It prints
the atoms' masses (heaviest first) at both resolutions and their largest difference.

    .venv/bin/python benchmarks/s2_corner_rotation.py [--degrees 0,0.7,1.4]

Round 11: the gap stayed 3.43e-3 / 3.39e-3 / 3.40e-3: not where the corners fall in the cells
(on S^1 that was the demo's error before kink faces, docs/methods.md §6.2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.io.state import initial_state  # noqa: E402
from solvers.model.config import load_config  # noqa: E402
from solvers.timestepping.loop import simulate  # noqa: E402

CONFIG = ROOT / "runs" / "paper_s2_descent_relu.toml"


def masses(lmax: int, a: np.ndarray) -> np.ndarray:
    """The final atoms' masses, heaviest first."""
    cfg = load_config(CONFIG, [f"domain.resolution={lmax}", 'atoms.representation="dirac"',
                               "output.progress=false", f"perceptron.a={a.tolist()}"])
    rho0, _ = initial_state(cfg)
    return np.sort(simulate(cfg, rho0).final.diagnostics.atom_mass)[::-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--degrees", default="0,0.7,1.4")
    args = parser.parse_args()
    a0 = np.asarray(load_config(CONFIG).model.perceptron.a, dtype=float)
    for deg in (float(d) for d in args.degrees.split(",")):
        c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
        a = a0 @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T
        low, high = masses(63, a), masses(127, a)
        gap = np.abs(low - high).max() if low.size == high.size else np.inf
        print(f"rotated {deg:4.2f} deg: lmax 63 {np.round(low, 5)}  lmax 127 {np.round(high, 5)}  gap {gap:.2e}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
