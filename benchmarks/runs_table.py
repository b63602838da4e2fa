"""Every shipped config run as a new user runs it: its verdict, the cost estimate and the wall time.

Run: ``.venv/bin/python benchmarks/runs_table.py [OUT_DIR] [CONFIG ...]`` from the repository
root, on a quiet machine (about ten minutes on two cores). For each ``runs/*.toml`` (or the
named ones) it asks ``meanfield run CONFIG --dry-run`` for the estimate, then times the whole
command ``meanfield run CONFIG -o OUT_DIR/NAME.nc --overwrite --no-progress`` (default settings,
the verdict's check runs included) and prints a Markdown table: verdict, state, estimate, wall
time and their ratio (benchmarks/README.md, "Every shipped config").
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}


def meanfield(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "solvers", *args], cwd=ROOT,
                          capture_output=True, text=True)


def estimate_s(config: Path) -> float:
    """The dry run's estimate in seconds."""
    out = meanfield("run", str(config), "--dry-run").stdout
    found = re.search(r"estimate: about ([0-9.e+-]+) (s|min|h|days)", out)
    if found is None:
        raise RuntimeError(f"no estimate in the dry run of {config}:\n{out}")
    return float(found.group(1)) * UNITS[found.group(2)]


def main() -> None:
    args = sys.argv[1:]
    out = Path(args.pop(0)) if args and not args[0].endswith(".toml") else ROOT / "output" / "runs_table"
    out.mkdir(parents=True, exist_ok=True)
    configs = [Path(a) for a in args] or sorted((ROOT / "runs").glob("*.toml"))
    print("| config | verdict | state | estimate (s) | wall (s) | wall / estimate |")
    print("|---|---|---|---|---|---|")
    total = 0.0
    for config in configs:
        est = estimate_s(config)
        start = time.perf_counter()
        run = meanfield("run", str(config), "-o", str(out / f"{config.stem}.nc"), "--overwrite",
                        "--no-progress")
        wall = time.perf_counter() - start
        total += wall
        text = run.stdout + run.stderr
        head = re.search(r"^accuracy: (.*)$", text, re.M)
        state = re.search(r"^state: ([a-z ]*stationary)|^state at .*: (no atoms)", text, re.M)
        verdict = head.group(1) if head else f"exit {run.returncode}"
        print(f"| {config.stem} | {verdict} | {(state.group(1) or state.group(2)) if state else ''} | {est:.3g} | "
              f"{wall:.3g} | {wall / est:.2f} |", flush=True)
    print(f"\ntotal wall time: {total:.0f} s ({len(configs)} configs)")


if __name__ == "__main__":
    main()
