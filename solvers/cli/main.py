"""Command line: ``meanfield run | plot | animate | info`` and the study commands.

Every error prints one line ``error: ...`` on stderr (:mod:`solvers.cli.guard`): status 2 for
input errors (bad config key or value, missing file), 1 for failures at run time. Ctrl-C
(SIGTERM) during a run writes the last completed state, closes the archive and exits with
130 (143), saying how to resume; a second Ctrl-C exits at once.

Start-up is kept short: this module and the parsers of every command import only the
standard library; a command imports what it needs (NumPy, xarray, matplotlib, dask) when it
runs. ``-q`` leaves errors only on stderr, ``-v`` adds debug lines and tracebacks
(:mod:`solvers.cli.logs`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any

from solvers.cli.guard import EXIT_USAGE, OneLineParser, run_guarded
from solvers.cli.logs import NORMAL, QUIET, VERBOSE, configure, one_line_warnings
from solvers.cli.options import add_dry_run, add_style
COMPANIONS = ("lemma51", "converge", "compare_particles", "sweep", "sweep_figures", "example",
              "polish", "continuation")
_LAZY = {"summary": "solvers.cli.run", "cmd_run": "solvers.cli.run",
         "info_lines": "solvers.cli.view", "cmd_plot": "solvers.cli.view",
         "cmd_animate": "solvers.cli.view", "cmd_info": "solvers.cli.view",
         "ProgressBar": "solvers.cli.progress"}


def __getattr__(name: str) -> Any:
    """The command functions, imported on first use (``solvers.cli.main.summary`` etc.)."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A command function that imports ``module`` only when the command runs."""
    def command(args: argparse.Namespace) -> int:
        return getattr(import_module(module), name)(args)

    command.__name__ = command.__qualname__ = name
    return command


class VersionAction(argparse.Action):
    """``--version``: print ``meanfield <version>`` and exit (no NumPy imported)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        import solvers

        sys.stdout.write(f"meanfield {solvers.__version__}\n")
        parser.exit()


def _add_verbosity(parser: argparse.ArgumentParser, top: bool) -> None:
    """``-q`` / ``-v``, before or after the command (``meanfield -q run ...`` or ``run ... -q``)."""
    default = NORMAL if top else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=QUIET,
                       default=default, help="errors only on stderr (no progress, no warnings)")
    group.add_argument("-v", "--verbose", "--debug", dest="verbosity", action="store_const",
                       const=VERBOSE, default=default,
                       help="debug lines and tracebacks on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="meanfield", description="Mean-field attention + "
                           "perceptron dynamics on the circle and the sphere.")
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    _add_verbosity(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a simulation from a TOML config")
    run.add_argument("config", nargs="?", help="CONFIG.toml (optional with --resume)")
    run.add_argument("-o", "--output", help="archive path (overrides output.path)")
    run.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                     help="override a config value (TOML syntax), repeatable")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--no-check", action="store_true",
                     help="skip the verdict's resolution check (the same run at half the "
                          "resolution, about a third of the run's cost; at twice it where half "
                          "is too coarse): a run with atoms is then not trusted")
    run.add_argument("--overwrite", action="store_true",
                     help="replace an existing archive (only one that meanfield wrote: never "
                          "a link, a device, or another file or folder)")
    run.add_argument("--resume", metavar="RUN.nc", help="continue the run stored in RUN.nc")
    run.add_argument("--force", action="store_true",
                     help="run even when the estimated cost exceeds the budget (1 hour; "
                          "docs/cli.md, Run cost)")
    add_dry_run(run)
    run.add_argument("--polish", action="store_true",
                     help="at the end, polish the last snapshot's atoms (as `meanfield polish`: "
                          "writes RUN.polished.nc)")
    run.set_defaults(func=lazy("solvers.cli.run", "cmd_run"))
    plot = sub.add_parser("plot", help="plot a run archive")
    plot.add_argument("run", metavar="RUN.nc")
    plot.add_argument("-o", "--output", metavar="OUT.png", help="figure path (default RUN.png)")
    add_style(plot)
    plot.set_defaults(func=lazy("solvers.cli.view", "cmd_plot"))
    anim = sub.add_parser("animate", help="animate a run archive (GIF; MP4 with ffmpeg)")
    anim.add_argument("run", metavar="RUN.nc")
    anim.add_argument("-o", "--output", metavar="OUT.gif|OUT.mp4",
                      help="animation path (default RUN.gif; .mp4 needs ffmpeg)")
    anim.add_argument("--fps", type=int, default=10, help="frames per second (default 10)")
    anim.add_argument("--view", choices=("orthographic", "mollweide"), default="orthographic",
                      help="S2 runs: two opposite orthographic hemispheres (default) or a "
                           "Mollweide map")
    anim.set_defaults(func=lazy("solvers.cli.view", "cmd_animate"))
    info = sub.add_parser("info", help="summarise a run archive")
    info.add_argument("run", metavar="RUN.nc")
    info.set_defaults(func=lazy("solvers.cli.view", "cmd_info"))
    for name in COMPANIONS:  # light modules: their study modules load in run_command
        import_module(f"solvers.cli.{name}").add_parser(sub)
    for command in sub.choices.values():
        _add_verbosity(command, top=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``meanfield`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    args.quiet, args.debug = args.verbosity == QUIET, args.verbosity == VERBOSE
    configure(args.verbosity)
    output = getattr(args, "output", None)
    if isinstance(output, str) and not output.strip():  # not the default path: an error
        print(f"error: -o/--output: empty path {output!r}; give a file name, or leave -o out "
              "for the default", file=sys.stderr)
        return EXIT_USAGE
    with one_line_warnings():
        return run_guarded(args.func, args, debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
