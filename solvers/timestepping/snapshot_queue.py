"""Snapshots on their way from the time loop to the trackers, made in batches.

The time loop keeps where the run is at each snapshot time it passes (a
:class:`~solvers.core.snapshot.RunState`) in a :class:`SnapshotQueue` and steps on; when the
queue is due, the solver makes the snapshots together (one batched transform for all their
diagnostics where the discretisation can, ``diagnostics_batch``) and :class:`Delivery` checks,
judges and hands them on in time order. Each tracker (:class:`~solvers.core.snapshot.Tracker`;
a plain callable is wrapped) gets each batch in one ``track_many(snapshots)`` call (the archive
then decides once whether to write a block). What a tracker sees is what it would see one
snapshot at a time; only later, by at most ``BATCH_STEPS`` steps or ``BATCH_WALL`` seconds.
A stationary stop at a queued snapshot drops the snapshots after it: the run ends there, and
the steps taken beyond it are the price of the batch (at most ``BATCH_STEPS``).

Where a snapshot's state comes from: :func:`snapshot_mode` (``output.snapshot_mode``
resolved); a state between two steps is the discretisation's ``interpolate``
(:meth:`solvers.core.discretization.Discretization.interpolate`).
"""

from __future__ import annotations

import time as wallclock
from collections.abc import Callable, Sequence
from dataclasses import replace

from solvers.core.snapshot import RunState, Snapshot, Tracker, as_tracker
from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.timestepping.stop_rule import StopRule

BATCH_SNAPSHOTS = 64  # snapshots made together at most (1: each as its time is passed)
BATCH_STEPS = 16  # steps the time loop takes at most past a queued snapshot time
BATCH_WALL = 0.1  # seconds of wall time a queued snapshot waits at most
BATCH_BYTES = 64 * 2**20  # states kept at most (S^2 lmax 511: 16 states of 4 MiB)


class SnapshotQueue:
    """The pending snapshots of the time loop, and when to make them.

    Due when it holds ``batch`` snapshots or ``BATCH_BYTES`` of states, or the time loop has
    taken ``BATCH_STEPS`` steps or ``BATCH_WALL`` seconds since the first was queued.
    """

    def __init__(self, batch: int = BATCH_SNAPSHOTS) -> None:
        if batch < 1:
            raise ValueError(f"batch: at least 1 snapshot (got {batch})")
        self.batch = int(batch)
        self._items: list[RunState] = []
        self._bytes = 0
        self._since = (0, 0.0)  # step count and wall time when the first was queued

    def __len__(self) -> int:
        return len(self._items)

    def add(self, record: RunState, steps: int) -> None:
        """Queue ``record`` (where the run is at a snapshot time); ``steps``: the time loop's
        step count now."""
        if not self._items:
            self._since = (steps, wallclock.perf_counter())
        self._items.append(record)
        self._bytes += record.state.nbytes

    def due(self, steps: int) -> bool:
        """Whether the queued snapshots should be made now (``steps``: the step count)."""
        if not self._items:
            return False
        first_step, first_wall = self._since
        return (len(self._items) >= self.batch or self._bytes >= BATCH_BYTES
                or steps - first_step >= BATCH_STEPS
                or wallclock.perf_counter() - first_wall >= BATCH_WALL)

    def take(self) -> list[RunState]:
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
                position = snap.position
                if snap.resume is not None:  # with the rule's state once it judged this snapshot
                    position = replace(position, rule=self.rule.state())
                snap = replace(snap, stationarity=verdict, position=position)
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


def snapshot_mode(config: RunConfig) -> str:
    """``output.snapshot_mode`` resolved: ``"interpolate"`` or ``"land"`` (see
    :class:`solvers.model.params.OutputParams`)."""
    return plan_method(config).snapshot_mode
