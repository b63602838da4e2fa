"""``meanfield run``: validate a config (or an archive to resume), simulate, archive, summarise.

Ctrl-C (SIGTERM) during a run writes the last completed state, closes the archive and exits
with 130 (143), saying how to resume; a second Ctrl-C exits at once. Only this command (and
the sweep's workers) turns on the process-wide malloc tuning of
:func:`solvers.core.backend.keep_freed_memory`: the library leaves the process as it is.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from solvers.cli.guard import EXIT_FAILED, EXIT_INTERRUPTED, CliError, StopRequest
from solvers.cli.progress import LowestDensity, ProgressBar
from solvers.io.restart import resume_start
from solvers.io.resume_slots import exact_start
from solvers.io.state import grid_arrays, initial_state
from solvers.model.config import ConfigError, check_run, clip, config_from_text, load_config, toml_value
from solvers.model.params import RunConfig, flatten
from solvers.model.validate import RESUMABLE_SECTIONS, check_resume_overrides

log = logging.getLogger(__name__)

def _existing(path: str, what: str) -> Path:
    """An archive path that exists: a NetCDF file, or a zarr store (a folder ending in .zarr)."""
    p = Path(path)
    if not (p.is_dir() if p.suffix == ".zarr" else p.is_file()):
        raise CliError(f"{what} not found: {path}")
    return p


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
    check_resume_overrides(args.set)  # the same rule as solvers.resume
    overrides = list(args.set) + [f"output.path={toml_value(str(path))}"]
    try:
        archive.check_resumable(path)
        text = archive.read_config_text(path)
        t, step, dt, rho = archive.read_last_state(path)
        restart = archive.read_restart(path)  # the step state behind an interpolated record
        atoms0 = archive.resume_atoms(path)  # Dirac atoms of a measure-valued run, else None
        counts = archive.read_run_counts(path)  # steps_rejected, time error, method history
    except ValueError as err:  # not a run archive, or an empty one
        raise CliError(str(err)) from None
    config = config_from_text(text, overrides)  # never a file name (a hostile attribute)
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
    _check_cost(config, t, args)
    shape = grid_arrays(config)[1].shape
    if np.shape(rho) != shape:
        raise CliError(f"{path}: state has shape {np.shape(rho)}, the config's grid "
                       f"{shape} ({config.domain.manifold}, resolution {config.domain.resolution})")
    exact = exact_start(path, t)  # the exact state behind the record (bitwise resumes), or {}
    return config, {**resume_start((t, step, dt, rho), restart), "atoms0": atoms0, **counts,
                    **exact}


def _fresh_config(args: argparse.Namespace) -> RunConfig:
    overrides = list(args.set)
    if args.output:
        overrides.append(f"output.path={toml_value(args.output)}")
    config = load_config(Path(args.config), overrides)
    check_run(config)
    _check_cost(config, 0.0, args)
    return config


def _fresh_state(config: RunConfig) -> dict[str, Any]:
    rho0, atoms0 = initial_state(config)  # atoms0: an archived measure's Dirac atoms (Dirac runs)
    return {"rho": rho0, "t0": 0.0, "step0": 0, "dt0": None, "atoms0": atoms0}


def _start_companion(config: RunConfig, args: argparse.Namespace) -> Any:
    """The verdict's half-resolution run, started in a child process beside this run (None:
    no check asked, one core; :mod:`solvers.studies.companion`). Started before any numerics,
    so the forked child inherits no thread pool."""
    if getattr(args, "no_check", False) or config.time.t_end <= 0:
        return None
    from solvers.studies.companion import Companion

    return Companion.start(config)


def _check_cost(config: RunConfig, t0: float, args: argparse.Namespace) -> None:
    """Refuse a run estimated above the budget (unless --force), before anything is built;
    print a large estimate."""
    from solvers.model.cost import REPORT_S, check_cost

    estimate = check_cost(config, force=getattr(args, "force", False), t0=t0,
                          check_resolution=not getattr(args, "no_check", False))
    if estimate.total_s > REPORT_S:
        log.info("estimated cost: %s", estimate.describe())


def _dirac_mass(config: RunConfig, state: dict[str, Any]) -> float:
    """Mass of the Dirac atoms of a measure-valued run's starting state (0 for grid runs)."""
    atoms0 = state.get("atoms0")
    if atoms0 is not None:
        return float(np.sum(atoms0.mass))
    return float(np.sum(config.initial.weights)) if config.initial.kind == "atoms" else 0.0


def _count_snapshots(path: Path) -> str:
    """``"N snapshots"`` of the archive, with the last one's time (``"?"`` if unreadable)."""
    try:
        from solvers.io.archive import open_run

        times = open_run(path)["time"].values
        return f"{len(times)} snapshots" + (f" (the last at t={times[-1]:.6g})" if len(times)
                                            else "")
    except (OSError, ValueError, KeyError):  # the count is a courtesy: never mask the error
        return "? snapshots"


def cmd_run(args: argparse.Namespace) -> int:
    """``meanfield run``: validate, build the initial state, simulate, archive, summarise."""
    if not args.config and not args.resume:
        raise CliError("run needs CONFIG.toml (or --resume RUN.nc)")
    from solvers.core.backend import spinning_thread_waits

    spinning_thread_waits()  # before shtns / numba load libgomp (threaded S^2 steps)
    if args.resume:
        config, state = _resume_state(args)
        companion = _start_companion(config, args)
    else:
        config = _fresh_config(args)
        companion = _start_companion(config, args)
        state = _fresh_state(config)
    try:
        return _run(config, state, args, companion)
    finally:
        if companion is not None:
            companion.close()


def _run(config: RunConfig, state: dict[str, Any], args: argparse.Namespace, companion: Any) -> int:
    """:func:`cmd_run` once the config and starting state are known."""
    from solvers.timestepping.loop import simulate

    from solvers.core.backend import keep_freed_memory

    keep_freed_memory()  # this process only runs: recycle the grid-sized temporaries
    path = Path(config.output.path)
    weight = grid_arrays(config)[1]
    shown = config.output.progress and not args.no_progress and not getattr(args, "quiet", False)
    bar = ProgressBar(state["t0"], config.time.t_end, shown, time=config.time)
    mass0, lowest = float(np.sum(state["rho"] * weight)), LowestDensity()
    mass0 += _dirac_mass(config, state)
    stop = StopRequest()
    log.debug("run %s: %s scheme on %s, t = %g .. %g", path, config.time.scheme,
              config.domain.manifold, state["t0"], config.time.t_end)
    with stop.installed():
        writer = _open_writer(path, config, args)
        try:
            with writer:
                result = simulate(config, state["rho"], t0=state["t0"], step0=state["step0"],
                                  dt0=state["dt0"], after=state.get("after"),
                                  trackers=[writer, lowest, bar.track],
                                  progress=bar, stop=stop, atoms0=state.get("atoms0"),
                                  rejected0=state.get("rejected0", 0),
                                  time_error0=state.get("time_error0", 0.0),
                                  exact=state.get("exact"))
                verdict = _verdict(config, result, writer, args, state, companion)
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
    if verdict is not None:
        print("\n".join(verdict.lines()))
    if getattr(args, "polish", False):
        _polish_at_end(path)
    return lowest.verdict(config)


def _verdict(config: RunConfig, result: Any, writer: Any, args: argparse.Namespace,
             state: dict[str, Any], companion: Any = None) -> Any:
    """The run's accuracy verdict (:mod:`solvers.studies.verdict`), archived as attributes; None
    for an interrupted run. ``--no-check`` skips the half-resolution companion run. A resumed
    run's verdict keeps the archived method history before its start (``state``)."""
    if result.reason == "interrupted":
        return None
    from solvers.studies.verdict import run_verdict

    verdict = run_verdict(config, result, check_resolution=not getattr(args, "no_check", False),
                          t0=state["t0"], history0=state.get("history0", ()), companion=companion)
    writer.set_attributes(verdict.attributes())
    return verdict


def _polish_at_end(path: Path) -> None:
    """``--polish``: :func:`solvers.studies.polish.polish_archive` on the finished archive; a
    state without atoms (or a Newton failure) is reported, the run's exit code stays."""
    from solvers.cli.polish import polish_to
    from solvers.studies.polish import format_report

    try:
        result, out = polish_to(path)
    except ValueError as err:
        print(f"error: polish: {err}", file=sys.stderr)
        return
    print(format_report(result))
    print(f"polished: {out}")


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
    return (f"interrupted at t={t:.6g}; archive {path} holds {_count_snapshots(path)}; "
            f"continue with: meanfield run --resume {path}")


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
    what = " ".join(str(err).split()) or type(err).__name__
    if "t=" not in what:  # the solver's errors name the time they fail at; others the run's
        what += f" (the run was at t={t:.6g})"
    return clip(f"error: {what}; archive {path} holds {_count_snapshots(path)}; {hint}", 1000)


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
