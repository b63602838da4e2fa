"""``meanfield sweep``: the command line of :mod:`solvers.studies.sweep`."""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from solvers.cli.options import (
    DEFAULT_MASS_TOL,
    DEFAULT_PERTURBATION,
    MAX_REFINEMENTS,
    MAX_CHECK_CELLS,
    MAX_CHECK_LMAX,
    MAX_SWEEP_RUNS,
)
from solvers.cli.progress import Counter

PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] ")  # the lines of run_sweep's echo: [done/total] name: ...
SEED_KEY = "initial.seed"  # solvers.studies.sweep.SEED_KEY


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``meanfield sweep`` to the CLI's subparsers (sets ``func=run_command``)."""
    p = subparsers.add_parser("sweep", help="run a parameter sweep in parallel (dask)",
                              description="Run the cartesian product of --param values, one "
                              "archive per run, and write DIR/summary.nc. At most "
                              f"{MAX_SWEEP_RUNS:,} runs in one sweep (the product is counted "
                              "first; a larger one is refused with its count, exit 2).")
    p.add_argument("config", metavar="CONFIG.toml")
    p.add_argument("--param", action="append", default=[], metavar="SECTION.KEY=V1,V2,...",
                   help="values to sweep (repeatable: the cartesian product, at most "
                        f"{MAX_SWEEP_RUNS:,} runs); a..b is an integer range; initial.seed=0..9 "
                        "perturbs a uniform start")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output folder (default output/sweeps/<config name>)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value for every run (TOML syntax), repeatable")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="use a running dask scheduler, [tcp://|tls://]host:port")
    p.add_argument("--dashboard", action="store_true",
                   help="serve the dask dashboard of the local cluster on 127.0.0.1:8787")
    p.add_argument("--workers", type=int,
                   help="LocalCluster processes (default: number of cores; at most 4 per core, "
                        "never more than runs to do)")
    p.add_argument("--overwrite", action="store_true",
                   help="run into a folder that holds a different sweep, replacing its files "
                        "(only files meanfield wrote); the same sweep resumes without it")
    p.add_argument("--auto-resolution", action="store_true",
                   help="raise domain.resolution to the smallest accepted for each beta, then "
                        "run at N and 2N (refining while they disagree) until two grids agree")
    p.add_argument("--mass-tol", type=float, default=DEFAULT_MASS_TOL, metavar="TOL",
                   help="--auto-resolution: largest accepted difference of the sorted atom "
                        f"masses of two grids (default {DEFAULT_MASS_TOL})")
    p.add_argument("--max-refinements", type=int, default=MAX_REFINEMENTS, metavar="K",
                   help=f"--auto-resolution: at most K doublings of N (default {MAX_REFINEMENTS}"
                        f"; never above {MAX_CHECK_CELLS} cells, lmax {MAX_CHECK_LMAX})")
    p.add_argument("--perturbation", type=float, default=DEFAULT_PERTURBATION, metavar="EPS",
                   help=f"initial.seed: mass in the random bumps (default {DEFAULT_PERTURBATION})")
    p.set_defaults(func=run_command)
    return p


def _check_values(config: Path, params: Sequence[Any], overrides: Sequence[str]) -> None:
    """A swept value that is invalid by itself is a usage error, found before any run starts;
    errors of combinations (or about other keys) stay failed runs of the sweep."""
    from solvers.model.config import ConfigError, config_from_text
    from solvers.studies.sweep import SweepError

    text = config.read_text(encoding="utf-8")
    for param in params:
        if param.key == SEED_KEY:
            continue
        for raw in param.raw:
            try:
                config_from_text(text, [*overrides, f"{param.key}={raw}"])  # never a file name
            except ConfigError as err:
                if err.key.split("[")[0] == param.key:  # the value itself, not a combination
                    raise SweepError(f"--param {param.key}={raw}: {err}") from None


def _dask_logging(verbosity: int) -> Any:
    """dask.distributed logs at ``info`` by default (scheduler, nanny and worker start-up): keep
    its warnings (errors with ``-q``, everything with ``-v``). Set before distributed is imported
    (it reads the level then) and handed on to the workers with the rest of dask's config."""
    import dask.config

    level = {-1: "error", 0: "warning", 1: "info"}[max(-1, min(1, verbosity))]
    if "distributed" in sys.modules:  # imported earlier in this process: its level is set
        logging.getLogger("distributed").setLevel(level.upper())
    return dask.config.set({"logging": {**dask.config.get("logging", {}), "distributed": level,
                                        "distributed.client": level}})


def _echo(bar: Counter, line: str) -> None:
    """A line of the sweep on stdout; its ``[done/total]`` prefix moves the bar."""
    bar.write(line)
    match = PROGRESS.match(line)
    if match:
        bar.update(int(match[1]) - bar.done, total=int(match[2]))


def run_command(args: argparse.Namespace) -> int:
    """``meanfield sweep``: 0 if every run finished, 1 if some failed, 2 on bad arguments."""
    from solvers.core.backend import keep_freed_memory
    from solvers.studies.cluster import SchedulerAddressError, check_scheduler, dask_client
    from solvers.studies.resolution import ResolutionCheck
    from solvers.studies.sweep import (
        EXIT_FAILED,
        EXIT_INTERRUPTED,
        EXIT_USAGE,
        ConfigError,
        SweepError,
        check_run_count,
        check_workers,
        parse_param,
        run_sweep,
    )

    try:
        if not args.param:
            raise SweepError("sweep needs at least one --param section.key=v1,v2,...")
        check_workers(args.workers)  # a huge count would start that many processes
        if not Path(args.config).is_file():
            raise SweepError(f"config not found: {args.config}")
        check_run_count(args.param)  # counted before any value is expanded
        scheduler = check_scheduler(args.scheduler) if args.scheduler else None
        params = [parse_param(item) for item in args.param]
        try:
            check = ResolutionCheck(args.mass_tol, args.max_refinements)
        except ValueError as err:
            raise SweepError(str(err)) from None
        _check_values(Path(args.config), params, args.set)
        outdir = Path(args.output or Path("output/sweeps") / Path(args.config).stem)
        if outdir.exists() and not outdir.is_dir():
            raise SweepError(f"-o {outdir}: is a file; give a folder")
        with contextlib.ExitStack() as stack:
            stack.enter_context(_dask_logging(getattr(args, "verbosity", 0)))
            client = stack.enter_context(dask_client(workers=args.workers, dashboard=True)) \
                if args.dashboard and not scheduler else None
            bar = stack.enter_context(Counter(0, "runs",
                                              enabled=not getattr(args, "quiet", False)))
            summary = run_sweep(args.config, params, outdir, overrides=args.set,
                                scheduler=scheduler, workers=args.workers, client=client,
                                auto_resolution=args.auto_resolution, eps=args.perturbation,
                                check=check, echo=lambda line: _echo(bar, line),
                                worker_setup=keep_freed_memory,
                                overwrite=getattr(args, "overwrite", False))
    except (SweepError, ConfigError, SchedulerAddressError) as err:
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
