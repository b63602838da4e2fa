"""``meanfield sweep-figures``: the command line of :mod:`solvers.plots.sweeps`."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from solvers.cli.options import add_style


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``meanfield sweep-figures`` to the CLI's subparsers (sets ``func=run_command``)."""
    p = subparsers.add_parser("sweep-figures", help="summary figures of one or more sweeps",
                              description="Atoms against beta, atom masses against sqrt(beta) "
                              "(Theorem 3.5); for a sweep over domain.dim (Sd) atoms and the "
                              "largest atom mass against d; sensitivity to the initial state "
                              "(initial.seed).")
    p.add_argument("sweeps", nargs="+", metavar="DIR", help="sweep folders (or summary.nc files)")
    p.add_argument("--label", action="append", metavar="LABEL",
                   help="legend label per sweep, in order (default: the folder names)")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="figure folder (default: first DIR)")
    add_style(p)
    p.set_defaults(func=run_command)
    return p


def run_command(args: argparse.Namespace) -> int:
    """``meanfield sweep-figures``: 0 on success, 2 on a bad folder or argument."""
    from solvers.cli.guard import describe
    from solvers.io.writer_policy import OutputFolder
    from solvers.plots.sweeps import write_figures

    try:
        with contextlib.ExitStack() as stack:  # a new -o folder is removed again on failure
            if args.output:
                stack.enter_context(OutputFolder(args.output))
            paths = write_figures(args.sweeps, args.label, args.output,
                                  style=getattr(args, "style", "paper"))
    except FileNotFoundError as err:
        print(f"error: no sweep summary at {err.args[0] if err.args else err} (run "
              "meanfield sweep first)", file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:
        print(f"error: {describe(err)}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0
