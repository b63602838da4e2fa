"""Identities of atoms across snapshots (shared by S^1 and S^2; docs/math.md §5).

:class:`AtomTracks` links the atoms of each new snapshot to the living identities of the
previous one, incrementally: greedy matching of the cheapest pairs first, with cost
``distance / link_radius + |m_new - m_old| / max(m_new, m_old)`` over pairs closer than
``link_radius``. Then

- an unmatched living identity ends at this snapshot; if a new atom lies within ``link_radius``
  it *merged into* the nearest one (``merged_into``), else it dissolved (``merged_into = -1``);
- an unmatched new atom is born at this snapshot; its ``parent`` is the nearest living identity
  within ``link_radius`` (a split), else -1.

Everything the linking needs (last positions and masses of the living identities, and the
per-identity records) is what the archive stores, so a resumed run continues the identities
(:meth:`AtomTracks.restore`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.core.backend import resolve_backend


DEFAULT_LINK_RADIUS = float(np.pi / 8.0)
TIE_MARGIN = 1e-12  # a pairing faster than greedy matching must win by more than round-off


def link_radius(value: float | None) -> float:
    """``atoms.link_radius``, default pi/8."""
    return DEFAULT_LINK_RADIUS if value is None else float(value)


def unit_vectors(position: np.ndarray) -> np.ndarray:
    """Positions as unit vectors: S^1 angles (n,) -> (n, 2); S^2 and Sd vectors (n, d) normalised."""
    pos = np.asarray(position, dtype=float)
    if pos.ndim == 1:
        return np.stack([np.cos(pos), np.sin(pos)], axis=-1)
    return pos / np.maximum(np.linalg.norm(pos, axis=1, keepdims=True), 1e-300)


@dataclass
class AtomTracks:
    """Living identities and the record of every identity so far (``k`` identities).

    Attributes
    ----------
    link_radius : float
    unit : ndarray, shape (k, d)
        Last position of each identity (NaN once it has ended).
    mass : ndarray, shape (k,)
        Last mass (NaN once ended).
    birth_time, end_time : ndarray, shape (k,)
        First and last+1 snapshot time (``end_time`` NaN while alive).
    parent, merged_into : ndarray of int, shape (k,)
        Identity it split from / merged into (-1: none).
    """

    link_radius: float
    dim: int
    unit: np.ndarray = field(default=None)  # type: ignore[assignment]
    mass: np.ndarray = field(default_factory=lambda: np.zeros(0))
    birth_time: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end_time: np.ndarray = field(default_factory=lambda: np.zeros(0))
    parent: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    merged_into: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        if self.unit is None:
            self.unit = np.zeros((0, self.dim))
        # link's fast path in one compiled call: with numba (chosen now, as the fv kernels),
        # unless a subclass changes the test it compiles (_same_atoms)
        self._kernels = None
        if resolve_backend(None) == "numba" and type(self)._same_atoms is AtomTracks._same_atoms:
            from solvers.core.atom_tracks_numba import continue_angles, continue_identities

            self._kernels = (continue_angles, continue_identities)

    @property
    def size(self) -> int:
        return int(self.mass.size)

    @property
    def alive(self) -> np.ndarray:
        """Indices of the living identities."""
        return np.flatnonzero(np.isfinite(self.mass))

    def _match(self, unit: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Greedy matching: (old identity, new atom) pairs, cheapest first."""
        old = self.alive
        if old.size == 0 or mass.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        cost = self._cost(old, unit, mass)
        flat = np.argsort(cost, axis=None, kind="stable")
        flat = flat[np.isfinite(cost.ravel()[flat])].tolist()
        cols = cost.shape[1]
        pairs_o, pairs_n, used_o, used_n = [], [], set(), set()
        for f in flat:
            o, n = divmod(f, cols)
            if o not in used_o and n not in used_n:
                used_o.add(o), used_n.add(n), pairs_o.append(old[o]), pairs_n.append(n)
        return np.asarray(pairs_o, np.int64), np.asarray(pairs_n, np.int64)

    def _cost(self, old: np.ndarray, unit: np.ndarray, mass: np.ndarray) -> np.ndarray:
        """Matching cost (old identities, new atoms); inf beyond ``link_radius``."""
        dist = np.arccos(np.clip(self.unit[old] @ unit.T, -1.0, 1.0))
        m_old = self.mass[old][:, None]
        cost = dist / self.link_radius + np.abs(mass - m_old) / np.maximum(np.maximum(mass, m_old), 1e-300)
        cost[dist > self.link_radius] = np.inf
        return cost

    def _same_atoms(self, old: np.ndarray, unit: np.ndarray, mass: np.ndarray) -> np.ndarray | None:
        """The identities of the new atoms when each new atom and one living identity are each
        other's strictly cheapest partner (by :data:`TIE_MARGIN`), with finite cost, as many
        atoms as identities: greedy matching then pairs exactly these (the cheapest remaining
        pair is always one of them), so this is :meth:`_match` without its loop. None otherwise.
        Compiled (:mod:`solvers.core.atom_tracks_numba`) with the numba backend."""
        n = mass.size
        if old.size != n or n == 0:
            return None if old.size or n else np.zeros(0, np.int64)
        if resolve_backend(None) == "numba":
            from solvers.core.atom_tracks_numba import same_atoms

            row = same_atoms(self.unit[old], self.mass[old], unit, mass, self.link_radius, TIE_MARGIN)
            if row.size == 0:
                return None
        else:
            row = self._same_atoms_numpy(old, unit, mass)
            if row is None:
                return None
        ids = np.empty(n, np.int64)
        ids[row] = old
        return ids

    def _same_atoms_numpy(self, old: np.ndarray, unit: np.ndarray, mass: np.ndarray) -> np.ndarray | None:
        """Reference of the compiled kernel: ``row`` (n,), the new atom of each old identity."""
        n = mass.size
        cost = self._cost(old, unit, mass)
        row = np.argmin(cost, axis=1)
        best = cost[np.arange(n), row]
        others = cost.copy()
        others[np.arange(n), row] = np.inf
        if (not np.all(np.isfinite(best)) or np.unique(row).size != n
                or np.any(others.min(axis=1) <= best + TIE_MARGIN)):
            return None
        col = others[:, row]  # column row[i]: the other identities' costs for that atom
        if np.any(col.min(axis=0) <= best + TIE_MARGIN):
            return None
        return row

    def _continue_compiled(self, mass: np.ndarray, position: np.ndarray) -> np.ndarray | None:
        """The fast path of :meth:`link` in one compiled call
        (:func:`~solvers.core.atom_tracks_numba.continue_identities`: the same test as
        :meth:`_same_atoms`, then the update): the identities when every atom continues one,
        else None (also without numba, or when a subclass changes :meth:`_same_atoms`: see
        ``__post_init__``)."""
        if self._kernels is None:
            return None
        pos = np.asarray(position, dtype=float)
        if self.dim == 2 and pos.shape == mass.shape:
            ok, ids = self._kernels[0](self.unit, self.mass, pos, mass, self.link_radius, TIE_MARGIN)
        elif self.dim == 3 and pos.size == 3 * mass.size:
            ok, ids = self._kernels[1](self.unit, self.mass, unit_vectors(pos.reshape(-1, 3)), mass,
                                       self.link_radius, TIE_MARGIN)
        else:
            return None
        return ids if ok else None

    def _nearest(self, unit: np.ndarray, candidates: np.ndarray, targets: np.ndarray) -> int:
        """Index into ``targets`` (m, d) nearest to ``unit`` within link_radius, else -1."""
        if candidates.size == 0:
            return -1
        dist = np.arccos(np.clip(targets[candidates] @ unit, -1.0, 1.0))
        k = int(np.argmin(dist))
        return int(candidates[k]) if dist[k] <= self.link_radius else -1

    def link(self, t: float, mass: np.ndarray, position: np.ndarray) -> np.ndarray:
        """Assign identities to the atoms of the snapshot at time ``t``.

        Parameters
        ----------
        t : float
        mass : ndarray, shape (n,)
        position : ndarray, shape (n,) angles on S^1 or (n, 3) on S^2

        Returns
        -------
        ndarray of int, shape (n,): the identity of each atom.
        """
        mass = np.asarray(mass, dtype=float).reshape(-1)
        same = self._continue_compiled(mass, position)
        if same is not None:  # every atom continues an identity: nothing born or ended
            return same
        unit = unit_vectors(position).reshape(mass.size, self.dim)
        old_alive = self.alive
        same = self._same_atoms(old_alive, unit, mass)
        if same is not None:
            self.unit[same], self.mass[same] = unit, mass
            return same
        old_unit = self.unit.copy()
        m_o, m_n = self._match(unit, mass)
        ids = np.full(mass.size, -1, dtype=np.int64)
        ids[m_n] = m_o
        matched = set(m_o.tolist())
        ended = [o for o in old_alive.tolist() if o not in matched]
        everyone = np.arange(mass.size)
        for o in ended:  # ended: merged into the nearest new atom
            n = self._nearest(old_unit[o], everyone, unit)
            self.merged_into[o] = ids[n] if n >= 0 and ids[n] >= 0 else -1
            self.end_time[o], self.mass[o] = t, np.nan
            self.unit[o] = np.nan
        for n in np.flatnonzero(ids < 0):  # born: split from the nearest living identity
            ids[n] = self._new(t, self._nearest(unit[n], old_alive, old_unit))
        for o in ended:  # merges into newborn atoms
            if self.merged_into[o] < 0:
                n = self._nearest(old_unit[o], everyone, unit)
                self.merged_into[o] = ids[n] if n >= 0 else -1
        self.unit[ids], self.mass[ids] = unit, mass
        return ids

    def _new(self, t: float, parent: int) -> int:
        self.unit = np.vstack([self.unit, np.full((1, self.dim), np.nan)])
        self.mass = np.append(self.mass, np.nan)
        self.birth_time = np.append(self.birth_time, t)
        self.end_time = np.append(self.end_time, np.nan)
        self.parent = np.append(self.parent, parent).astype(np.int64)
        self.merged_into = np.append(self.merged_into, -1).astype(np.int64)
        return self.size - 1

    @classmethod
    def restore(cls, link_radius: float, mass: np.ndarray, position: np.ndarray,
                birth_time: np.ndarray, end_time: np.ndarray, parent: np.ndarray,
                merged_into: np.ndarray) -> AtomTracks:
        """Rebuild the state from an archive: the last record's row by identity (``mass`` (k,),
        NaN for ended identities; ``position`` (k,) or (k, 3)) and the per-identity records."""
        mass = np.asarray(mass, dtype=float)
        pos = np.asarray(position, dtype=float)
        dim = 2 if pos.ndim == 1 else pos.shape[1]
        unit = np.full((mass.size, dim), np.nan)
        live = np.isfinite(mass)
        unit[live] = unit_vectors(pos[live])
        return cls(link_radius, dim, unit, mass.copy(), np.asarray(birth_time, float),
                   np.asarray(end_time, float), np.asarray(parent, np.int64),
                   np.asarray(merged_into, np.int64))


def cell_identities(labels: np.ndarray | None, ids: np.ndarray) -> np.ndarray | None:
    """Identity of every cell from detection labels (cells,) (index into the snapshot's atoms,
    -1 diffuse) and the atoms' identities ``ids`` (n,); -1 stays -1. None without labels."""
    if labels is None:
        return None
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    ids = np.asarray(ids, dtype=np.int64)
    return np.where(labels >= 0, ids[np.maximum(labels, 0)] if ids.size else -1, -1)


def mass_budget(prev_ids: np.ndarray, prev_mass: np.ndarray, ids: np.ndarray,
                cell_mass: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Mass that changed hands between two snapshots, per identity (docs/math.md §5).

    For identity ``j`` with cells ``A`` before and ``B`` now, ``gained_j`` is the mass now in
    the cells of ``B`` not in ``A`` and ``lost_j`` the mass the cells of ``A`` not in ``B`` held
    before, so that exactly

        m_j(now) - m_j(before) = gained_j - lost_j + sum over A and B of (m_now - m_before),

    the last term being transport through the cells the atom kept. A merge shows as the
    merged atom's whole mass lost and the receiver's gain; a new sink forming inside a basin as
    mass lost to the diffuse part.

    Parameters
    ----------
    prev_ids, ids : ndarray of int, shape (cells,)
        Identity of each cell (-1: diffuse) at the previous snapshot and now.
    prev_mass, cell_mass : ndarray, shape (cells,)
        Cell masses then and now.
    size : int
        Number of identities so far.

    Returns
    -------
    gained, lost : ndarray, shape (size,)
    """
    prev_ids, ids = np.asarray(prev_ids).reshape(-1), np.asarray(ids).reshape(-1)
    moved = prev_ids != ids
    now_in = moved & (ids >= 0)
    was_in = moved & (prev_ids >= 0)
    gained = np.bincount(ids[now_in], weights=np.asarray(cell_mass).reshape(-1)[now_in],
                         minlength=size)
    lost = np.bincount(prev_ids[was_in], weights=np.asarray(prev_mass).reshape(-1)[was_in],
                       minlength=size)
    return gained[:size], lost[:size]
