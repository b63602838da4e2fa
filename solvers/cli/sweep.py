"""``meanfield sweep``: the command line of :mod:`solvers.studies.sweep`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from solvers.studies.resolution import (
    DEFAULT_MASS_TOL,
    MAX_REFINEMENTS,
    MAX_RESOLUTION,
    ResolutionCheck,
)
from solvers.studies.sweep import (
    DEFAULT_PERTURBATION,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ConfigError,
    SweepError,
    parse_param,
    run_sweep,
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``meanfield sweep`` to the CLI's subparsers (sets ``func=run_command``)."""
    p = subparsers.add_parser("sweep", help="run a parameter sweep in parallel (dask)",
                              description="Run the cartesian product of --param values, one "
                              "archive per run, and write DIR/summary.nc.")
    p.add_argument("config", metavar="CONFIG.toml")
    p.add_argument("--param", action="append", default=[], metavar="SECTION.KEY=V1,V2,...",
                   help="values to sweep (repeatable: the cartesian product); initial.seed=0..9 "
                        "perturbs a uniform start")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output folder (default output/sweeps/<config name>)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value for every run (TOML syntax), repeatable")
    p.add_argument("--scheduler", metavar="ADDRESS", help="use a running dask scheduler")
    p.add_argument("--workers", type=int, help="LocalCluster processes (default: number of cores)")
    p.add_argument("--auto-resolution", action="store_true",
                   help="raise domain.resolution to the smallest accepted for each beta, then "
                        "run at N and 2N (refining while they disagree) until two grids agree")
    p.add_argument("--mass-tol", type=float, default=DEFAULT_MASS_TOL, metavar="TOL",
                   help="--auto-resolution: largest accepted difference of the sorted atom "
                        f"masses of two grids (default {DEFAULT_MASS_TOL})")
    p.add_argument("--max-refinements", type=int, default=MAX_REFINEMENTS, metavar="K",
                   help=f"--auto-resolution: at most K doublings of N (default {MAX_REFINEMENTS}"
                        f"; never above {MAX_RESOLUTION['S1']} cells, lmax {MAX_RESOLUTION['S2']})")
    p.add_argument("--perturbation", type=float, default=DEFAULT_PERTURBATION, metavar="EPS",
                   help=f"initial.seed: mass in the random bumps (default {DEFAULT_PERTURBATION})")
    p.set_defaults(func=run_command)
    return p


def run_command(args: argparse.Namespace) -> int:
    """``meanfield sweep``: 0 if every run finished, 1 if some failed, 2 on bad arguments."""
    try:
        if not args.param:
            raise SweepError("sweep needs at least one --param section.key=v1,v2,...")
        if args.workers is not None and args.workers < 1:
            raise SweepError(f"--workers must be >= 1 (got {args.workers})")
        if not Path(args.config).is_file():
            raise SweepError(f"config not found: {args.config}")
        params = [parse_param(item) for item in args.param]
        try:
            check = ResolutionCheck(args.mass_tol, args.max_refinements)
        except ValueError as err:
            raise SweepError(str(err)) from None
        outdir = Path(args.output or Path("output/sweeps") / Path(args.config).stem)
        summary = run_sweep(args.config, params, outdir, overrides=args.set,
                            scheduler=args.scheduler, workers=args.workers,
                            auto_resolution=args.auto_resolution, eps=args.perturbation,
                            check=check,
                            echo=lambda line: print(line, flush=True))
    except (SweepError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept; re-run the same command to go on",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    failed = int((summary["reason"] == "failed").sum())
    print(f"{summary['reason'].size - failed} of {summary['reason'].size} runs finished; "
          f"summary: {outdir / 'summary.nc'}")
    return EXIT_FAILED if failed else 0
