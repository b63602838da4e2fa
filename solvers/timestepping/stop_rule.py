"""The stop rule (paper section 4, made to wait for the atoms): when a run is stationary.

:class:`StopRule` is called once per snapshot, in time order, and answers with a
:class:`solvers.core.snapshot.Stationarity`; :func:`_is_stationary` replays a history.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from typing import NamedTuple

import numpy as np

from solvers.core.atom_tracks import AtomTracks, link_radius
from solvers.core.snapshot import Snapshot, Stationarity
from solvers.model.params import RunConfig


class _Record(NamedTuple):
    """What the stop rule keeps of one snapshot: masses by atom identity."""

    t: float
    measure: float
    ids: frozenset
    mass: dict
    diffuse: float


# the 16 verdicts (Stationarity is frozen: one instance of each serves every snapshot)
_VERDICTS = {flags: Stationarity(*flags) for flags in itertools.product((False, True), repeat=4)}


class StopRule:
    """Paper section 4, made to wait for the atoms (see :class:`TimeParams`).

    Stationary at a snapshot when, over the last ``stationary_window_time`` (at least two
    snapshots spanning it): the measure (transport rate / M, or max support velocity) stayed
    ``<= stationary_tol``; the atom identities (:class:`AtomTracks`) did not change; and every
    atom's mass and the diffuse mass changed by at most ``stationary_mass_rate`` per unit time,
    between consecutive snapshots and across the window.
    """

    def __init__(self, config: RunConfig, link_radius: float) -> None:
        self.time = config.time
        self.tracks = AtomTracks(link_radius, 2 if config.domain.manifold == "S1" else 3)
        self.records: deque[_Record] = deque()
        # the latest record where each criterion failed (for a pair of consecutive records:
        # the earlier one's time): a window holds a criterion iff it starts after that time
        self._bad_measure = self._bad_ids = self._bad_mass = -math.inf

    def _measure(self, snap: Snapshot) -> float:
        d = snap.diagnostics
        if self.time.stationary_measure == "velocity":
            return d.max_support_velocity
        return d.transport_rate / max(abs(d.mass), 1e-300)

    def __call__(self, snap: Snapshot) -> Stationarity:
        d, time, records = snap.diagnostics, self.time, self.records
        ids = self.tracks.link(snap.t, d.atom_mass, d.atom_position).tolist()
        diffuse = d.diffuse_mass
        if not math.isfinite(diffuse):
            diffuse = d.mass - float(np.sum(d.atom_mass))
        new = _Record(snap.t, self._measure(snap), frozenset(ids),
                      dict(zip(ids, np.asarray(d.atom_mass, float).tolist())), diffuse)
        if new.measure > time.stationary_tol:
            self._bad_measure = new.t
        if records:
            last = records[-1]
            if last.ids != new.ids:
                self._bad_ids = self._bad_mass = last.t
            elif not self._settled(last, new):
                self._bad_mass = last.t
        records.append(new)
        span = time.stationary_window_time
        start = snap.t - span * (1 + 1e-9)
        while len(records) > 2 and records[1].t <= start:
            records.popleft()  # keep the window plus the snapshot just before it
        first = records[0] if records[0].t >= start else records[1] if len(records) > 1 else new
        full = first is not new and new.t - first.t >= span * (1 - 1e-9)
        transport = full and self._bad_measure < first.t
        same = full and self._bad_ids < first.t
        return _VERDICTS[full, transport, same, same and self._bad_mass < first.t
                         and self._settled(first, new)]

    def _settled(self, a: _Record, b: _Record) -> bool:
        """Every atom's mass and the diffuse mass changed by at most ``stationary_mass_rate``
        per unit time from ``a`` to ``b`` (same identities)."""
        limit = self.time.stationary_mass_rate * (b.t - a.t)
        if abs(b.diffuse - a.diffuse) > limit:
            return False
        return all(abs(b.mass[k] - a.mass[k]) <= limit for k in b.ids)


def _is_stationary(history: list[Snapshot], config: RunConfig) -> bool:
    """Whether the last snapshot of ``history`` is stationary under :class:`StopRule`."""
    rule = StopRule(config, _link_radius(config))
    result = Stationarity()
    for snap in history:
        result = rule(snap)
    return result.held


def _link_radius(config: RunConfig) -> float:
    return link_radius(config.atoms.link_radius)
