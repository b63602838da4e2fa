"""``meanfield converge``: the command line of :mod:`solvers.studies.converge`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from solvers.cli.options import add_style
from solvers.cli.progress import Counter

log = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``converge`` to the ``meanfield`` subcommands."""
    p = subparsers.add_parser("converge", help="refinement ladders in space and time: errors "
                              "against the finest run and observed orders")
    p.add_argument("config", metavar="CONFIG.toml")
    p.add_argument("--resolutions", help="space ladder refining by a constant factor: S1 cells N, "
                                         "e.g. 64,128,256; S2 the latitudes lmax + 1, e.g. "
                                         "31,63,127 (not 64,128,256)")
    p.add_argument("--dts", help="time ladder at the finest resolution, e.g. 0.02,0.01,0.005")
    p.add_argument("--t", type=float, dest="t_end", help="final time T (default time.t_end)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value (TOML syntax), repeatable")
    p.add_argument("-o", "--output", metavar="OUT_PREFIX",
                   help="writes OUT_PREFIX.nc and OUT_PREFIX.png (default output/converge_<config>)")
    add_style(p)
    p.set_defaults(func=run_command)
    return p


def run_command(args: argparse.Namespace) -> int:
    """``meanfield converge``: run the ladders, print the tables, write the NetCDF and PNG."""
    from solvers.model.config import ConfigError
    from solvers.studies.converge import converge
    from solvers.studies.converge_report import format_table, plot_ladders, to_dataset
    from solvers.plots.style import style_context

    if not Path(args.config).is_file():  # one-line error, as the other commands
        raise ConfigError("config", f"file not found: {args.config}")
    from solvers.io.safe_paths import check_target, write_netcdf, write_via_private

    prefix = Path(args.output or f"output/converge_{Path(args.config).stem}")
    nc, png = prefix.with_name(prefix.name + ".nc"), prefix.with_name(prefix.name + ".png")
    check_target(nc, True, "-o")  # nothing there, or files of ours: refused before the runs
    check_target(png, True, "-o", kind="figure")
    with Counter(0, "runs", enabled=not getattr(args, "quiet", False)) as bar:
        def progress(done: int, total: int, label: str, seconds: float) -> None:
            log.info("converge: [%d/%d] %s done in %.1f s", done, total, label, seconds)
            bar.update(1, total=total, note=label)

        ladders = converge(Path(args.config), args.resolutions or (), args.dts or (),
                           args.t_end, args.set, progress=progress)
    tables = [lad.table() for lad in ladders]
    print("\n\n".join(format_table(lad, data) for lad, data in zip(ladders, tables)))
    write_netcdf(to_dataset(ladders, tables), nc, option="-o")
    with style_context(args.style) as spec:
        figure = plot_ladders(ladders, tables, style=args.style)
        write_via_private(png, lambda tmp: figure.savefig(tmp, dpi=spec["dpi"]), option="-o",
                          kind="figure")
    print(f"wrote {nc} and {png}")
    return 0
