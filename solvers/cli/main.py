"""Command line: ``meanfield run | plot | animate | info`` (S^1 and S^2 runs).

Every user error (bad config key or value, missing file) prints one line ``error: ...`` on
stderr and exits with status 2; Ctrl-C during a run exits with 130 and says how to resume.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from solvers.io.state import grid_arrays, initial_density
from solvers.model.config import (
    ConfigError,
    check_resolution,
    load_config,
    parse_override,
)
from solvers.model.params import RunConfig, flatten

RESUMABLE_SECTIONS = ("time", "output")
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_FAILED = 1


class CliError(Exception):
    """A user error that is not about a config key (printed as ``error: <message>``)."""


# --------------------------------------------------------------------------- progress

class ProgressBar:
    """``progress(t, step, dt, diagnostics)`` callback drawing a tqdm bar on stderr."""

    def __init__(self, t0: float, t_end: float, enabled: bool = True) -> None:
        self.t, self.step = t0, 0
        self.bar = None
        if enabled:
            from tqdm import tqdm

            fmt = "{percentage:3.0f}%|{bar}| t={n:.3f}/{total:g} [{elapsed}<{remaining}{postfix}]"
            self.bar = tqdm(total=t_end, initial=t0, file=sys.stderr, bar_format=fmt,
                            dynamic_ncols=True, leave=True)
        self._extra = ""

    def __call__(self, t: float, step: int, dt: float, diagnostics: Any = None) -> None:
        self.t, self.step = t, step
        if self.bar is None:
            return
        if diagnostics is not None:
            self._extra = f" E={diagnostics.energy:.6g} atoms={diagnostics.n_atoms}"
        self.bar.set_postfix_str(f"steps={step} dt={dt:.2e}{self._extra}", refresh=False)
        self.bar.update(min(t, self.bar.total) - self.bar.n)

    def show_warning(self, message: Warning | str, *args: Any, **kwargs: Any) -> None:
        """``warnings.showwarning`` replacement: one line, not through the bar."""
        text = f"warning: {message}"
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# --------------------------------------------------------------------------- run

def _existing(path: str, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise CliError(f"{what} not found: {path}")
    return p


def _check_resume_overrides(overrides: Sequence[str]) -> None:
    for item in overrides:
        section, key, _ = parse_override(item)
        if section not in RESUMABLE_SECTIONS:
            raise ConfigError(f"{section}.{key}", "cannot change on --resume (only time.* and "
                              "output.* can); for new physics start a run with initial.kind = "
                              "\"archive\"")


def _check_same_physics(config: RunConfig, archived: RunConfig) -> None:
    """A config given with --resume must match the archive except time/output/initial."""
    ours, theirs = flatten(config), flatten(archived)
    for key, value in ours.items():
        if key.split(".")[0] in RESUMABLE_SECTIONS + ("initial", "text"):
            continue
        if value != theirs.get(key):
            raise ConfigError(key, f"differs from the archive ({value} here, {theirs.get(key)} "
                                   "there); a resumed run keeps the archive's physics")


def _resume_state(args: argparse.Namespace) -> tuple[RunConfig, dict[str, Any]]:
    from solvers.io import archive

    path = _existing(args.resume, "archive")
    if args.output:
        raise CliError("--resume appends to its archive: drop -o/--output")
    _check_resume_overrides(args.set)
    overrides = list(args.set) + [f"output.path={_toml_string(str(path))}"]
    try:
        text = archive.read_config_text(path)
        t, step, dt, rho = archive.read_last_state(path)
    except ValueError as err:  # not a run archive, or an empty one
        raise CliError(str(err)) from None
    config = load_config(text, overrides)
    if args.config:
        given = load_config(Path(args.config), overrides)
        _check_same_physics(given, config)
        config = given
    if t >= config.time.t_end:
        raise ConfigError("time.t_end", f"the archive already reached t = {t:g} >= t_end = "
                          f"{config.time.t_end:g}; extend it with --set time.t_end=...")
    shape = grid_arrays(config)[1].shape
    if np.shape(rho) != shape:
        raise CliError(f"{path}: state has shape {np.shape(rho)}, the config's grid "
                       f"{shape} ({config.domain.manifold}, resolution {config.domain.resolution})")
    return config, {"rho": np.asarray(rho, dtype=float), "t0": float(t), "step0": int(step),
                    "dt0": float(dt)}


def _fresh_state(args: argparse.Namespace) -> tuple[RunConfig, dict[str, Any]]:
    overrides = list(args.set)
    if args.output:
        overrides.append(f"output.path={_toml_string(args.output)}")
    config = load_config(Path(args.config), overrides)
    check_resolution(config)
    return config, {"rho": initial_density(config), "t0": 0.0, "step0": 0, "dt0": None}


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _count_snapshots(path: Path) -> str:
    try:
        from solvers.io.archive import open_run

        return str(open_run(path).sizes.get("time", 0))
    except (OSError, ValueError):  # the count is a courtesy: never mask the interrupt
        return "?"


def cmd_run(args: argparse.Namespace) -> int:
    """``meanfield run``: validate, build the initial state, simulate, archive, summarise."""
    if not args.config and not args.resume:
        raise CliError("run needs CONFIG.toml (or --resume RUN.nc)")
    config, state = _resume_state(args) if args.resume else _fresh_state(args)
    from solvers.io.archive import ArchiveWriter
    from solvers.timestepping.simulation import simulate

    path = Path(config.output.path)
    theta, weight, phi = grid_arrays(config)
    mode = {"append": True} if args.resume else {"overwrite": args.overwrite}
    try:
        writer = ArchiveWriter(path, config, theta, weight, phi=phi, **mode)
    except FileExistsError:
        raise ConfigError("output.path", f"{path} exists: pass --overwrite to replace it, "
                          f"--resume {path} to continue it, or -o to write elsewhere") from None
    bar = ProgressBar(state["t0"], config.time.t_end, config.output.progress and not args.no_progress)
    mass0 = float(np.sum(state["rho"] * weight))
    try:
        with writer, warnings.catch_warnings():
            warnings.showwarning = bar.show_warning
            result = simulate(config, state["rho"], t0=state["t0"], step0=state["step0"],
                              dt0=state["dt0"], trackers=[writer.write_snapshot], progress=bar)
    except (KeyboardInterrupt, FloatingPointError, RuntimeError) as err:
        bar.close()
        stop = isinstance(err, KeyboardInterrupt)
        what, hint = ("interrupted", "") if stop else (f"failed ({err})", " --set time.cfl=...")
        print(f"{what} at t={bar.t:.6g}; archive {path} holds {_count_snapshots(path)} "
              f"snapshots; continue with: meanfield run --resume {path}{hint}", file=sys.stderr)
        return EXIT_INTERRUPTED if isinstance(err, KeyboardInterrupt) else EXIT_FAILED
    bar.close()
    print(summary(result, mass0, path))
    return 0


def summary(result: Any, mass0: float, path: Path) -> str:
    """Short end-of-run report: reason, time, steps, wall time, mass error, atoms."""
    final, diag = result.final, result.final.diagnostics
    lines = [(f"finished ({result.reason}) at t = {final.t:.6g} after {final.step} steps "
              f"in {result.wall_time:.1f} s"),
             (f"mass error {abs(diag.mass - mass0) / mass0:.2e} (relative), "
              f"min rho {diag.min_rho:.3e}, max rho {diag.max_rho:.3e}"),
             f"atoms: {diag.n_atoms}"]
    lines += _atom_rows(diag.atom_mass, diag.atom_position)
    lines.append(f"archive: {path}")
    return "\n".join(lines)


def _atom_rows(masses: np.ndarray, positions: np.ndarray) -> list[str]:
    """Table rows: S^1 positions (n,) as angles; S^2 positions (n, 3) as colatitude/longitude."""
    positions = np.asarray(positions, dtype=float)
    if positions.ndim == 2:
        from solvers.io.archive import sphere_atom_columns

        cols = sphere_atom_columns(masses, positions)
        return _sphere_atom_rows(masses, cols["atom_colatitude"], cols["atom_longitude"])
    rows = [f"  {'mass':>10}  {'position (deg)':>14}"] if len(masses) else []
    for m, p in zip(masses, positions):
        if np.isfinite(m):
            rows.append(f"  {m:10.6f}  {np.degrees(p) % 360.0:14.3f}")
    return rows


def _sphere_atom_rows(masses: np.ndarray, colatitude: np.ndarray,
                      longitude: np.ndarray) -> list[str]:
    """Table rows of S^2 atoms: mass, colatitude and longitude in degrees (radians given)."""
    rows = [f"  {'mass':>10}  {'colatitude (deg)':>16}  {'longitude (deg)':>15}"] \
        if len(masses) else []
    for m, c, lon in zip(masses, colatitude, longitude):
        if np.isfinite(m):
            rows.append(f"  {m:10.6f}  {np.degrees(c):16.3f}  {np.degrees(lon) % 360.0:15.3f}")
    return rows


# --------------------------------------------------------------------------- plot, info

def cmd_plot(args: argparse.Namespace) -> int:
    """``meanfield plot``: figure of a run (see :func:`solvers.plots.run.plot_run`)."""
    path = _existing(args.run, "run archive")
    out = args.output or str(path.with_suffix(".png"))
    from solvers.plots.run import plot_run

    try:
        plot_run(path, out)
    except ValueError as err:  # not a run archive, or an empty one
        raise CliError(str(err)) from None
    print(f"wrote {out}")
    return 0


def cmd_animate(args: argparse.Namespace) -> int:
    """``meanfield animate``: one frame per snapshot (see :func:`solvers.plots.run.animate_run`)."""
    path = _existing(args.run, "run archive")
    if args.fps <= 0:
        raise CliError(f"--fps must be a positive integer (got {args.fps})")
    out = Path(args.output) if args.output else path.with_suffix(".gif")
    from solvers.plots.run import animate_run

    try:
        animate_run(path, out, fps=args.fps, view=args.view)
    except ValueError as err:  # bad format, no ffmpeg, not a run archive, an empty one
        raise CliError(str(err)) from None
    print(f"wrote {out}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    """``meanfield info``: parameters, snapshot count, time range, final diagnostics, atoms."""
    from solvers.io.archive import open_run

    path = _existing(args.run, "run archive")
    try:
        ds = open_run(path)
    except (OSError, ValueError) as err:  # not a run archive
        raise CliError(str(err)) from None
    print("\n".join(info_lines(ds, path)))
    return 0


def info_lines(ds: Any, path: Path) -> list[str]:
    """The text of ``meanfield info`` for a run dataset (see :mod:`solvers.io.archive`)."""
    lines = [f"run: {path}"]
    for key in ("version", "created", "manifold", "scheme", "kernel"):
        if key in ds.attrs:
            lines.append(f"  {key}: {ds.attrs[key]}")
    params = {k.replace("__", "."): v for k, v in ds.attrs.items() if "__" in k}
    lines += ["parameters:"] + [f"  {k} = {v}" for k, v in params.items()] if params else []
    if not params and "config_text" in ds.attrs:
        lines += ["config:"] + ["  " + s for s in str(ds.attrs["config_text"]).splitlines()]
    n = int(ds.sizes.get("time", 0))
    lines.append(f"snapshots: {n}")
    if n == 0:
        return lines
    times = ds["time"].values
    lines.append(f"t: {float(times[0]):g} .. {float(times[-1]):g}")
    names = ("mass", "energy", "dissipation", "min_rho", "max_rho", "n_atoms", "max_atom_mass")
    lines.append("final:")
    lines += [f"  {v:14s} {float(ds[v].values[-1]):.10g}" for v in names if v in ds]
    if "atom_mass" in ds and ds["atom_mass"].ndim == 2:
        masses = ds["atom_mass"].values[-1]
        keep = np.isfinite(masses) & (masses > 0)
        if "atom_position" in ds:
            lines.append(f"atoms: {int(keep.sum())}")
            lines += _atom_rows(masses[keep], ds["atom_position"].values[-1][keep])
        elif "atom_colatitude" in ds and "atom_longitude" in ds:
            lines.append(f"atoms: {int(keep.sum())}")
            lines += _sphere_atom_rows(masses[keep], ds["atom_colatitude"].values[-1][keep],
                                       ds["atom_longitude"].values[-1][keep])
    return lines


# --------------------------------------------------------------------------- entry point

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="meanfield", description="Mean-field attention + "
                                     "perceptron dynamics on the circle and the sphere.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a simulation from a TOML config")
    run.add_argument("config", nargs="?", help="CONFIG.toml (optional with --resume)")
    run.add_argument("-o", "--output", help="archive path (overrides output.path)")
    run.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                     help="override a config value (TOML syntax), repeatable")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--overwrite", action="store_true", help="replace an existing archive")
    run.add_argument("--resume", metavar="RUN.nc", help="continue the run stored in RUN.nc")
    run.set_defaults(func=cmd_run)
    plot = sub.add_parser("plot", help="plot a run archive")
    plot.add_argument("run", metavar="RUN.nc")
    plot.add_argument("-o", "--output", metavar="OUT.png", help="figure path (default RUN.png)")
    plot.set_defaults(func=cmd_plot)
    anim = sub.add_parser("animate", help="animate a run archive (GIF; MP4 with ffmpeg)")
    anim.add_argument("run", metavar="RUN.nc")
    anim.add_argument("-o", "--output", metavar="OUT.gif|OUT.mp4",
                      help="animation path (default RUN.gif; .mp4 needs ffmpeg)")
    anim.add_argument("--fps", type=int, default=10, help="frames per second (default 10)")
    anim.add_argument("--view", choices=("orthographic", "mollweide"), default="orthographic",
                      help="S2 runs: two opposite orthographic hemispheres (default) or a "
                           "Mollweide map")
    anim.set_defaults(func=cmd_animate)
    info = sub.add_parser("info", help="summarise a run archive")
    info.add_argument("run", metavar="RUN.nc")
    info.set_defaults(func=cmd_info)
    _add_companion_commands(sub)
    return parser


def _add_companion_commands(sub: Any) -> None:
    """Commands that live in their own modules (each provides ``add_parser``)."""
    from solvers.cli import compare_particles, converge, example, lemma51, polish, sweep, sweep_figures

    for module in (lemma51, converge, compare_particles, sweep, sweep_figures, example, polish):
        module.add_parser(sub)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``meanfield`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, CliError) as err:
        print(f"error: {err}", file=sys.stderr)
    except FileNotFoundError as err:
        print(f"error: file not found: {err.filename or err}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
