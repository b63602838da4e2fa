"""``meanfield continue``: branches of noisy stationary states in one parameter (docs/noise.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from solvers.cli.options import add_style

MAX_POINTS_LIMIT = 100_000
MAX_BRANCHES_LIMIT = 1000


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``meanfield continue`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "continue", help="continue noisy stationary states in a parameter (folds, branch points, "
                         "stability)",
        description="Pseudo-arclength continuation of the stationary states rho = M exp(s U/nu)/Z "
                    "of the noisy dynamics (model.noise = nu > 0) in one parameter, from the "
                    "config's value to --to: Newton on the density's low modes, stability from "
                    "the linearised PDE, folds and branch points located and the new branches "
                    "followed both ways. Writes OUT.nc (and --figure).")
    p.add_argument("config", metavar="CONFIG.toml")
    p.add_argument("--param", required=True, metavar="SECTION.KEY",
                   help="model.noise, model.beta, initial.mass or perceptron.scale (a factor on "
                        "perceptron.omega, 1 in the config)")
    p.add_argument("--to", required=True, type=float, metavar="VALUE", help="the other end")
    p.add_argument("--at", type=float, nargs="+", default=[], metavar="V",
                   help="parameter values where every branch gets a point")
    p.add_argument("-o", "--output", metavar="OUT.nc", help="default CONFIG.continuation.nc")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing OUT.nc (only a file meanfield wrote)")
    p.add_argument("--figure", metavar="OUT.png", help="also draw the bifurcation diagram")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value (TOML syntax), repeatable")
    p.add_argument("--depth", type=int, default=1,
                   help="generations of branch switching (0: the first branch only; default 1)")
    p.add_argument("--max-points", type=int, default=400, help="points per branch (400)")
    p.add_argument("--max-branches", type=int, default=12, help="branches in all (12)")
    p.add_argument("--ds", type=float, default=0.02, help="first arclength step (0.02)")
    p.add_argument("--ds-max", type=float, default=0.1, help="largest arclength step (0.1)")
    p.add_argument("--degree", type=int, help="largest degree of the unknowns (default: the "
                                              "kernel's bandwidth, capped by the grid)")
    p.add_argument("--no-stability", action="store_true", help="skip the eigenvalues")
    add_style(p)
    p.set_defaults(func=run_command)
    return p


def _check(args: argparse.Namespace) -> None:
    """ValueError naming the option for values the continuation cannot use."""
    for name, value, top in (("--max-points", args.max_points, MAX_POINTS_LIMIT),
                             ("--max-branches", args.max_branches, MAX_BRANCHES_LIMIT)):
        if not 1 <= value <= top:
            raise ValueError(f"{name}: must be in [1, {top}] (got {value})")
    if args.depth < 0:
        raise ValueError(f"--depth: must be >= 0 (got {args.depth})")
    if not 0 < args.ds <= args.ds_max:
        raise ValueError(f"--ds, --ds-max: need 0 < ds <= ds-max (got {args.ds:g}, {args.ds_max:g})")
    if args.degree is not None and args.degree < 1:
        raise ValueError(f"--degree: must be >= 1 (got {args.degree})")


def format_report(ds: Any) -> str:
    """Special points and branches, one line each."""
    from solvers.io.attributes import stability_computed

    known = stability_computed(ds)
    lines = [f"{ds.attrs['parameter_name']}: {ds.sizes['point']} points on "
             f"{ds.sizes['branch_index']} branches"]
    for i in range(ds.sizes["special"]):
        lines.append(f"  {str(ds.special_kind.values[i]):13s} {ds.attrs['parameter_name']} = "
                     f"{float(ds.special_parameter.values[i]):.12g}  (branch "
                     f"{int(ds.special_branch.values[i])})")
    for b in range(ds.sizes["branch_index"]):
        sel = ds.branch.values == b
        stable = f"{int(ds.stable.values[sel].sum())} stable" if known else \
            "stability not computed (--no-stability)"
        lines.append(f"  branch {b}: {int(sel.sum())} points, {stable}; "
                     f"{ds.branch_stop.values[b]}")
    return "\n".join(lines)


def run_command(args: argparse.Namespace) -> int:
    """Continue, print the report, write OUT.nc (and the figure)."""
    from solvers.io.writer_policy import claim_file
    from solvers.model.config import load_config
    from solvers.studies.continuation import Steps
    from solvers.studies.continuation_archive import to_dataset, write
    from solvers.studies.continuation_run import continue_states

    _check(args)
    config_path = Path(args.config)
    out = Path(args.output or config_path.with_suffix(".continuation.nc").name)
    if out.suffix != ".nc":
        raise ValueError(f"-o/--output: must end in .nc (got {out})")
    claim_file(out, args.overwrite, what="continuation archive")  # before computing
    if args.figure:
        from solvers.plots.save import check_figure_target

        check_figure_target(args.figure, "--figure")
    config = load_config(config_path, args.set)
    steps = Steps(ds=args.ds, ds_max=args.ds_max)
    result = continue_states(config, args.param, args.to, tuple(args.at), steps=steps,
                             max_points=args.max_points, max_branches=args.max_branches,
                             depth=args.depth, degree=args.degree)
    ds = to_dataset(result, with_stability=not args.no_stability)
    print(format_report(ds))
    write(ds, out, overwrite=args.overwrite)
    print(f"wrote {out}")
    if args.figure:
        from solvers.plots.bifurcation import plot_bifurcation

        plot_bifurcation(ds, args.figure, style=args.style, option="--figure")
        print(f"wrote {args.figure}")
    return 0
