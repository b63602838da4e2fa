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
from solvers import runner
from solvers.io.state import grid_arrays
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


def _resume_state(args: argparse.Namespace) -> tuple[RunConfig, runner.Start, Any]:
    path = _existing(args.resume, "archive")
    if args.output:
        raise CliError("--resume appends to its archive: drop -o/--output")
    check_resume_overrides(args.set)  # the same rule as solvers.resume
    overrides = list(args.set) + [f"output.path={toml_value(str(path))}"]
    try:
        start, text = runner.archived_start(path)
    except ValueError as err:  # not a run archive, or an empty one
        raise CliError(str(err)) from None
    t = start.after  # the time of the last record
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
    estimate = _check_cost(config, t, args)
    why = runner.grid_mismatch(config, start.rho, path)
    if why is not None:
        raise CliError(why)
    return config, start, estimate


def _fresh_config(args: argparse.Namespace) -> tuple[RunConfig, Any]:
    overrides = list(args.set)
    if args.output:
        overrides.append(f"output.path={toml_value(args.output)}")
    config = load_config(Path(args.config), overrides)
    check_run(config)
    return config, _check_cost(config, 0.0, args)


def _start_companion(config: RunConfig, args: argparse.Namespace, estimate: Any) -> tuple:
    """The verdict's check runs, started in child processes beside this run (none: no check
    asked, one core, or checks estimated too short to pay for a child's start, which then run
    after the main run: :attr:`~solvers.model.cost.CostEstimate.parallel_checks`;
    :mod:`solvers.studies.companion`). Started before any numerics, so a forked child
    inherits no thread pool."""
    if getattr(args, "no_check", False) or config.time.t_end <= 0 or estimate is None \
            or not estimate.parallel_checks:
        return ()
    from solvers.studies.companion import start_companions

    return start_companions(config)


def _check_cost(config: RunConfig, t0: float, args: argparse.Namespace) -> Any:
    """Refuse a run estimated above the budget (unless --force or --dry-run), before anything
    is built; print a large estimate. A step of the config is timed first where this machine
    has no timing of it (:mod:`solvers.studies.step_timing`)."""
    from solvers.model.cost import REPORT_S
    from solvers.studies.step_timing import ensure_step_timing

    ensure_step_timing(config)
    if getattr(args, "dry_run", False):
        return None
    estimate = runner.check_cost(config, t0, force=getattr(args, "force", False),
                                 check=not getattr(args, "no_check", False))
    if estimate.total_s > REPORT_S:
        log.info("estimated cost: %s", estimate.describe())
    return estimate


def _print_plan(config: RunConfig, args: argparse.Namespace, t0: float) -> int:
    """``--dry-run``: print the plan of the run from ``t0`` (method, resolution, integrator,
    the estimate, snapshots, archive and its size); exit 0 having written nothing."""
    from solvers.model.cost import BUDGET_S, duration, estimate_cost, output_bytes
    from solvers.model.method import plan_method

    from solvers.studies.verdict_runs import check_runs

    checks = () if args.no_check else check_runs(config)
    plan, est = plan_method(config), estimate_cost(config, checks, t0)
    axis = "N" if config.domain.manifold == "S1" else "lmax"
    end = "t_end" if est.end >= config.time.t_end else "stationary, expected"
    verdict = "refused without --force" if est.total_s > BUDGET_S and not args.force else "runs"
    lines = [f"plan: {config.domain.manifold}, {axis} = {config.domain.resolution}, "
             f"t = {t0:g} .. {config.time.t_end:g}" + (" (resumed)" if args.resume else ""),
             f"  method: {plan.scheme} ({plan.representation}): {plan.reason}",
             f"  integrator: {plan.integrator}, cfl {plan.cfl:g}, rate_factor "
             f"{config.time.rate_factor:g}" + (f", dt {config.time.dt:g}" if config.time.dt else ""),
             f"  estimate: {est.describe()}; {verdict} (budget {duration(BUDGET_S)})",
             f"  ends: {end} at t = {est.end:g}; {est.snapshots} snapshots every "
             f"{config.output.snapshot_interval:g}",
             f"  archive: {config.output.path} (about {output_bytes(config, t0) / 1e6:.2g} MB)"
             + (", appended" if args.resume else ""),
             f"  checks: {len(est.checks_s)} check run(s) of the verdict, "
             + ("beside the run" if est.parallel_checks else "after the run")
             + f" ({est.cores} core(s))" if est.checks_s else "  checks: none",
             "dry run: nothing was run or written"]
    print("\n".join(lines))
    return 0


def _dirac_mass(config: RunConfig, state: runner.Start) -> float:
    """Mass of the Dirac atoms of a measure-valued run's starting state (0 for grid runs)."""
    atoms0 = state.position.atoms
    if atoms0 is not None:
        return float(np.sum(atoms0.mass))
    return float(np.sum(config.initial.weights)) if config.initial.kind == "atoms" else 0.0


def _count_snapshots(path: Path) -> str:
    """``"N snapshots"`` of the archive, with the last one's time (``"?"`` if unreadable)."""
    try:
        from solvers.io.reading import open_run

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
        config, state, estimate = _resume_state(args)
        if getattr(args, "dry_run", False):  # --dry-run: the plan, nothing started or written
            return _print_plan(config, args, float(state.after or 0.0))
        companion = _start_companion(config, args, estimate)
    else:
        config, estimate = _fresh_config(args)
        if getattr(args, "dry_run", False):
            return _print_plan(config, args, 0.0)
        companion = _start_companion(config, args, estimate)
        state = runner.fresh_start(config)
    try:
        return _run(config, state, args, companion)
    finally:
        for child in companion:
            child.close()


def _run(config: RunConfig, state: runner.Start, args: argparse.Namespace, companion: Any) -> int:
    """:func:`cmd_run` once the config and starting state are known."""
    from solvers.core.backend import keep_freed_memory

    keep_freed_memory()  # this process only runs: recycle the grid-sized temporaries
    path = Path(config.output.path)
    weight = grid_arrays(config)[1]
    shown = config.output.progress and not args.no_progress and not getattr(args, "quiet", False)
    bar = ProgressBar(state.t, config.time.t_end, shown, time=config.time)
    mass0, lowest = float(np.sum(state.rho * weight)), LowestDensity()
    mass0 += _dirac_mass(config, state)
    stop = StopRequest()
    log.debug("run %s: %s scheme on %s, t = %g .. %g", path, config.time.scheme,
              config.domain.manifold, state.t, config.time.t_end)
    with stop.installed():
        run = _open(runner.Runner(config, state), path, args)
        try:
            with run:
                run.add_handler(lowest, bar.track)
                # --no-check: no half-resolution companion run in the verdict
                outcome = run.run(progress=bar, stop=stop, companion=companion,
                                  check=not getattr(args, "no_check", False))
        except KeyboardInterrupt:  # raised before the handler was in place, or by a tracker
            bar.close()
            print(_interrupted_line(path, bar.t), file=sys.stderr)
            return EXIT_INTERRUPTED
        except (FloatingPointError, RuntimeError, OSError) as err:
            bar.close()
            print(_failure_line(err, config, path, bar.t), file=sys.stderr)
            return EXIT_FAILED
    bar.close()
    result, verdict = outcome.result, outcome.verdict
    if result.reason == "interrupted":
        print(_interrupted_line(path, result.final.t), file=sys.stderr)
        return stop.exit_code
    print(summary(result, mass0, path))
    if verdict is not None:
        print("\n".join(verdict.lines()))
    if getattr(args, "polish", False):
        _polish_at_end(path)
    return lowest.verdict(config)


def _polish_at_end(path: Path) -> None:
    """``--polish``: :func:`solvers.studies.polish_points.polish_run` on the finished archive; a
    state without atoms (or a Newton failure) is reported, the run's exit code stays."""
    from solvers.cli.polish import polish_to
    from solvers.studies.polish_points import report_text

    try:
        result, out = polish_to(path)
    except ValueError as err:
        print(f"error: polish: {err}", file=sys.stderr)
        return
    print(report_text(result))
    print(f"polished: {out}")


def _open(run: runner.Runner, path: Path, args: argparse.Namespace) -> runner.Runner:
    """``run`` with its archive open: appending (--resume), replacing (--overwrite) or new."""
    try:
        return run.open(path, append=bool(args.resume), overwrite=args.overwrite)
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
    """Table rows: S^1 positions (n,) as angles; S^2 positions (n, 3) as colatitude/longitude.

    One order for every printer (``run``, ``info``): on S^1 by position, increasing angle in
    [0, 360) degrees (the archive's order on S^1); on S^2 by mass, largest first."""
    positions = np.asarray(positions, dtype=float)
    masses = np.asarray(masses, dtype=float)
    if positions.ndim == 2 and positions.shape[1] == 2:  # Sd, d = 2: the angle
        positions = np.mod(np.arctan2(positions[:, 1], positions[:, 0]), 2 * np.pi)
    elif positions.ndim == 2 and positions.shape[1] != 3:
        return _point_atom_rows(masses, positions)
    if positions.ndim == 2:
        from solvers.io.layout import sphere_atom_columns

        cols = sphere_atom_columns(masses, positions)
        return _sphere_atom_rows(masses, cols["atom_colatitude"], cols["atom_longitude"])
    rows = [f"  {'mass':>10}  {'position (deg)':>14}"] if len(masses) else []
    order = np.argsort(np.mod(positions, 2 * np.pi), kind="stable")
    for m, p in zip(masses[order], positions[order]):
        if np.isfinite(m):
            rows.append(f"  {m:10.6f}  {np.degrees(p) % 360.0:14.3f}")
    return rows


def _point_atom_rows(masses: np.ndarray, positions: np.ndarray) -> list[str]:
    """Table rows of atoms of ``S^{d-1}``, ``d >= 4``: mass and the first components of the unit
    vector, largest mass first."""
    if not len(masses):
        return []
    show = min(4, positions.shape[1])
    rows = [f"  {'mass':>10}  unit vector ({show} of {positions.shape[1]} components)"]
    for i in np.argsort(-np.nan_to_num(masses, nan=-np.inf), kind="stable"):
        if np.isfinite(masses[i]):
            rows.append(f"  {masses[i]:10.6f}  " + " ".join(f"{c:+.4f}" for c in positions[i, :show])
                        + (" ..." if show < positions.shape[1] else ""))
    return rows


def _sphere_atom_rows(masses: np.ndarray, colatitude: np.ndarray,
                      longitude: np.ndarray) -> list[str]:
    """Table rows of S^2 atoms: mass, colatitude and longitude in degrees (radians given),
    largest mass first (:func:`_atom_rows`)."""
    rows = [f"  {'mass':>10}  {'colatitude (deg)':>16}  {'longitude (deg)':>15}"] \
        if len(masses) else []
    masses, colatitude, longitude = (np.asarray(a, dtype=float) for a in (masses, colatitude, longitude))
    order = np.argsort(-np.nan_to_num(masses, nan=-np.inf), kind="stable")
    for m, c, lon in zip(masses[order], colatitude[order], longitude[order]):
        if np.isfinite(m):
            rows.append(f"  {m:10.6f}  {np.degrees(c):16.3f}  {np.degrees(lon) % 360.0:15.3f}")
    return rows
