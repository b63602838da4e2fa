"""``meanfield lemma51``: the command line of :mod:`solvers.studies.lemma51`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solvers.studies.lemma51 import Measure

from solvers.cli.options import add_style

# =========================================================================== command line

def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``meanfield lemma51`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "lemma51", help="check Lemma 5.1: invert f = K*mu degree by degree, with its round-off limit",
        description="Recover the coefficients of a measure mu from f = K*mu (paper Lemma 5.1) on "
                    "S^1 or S^2, compare with the exact ones, and show the round-off floor "
                    "eps max|f| / lambda_l (docs/math.md §4). Writes OUT.nc, OUT.png and a table.")
    p.add_argument("--measure", default="vmf", metavar="{vmf,atoms,symmetric,uniform}",
                   help="built-in test measure (default vmf)")
    p.add_argument("--archive", metavar="RUN.nc",
                   help="use a snapshot of a run archive (S^1 or S^2; .nc or .zarr)")
    p.add_argument("--time", type=float, help="snapshot time (nearest record; default: last)")
    p.add_argument("--sphere", default=None, metavar="{S1,S2}",
                   help="default S1; with --archive: the archive's")
    p.add_argument("--dim", type=int, default=None, metavar="D",
                   help="S^{D-1}: 2 and 3 are --sphere S1 and S2; D >= 4 checks the degree norms in "
                        "the Gegenbauer (zonal) basis (--measure atoms or vmf; no archive, PNG or "
                        "precision study; --n: quadrature nodes)")
    p.add_argument("--beta", type=float, nargs="+", default=[5.0, 20.0, 50.0],
                   help="one or more inverse temperatures (default 5 20 50)")
    p.add_argument("--kappa", type=float, default=3.0, help="vMF concentration (default 3)")
    p.add_argument("--atoms", type=int, default=5, help="atoms, or pairs for symmetric (5)")
    p.add_argument("--seed", type=int, default=0, help="atom positions and weights (0)")
    p.add_argument("--lmax", type=int, help="largest degree (default: past the breakdown)")
    p.add_argument("--n", type=int, help="grid: points on S^1, Gauss latitudes on S^2")
    p.add_argument("--digits", type=int, nargs="*", default=None,
                   help="S^1 precision study at these decimal digits (default 32 64); "
                        "--digits with no value skips it")
    p.add_argument("--perturbation", type=float, default=1e-3, help="injectivity test (1e-3)")
    p.add_argument("-o", "--output", metavar="OUT.nc", help="default lemma51_<measure>_<sphere>.nc")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--table", default="short", metavar="{short,full,none}",
                   help="per-degree rows on stdout (default short: up to l* + 3)")
    add_style(p)
    p.set_defaults(func=run_command)
    return p


LMAX_MAX = 2048  # degrees: the multi-precision study costs O(lmax^2) terms per beta
GRID_MAX = 1 << 16  # --n: points on S^1, Gauss latitudes on S^2
ATOMS_MAX = 10_000
DIGITS_RANGE = (16, 1000)


def _check_ranges(args: argparse.Namespace) -> None:
    """ValueError (one line, naming the option) for values outside what the study can do."""
    from solvers.model.config import BETA_RANGE, KAPPA_MAX

    lo, hi = BETA_RANGE
    for beta in args.beta:
        if not lo <= beta <= hi:
            raise ValueError(f"--beta: must be in [{lo:g}, {hi:g}] (got {beta:g})")
    if not 0 <= args.kappa <= KAPPA_MAX:
        raise ValueError(f"--kappa: must be in [0, {KAPPA_MAX:g}] (got {args.kappa:g})")
    if not 0 < args.perturbation < 1:
        raise ValueError(f"--perturbation: must be in (0, 1) (got {args.perturbation:g})")
    for name, value, top in (("--lmax", args.lmax, LMAX_MAX), ("--n", args.n, GRID_MAX),
                             ("--atoms", args.atoms, ATOMS_MAX)):
        if value is not None and not 1 <= value <= top:
            raise ValueError(f"{name}: must be in [1, {top}] (got {value})")
    if any(not DIGITS_RANGE[0] <= d <= DIGITS_RANGE[1] for d in args.digits or ()):
        raise ValueError(f"--digits: each must be in [{DIGITS_RANGE[0]}, {DIGITS_RANGE[1]}] "
                         f"(got {args.digits})")
    if not 0 <= args.seed < 2**32:
        raise ValueError(f"--seed: must be in [0, 2**32) (got {args.seed})")


def _measure_from_args(args: argparse.Namespace) -> Measure:
    from solvers.circle.manifold import CIRCLE
    from solvers.studies.lemma51 import as_manifold, make_measure, snapshot_measure

    manifold = as_manifold(args.sphere) if args.sphere else CIRCLE  # --sphere: default S1
    if args.archive:  # the archive's own manifold; --sphere, if given, must name it
        measure = snapshot_measure(args.archive, args.time)
        if args.sphere and measure.manifold is not manifold:
            raise ValueError(f"--sphere: {args.archive} holds an {measure.sphere} run (got "
                             f"{manifold.name}); leave --sphere out with --archive")
        return measure
    if args.time is not None:
        raise ValueError("--time: only with --archive RUN.nc")
    return make_measure(args.measure, manifold, args.kappa, args.atoms, args.seed)


def _output_path(args: argparse.Namespace, measure: Measure) -> Path:
    out = Path(args.output or f"lemma51_{measure.kind}_{measure.sphere}.nc")
    if out.suffix != ".nc":
        raise ValueError(f"--output: must end in .nc (got {out}); the PNG takes the same stem")
    if args.archive and out.resolve() == Path(args.archive).resolve():
        raise ValueError("--output: would overwrite the input archive; choose another path")
    from solvers.io.safe_paths import check_target

    check_target(out, True, "--output")  # nothing there, or a file of ours: before computing
    if not args.no_plot:
        check_target(out.with_suffix(".png"), True, "--output", kind="figure")
    return out


def run_command(args: argparse.Namespace) -> int:
    """``meanfield lemma51``: compute, print the table, write OUT.nc and OUT.png.

    User errors print one line ``error: ...`` on stderr and return 2.
    """
    from solvers.studies.lemma51 import format_report, run_lemma51

    try:
        if args.table not in ("short", "full", "none"):
            raise ValueError(f"--table: must be short, full or none (got {args.table!r})")
        _check_ranges(args)
        if args.dim is not None and args.dim >= 4:
            return _run_gegenbauer(args)
        if args.dim is not None:
            _sphere_from_dim(args)
        measure = _measure_from_args(args)
        out = _output_path(args, measure)
        digits = args.digits if args.digits is not None else (
            (32, 64) if measure.manifold.precision_study else ())
        ds = run_lemma51(measure, args.beta, digits, args.lmax, args.n, args.perturbation)
    except FileNotFoundError as err:
        print(f"error: file not found: {err.filename or err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_report(ds, args.table))
    from solvers.io.safe_paths import write_netcdf, write_via_private

    write_netcdf(ds, out, option="--output")
    print(f"wrote {out}")
    if not args.no_plot:
        from solvers.plots.lemma51 import plot_lemma51

        style = getattr(args, "style", "paper")
        png = write_via_private(out.with_suffix(".png"),
                                lambda tmp: plot_lemma51(ds, tmp, style=style),
                                option="--output", kind="figure")
        print(f"wrote {png}")
    return 0


def _sphere_from_dim(args: argparse.Namespace) -> None:
    """``--dim 2`` and ``--dim 3``: ``--sphere S1`` and ``S2`` (today's check)."""
    sphere = {2: "S1", 3: "S2"}.get(args.dim)
    if sphere is None:
        raise ValueError(f"--dim: must be >= 2 (got {args.dim})")
    if args.sphere and args.sphere != sphere:
        raise ValueError(f"--dim {args.dim} is {sphere}: leave --sphere out (got {args.sphere})")
    args.sphere = sphere


def _run_gegenbauer(args: argparse.Namespace) -> int:
    """``--dim D >= 4``: :mod:`solvers.studies.lemma51_gegenbauer`; writes OUT.nc, prints the
    table."""
    from solvers.io.safe_paths import check_target, write_netcdf
    from solvers.model.limits import MAX_DIM
    from solvers.studies.lemma51_gegenbauer import format_gegenbauer_report, gegenbauer_dataset

    if args.archive or args.sphere or args.time is not None:
        raise ValueError("--dim D >= 4: a built-in measure only (no --archive, --time, --sphere)")
    if args.dim > MAX_DIM:
        raise ValueError(f"--dim: must be <= {MAX_DIM} (got {args.dim})")
    out = Path(args.output or f"lemma51_{args.measure}_S{args.dim - 1}.nc")
    if out.suffix != ".nc":
        raise ValueError(f"--output: must end in .nc (got {out})")
    check_target(out, True, "--output")
    ds = gegenbauer_dataset(args.measure, args.dim, args.beta, args.lmax, args.n, args.atoms,
                            args.seed, args.kappa)
    print(format_gegenbauer_report(ds, args.table))
    write_netcdf(ds, out, option="--output")
    print(f"wrote {out} (no PNG and no precision study in the Gegenbauer check)")
    return 0
