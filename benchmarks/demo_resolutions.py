"""The paper demo's atoms against the resolution, uniform faces and faces on the ReLU corners.

Run: ``.venv/bin/python benchmarks/demo_resolutions.py [N ...]`` (default: 128 to 4096, about
three minutes on two cores). Each N runs ``runs/demo.toml`` to stationarity twice, with
``time.kink_faces`` false and true, and prints the final atoms (position in degrees: mass), the
stopping time, the step count and the mass error (benchmarks/README.md; faces on the corners:
docs/methods.md §6.2).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import solvers  # noqa: E402

RESOLUTIONS = (128, 192, 224, 256, 288, 320, 384, 448, 512, 640, 768, 1024, 2048, 4096)


def atoms_line(n: int, kink_faces: bool) -> str:
    """One run's summary: faces, stop time, steps, |mass - 1|, atoms sorted by angle."""
    ds = solvers.run(ROOT / "runs" / "demo.toml", domain__resolution=n, time__kink_faces=kink_faces)
    last = ds.isel(time=-1)
    mass, pos = last["atom_mass"].values, last["atom_position"].values
    keep = np.isfinite(mass)
    order = np.argsort(pos[keep])
    atoms = " ".join(f"{np.degrees(p):.2f}:{m:.4f}" for p, m in zip(pos[keep][order], mass[keep][order]))
    return (f"{'kink' if kink_faces else 'uniform'} t={float(last.time):.0f} steps={int(last.step)} "
            f"dM={abs(float(last['mass']) - 1.0):.0e} {atoms}")


def main(argv: list[str]) -> None:
    for n in [int(a) for a in argv] or RESOLUTIONS:
        print(n, " | ".join(atoms_line(n, kf) for kf in (False, True)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
