"""The paper's particle code against this solver, side by side, end to end (S^1 and S^2).

    .venv/bin/python benchmarks/bench_peer.py --peer-src DIR [--only s1|s2] [--repeat 1]

DIR is a checkout of the paper's code (github.com/antonioalvarezl/2026-MLP-Attention-Energy),
or its git directory (the .py files and config.json are taken with ``git archive``). Without
DIR the benchmark says so and exits 0. Nothing of the peer's code is stored here.

Each program runs as a user would run it, in a fresh process, one after the other:

- particle code: ``python main.py`` with its committed ``config.json`` (500 particles, explicit
  Euler, dt = 0.1, its own stopping rule) restricted to one beta: S^1 ``dimension = 2``,
  ``betas = [5]``; S^2 ``dimension = 3``, ``betas = [1]``. Its figures are part of its run.
- this solver: ``meanfield run runs/paper_s1_descent.toml`` (S^1, beta = 5, N = 512, default
  output settings) and ``meanfield run runs/s2_descent_relu.toml`` (S^2, lmax 127), to
  stationarity, archive included.

It prints wall times and their ratio (peer / ours). Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "s1": ({"dimension": 2, "betas": [5]}, "runs/paper_s1_descent.toml"),
    "s2": ({"dimension": 3, "betas": [1]}, "runs/s2_descent_relu.toml"),
}


def peer_tree(src: Path, into: Path) -> Path:
    """A working copy of the peer's .py files and config.json in ``into``."""
    if (src / "main.py").is_file():
        for item in ("main.py", "config.json", "wgf_circle", "wgf_sphere"):
            path = src / item
            (shutil.copytree if path.is_dir() else shutil.copy)(path, into / item)
        return into
    archive = subprocess.run(["git", f"--git-dir={src}", "archive", "HEAD", "main.py", "config.json",
                              "wgf_circle", "wgf_sphere"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-800:]}")
    return wall, done.stdout


def run_case(name: str, src: Path, repeat: int) -> tuple[float, float]:
    settings, ours = CASES[name]
    peer_times, our_times = [], []
    with tempfile.TemporaryDirectory(prefix="peer-") as tmp:
        tree = peer_tree(src, Path(tmp))
        config = json.loads((tree / "config.json").read_text())
        config.update(settings, results_dir=str(Path(tmp) / "results"))
        (tree / "config.json").write_text(json.dumps(config))
        out = Path(tmp) / "ours.nc"
        for _ in range(repeat):
            peer_times.append(timed([sys.executable, "main.py"], tree)[0])
            wall, text = timed([sys.executable, "-m", "solvers", "run", ours, "-o", str(out),
                                "--overwrite", "--no-progress"], ROOT)
            our_times.append(wall)
        print(f"[{name}] ours: " + " | ".join(text.strip().splitlines()[:1] + text.strip().splitlines()[3:]))
    return min(peer_times), min(our_times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-src", type=Path, help="the particle code (checkout or git dir)")
    parser.add_argument("--only", choices=sorted(CASES), help="one case")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (best is kept)")
    args = parser.parse_args()
    if args.peer_src is None or not args.peer_src.exists():
        print("bench_peer: no --peer-src given (or not found): skipped. Clone "
              "https://github.com/antonioalvarezl/2026-MLP-Attention-Energy and pass its path.")
        return 0
    print("| case | particle code s | this solver s | ratio |\n|---|---|---|---|")
    rows = []
    for name in [args.only] if args.only else sorted(CASES):
        peer, ours = run_case(name, args.peer_src, args.repeat)
        rows.append(f"| {name} | {peer:.1f} | {ours:.1f} | {peer / ours:.1f}x |")
        print(rows[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
