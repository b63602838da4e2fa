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
from solvers.timestepping.manifolds import manifold_of


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
        self.tracks = AtomTracks(link_radius, manifold_of(config).dimension)
        self.records: deque[_Record] = deque()
        # the latest record where each criterion failed (for a pair of consecutive records:
        # the earlier one's time): a window holds a criterion iff it starts after that time
        self._bad_measure = self._bad_ids = self._bad_mass = -math.inf

    def state(self) -> tuple:
        """The rule's state now, cheaply (the records are immutable; the tracks copied), for
        :func:`pack_state` when an archive keeps it (:class:`~solvers.core.snapshot.RunState`)."""
        tr = self.tracks
        tracks = tuple(np.array(a, dtype=float).reshape(-1) for a in
                       (tr.unit, tr.mass, tr.birth_time, tr.end_time, tr.parent, tr.merged_into))
        return (self._bad_measure, self._bad_ids, self._bad_mass), tracks, tuple(self.records)

    def restore(self, packed: np.ndarray) -> None:
        """Continue from a :func:`pack_state` vector (a resume: the window and the atom
        identities as the uninterrupted run had them)."""
        v = np.asarray(packed, dtype=float)
        self._bad_measure, self._bad_ids, self._bad_mass = map(float, v[:3])
        k, i = int(v[3]), 4
        d = self.tracks.dim
        parts = []
        for size in (k * d, k, k, k, k, k):
            parts.append(v[i:i + size])
            i += size
        tr = self.tracks
        tr.unit, tr.mass, tr.birth_time, tr.end_time = parts[0].reshape(k, d), *parts[1:4]
        tr.parent, tr.merged_into = parts[4].astype(np.int64), parts[5].astype(np.int64)
        self.records.clear()
        for _ in range(int(v[i])):
            t, measure, diffuse, n = v[i + 1:i + 5]
            n = int(n)
            ids, masses = v[i + 5:i + 5 + n].astype(int).tolist(), v[i + 5 + n:i + 5 + 2 * n]
            self.records.append(_Record(float(t), float(measure), frozenset(ids),
                                        dict(zip(ids, masses.tolist())), float(diffuse)))
            i += 4 + 2 * n

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


def pack_state(state: tuple) -> np.ndarray:
    """A :meth:`StopRule.state` as one float vector: the three failure times, the number of
    identities ``k``, the tracks (positions ``k x d``, masses, birth, end, parent, merged into),
    the number of records, then each record ``(t, measure, diffuse, n, ids (n), masses (n))``."""
    bad, tracks, records = state
    out = [np.asarray(bad, float), np.array([float(tracks[1].size)]), *tracks,
           np.array([float(len(records))])]
    for r in records:
        ids = sorted(r.ids)
        out.append(np.array([r.t, r.measure, r.diffuse, len(ids), *ids,
                             *(r.mass[k] for k in ids)], dtype=float))
    return np.concatenate(out)


def _is_stationary(history: list[Snapshot], config: RunConfig) -> bool:
    """Whether the last snapshot of ``history`` is stationary under :class:`StopRule`."""
    rule = StopRule(config, _link_radius(config))
    result = Stationarity()
    for snap in history:
        result = rule(snap)
    return result.held


def _link_radius(config: RunConfig) -> float:
    return link_radius(config.atoms.link_radius)
