"""Snapshots on their way from the time loop to the trackers, made in batches.

The time loop keeps the state of each snapshot time it passes (:class:`Pending`) in a
:class:`SnapshotQueue` and steps on; when the queue is due, the solver makes the snapshots
together (one batched transform for all their diagnostics where the discretisation can,
``diagnostics_batch``) and :class:`Delivery` checks, judges and hands them on in time order.
Each tracker (:class:`~solvers.core.snapshot.Tracker`; a plain callable is wrapped) gets each
batch in one ``track_many(snapshots)`` call (the archive then decides once whether to write a
block). What a tracker sees is what it would see one
snapshot at a time; only later, by at most ``BATCH_STEPS`` steps or ``BATCH_WALL`` seconds.
A stationary stop at a queued snapshot drops the snapshots after it: the run ends there, and
the steps taken beyond it are the price of the batch (at most ``BATCH_STEPS``).

Where a snapshot's state comes from: :func:`snapshot_mode` (``output.snapshot_mode``
resolved) and :func:`interpolate` (a grid state between two steps; a measure-valued state is
interpolated by its discretisation, :func:`solvers.core.measure.interpolate_measure`).
"""

from __future__ import annotations

import time as wallclock
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from solvers.core.snapshot import Restart, ResumeState, Snapshot, Tracker, as_tracker
from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.timestepping.stop_rule import StopRule

BATCH_SNAPSHOTS = 64  # snapshots made together at most (1: each as its time is passed)
BATCH_STEPS = 16  # steps the time loop takes at most past a queued snapshot time
BATCH_WALL = 0.1  # seconds of wall time a queued snapshot waits at most
BATCH_BYTES = 64 * 2**20  # states kept at most (S^2 lmax 511: 16 states of 4 MiB)


class Pending(NamedTuple):
    """A snapshot to make: time, step count and proposed step at that time, the state
    (grid or flat measure state, not copied: step states are never written to again), the
    step state behind it when the state is interpolated, and the solver's bookkeeping then
    (steps rejected, the time error estimate: :class:`~solvers.core.snapshot.Snapshot`), and
    the exact state a resume from it continues from (:class:`~solvers.core.snapshot.ResumeState`)."""

    t: float
    step: int
    dt: float
    state: np.ndarray
    restart: Restart | None
    n_rejected: int = 0
    time_error: float = 0.0
    resume: ResumeState | None = None


class SnapshotQueue:
    """The pending snapshots of the time loop, and when to make them.

    Due when it holds ``batch`` snapshots or ``BATCH_BYTES`` of states, or the time loop has
    taken ``BATCH_STEPS`` steps or ``BATCH_WALL`` seconds since the first was queued.
    """

    def __init__(self, batch: int = BATCH_SNAPSHOTS) -> None:
        if batch < 1:
            raise ValueError(f"batch: at least 1 snapshot (got {batch})")
        self.batch = int(batch)
        self._items: list[Pending] = []
        self._bytes = 0
        self._since = (0, 0.0)  # step count and wall time when the first was queued

    def __len__(self) -> int:
        return len(self._items)

    def add(self, pending: Pending, steps: int) -> None:
        """Queue ``pending``; ``steps``: the time loop's step count now."""
        if not self._items:
            self._since = (steps, wallclock.perf_counter())
        self._items.append(pending)
        self._bytes += pending.state.nbytes

    def due(self, steps: int) -> bool:
        """Whether the queued snapshots should be made now (``steps``: the step count)."""
        if not self._items:
            return False
        first_step, first_wall = self._since
        return (len(self._items) >= self.batch or self._bytes >= BATCH_BYTES
                or steps - first_step >= BATCH_STEPS
                or wallclock.perf_counter() - first_wall >= BATCH_WALL)

    def take(self) -> list[Pending]:
        """The queued snapshots, in time order; the queue is left empty."""
        items, self._items, self._bytes = self._items, [], 0
        return items


class Delivery:
    """Check, judge and hand on snapshots in time order.

    For each snapshot: ``check(snapshot)`` (raises, e.g. BlowUpError, before any tracker sees
    it), then ``rule(snapshot) -> Stationarity``; the checked snapshots go to every tracker
    (``tracker.track_many(list)``, :class:`~solvers.core.snapshot.Tracker`) and to
    ``progress(t, step, dt, diagnostics)``, also when a later one fails its check. With
    ``stop_when_stationary`` the first stationary snapshot is the last delivered.
    """

    def __init__(self, check: Callable[[Snapshot], None], rule: StopRule,
                 trackers: Sequence[Tracker | Callable[[Snapshot], object]], progress: Callable | None,
                 stop_when_stationary: bool) -> None:
        self.check, self.rule, self.progress = check, rule, progress
        self.trackers = [as_tracker(tracker) for tracker in trackers]
        self.stop_when_stationary = stop_when_stationary

    def __call__(self, snapshots: Sequence[Snapshot]) -> tuple[Snapshot | None, bool]:
        """``(the last snapshot delivered or None, whether it is stationary and ends the run)``."""
        ready: list[Snapshot] = []
        stationary = False
        try:
            for snap in snapshots:
                self.check(snap)
                verdict = self.rule(snap)
                resume = snap.resume  # with the rule's state once it judged this snapshot
                if resume is not None:
                    resume = replace(resume, rule=self.rule.state())
                snap = Snapshot(snap.t, snap.step, snap.dt, snap.rho, snap.diagnostics, verdict,
                                snap.restart, snap.n_rejected, snap.time_error, resume)
                ready.append(snap)
                if self.stop_when_stationary and snap.stationarity.held:
                    stationary = True
                    break
        finally:
            self._hand_on(ready)
        return (ready[-1] if ready else None), stationary

    def _hand_on(self, ready: list[Snapshot]) -> None:
        if not ready:
            return
        for tracker in self.trackers:
            tracker.track_many(ready)
        if self.progress is not None:
            for snap in ready:
                self.progress(snap.t, snap.step, snap.dt, snap.diagnostics)


def resume_state(mark: tuple, mass: float) -> ResumeState | None:
    """The :class:`ResumeState` of a solver's ``mark()`` (``(t, steps, dt, state, (rejected,
    time error, controller's next step or None, the discretisation's extras))``) and the
    mass of its step bounds; None for a state that is not real."""
    t, steps, dt, state, (rejected, error, dt_next, extras) = mark
    if state.dtype.kind != "f":
        return None
    return ResumeState(t, steps, dt, state, rejected, error,
                       float("nan") if dt_next is None else float(dt_next), mass, extras)


def snapshot_mode(config: RunConfig) -> str:
    """``output.snapshot_mode`` resolved: ``"interpolate"`` or ``"land"`` (see
    :class:`solvers.model.params.OutputParams`)."""
    return plan_method(config).snapshot_mode


def interpolate(before: Restart, rho: np.ndarray, t_after: float, t: float) -> np.ndarray:
    """The state at ``t`` in ``(before.t, t_after]`` on the straight line from ``before.rho``
    to ``rho`` (the state at ``t_after``).

    ``before.rho + w (rho - before.rho)``, ``0 < w <= 1``: the mass is the two states' mass to
    round-off, and for non-negative states every value is non-negative exactly (each rounding
    is monotone and bounded by ``-before.rho``). It is the dense output of a second-order step
    to second order (the fv SSP schemes, docs/methods.md §6.8).
    """
    if t >= t_after:
        return rho
    w = (t - before.t) / (t_after - before.t)
    return before.rho + w * (rho - before.rho)
