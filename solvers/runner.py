"""One run of a configuration, new or resumed: the pipeline that ``solvers.run`` /
``solvers.resume`` (:mod:`solvers.api`) and ``meanfield run`` (:mod:`solvers.cli.run`) share.

A run goes through these steps, each a function or method of this module::

    start = fresh_start(config)                  # or archived_start(path), dataset_start(ds, t)
    check_cost(config, start_time, force=...)    # before anything is allocated or written
    with Runner(config, start).open(path) as runner:   # the archive writer: the first handler
        runner.add_handler(progress_bar.track)   # more output handlers, called after it
        outcome = runner.run(progress=..., stop=..., check=...)   # time loop, then verdict

- Where a run starts (:class:`Start`): the config's initial state (:func:`fresh_start`), or the
  last record of an archive on disk (:func:`archived_start`) or in memory
  (:func:`dataset_start`), with the exact solver state behind it where the archive holds one
  (:mod:`solvers.io.resume_slots`: a resume then takes bitwise the uninterrupted run's steps).
- Output handlers: callables ``handler(snapshot)`` (or with a ``track_many(snapshots)``
  method) that the time loop hands every snapshot to, in the order of :attr:`Runner.handlers`;
  the archive writer (:class:`~solvers.io.archive.ArchiveWriter`) is the first, opened by
  :meth:`Runner.open`.
- :meth:`Runner.run` calls :func:`solvers.timestepping.loop.simulate` once and, unless the
  run was interrupted, the accuracy verdict (:func:`solvers.studies.verdict.run_verdict`),
  whose attributes go into the archive.

The front ends keep what is theirs: argument checks and their wording of errors, the progress
display, signal handling (:class:`solvers.cli.guard.StopRequest` is the ``stop`` flag), the
half-resolution companion process of the command line, and what they print or return.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from solvers.core.snapshot import RunState
from solvers.model.params import RunConfig

if TYPE_CHECKING:
    import xarray as xr

    from solvers.io.archive import ArchiveWriter
    from solvers.model.cost import CostEstimate
    from solvers.studies.verdict import Verdict
    from solvers.timestepping.loop import RunResult

@dataclass(frozen=True)
class Start:
    """Where a run starts.

    Attributes
    ----------
    position : RunState
        The time loop's position: ``t``, ``step``, ``dt`` (NaN: the solver picks the first
        step), ``state`` (the grid density ``rho``, shape of the config's grid), ``atoms`` (the
        Dirac atoms of a measure-valued run, else None), ``n_rejected`` and ``time_error`` (the
        archived counts a resume continues; 0 for a new run).
    after : float or None
        A resume: the time of the last archived record (the next snapshot is the first output
        time after it); None for a new run.
    exact : RunState or None
        A resume: the exact solver state behind that record (:mod:`solvers.io.resume_slots`), so
        that the resumed run takes bitwise the uninterrupted run's steps; None where the archive
        holds none (the run then starts from ``position``).
    history : tuple
        A resume: the archived method history the run continues (``(t, method, reason)``).
    """

    position: RunState
    after: float | None = None
    exact: RunState | None = None
    history: tuple = ()

    @property
    def rho(self) -> np.ndarray:
        """The starting grid density, shape of the config's grid."""
        return self.position.rho

    @property
    def t(self) -> float:
        """The starting time."""
        return self.position.t


@dataclass(frozen=True)
class Outcome:
    """What :meth:`Runner.run` returns: the time loop's result and the verdict (None for an
    interrupted run)."""

    result: RunResult
    verdict: Verdict | None


def fresh_start(config: RunConfig) -> Start:
    """A new run's start: the config's initial state at ``t = 0``
    (:func:`solvers.io.state.initial_state`; an archived measure's Dirac atoms for a Dirac run)."""
    from solvers.io.state import initial_state

    rho0, atoms0 = initial_state(config)
    return Start(RunState(0.0, 0, float("nan"), rho0, atoms=atoms0))


def archived_start(path: str | os.PathLike) -> tuple[Start, str]:
    """Where a resume of the archive at ``path`` starts, and the archive's config text.

    The last complete record, or the step state behind it when the record is interpolated
    (:func:`solvers.io.restart.resume_start`), the Dirac atoms of a measure-valued run, the
    archived counts and method history, and the exact solver state behind the record where the
    archive holds one. Raises :class:`~solvers.io.errors.ArchiveError` (a ValueError) for a
    path that is not a resumable run archive.
    """
    from solvers.io import reading
    from solvers.io.restart import resume_start
    from solvers.io.resume_slots import exact_start

    reading.check_resumable(path)
    text = reading.read_config_text(path)
    t, step, dt, rho = reading.read_last_state(path)
    position = resume_start((t, step, dt, rho), reading.read_restart(path))
    counts = reading.read_run_counts(path)  # steps_rejected, time error, method history
    position = replace(position, atoms=reading.resume_atoms(path),
                       n_rejected=counts["rejected0"], time_error=counts["time_error0"])
    return _resumed(position, t, exact_start(path, t), counts["history0"]), text


def dataset_start(source: xr.Dataset) -> Start:
    """:func:`archived_start` of a run Dataset (as :func:`solvers.io.reading.open_run` loads
    an archive, with at least one record)."""
    from solvers.io import resume_slots
    from solvers.io.layout import RESTART
    from solvers.io.restart import restart_atoms, restart_state, resume_start

    last = source.isel(time=-1)
    record = (float(last["time"]), int(last["step"]), float(last["dt"]),
              np.asarray(last["rho"].values, dtype=float))
    restart, atoms0 = None, _dirac_atoms(last)
    if RESTART in source:
        restart = restart_state(source[RESTART].attrs, source[RESTART].values, record[0])
    if restart is not None and atoms0 is not None:  # the atoms of the step state behind it
        atoms0 = restart_atoms(source[RESTART].attrs, record[0],
                               1 if atoms0.position.ndim == 1 else 3)
    counts = _run_counts(source, last)
    position = replace(resume_start(record, restart), atoms=atoms0,
                       n_rejected=counts["rejected0"], time_error=counts["time_error0"])
    return _resumed(position, record[0], resume_slots.exact_from(source, record[0]),
                    counts["history0"])


def _resumed(position: RunState, after: float, exact: RunState | None, history: list) -> Start:
    """A resume's :class:`Start`: from ``position`` (the last record, or the step state behind
    it), or from the exact solver state behind the record where the archive holds one (its
    time, step, proposed step and counts)."""
    if exact is not None:
        position = replace(position, t=exact.t, step=exact.step, dt=exact.dt,
                           n_rejected=exact.n_rejected, time_error=exact.time_error)
    return Start(position, after=float(after), exact=exact, history=tuple(history))


def grid_mismatch(config: RunConfig, rho: np.ndarray, where: Any) -> str | None:
    """Why an archived state ``rho`` cannot start a run of ``config`` (its shape is not the
    config's grid), naming ``where`` it came from; None when it can."""
    from solvers.io.state import grid_arrays

    shape = grid_arrays(config)[1].shape
    if np.shape(rho) == shape:
        return None
    return (f"{where}: state has shape {np.shape(rho)}, the config's grid {shape} "
            f"({config.domain.manifold}, resolution {config.domain.resolution})")


def check_cost(config: RunConfig, t0: float = 0.0, *, force: bool = False,
               check: bool = True) -> CostEstimate:
    """The run's cost estimate from ``t0`` (``check``: with the verdict's check runs);
    :class:`~solvers.model.config.ConfigError` when it exceeds the budget and ``force`` is not
    given (:func:`solvers.model.cost.check_cost`)."""
    from solvers.model.cost import check_cost as _check_cost
    from solvers.studies.verdict_runs import check_runs

    return _check_cost(config, force=force, checks=check_runs(config) if check else (), t0=t0)


class Runner:
    """One run of ``config`` from ``start``, its output handlers and its archive.

    Parameters
    ----------
    config : RunConfig
        The run's configuration (validated).
    start : Start
        Where it starts (:func:`fresh_start`, :func:`archived_start`, :func:`dataset_start`).

    Notes
    -----
    Use as a context manager: leaving it closes the archive writer (which writes the buffered
    records and releases the archive's lock), also when the run raised.
    """

    def __init__(self, config: RunConfig, start: Start) -> None:
        self.config, self.start = config, start
        self.handlers: list[Callable[..., object]] = []
        self.writer: ArchiveWriter | None = None

    def open(self, path: str | os.PathLike, *, append: bool = False,
             overwrite: bool = False) -> Runner:
        """Open the archive writer at ``path`` as the first output handler: a new archive
        (``overwrite``: replacing an archive of this project), or appending to a resumed one
        (``append``). The writer's errors propagate (FileExistsError, UnsafePathError,
        ArchiveBusyError, OSError, ArchiveError)."""
        from solvers.io.archive import ArchiveWriter
        from solvers.io.state import grid_arrays

        theta, weight, phi = grid_arrays(self.config)
        mode = {"append": True} if append else {"overwrite": overwrite}
        self.writer = ArchiveWriter(path, self.config, theta, weight, phi=phi, **mode)
        self.handlers.insert(0, self.writer)
        return self

    def add_handler(self, *handlers: Callable[..., object]) -> None:
        """Hand every snapshot to ``handlers`` too, after those already there."""
        self.handlers.extend(handlers)

    def run(self, *, progress: Callable | None = None, stop: Callable[[], bool] | None = None,
            check: bool = True, companion: Any = None) -> Outcome:
        """The time loop from the start to ``time.t_end`` (or stationarity, ``max_steps``,
        ``stop()``), every snapshot handed to the handlers; then, unless interrupted, the
        verdict (``check``: with the half-resolution run, or the ``companion`` process's
        atoms, :class:`solvers.studies.companion.Companion`), written into the archive.

        ``progress(t, step, dt, diagnostics_or_None)`` is called as
        :func:`solvers.timestepping.loop.simulate` says. Errors of the loop propagate
        (StepUnderflowError, BlowUpError, KeyboardInterrupt, the archive's write errors).
        """
        from solvers.studies.verdict import run_verdict
        from solvers.timestepping.loop import simulate

        p = self.start.position
        result = simulate(self.config, p.rho, t0=p.t, step0=p.step,
                          dt0=p.dt if math.isfinite(p.dt) else None, after=self.start.after,
                          trackers=list(self.handlers), progress=progress, stop=stop,
                          atoms0=p.atoms, rejected0=p.n_rejected, time_error0=p.time_error,
                          exact=self.start.exact)
        if result.reason == "interrupted":
            return Outcome(result, None)
        verdict = run_verdict(self.config, result, check_resolution=check, t0=p.t,
                              history0=list(self.start.history), companion=companion)
        if self.writer is not None:
            self.writer.set_attributes(verdict.attributes())
        return Outcome(result, verdict)

    def close(self) -> None:
        """Close the archive writer (idempotent)."""
        if self.writer is not None:
            self.writer.close()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _run_counts(source: xr.Dataset, last: xr.Dataset) -> dict[str, Any]:
    """The counts a resume continues (as :func:`solvers.io.reading.read_run_counts`)."""
    def number(name: str, kind: type) -> Any:
        value = float(last[name]) if name in last else 0.0
        return kind(value) if np.isfinite(value) else kind(0)

    history = source.attrs.get("method_history")
    return {"rejected0": number("steps_rejected", int),
            "time_error0": number("time_error_estimate", float),
            "history0": json.loads(str(history)) if history else []}


def _dirac_atoms(record: xr.Dataset) -> Any:
    """The Dirac atoms (:class:`solvers.core.measure.DiracAtoms`) of one record of a
    measure-valued run (``dirac_mass`` on the ``dirac`` dimension; identities are the columns
    with a finite mass, as :func:`solvers.io.reading.read_dirac`); None for a grid run."""
    from solvers.core.measure import DiracAtoms

    if "dirac_mass" not in record:
        return None
    mass = np.asarray(record["dirac_mass"].values, dtype=float)
    ids = np.flatnonzero(np.isfinite(mass))
    if "dirac_x" in record:
        pos = np.stack([np.asarray(record[f"dirac_{c}"].values, float) for c in "xyz"], axis=1)
    else:
        pos = np.asarray(record["dirac_position"].values, dtype=float)
    return DiracAtoms(mass[ids], pos[ids], ids)
