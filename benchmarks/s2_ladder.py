"""Does the verdict's error bar bound the real error? ``runs/s2_descent_relu.toml`` (the S^2
default method, finite volumes with Dirac atoms) under refinement.

Run: ``.venv/bin/python benchmarks/s2_ladder.py [OUT_DIR]`` (about ten minutes on two cores;
archives kept in OUT_DIR, default ``output/s2_ladder``; an archive already there is reused).
Each lmax in ``LEVELS`` runs with ``meanfield run`` and its default verdict; the finest level
``FINEST`` runs with ``--no-check`` (its atoms are the reference). For each level the table
gives the atoms' masses, the verdict's printed error bar (mass, position) and the largest
distance of the atoms to the finest level's (each atom matched with the nearest): the bar
bounds the error where ``bar >= distance`` (benchmarks/README.md, "The S^2 ladder").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import solvers  # noqa: E402
from solvers.studies.verdict import compare_atoms  # noqa: E402

CONFIG = ROOT / "runs" / "s2_descent_relu.toml"
LEVELS = (63, 127, 255)
FINEST = 511


def archive(lmax: int, out: Path, check: bool) -> Path:
    """The archive of ``CONFIG`` at ``lmax`` (run unless it is there)."""
    path = out / f"s2_descent_relu_{lmax}.nc"
    if not path.exists():
        cmd = [sys.executable, "-m", "solvers", "run", str(CONFIG), "-o", str(path), "--force",
               "--no-progress", "--set", f"domain.resolution={lmax}"] + ([] if check else ["--no-check"])
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return path


def last_atoms(ds) -> object:
    """The last record's atoms as a diagnostics-like object (:func:`compare_atoms` reads it)."""
    from types import SimpleNamespace

    last = ds.isel(time=-1)
    mass = last["atom_mass"].values
    pos = np.stack([last[f"atom_{c}"].values for c in "xyz"], axis=-1)
    keep = np.isfinite(mass)
    return SimpleNamespace(atom_mass=mass[keep], atom_position=pos[keep])


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "output" / "s2_ladder"
    out.mkdir(parents=True, exist_ok=True)
    finest = last_atoms(solvers.open_run(archive(FINEST, out, check=False)))
    print(f"finest lmax {FINEST}: masses {np.round(np.sort(finest.atom_mass)[::-1], 6).tolist()}")
    print("| lmax | largest mass | verdict | bar (mass) | distance to finest (mass) | bar (rad) "
          "| distance (rad) | bounded |")
    print("|---|---|---|---|---|---|---|---|")
    for lmax in LEVELS:
        ds = solvers.open_run(archive(lmax, out, check=True))
        atoms = last_atoms(ds)
        _, dm, dx = compare_atoms(atoms, finest)
        bar_m = float(ds.attrs["resolution_check_atom_mass"])
        bar_x = float(ds.attrs["resolution_check_atom_position"])
        verdict = "trusted" if int(ds.attrs["verdict_trusted"]) else "NOT TRUSTED"
        ok = dm is not None and bar_m >= dm and bar_x >= dx
        print(f"| {lmax} | {atoms.atom_mass.max():.6f} | {verdict} | {bar_m:.2g} | "
              f"{'count differs' if dm is None else f'{dm:.2g}'} | {bar_x:.2g} | "
              f"{'' if dx is None else f'{dx:.2g}'} | {'yes' if ok else 'NO'} |")


if __name__ == "__main__":
    main()
