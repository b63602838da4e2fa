"""``meanfield polish``: exact stationary atoms of a run's last snapshot (Newton)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from solvers.cli.options import MERGE_TOL


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``meanfield polish`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "polish", help="exact stationary atoms of a run's last snapshot (Newton on grad U = 0)",
        description="The last snapshot's atoms become Dirac masses (basin masses fixed); their "
                    "positions solve grad U(x_i) = 0 by Newton's method; the stability of the "
                    "result is reported. Writes RUN.polished.nc (or -o).")
    p.add_argument("run", metavar="RUN.nc")
    p.add_argument("-o", "--output", metavar="OUT.nc", help="default RUN.polished.nc")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output (only a file meanfield wrote)")
    p.add_argument("--merge-tol", type=float, default=MERGE_TOL,
                   help=f"merge a diffuse remainder up to this mass into the atoms (default {MERGE_TOL:g}); "
                        "a larger one stays as fixed sources")
    p.add_argument("--tol", type=float, default=1e-13, help="Newton tolerance on max |grad U| (1e-13)")
    p.set_defaults(func=run_command)
    return p


def polish_to(run: str | Path, output: str | Path | None = None, merge_tol: float = MERGE_TOL,
              tol: float = 1e-13, overwrite: bool = True) -> tuple[Any, Path]:
    """:func:`solvers.studies.polish_points.polish_run` (S^1, S^2 and Sd archives) through
    the writer policy: the target
    (default ``RUN.polished.nc``) must be free or, with ``overwrite``, a file of ours
    (:func:`solvers.io.writer_policy.claim_file`, checked before Newton); the file is built in
    a private folder beside it and renamed into place. ``meanfield polish`` passes its
    ``--overwrite``; ``run --polish`` replaces its own polished file. Returns
    ``(result, target)``."""
    from solvers.io.safe_paths import write_via_private
    from solvers.io.writer_policy import claim_file
    from solvers.studies.polish_points import polish_run

    run = Path(run)
    if output is not None and not str(output):
        raise ValueError("-o/--output: empty path; give a file name, e.g. -o RUN.polished.nc")
    target = Path(output) if output is not None else run.with_name(run.stem + ".polished.nc")
    if target.resolve() == run.resolve():
        raise ValueError("-o: would overwrite the input archive; choose another path")
    claim_file(target, overwrite, what="polished archive")
    found: list[Any] = []
    write_via_private(target, lambda tmp: found.append(polish_run(run, tmp, merge_tol, tol)[0]),
                      overwrite=overwrite, option="--overwrite")
    return found[0], target


def run_command(args: argparse.Namespace) -> int:
    """Polish, print the report, write the archive; 1 when Newton did not converge."""
    if not (args.merge_tol >= 0.0) or not (0.0 < args.tol < 1.0):
        raise ValueError("--merge-tol must be >= 0 and --tol in (0, 1)")
    from solvers.studies.polish_points import report_text

    result, out = polish_to(args.run, args.output, args.merge_tol, args.tol,
                            overwrite=args.overwrite)
    print(report_text(result))
    print(f"wrote {out}")
    return 0 if result.converged else 1
