"""Convergence in the number of points N of the Sd point method: the atoms' masses at
N = 10^3, 10^4, 10^5 (``--points``) against the finest, and the observed rate.

Run: ``.venv/bin/python benchmarks/sd_convergence.py [--config runs/paper_sd_descent_relu.toml]
[--dim 2] [--points 1000,10000,100000] [--set section.key=value ...] [--out DIR]``.

Each N runs the config with ``meanfield run --no-check`` (archives kept in ``--out``, default
``output/sd_convergence``; one already there is reused). The final clusters of each N are
matched with the finest N's (nearest position); the table gives the masses, the largest mass
difference to the finest and, between successive N, the observed order ``p`` in ``|m_N -
m_finest| ~ N^{-p}`` (benchmarks/README.md, "Sd: convergence in N").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import solvers  # noqa: E402


def run(config: Path, dim: int, n: int, extra: list[str], out: Path) -> Path:
    """The archive of ``config`` at ``dim``, ``n`` points (run unless already there)."""
    path = out / f"d{dim}_n{n}.nc"
    if not path.exists():
        cmd = [str(ROOT / ".venv/bin/meanfield"), "run", str(config), "-o", str(path), "--force",
               "--no-check", "--no-progress", "--set", f"domain.dim={dim}",
               "--set", f"domain.points={n}"] + [a for s in extra for a in ("--set", s)]
        subprocess.run(cmd, check=True)
    return path


def final_atoms(path: Path) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``(masses, positions (k, d), t, wall)`` of the last record's clusters."""
    ds = solvers.open_run(str(path))
    last = ds.isel(time=-1)
    m = np.asarray(last["atom_mass"].values, float)
    keep = np.isfinite(m)
    return (m[keep], np.asarray(last["atom_position"].values, float)[keep],
            float(last["time"]), float(ds.attrs.get("wall_time_s", np.nan)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=ROOT / "runs" / "paper_sd_descent_relu.toml")
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--points", default="1000,10000,100000")
    ap.add_argument("--set", action="append", default=[], dest="extra")
    ap.add_argument("--out", type=Path, default=ROOT / "output" / "sd_convergence")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    counts = [int(v) for v in args.points.split(",")]
    found = {n: final_atoms(run(args.config, args.dim, n, args.extra, args.out)) for n in counts}
    ref_m, ref_x, _, _ = found[counts[-1]]
    order = np.argsort(-ref_m)
    print(f"d = {args.dim}; reference N = {counts[-1]}: masses "
          + " / ".join(f"{m:.5f}" for m in ref_m[order]))
    errors = {}
    for n in counts[:-1]:
        m, x, t, _ = found[n]
        if m.size != ref_m.size:
            print(f"N = {n}: {m.size} atoms against {ref_m.size}: not compared")
            continue
        match = np.argmax(ref_x @ x.T, axis=1)  # each reference atom's nearest
        err = float(np.max(np.abs(m[match] - ref_m)))
        errors[n] = err
        print(f"N = {n:>7}: masses " + " / ".join(f"{v:.5f}" for v in m[match][order])
              + f"; max |m - m_ref| = {err:.2e}; final t = {t:g}")
    ns = sorted(errors)
    for a, b in zip(ns, ns[1:]):
        if errors[a] > 0 and errors[b] > 0:
            p = np.log(errors[a] / errors[b]) / np.log(b / a)
            print(f"observed order between N = {a} and {b}: {p:.2f}")


if __name__ == "__main__":
    main()
