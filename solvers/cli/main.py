"""Command line: ``meanfield run | plot | animate | info`` (S^1 and S^2 runs).

Every error prints one line ``error: ...`` on stderr (:mod:`solvers.cli.guard`): status 2 for
input errors (bad config key or value, missing file), 1 for failures at run time. Ctrl-C
(SIGTERM) during a run writes the last completed state, closes the archive and exits with
130 (143), saying how to resume; a second Ctrl-C exits at once.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from solvers.cli.guard import (  # noqa: F401  (EXIT_* re-exported)
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    OneLineParser,
    StopRequest,
    run_guarded,
)
from solvers.cli.progress import LowestDensity, ProgressBar
from solvers.io.state import grid_arrays, initial_density
from solvers.model.config import (
    ConfigError,
    check_run,
    clip,
    load_config,
    parse_override,
)
from solvers.model.params import RunConfig, flatten

RESUMABLE_SECTIONS = ("time", "output")
FIXED_ON_RESUME = ("time.scheme",)  # the archived state is in this scheme's representation


# --------------------------------------------------------------------------- run

def _existing(path: str, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise CliError(f"{what} not found: {path}")
    return p


def _check_resume_overrides(overrides: Sequence[str]) -> None:
    for item in overrides:
        section, key, _ = parse_override(item)
        if f"{section}.{key}" in FIXED_ON_RESUME:
            raise ConfigError(f"{section}.{key}", "cannot change on --resume (the archived "
                              "state belongs to its scheme); start a new run with initial.kind "
                              "= \"archive\"")
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
        atoms0 = archive.read_last_dirac(path)  # Dirac atoms of a measure-valued run, else None
    except ValueError as err:  # not a run archive, or an empty one
        raise CliError(str(err)) from None
    config = load_config(text, overrides)
    if args.config:
        given = load_config(Path(args.config), overrides)
        _check_same_physics(given, config)
        if given.time.scheme != config.time.scheme:
            raise ConfigError("time.scheme", f"differs from the archive ({given.time.scheme} here, "
                              f"{config.time.scheme} there); a resumed run keeps its scheme")
        config = given
    check_run(config)
    if t >= config.time.t_end:
        raise ConfigError("time.t_end", f"the archive already reached t = {t:g} >= t_end = "
                          f"{config.time.t_end:g}; extend it with --set time.t_end=...")
    shape = grid_arrays(config)[1].shape
    if np.shape(rho) != shape:
        raise CliError(f"{path}: state has shape {np.shape(rho)}, the config's grid "
                       f"{shape} ({config.domain.manifold}, resolution {config.domain.resolution})")
    return config, {"rho": np.asarray(rho, dtype=float), "t0": float(t), "step0": int(step),
                    "dt0": float(dt), "atoms0": atoms0}


def _fresh_state(args: argparse.Namespace) -> tuple[RunConfig, dict[str, Any]]:
    overrides = list(args.set)
    if args.output:
        overrides.append(f"output.path={_toml_string(args.output)}")
    config = load_config(Path(args.config), overrides)
    check_run(config)
    return config, {"rho": initial_density(config), "t0": 0.0, "step0": 0, "dt0": None}


def _dirac_mass(config: RunConfig, state: dict[str, Any]) -> float:
    """Mass of the Dirac atoms of a measure-valued run's starting state (0 for grid runs)."""
    atoms0 = state.get("atoms0")
    if atoms0 is not None:
        return float(np.sum(atoms0.mass))
    return float(np.sum(config.initial.weights)) if config.initial.kind == "atoms" else 0.0


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
    from solvers.timestepping.simulation import simulate

    path = Path(config.output.path)
    weight = grid_arrays(config)[1]
    bar = ProgressBar(state["t0"], config.time.t_end, config.output.progress and not args.no_progress)
    mass0, lowest = float(np.sum(state["rho"] * weight)), LowestDensity()
    mass0 += _dirac_mass(config, state)
    stop = StopRequest()
    with stop.installed():
        writer = _open_writer(path, config, args)
        try:
            with writer, warnings.catch_warnings():
                warnings.showwarning = bar.show_warning
                result = simulate(config, state["rho"], t0=state["t0"], step0=state["step0"],
                                  dt0=state["dt0"], trackers=[writer.write_snapshot, lowest],
                                  progress=bar, stop=stop, atoms0=state.get("atoms0"))
        except KeyboardInterrupt:  # raised before the handler was in place, or by a tracker
            bar.close()
            print(_interrupted_line(path, bar.t), file=sys.stderr)
            return EXIT_INTERRUPTED
        except (FloatingPointError, RuntimeError, OSError) as err:
            bar.close()
            print(_failure_line(err, config, path, bar.t), file=sys.stderr)
            return EXIT_FAILED
    bar.close()
    if result.reason == "interrupted":
        print(_interrupted_line(path, result.final.t), file=sys.stderr)
        return stop.exit_code
    print(summary(result, mass0, path))
    return lowest.verdict(config)


def _open_writer(path: Path, config: RunConfig, args: argparse.Namespace) -> Any:
    """The archive writer: appending (--resume), replacing (--overwrite) or new."""
    from solvers.io.archive import ArchiveWriter

    theta, weight, phi = grid_arrays(config)
    mode = {"append": True} if args.resume else {"overwrite": args.overwrite}
    try:
        return ArchiveWriter(path, config, theta, weight, phi=phi, **mode)
    except FileExistsError:
        raise ConfigError("output.path", f"{path} exists: pass --overwrite to replace it, "
                          f"--resume {path} to continue it, or -o to write elsewhere") from None
    except OSError as err:
        if isinstance(err, (IsADirectoryError, NotADirectoryError)) or not err.strerror:
            raise
        raise CliError(f"cannot write the archive {path}: {err.strerror}") from None


def _interrupted_line(path: Path, t: float) -> str:
    return (f"interrupted at t={t:.6g}; archive {path} holds {_count_snapshots(path)} "
            f"snapshots; continue with: meanfield run --resume {path}")


def _failure_line(err: BaseException, config: RunConfig, path: Path, t: float) -> str:
    """One line: what failed, what the archive holds, and the advice that applies."""
    from solvers.io.archive import ArchiveWriteError

    resume = f"meanfield run --resume {path}"
    if isinstance(err, ArchiveWriteError):
        hint = f"free some space (or raise ulimit -f), then continue with: {resume}"
    elif isinstance(err, OSError):
        hint = f"continue with: {resume}"
    elif config.time.dt is not None:
        hint = f"continue with: {resume} --set time.dt={config.time.dt / 2:g}"
    else:
        hint = f"continue with: {resume} --set time.cfl={config.time.cfl / 2:g}"
    return clip(f"failed ({' '.join(str(err).split())}) at t={t:.6g}; archive {path} holds "
                f"{_count_snapshots(path)} snapshots; {hint}", 1000)


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
    except KeyError as err:  # a NetCDF file without a variable the figure needs
        raise CliError(f"{path} lacks the variable {err} that the figure needs") from None
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
    except KeyError as err:  # a NetCDF file without a variable the frames need
        raise CliError(f"{path} lacks the variable {err} that the animation needs") from None
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
    lines = [f"run: {clip(path, 500)}"]
    for key in ("version", "created", "manifold", "scheme", "kernel"):
        if key in ds.attrs:
            lines.append(f"  {key}: {clip(ds.attrs[key], 200)}")
    params = {clip(k.replace("__", "."), 80): v for k, v in ds.attrs.items() if "__" in k}
    lines += ["parameters:"] + [f"  {k} = {clip(v, 200)}" for k, v in params.items()] \
        if params else []
    if not params and "config_text" in ds.attrs:
        lines += ["config:"] + ["  " + clip(s, 200)
                                for s in str(ds.attrs["config_text"]).splitlines()[:500]]
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
    parser = OneLineParser(prog="meanfield", description="Mean-field attention + "
                           "perceptron dynamics on the circle and the sphere.")
    parser.add_argument("-v", "--debug", action="store_true",
                        help="show tracebacks and debug logging")
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
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    return run_guarded(args.func, args, debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
