"""Snapshots turned into archive records, buffered in memory until the writer appends them as
one block (store-neutral: :mod:`solvers.io.netcdf_store` and :mod:`solvers.io.zarr_store`
write the blocks).

A record holds, for one snapshot: ``time``, ``step``, ``dt``, the time stepper's bookkeeping
(``steps_rejected``, ``time_error_estimate``), ``rho``, the spectrum when the
archive keeps it, every diagnostic, the atoms by identity (one column per identity, NaN where
an identity is not alive) and the stop criteria. The atom identities are linked snapshot by
snapshot as the records are made (:class:`~solvers.core.atom_tracks.AtomTracks`), so the
per-identity records (birth, end, parent, merged into) are those after the last record made.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np

from solvers.core.atom_tracks import AtomTracks, cell_identities, mass_budget
from solvers.core.backend import resolve_backend
from solvers.core.snapshot import Snapshot
from solvers.io.layout import (
    ATOM_CELL,
    DIAGNOSTIC_VARIABLES,
    STATIONARITY_VARIABLES,
    _Grid,
    atom_variables,
    rho_hat,
    spectrum_prefix,
    sphere_atom_columns,
)

_DIAGNOSTICS = attrgetter(*DIAGNOSTIC_VARIABLES)  # the diagnostics of a record, in order
_STATIONARITY = attrgetter(*STATIONARITY_VARIABLES)
_STATIONARY_NAMES = tuple(f"stationary_{name}" for name in STATIONARITY_VARIABLES)
_NOT_EVALUATED = dict.fromkeys(_STATIONARY_NAMES, -1)
_NO_CELLS = (np.zeros(0, dtype=np.int64), np.zeros(0))  # no previous record's cells
_NO_POSITIONS = np.zeros(0)
_NOTHING = np.full(0, np.nan)
_NOTHING.flags.writeable = False  # (empty, so shared by all records)
_NO_DIRAC = {False: dict.fromkeys(("dirac_mass", "dirac_position"), _NOTHING),  # no Dirac atoms
             True: dict.fromkeys(("dirac_mass", "dirac_x", "dirac_y", "dirac_z",
                                  "dirac_colatitude", "dirac_longitude"), _NOTHING)}
_CIRCLE_COLUMNS = ("atom_mass", "atom_position", "atom_core_mass", "atom_mass_gained",
                   "atom_mass_lost")  # the rows of the compiled S^1 table


class RecordBuffer:
    """Records waiting to be written, in time order.

    Parameters
    ----------
    grid : _Grid
        The archive's grid (S^2 when ``grid.phi`` is given).
    spectral : bool
        Make the spectrum variables (``rho_hat_*`` or ``rho_lm_*``).
    tracks : AtomTracks
        The atom identities so far (new, or restored from an appended archive).
    cells : tuple of ndarray, optional
        ``(identities (cells,), cell masses (cells,))`` of the last record made (restored from
        an appended archive): the start of the per-atom mass budget
        (:func:`~solvers.core.atom_tracks.mass_budget`); without it the first budget is NaN.
    """

    def __init__(self, grid: _Grid, spectral: bool, tracks: AtomTracks,
                 cells: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.grid, self.spectral, self.tracks = grid, spectral, tracks
        self._cells = cells
        self._last_t = -np.inf  # time of the last record made
        self.atom_names = tuple(atom_variables(grid)[0])
        self._rows: list[dict[str, Any]] = []
        self._weight = np.ascontiguousarray(grid.cell_weight, dtype=float).reshape(-1)
        self._record_atoms = None  # the atoms of a record in one compiled call (with numba)
        if resolve_backend(None) == "numba":
            from solvers.core.atom_tracks_numba import record_atoms

            self._record_atoms = record_atoms

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        """Drop the buffered records (after they were written, or could not be)."""
        self._rows.clear()

    def add(self, snapshot: Snapshot, rho: np.ndarray) -> None:
        """Make the record of ``snapshot`` (``rho`` checked by the writer) and buffer it."""
        d = snapshot.diagnostics
        row: dict[str, Any] = {"time": float(snapshot.t), "step": int(snapshot.step),
                               "dt": float(snapshot.dt), "rho": np.array(rho, dtype=float),
                               "steps_rejected": int(snapshot.n_rejected),
                               "time_error_estimate": float(snapshot.time_error)}
        if self.spectral:
            c = rho_hat(rho) if self.grid.phi is None else self.grid.basis.forward(rho)
            prefix = spectrum_prefix(self.grid)
            row[f"{prefix}_real"], row[f"{prefix}_imag"] = c.real.copy(), c.imag.copy()
        row.update(zip(DIAGNOSTIC_VARIABLES, _DIAGNOSTICS(d)))
        st = snapshot.stationarity
        if st is None:
            row.update(_NOT_EVALUATED)
        else:
            row.update(zip(_STATIONARY_NAMES, map(int, _STATIONARITY(st))))
        row["atoms"] = self._atoms(snapshot, rho)
        if getattr(d, "dirac_id", None) is not None:
            row["dirac"] = _dirac_columns(d, self.grid.components)
        self._rows.append(row)

    def _atoms(self, snapshot: Snapshot, rho: np.ndarray) -> dict[str, np.ndarray]:
        """Link the snapshot's atoms to identities: one column per identity so far, NaN where
        an identity is not alive (S^1: mass, core mass, position; S^2: x, y, z, angles)."""
        d, s1 = snapshot.diagnostics, self.grid.phi is None and not self.grid.components
        mass = np.asarray(d.atom_mass, float).reshape(-1)
        position = np.asarray(d.atom_position, float)
        width = 1 if s1 else self.grid.components or 3
        if position.size != mass.size * width:
            raise ValueError(f"atom_position has shape {position.shape}, expected "
                             f"({mass.size},{'' if s1 else f' {width}'})")
        self._last_t = t = float(snapshot.t)
        ids = self.tracks.link(t, mass, position)
        core = np.asarray(d.atom_core_mass, float).reshape(-1)
        labels = getattr(d, "atom_labels", None)
        if self._record_atoms is not None and labels is not None:
            labels, rho = np.asarray(labels, dtype=np.int64), np.asarray(rho, dtype=float)
            if self._fits(labels, rho):
                return self._atoms_compiled(ids, mass, position, core, labels, rho, s1)
        k = self.tracks.size
        out_m, out_c = np.full(k, np.nan), np.full(k, np.nan)
        out_p = np.full(k, np.nan) if s1 else np.full((k, width), np.nan)
        out_m[ids] = mass
        out_p[ids] = position.reshape(-1) if s1 else position.reshape(-1, width)
        out_c[ids] = core if core.size == mass.size else np.nan
        cols = {"atom_mass": out_m, "atom_position": out_p} if s1 or self.grid.components else \
            sphere_atom_columns(out_m, out_p)
        cols["atom_core_mass"] = out_c
        cols["atom_mass_gained"], cols["atom_mass_lost"] = self._budget(d, ids, rho, k)
        return cols

    def _fits(self, labels: np.ndarray, rho: np.ndarray) -> bool:
        """Labels, densities and the previous record's cells all one per grid cell."""
        n = self._weight.size
        return (labels.size == n and rho.size == n
                and (self._cells is None or self._cells[0].size == n))

    def _atoms_compiled(self, ids: np.ndarray, mass: np.ndarray, position: np.ndarray,
                        core: np.ndarray, labels: np.ndarray, rho: np.ndarray, s1: bool
                        ) -> dict[str, np.ndarray]:
        """:meth:`_atoms` after the linking, in one compiled call
        (:func:`~solvers.core.atom_tracks_numba.record_atoms`; labels given, one per cell)."""
        prev = self._cells
        table, *cells = self._record_atoms(
            ids, mass, position if s1 else _NO_POSITIONS, core,
            labels if labels.ndim == 1 else labels.reshape(-1),
            rho if rho.ndim == 1 else rho.reshape(-1), self._weight, *(prev or _NO_CELLS),
            prev is not None, self.tracks.end_time, self._last_t)
        self._cells = tuple(cells)
        if s1:
            return dict(zip(_CIRCLE_COLUMNS, table))
        cols = sphere_atom_columns(table[0], _sphere_positions(ids, position, table.shape[1]))
        cols["atom_core_mass"], cols["atom_mass_gained"], cols["atom_mass_lost"] = table[2:]
        return cols

    def _budget(self, d: Any, ids: np.ndarray, rho: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
        """Mass gained and lost per identity since the last record (NaN where unknown: no
        labels, no previous record, identities neither alive now nor ended now)."""
        labels = getattr(d, "atom_labels", None)
        if labels is None or np.size(labels) != np.size(rho):
            self._cells = None
            return np.full(k, np.nan), np.full(k, np.nan)
        return self._budget_numpy(labels, ids, rho, k)

    def _budget_numpy(self, labels: np.ndarray, ids: np.ndarray, rho: np.ndarray, k: int
                      ) -> tuple[np.ndarray, np.ndarray]:
        """The reference of :meth:`_budget` (labels given, one per cell)."""
        gained, lost = np.full(k, np.nan), np.full(k, np.nan)
        cells = cell_identities(labels, ids)
        cell_mass = (np.asarray(rho, float) * self.grid.cell_weight).reshape(-1)
        if self._cells is not None:
            g, lo = mass_budget(self._cells[0], self._cells[1], cells, cell_mass, k)
            ended = np.flatnonzero(self.tracks.end_time[:k] == self._last_t)  # ended now
            show = np.union1d(ids, ended).astype(int)
            gained[show], lost[show] = g[show], lo[show]
        self._cells = (cells, cell_mass)
        return gained, lost

    def block(self, width: int) -> tuple[dict[str, np.ndarray], int]:
        """The buffered records as arrays ``(records, ...)`` and the atom width (at least
        ``width``, the archive's); atom rows are NaN padded to it."""
        rows = self._rows
        names = [k for k in rows[0] if k not in ("atoms", "dirac")]
        out = {k: np.asarray([r[k] for r in rows]) for k in names}
        width = max([width] + [r["atoms"]["atom_mass"].size for r in rows])
        for name in self.atom_names:
            out[name] = _padded([r["atoms"][name] for r in rows], width)
        if "dirac" in rows[0]:
            out.update(_ragged([r["dirac"] for r in rows]))
        return out, width

    def track_arrays(self) -> dict[str, np.ndarray]:
        """The per-identity records after the last record made (empty without atoms)."""
        tr = self.tracks
        out = {} if not tr.size else {
            "atom_birth_time": tr.birth_time, "atom_end_time": tr.end_time,
            "atom_parent": tr.parent, "atom_merged_into": tr.merged_into}
        if self._cells is not None:
            out[ATOM_CELL] = self._cells[0].astype(np.int32)
        return out


def _sphere_positions(ids: np.ndarray, position: np.ndarray, k: int) -> np.ndarray:
    """S^2 positions (n, 3) in the rows of their identities (k, 3), NaN elsewhere."""
    out = np.full((k, 3), np.nan)
    out[ids] = position.reshape(-1, 3)
    return out


def _dirac_columns(d: Any, components: int = 0) -> dict[str, np.ndarray]:
    """A measure-valued snapshot's Dirac atoms in the columns of their identities (NaN padded):
    ``dirac_mass`` and ``dirac_position`` (S^1 angles; Sd, ``components`` = d: unit vectors,
    rows of d values) or ``dirac_x, dirac_y, dirac_z`` (S^2 unit vectors, positions of shape
    (n, 3)) with ``dirac_colatitude, dirac_longitude``."""
    ids = np.asarray(d.dirac_id, int)
    position = np.asarray(d.dirac_position, float)
    if components:
        width = int(ids.max()) + 1 if ids.size else 0
        mass, pos = np.full(width, np.nan), np.full((width, components), np.nan)
        mass[ids], pos[ids] = np.asarray(d.dirac_mass, float), position.reshape(-1, components)
        return {"dirac_mass": mass, "dirac_position": pos}
    if not ids.size and not position.size and not np.size(d.dirac_mass):  # a grid state's
        return dict(_NO_DIRAC[position.ndim == 2])
    width = int(ids.max()) + 1 if ids.size else 0
    columns = {"dirac_mass": np.asarray(d.dirac_mass, float)}
    if position.ndim == 2:
        angles = sphere_atom_columns(columns["dirac_mass"], position)
        columns.update({f"dirac_{c}": angles[f"atom_{c}"]
                        for c in ("x", "y", "z", "colatitude", "longitude")})
    else:
        columns["dirac_position"] = position
    out = {}
    for name, values in columns.items():
        row = np.full(width, np.nan)
        row[ids] = values
        out[name] = row
    return out


def _ragged(rows: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Rows of unequal widths as NaN-padded tables ``(records, width)``."""
    width = max(len(r[next(iter(r))]) for r in rows)
    return {name: _padded([r[name] for r in rows], width) for name in rows[0]}


def _padded(values: list[np.ndarray], width: int) -> np.ndarray:
    """Rows of at most ``width`` values (1-d, or ``(n, d)``: positions of Sd) as a NaN-padded
    table ``(rows, width)`` (or ``(rows, width, d)``)."""
    if values and np.ndim(values[0]) == 2:
        table = np.full((len(values), width, values[0].shape[1]), np.nan)
        for i, v in enumerate(values):
            table[i, :len(v)] = v
        return table
    table = np.full((len(values), width), np.nan)
    sizes = [v.size for v in values]
    if not sizes or not max(sizes):
        return table
    if min(sizes) == max(sizes):  # (identities rarely change within a block)
        table[:, :sizes[0]] = values
    else:
        table[np.arange(width) < np.array(sizes)[:, None]] = np.concatenate(values)
    return table
