"""Atoms of the paper's S^2 descent run by Lagrangian particles, with and without basin-boundary
refinement (``time.basin_refine``), at several lmax: masses, positions and their differences.

Each case runs ``runs/paper_s2_descent_relu_particles.toml`` at ``--set domain.resolution=L
time.basin_refine=K`` (to its stationary stop), polishes the last record (``meanfield polish``:
the exact stationary positions for the atoms' masses) and prints the atoms. Then, for every
pair of cases, the largest mass difference and the position difference (rad) of every atom,
atoms matched by position (docs/methods.md §6.7, basin-boundary refinement).

    .venv/bin/python benchmarks/s2_basin_refine.py --cases 63:1,63:4,127:2 [--out DIR]

Run it with nothing else on the machine when the wall times matter (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.api import run  # noqa: E402
from solvers.studies.polish import polish_archive  # noqa: E402

PARTICLES = ROOT / "runs" / "paper_s2_descent_relu_particles.toml"


def case(lmax: int, k: int, out: Path, t_end: float | None) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``(masses (a,), positions (a, 3), stop time, wall s)`` of one polished case, heaviest first."""
    path = out / f"s2_particles_L{lmax}_K{k}.nc"
    over = {"domain__resolution": lmax, "time__basin_refine": k}
    if t_end is not None:
        over["time__t_end"] = t_end
    t0 = time.perf_counter()
    ds = run(str(PARTICLES), path=path, overwrite=True, **over)
    wall = time.perf_counter() - t0
    stop = float(ds["time"].values[-1])
    result, _ = polish_archive(path, out / f"s2_particles_L{lmax}_K{k}.polished.nc")
    order = np.argsort(-result.m)
    return result.m[order], result.x[order], stop, wall


def degrees(x: np.ndarray) -> tuple[float, float]:
    return float(np.degrees(np.arccos(np.clip(x[2], -1, 1)))), float(np.degrees(np.arctan2(x[1], x[0])) % 360)


def compare(a, b) -> str:
    """Mass and position differences of the atoms of ``a`` matched to the nearest of ``b``."""
    (ma, xa), (mb, xb) = a, b
    if ma.size != mb.size:
        return f"{ma.size} atoms against {mb.size}"
    match = np.argmax(xa @ xb.T, axis=1)
    dm = np.abs(ma - mb[match])
    dx = np.arccos(np.clip(np.sum(xa * xb[match], axis=1), -1, 1))
    return (f"max |dm| {dm.max():.1e}; positions (rad): "
            + ", ".join(f"{d:.1e}" for d in dx))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="63:1,63:4,127:2", help="lmax:K pairs, comma separated")
    ap.add_argument("--t-end", type=float, default=None, help="override time.t_end")
    ap.add_argument("--out", default=None, help="folder for the archives (default: a temporary one)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="s2_basin_refine_"))
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for item in args.cases.split(","):
        lmax, k = (int(v) for v in item.split(":"))
        m, x, stop, wall = case(lmax, k, out, args.t_end)
        results[(lmax, k)] = (m, x)
        atoms = ", ".join("%.6f (%.3f, %.3f)" % (mi, *degrees(xi)) for mi, xi in zip(m, x))
        print(f"lmax {lmax:3d} K {k}: stop t = {stop:g}, {wall:.1f} s: {atoms}", flush=True)
    for a, b in combinations(results, 2):
        print(f"lmax {a[0]} K {a[1]} against lmax {b[0]} K {b[1]}: {compare(results[a], results[b])}")


if __name__ == "__main__":
    main()
