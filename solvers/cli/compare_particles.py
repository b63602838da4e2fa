"""``meanfield compare-particles``: the command line of :mod:`solvers.studies.compare_particles`."""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time as wallclock
from pathlib import Path
from typing import Any

from solvers.cli.options import PLACEMENTS

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- command line


CFL_RANGE = (1e-6, 1.0)  # below: the particle steps underflow (a hang), above: unstable
PARTICLES_MAX = 10_000_000  # the pairwise kernel sums are O(n) memory per chunk; keep it sane


def parse_list(text: str, kind: type, name: str) -> list:
    """``"1,2,3"`` -> ``[1, 2, 3]`` (positive values); ValueError naming the option."""
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, e.g. 100,1000 "
                         f"(got {text!r})") from None
    if not values or any(not math.isfinite(v) or v < (1 if kind is int else 0) for v in values):
        raise ValueError(f"{name}: values must be {'>= 1' if kind is int else '>= 0'} (got {text!r})")
    return values


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``meanfield compare-particles`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "compare-particles", help="compare the PDE with the particle model as n grows",
        description="Run the PDE once and the particle model for each n; report W1 (S^1), "
                    "the kernel distance and the atoms (counts, masses) of both at the given "
                    "times, the rates in n and wall times.")
    p.add_argument("config", metavar="CONFIG.toml")
    p.add_argument("--n", default="250,500,1000", help="particle counts (default 250,500,1000)")
    p.add_argument("--times", help="comma-separated times (default: 50,100,200, those up to "
                                   "time.t_end: after concentration)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value (TOML syntax), repeatable")
    p.add_argument("--placement", choices=PLACEMENTS, default="quantiles",
                   help="initial particles: CDF quantiles (default) or random draws")
    p.add_argument("--seed", type=int, default=0, help="seed for --placement sample (0)")
    p.add_argument("--dt", type=float, help="fixed particle step (default cfl / Lipschitz bound)")
    p.add_argument("--cfl", type=float, default=0.2, help="particle step factor (0.2)")
    p.add_argument("-o", "--output", metavar="OUT.nc", help="write the report as NetCDF")
    p.set_defaults(func=run_command)
    return p


def run_command(args: argparse.Namespace) -> int:
    """``meanfield compare-particles``: user errors print one line ``error: ...`` and return 2."""
    from solvers.model.config import (
        DT_MIN_FRACTION,
        T_END_MAX,
        ConfigError,
        check_run,
        load_config,
    )
    from solvers.studies.compare_particles import compare
    from solvers.studies.compare_report import format_table

    try:
        sizes = parse_list(args.n, int, "--n")
        times = parse_list(args.times, float, "--times") if args.times else None
        if args.output is not None and not str(args.output).endswith(".nc"):
            raise ValueError(f"--output: must end in .nc (got {args.output!r})")
        if args.output:
            from solvers.io.safe_paths import check_target

            check_target(args.output, True, "--output")  # before the runs
        if not CFL_RANGE[0] <= args.cfl <= CFL_RANGE[1]:
            raise ValueError(f"--cfl: must be in [{CFL_RANGE[0]:g}, {CFL_RANGE[1]:g}] "
                             f"(got {args.cfl:g})")
        if max(sizes) > PARTICLES_MAX:
            raise ValueError(f"--n: at most {PARTICLES_MAX} particles (got {max(sizes)})")
        config = load_config(Path(args.config), args.set)
        check_run(config)
        horizon = max(times) if times else config.time.t_end
        if times and horizon > T_END_MAX:
            raise ValueError(f"--times: at most {T_END_MAX:g} (got {horizon:g})")
        if args.dt is not None and not DT_MIN_FRACTION * horizon <= args.dt <= horizon:
            raise ValueError(f"--dt: must be in [{DT_MIN_FRACTION:g}, 1] times the last time "
                             f"{horizon:g} (got {args.dt:g})")
        start = wallclock.perf_counter()
        ds = compare(config, sizes, times, placement=args.placement, seed=args.seed, dt=args.dt,
                     cfl=args.cfl, log=log.info)
    except FileNotFoundError as err:
        print(f"error: file not found: {err.filename or err}", file=sys.stderr)
        return 2
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_table(ds))
    print(f"total {wallclock.perf_counter() - start:.1f} s")
    if args.output:
        from solvers.io.safe_paths import write_netcdf

        write_netcdf(ds, args.output, option="--output")
        print(f"wrote {args.output}")
    return 0
