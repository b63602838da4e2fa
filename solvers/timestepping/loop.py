"""The time loop: a run from its starting state to ``t_end`` or stationarity, with snapshots.

simulate(config, rho0, *, t0=0.0, step0=0, dt0=None, trackers=(), progress=None, stop=None,
         atoms0=None, after=None, batch=64) -> RunResult

- ``rho0``: shape (N,). For a new run (``step0 == 0`` and no ``after``) these are cell
  averages on the grid ``theta_i = 2 pi i / N`` (as :func:`solvers.io.state.initial_density`
  gives); the ``spectral`` scheme converts them to band-limited point values. For a resume
  (``step0 > 0`` or ``after`` given) ``rho0`` is the archived state of the same scheme, used
  as is.
- ``trackers``: callables ``tracker(snapshot)`` called at ``t0`` (new runs only), at every
  multiple of ``output.snapshot_interval`` and at the final time. With
  ``output.snapshot_mode = "interpolate"`` (:func:`snapshot_mode`) the steps do not stop at
  those times: a snapshot is the discretisation's ``interpolate`` of the step states around it
  and carries the earlier one as ``snapshot.position``, so that a resume takes the same steps. The snapshots
  are made in batches (``batch``, :mod:`solvers.timestepping.snapshot_queue`): a tracker sees
  them in time order up to 16 steps or 0.1 s after the loop passed their times, one call per
  snapshot, or one call per batch by a :class:`~solvers.core.snapshot.Tracker` that overrides
  ``track_many(snapshots)`` (the archive writer). ``KeyboardInterrupt`` propagates after the trackers have seen every completed
  snapshot.
- ``progress``: ``progress(t, step, dt, diagnostics_or_None)``, at most ~10 times a second
  of wall time and at every snapshot.
- ``stop``: ``stop() -> bool``, checked before every step (e.g. a flag that a SIGINT handler
  sets): when true the run ends with reason ``"interrupted"`` after the trackers have seen
  the last completed state.

Safety (the same for the Python API as for the command line): the config is checked by
:func:`solvers.model.config.check_run` first (limits and kernel resolution); a step below
``DT_MIN_FRACTION * t_end`` stops with :class:`StepUnderflowError`; a snapshot that is not
finite or exceeds ``BLOWUP_FACTOR`` times the largest density the mass allows on the grid
raises :class:`BlowUpError` *before* the trackers see it, so archives end with the last good
state.
"""

from __future__ import annotations

import math
import time as wallclock
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from solvers.core.snapshot import RunState, Snapshot
from solvers.model.config import check_run
from solvers.model.params import RunConfig
from solvers.timestepping.simulation import Solver
from solvers.timestepping.snapshot_queue import BATCH_SNAPSHOTS, Delivery, SnapshotQueue
from solvers.timestepping.stop_rule import StopRule, _link_radius


@dataclass(frozen=True)
class RunResult:
    final: Snapshot
    reason: str  # "t_end", "stationary", "max_steps" or "interrupted"
    n_steps: int
    wall_time: float
    # (t, method, reason) of each method that ran (the default method's hand-over)
    method_history: tuple = ()
    n_rejected: int = 0  # steps refused and retried shorter (error test, CFL, points out of order)
    time_error: float = 0.0  # sum of the accepted steps' local error estimates (embedded pairs)
    controlled: bool = False  # error-controlled steps (an embedded pair, no fixed time.dt)

    def __repr__(self) -> str:
        d = self.final.diagnostics
        masses = ", ".join(f"{m:.4f}" for m in np.asarray(d.atom_mass).ravel() if np.isfinite(m))
        return (f"RunResult(reason={self.reason!r}, t={self.final.t:.6g}, n_steps={self.n_steps}, "
                f"wall_time={self.wall_time:.2f} s, mass={d.mass:.12g}, n_atoms={d.n_atoms}, "
                f"atom_mass=[{masses}])")


def simulate(config: RunConfig, rho0: np.ndarray, *, t0: float = 0.0, step0: int = 0,
             dt0: float | None = None, trackers: Sequence[Callable[[Snapshot], None]] = (),
             progress: Callable | None = None, stop: Callable[[], bool] | None = None,
             atoms0: object | None = None, after: float | None = None,
             batch: int = BATCH_SNAPSHOTS, rejected0: int = 0, time_error0: float = 0.0,
             exact: RunState | None = None) -> RunResult:
    """Run one configuration to ``time.t_end``, stationarity, ``time.max_steps`` or ``stop()``.

    ``atoms0``: the Dirac atoms (:class:`solvers.core.measure.DiracAtoms`) of a resumed
    ``[atoms] representation = "dirac"`` run (None: a new run's ``initial`` atoms, if any).
    ``after``: the time of a resumed run's last archived snapshot (default ``t0``); the next
    snapshot is the first multiple of ``output.snapshot_interval`` after it. A resume from the
    step state (:class:`~solvers.core.snapshot.RunState`) of an interpolated snapshot starts at
    ``t0 < after``.
    ``batch``: snapshots made together at most (:mod:`solvers.timestepping.snapshot_queue`;
    1: each as the loop passes its time). The trackers see the same snapshots either way.
    ``rejected0``, ``time_error0``: a resumed run's archived ``steps_rejected`` and
    ``time_error_estimate``, which the counts continue from (default 0).
    ``exact``: the archived :class:`~solvers.core.snapshot.RunState` behind the last record
    (:func:`solvers.io.resume_slots.read_resume`): the solver continues from it as it was
    (``rho0``, ``t0``, ``step0`` and the counts are then its), so that the resumed run takes
    bitwise the uninterrupted run's steps. Every snapshot carries the one behind it
    (``snapshot.resume``) for the archive.

    Raises ConfigError (config outside the limits), StepUnderflowError, BlowUpError.
    """
    check_run(config)
    start = wallclock.perf_counter()
    fresh = step0 == 0 and after is None  # a new run (else a resume, maybe from step 0)
    solver = Solver(config, rho0, t0, step0, dt0, atoms0, fresh=fresh, rejected0=rejected0,
                    time_error0=time_error0, exact=exact)
    interval, t_end = config.output.snapshot_interval, config.time.t_end
    rule = StopRule(config, _link_radius(config))
    interpolated = solver.plan.snapshot_mode == "interpolate"  # (none before a hand-over)
    deliver = Delivery(solver.check_state, rule, trackers, progress,
                       config.time.stop_when_stationary)
    queue = SnapshotQueue(batch)

    def following(t: float) -> float:
        return min(t_end, interval * (math.floor(t / interval + 1e-9) + 1))

    def make_queued() -> bool:
        """Make and deliver the queued snapshots; True when one of them ends the run."""
        nonlocal snap
        if not len(queue):
            return False
        last, stationary = deliver(solver.snapshots(queue.take()))
        snap = last if last is not None else snap
        return stationary

    snap = deliver([solver.snapshot()])[0] if fresh else replace(solver.snapshot(), stationarity=None)
    if exact is not None and exact.rule is not None:
        rule.restore(exact.rule)  # the window and identities the uninterrupted run had
    elif not fresh:
        rule(snap)  # a resumed window starts at the resumed state
    reason, last_report = "t_end", wallclock.perf_counter()
    target, done = following(t0 if after is None else float(after)), False
    while not done:
        ended = "interrupted" if stop is not None and stop() else \
            "max_steps" if solver.n_steps - step0 >= config.time.max_steps else None
        if ended is not None:
            reason = "stationary" if make_queued() else ended
            break
        free = interpolated
        marked = solver.position if free else None  # landed snapshots are step states
        try:
            solver.step(math.inf if free else target)
        except Exception:
            if not make_queued():  # (else the run ended before this step: return normally)
                raise
            reason = "stationary"
            break
        except BaseException:  # KeyboardInterrupt: the trackers see every completed snapshot
            make_queued()
            raise
        crossed = solver.t >= target
        before = solver.with_density(marked) if free and crossed else None
        while not done and solver.t >= target:
            if free and target < solver.t:  # between two steps: a resume continues from before
                queue.add(RunState(target, solver.n_steps, solver.dt, solver.between(before, target),
                                   solver.n_rejected, solver.time_error, behind=before),
                          solver.n_steps)
            else:  # the step state itself
                queue.add(solver.position, solver.n_steps)
            done = target >= t_end
            target = following(target)
            if (done or queue.due(solver.n_steps)) and make_queued():
                reason, done = "stationary", True
        if queue.due(solver.n_steps) and make_queued():
            reason, done = "stationary", True
        if not crossed and progress is not None and wallclock.perf_counter() - last_report > 0.1:
            last_report = wallclock.perf_counter()
            progress(solver.t, solver.n_steps, solver.dt, None)
    if reason in ("interrupted", "max_steps") and snap.t != solver.t:
        snap = deliver([solver.snapshot()])[0]
    steps = snap.step if reason == "stationary" else solver.n_steps
    return RunResult(snap, reason, steps, wallclock.perf_counter() - start,
                     method_history=tuple(solver.disc.history),
                     n_rejected=solver.n_rejected, time_error=solver.time_error,
                     controlled=solver.controlled)
