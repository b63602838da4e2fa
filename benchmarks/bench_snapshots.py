"""Cost of snapshots: the paper's S^1 descent (runs/demo.toml, N = 512) archived with the
default ``output.snapshot_interval = 1.0`` against the same run with 100x fewer snapshots
(``snapshot_interval = 100``), side by side in one process.

Both runs take the same steps: a fixed ``time.dt`` that divides both intervals, ``t_end`` a
multiple of 100, no stationarity stop (the default integrator, SSP-RK(10,2)). Each case is run
``--repeat`` times, alternating; the best wall time of each is reported, and their ratio
(target: at most 1.2). ``--adaptive``: the default adaptive steps instead (a run that must land
on every snapshot time then takes more, shorter steps than the sparse one).

    .venv/bin/python benchmarks/bench_snapshots.py [--t-end 1000] [--repeat 3] [--sync 5]
        [--zarr] [--compare-every-record] [--adaptive [--land]] [--cli [--resolution N]]

``--compare-every-record`` adds the writer's earlier behaviour (``output.sync_interval = 0``:
every snapshot written and synced as it comes). ``--land``: with ``--adaptive``, steps that
land on every snapshot time (``output.snapshot_mode = "land"``, the behaviour before
interpolated snapshots) instead of the default free steps.

``--cli``: the whole command instead, as a user runs it: ``meanfield run runs/demo.toml`` to
stationarity with the default ``snapshot_interval = 1`` against ``100``, each in a fresh
process (interpreter start, imports, compiled-kernel cache, archive), alternating, best of
``--repeat``; ``--resolution``: N of those runs (default 512; the issue's first measure was
N = 256).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from solvers.io.archive import ArchiveWriter
from solvers.io.state import grid_arrays, initial_density
from solvers.model.config import load_config
from solvers.timestepping.loop import simulate

ROOT = Path(__file__).resolve().parents[1]


def run_once(interval: float, t_end: float, sync: float, folder: Path, suffix: str,
             adaptive: bool = False, mode: str = "auto") -> tuple[float, int, int]:
    """Wall seconds of one archived run, its steps and its archive size in bytes."""
    out = folder / f"run_{interval:g}_{sync:g}{suffix}"
    cfg = load_config(ROOT / "runs" / "demo.toml", [
        f"time.t_end={t_end}", *([] if adaptive else ["time.dt=0.25"]), "time.stop_when_stationary=false",
        f"output.snapshot_interval={interval}", f"output.sync_interval={sync}",
        "output.progress=false", f'output.snapshot_mode="{mode}"'])
    theta, weight, phi = grid_arrays(cfg)
    rho0 = initial_density(cfg)
    start = time.perf_counter()
    with ArchiveWriter(out, cfg, theta, weight, phi=phi, overwrite=True) as writer:
        result = simulate(cfg, rho0, trackers=[writer])
    wall = time.perf_counter() - start
    size = sum(p.stat().st_size for p in out.rglob("*")) if out.is_dir() else out.stat().st_size
    return wall, result.n_steps, size


def cli_once(interval: float, folder: Path, resolution: int = 512) -> float:
    """Wall seconds of ``meanfield run runs/demo.toml`` (to stationarity) in a new process."""
    out = folder / f"cli_{interval:g}.nc"
    cmd = [sys.executable, "-m", "solvers", "run", str(ROOT / "runs" / "demo.toml"), "-o", str(out),
           "--overwrite", "--no-progress", "-q", "--set", f"output.snapshot_interval={interval}",
           "--set", f"domain.resolution={resolution}"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start


def cli_main(repeat: int, resolution: int) -> None:
    """The ratio of whole ``meanfield run`` commands, interval 1 against 100."""
    best = {1.0: float("inf"), 100.0: float("inf")}
    with tempfile.TemporaryDirectory(prefix="bench-snap-") as tmp:
        cli_once(100.0, Path(tmp), resolution)  # warm up (numba cache, page cache)
        for _ in range(repeat):
            for interval in best:
                best[interval] = min(best[interval], cli_once(interval, Path(tmp), resolution))
    print(f"meanfield run runs/demo.toml (N={resolution}, to stationarity), best of {repeat}, "
          "fresh processes")
    for interval, wall in best.items():
        print(f"  snapshot_interval {interval:5g}: {wall:6.2f} s")
    print(f"ratio (interval 1 / interval 100): {best[1.0] / best[100.0]:.3f}  (target <= 1.2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-end", type=float, default=1000.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sync", type=float, default=5.0, help="output.sync_interval (s)")
    parser.add_argument("--zarr", action="store_true", help="write zarr stores, not NetCDF")
    parser.add_argument("--compare-every-record", action="store_true")
    parser.add_argument("--adaptive", action="store_true", help="default adaptive steps, not dt = 0.25")
    parser.add_argument("--land", action="store_true", help="steps land on the snapshot times")
    parser.add_argument("--cli", action="store_true", help="whole `meanfield run` commands")
    parser.add_argument("--resolution", type=int, default=512, help="N of the --cli runs")
    args = parser.parse_args()
    if args.cli:
        return cli_main(args.repeat, args.resolution)
    mode = "land" if args.land else "auto"
    cases = [(1.0, args.sync), (100.0, args.sync)]
    if args.compare_every_record:
        cases.append((1.0, 0.0))
    suffix = ".zarr" if args.zarr else ".nc"
    best: dict[tuple[float, float], tuple[float, int, int]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-snap-") as tmp:
        run_once(100.0, 100.0, args.sync, Path(tmp), suffix)  # warm up (numba, imports)
        for _ in range(args.repeat):
            for case in cases:
                got = run_once(*case[:1], args.t_end, case[1], Path(tmp), suffix, args.adaptive, mode)
                if case not in best or got[0] < best[case][0]:
                    best[case] = got
    steps = (f"adaptive steps ({'landed' if args.land else 'free'})" if args.adaptive
             else "dt=0.25 fixed")
    print(f"demo.toml N=512, t_end={args.t_end:g}, {steps}, best of {args.repeat}, {suffix}")
    print(f"{'snapshot_interval':>17} {'sync_interval':>13} {'snapshots':>9} {'steps':>6} "
          f"{'wall s':>7} {'bytes':>10}")
    for (interval, sync), (wall, steps, size) in best.items():
        print(f"{interval:17g} {sync:13g} {int(args.t_end / interval) + 1:9d} {steps:6d} "
              f"{wall:7.2f} {size:10d}")
    ratio = best[(1.0, args.sync)][0] / best[(100.0, args.sync)][0]
    print(f"ratio (interval 1 / interval 100): {ratio:.3f}  (target <= 1.2)")
    if args.compare_every_record:
        old = best[(1.0, 0.0)][0] / best[(100.0, args.sync)][0]
        print(f"ratio with every snapshot synced (sync_interval 0): {old:.3f}")


if __name__ == "__main__":
    main()
