"""The atoms of each run config by the default method against an explicit scheme, side by side.

    .venv/bin/python benchmarks/default_atoms.py [CONFIG ...] [--explicit fv] [--set KEY=VALUE ...]

For every config (default: all S^1 configs in runs/), runs it twice to its end (stationary stop
or t_end): once by the default method (the config without ``time.scheme``, ``cfl`` and the grid
knobs) and once with ``time.scheme = EXPLICIT`` (the finite-volume grid by default), and prints
both atom tables, the largest mass difference of matched atoms, wall times and the default
run's verdict. No archive is written.
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
from solvers.model.config import apply_overrides, build_config, check_keys, tomllib  # noqa: E402
from solvers.studies.verdict import compare_atoms, run_verdict  # noqa: E402
from solvers.timestepping.loop import simulate  # noqa: E402

KNOBS = ("scheme", "cfl", "limiter", "cfl_floor", "kink_faces", "one_sided_kinks",
         "lagrangian_until", "rate_factor", "integrator", "dt", "basin_refine")


def config_of(path: Path, overrides: list[str], explicit: str | None):
    doc = tomllib.loads(path.read_text())
    check_keys(doc)
    doc = apply_overrides(doc, overrides)
    time_section = doc.setdefault("time", {})
    for key in KNOBS:
        time_section.pop(key, None)
    doc.get("atoms", {}).pop("representation", None)
    if explicit is not None:
        time_section["scheme"] = explicit
        if explicit == "lagrangian":
            doc.setdefault("atoms", {})["representation"] = "dirac"
    doc.setdefault("output", {})["progress"] = False
    return build_config(doc, path.read_text())


def run(config):
    rho0, atoms0 = initial_state(config)
    start = time.perf_counter()
    result = simulate(config, rho0, atoms0=atoms0)
    return result, time.perf_counter() - start


def table(diag) -> str:
    m = np.asarray(diag.atom_mass, float).ravel()
    return " ".join(f"{x:.6f}" for x in m[np.isfinite(m)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--explicit", default="fv", help="the explicit scheme to compare with")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--no-check", action="store_true", help="no half-resolution verdict")
    args = parser.parse_args()
    paths = args.configs or sorted(p for p in (ROOT / "runs").glob("*.toml")
                                   if 'manifold = "S2"' not in p.read_text())
    for path in paths:
        default, explicit = (config_of(path, args.set, None), config_of(path, args.set, args.explicit))
        (r_d, w_d), (r_e, w_e) = run(default), run(explicit)
        count, dm, dx = compare_atoms(r_d.final.diagnostics, r_e.final.diagnostics)
        print(f"== {path.name}")
        print(f"   default  ({r_d.reason} t = {r_d.final.t:g}, {w_d:.2f} s): {table(r_d.final.diagnostics)}")
        print(f"   {args.explicit:8s} ({r_e.reason} t = {r_e.final.t:g}, {w_e:.2f} s): {table(r_e.final.diagnostics)}")
        print(f"   max mass difference: {'counts differ' if dm is None else f'{dm:.2e}'}"
              + ("" if dx is None else f", positions {dx:.2e} rad"))
        verdict = run_verdict(default, r_d, check_resolution=not args.no_check)
        print("   " + "\n   ".join(verdict.lines()))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
