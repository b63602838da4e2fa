"""Run archive writer (NetCDF4, or zarr for a path ending in ``.zarr``); with
:mod:`solvers.io.reading`, :mod:`solvers.io.netcdf_store`, :mod:`solvers.io.zarr_store` and
:mod:`solvers.io.resume_slots` (the exact state a resume continues from) the only modules that
touch netCDF4 / zarr files.

One run is one archive with an unlimited record dimension ``t`` (the readers name it
``time``: :mod:`solvers.io.cf`), one record per
:class:`~solvers.core.snapshot.Snapshot`. The writer buffers records in memory and appends
them in blocks: at each time-chunk boundary, and at least every ``output.sync_interval``
seconds of wall time (the first 16 records one by one, then blocks after 0.1 s, doubling), each
block synced to disk and then counted in the global attribute ``records_complete``. A run
killed with ``kill -9`` leaves an archive that ``xarray.open_dataset`` reads, missing at most
the snapshots of the last ``sync_interval`` seconds; Ctrl-C, SIGTERM and a normal end write
every snapshot (:meth:`ArchiveWriter.close`). Readers trust ``records_complete`` (archives
written before it: the records up to the last finite time).

Layout on S^1
-------------
Dimensions: ``t`` (unlimited), ``theta`` (N), ``wavenumber`` (N//2 + 1), ``atom``
(unlimited; rows are NaN-padded up to the largest atom count seen).
Variables: ``theta(theta)``, ``cell_weight(theta)``, ``wavenumber(wavenumber)``,
``t(t)``, ``step(t)`` int32, ``dt(t)``, ``rho(t, theta)``,
``rho_hat_real/imag(t, wavenumber)`` (only with ``output.spectral``) with ``rho = sum_k c_k e^{i k theta}``,
``c = numpy.fft.rfft(rho) / N``, every diagnostic of :class:`~solvers.core.snapshot.Diagnostics`
as ``(t)``, and ``atom_mass/atom_position(t, atom)``.

Layout on S^2 (``lmax = domain.resolution``, the grid of ``SphereGrid(lmax)``)
-------------------------------------------------------------------------------
Dimensions: ``t``, ``theta`` (nlat), ``phi`` (nphi), ``lm`` (nlm), ``atom``.
Variables: ``theta(theta)`` colatitudes of the Gauss nodes and ``phi(phi)`` longitudes
(radians), auxiliary coordinates ``lat(theta)``, ``lon(phi)`` in degrees,
``cell_weight(theta, phi)`` (cell areas = quadrature weights, summing to 4 pi: the mass is
``(rho * cell_weight).sum(("theta", "phi"))``), ``rho(t, theta, phi)``,
``rho_lm_real/imag(t, lm)`` (only with ``output.spectral``) =
:meth:`spectral.SphereBasis.forward` of ``rho`` (orthonormal
complex ``Y_lm``, Condon-Shortley phase, ``m >= 0`` stored) with coordinates ``degree(lm)``,
``order(lm)``, the diagnostics as on S^1, and ``atom_mass``, ``atom_x``, ``atom_y``,
``atom_z`` (unit vectors), ``atom_colatitude``, ``atom_longitude`` (radians), all
``(t, atom)`` and NaN padded.

Records are chunked along ``t`` in blocks of the snapshots the run expects, at most 64
records or about 2 MiB of ``rho`` (:func:`~solvers.io.layout.time_chunk`); zarr stores
compress them.

Global attributes: ``records_complete``, every parameter of :func:`solvers.model.params.flatten` under
:func:`param_attr_name` (``model.beta`` -> ``model__beta``; lists and None as JSON strings,
bools as ints), ``config_text``, ``version``, ``scheme``, ``kernel``, ``manifold``,
``created``, ``history``, ``python``, ``numpy``.

Concurrent reading
------------------
HDF5 locks a file that a process holds open for writing: from another process a plain
``xarray.open_dataset`` of a running archive fails (unless that process was started with
``HDF5_USE_FILE_LOCKING=FALSE``; HDF5 reads it once, at import). The readers of this module
then read a temporary copy of the file (the last synced state), and load the data into memory.
A second writer is kept out earlier and for sure by the advisory lock of
:mod:`solvers.io.lock` (:class:`ArchiveBusyError`).

Writing
-------
A new archive is defined in a private temporary folder beside it and renamed into place
(``--overwrite`` replaces an old file only by that rename, and only when it is an archive of
ours: :func:`solvers.io.safe_paths.check_target`). Before each record the writer
checks the free space and the file-size limit and raises :class:`ArchiveWriteError` (the
archive keeps its complete records and stays readable) when the block would not fit. The
readers live in :mod:`solvers.io.reading`.
"""

from __future__ import annotations

import logging
import os
import time as wallclock
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np

from solvers.core.atom_tracks import AtomTracks, link_radius
from solvers.core.snapshot import Snapshot, Tracker
from solvers.io.errors import ArchiveError
from solvers.io.cf import utc_now
from solvers.io.layout import (
    ATOM_CELL,
    ATOM_TRACK_VARIABLES,
    _global_attributes,
    _make_grid,
    config_attributes,
    expected_records,
    package_version,
    time_chunk,
)
from solvers.io.lock import ArchiveLock
from solvers.io.netcdf_store import NetCDFStore, define
from solvers.io.reading import check_archive, existing_archive, is_zarr
from solvers.io.safe_paths import (
    UnsafePathError,
    check_bool,
    check_target,
    private_folder,
    replace_file,
)
from solvers.io import resume_slots
from solvers.io.records import RecordBuffer
from solvers.model.method import resolve
from solvers.model.params import RunConfig

log = logging.getLogger(__name__)
FIRST_SYNC = 0.1  # seconds from the first snapshot to the first block; doubles to sync_interval
FIRST_RECORDS = 16  # the first records of a writer are synced one by one, as they come


class ArchiveWriteError(OSError):
    """A block of records could not be written (disk full, file-size limit); the archive keeps
    the records before it and stays readable."""


class ArchiveWriter(Tracker):
    """Append :class:`~solvers.core.snapshot.Snapshot` records to a run archive.

    Parameters
    ----------
    path : str or PathLike
        The archive: a NetCDF4 file, or a zarr store when it ends in ``.zarr`` (parent
        folders are created).
    config : RunConfig
        The run configuration, stored as global attributes; ``config.output`` sets
        ``sync_interval`` and ``spectral`` (None: stored).
    theta : ndarray, shape (N,) on S^1, (nlat,) on S^2
        Cell centres in radians (S^2: the Gauss colatitudes, ``SphereGrid(lmax).theta``).
    cell_weight : ndarray, shape (N,) on S^1, (nlat, nphi) on S^2
        Cell measures, ``(rho * cell_weight).sum()`` is the mass (S^2: ``SphereGrid.area``).
    append : bool
        Resume: open the existing archive (which must exist and have the same grid) and append
        records after its last complete one; a ``history`` line is added; the spectrum is
        stored as the archive already does. ``overwrite`` is ignored.
    overwrite : bool
        Replace an existing archive for a new run (otherwise FileExistsError); only an
        archive or report this project wrote is replaced, anything else (a user's file or
        folder, a link, a device) raises :class:`~solvers.io.safe_paths.UnsafePathError`. A
        bool only (a ConfigError otherwise).
    phi : ndarray, shape (nphi,), optional
        Longitudes of an S^2 grid (``SphereGrid(lmax).phi``); given = S^2 layout, and then
        ``config.domain`` must be S2 with ``lmax = domain.resolution``.

    Notes
    -----
    Use as a context manager, or call :meth:`close` (which writes the buffered records).
    Instances are callable, so they can be handed to ``simulate`` as trackers.
    """

    def __init__(self, path: str | os.PathLike, config: RunConfig, theta: np.ndarray,
                 cell_weight: np.ndarray, append: bool = False, overwrite: bool = False,
                 phi: np.ndarray | None = None) -> None:
        overwrite = check_bool(overwrite)  # "no" is not False
        config = resolve(config)  # the method's representation, cfl and cfl_floor, as archived
        self.path = Path(path)
        self.grid = _make_grid(config, theta, cell_weight, phi)
        self.theta, self.phi = self.grid.theta, self.grid.phi
        self.cell_weight = self.grid.cell_weight
        if not append:
            _check_target(self.path)
        elif self.path.is_symlink():  # its lock would sit beside the link, not the archive
            raise UnsafePathError(f"{self.path} is a symbolic link: resume the archive at its "
                                  f"real path ({os.path.realpath(self.path)})")
        self._lock = ArchiveLock(self.path).acquire()
        try:
            self._store = self._open_append(config) if append else self._create(config, overwrite)
        except BaseException:
            self._lock.release()
            raise
        self._last_t = self._store.last_time()
        # the exact resume state of the last complete record (a resumed archive), and its slot
        handle = resume_slots.handle_of(self._store)
        self._slot, self._saved = resume_slots.pick(handle, self._last_t) if append else (-1, None)
        self._buffer = RecordBuffer(self.grid, self._store.spectral, self._load_tracks(config),
                                    self._load_cells())
        self._every, self._written = float(config.output.sync_interval), 0
        self._wait, self._synced = min(FIRST_SYNC, self._every), -np.inf
        self._failed = False
        self._restart = None  # the step state behind the last buffered record (interpolated)
        self._resume = None  # the exact resume state behind it (solvers.io.resume_slots)

    def _load_tracks(self, config: RunConfig) -> AtomTracks:
        """Atom identities: new, or continued from the last record of an appended archive."""
        link = link_radius(config.atoms.link_radius)
        dim = self.grid.components or (2 if self.phi is None else 3)
        store, n, width = self._store, self._store.n, self._store.atom_width
        if self._saved is not None:  # the identities then (a killed block may have widened these)
            width = min(width, len(self._saved["tracks"].get("atom_birth_time", ())))
        if n == 0 or width == 0:
            store.add_missing_tracks()
            return AtomTracks(link, dim)
        row = lambda name: store.read(name, (n - 1, slice(0, width))).astype(float)
        pos = row("atom_position") if dim == 2 else np.stack([row(f"atom_{c}") for c in "xyz"], 1)
        if self._saved is not None:  # the slot's copy: whole, where a kill may have cut these
            old = resume_slots.saved_tracks(self._saved, width)
        else:
            old = {k: store.read(k, slice(0, width)) for k in ATOM_TRACK_VARIABLES if store.has(k)}
        store.add_missing_tracks()
        nan, neg = np.full(width, np.nan), np.full(width, -1)
        return AtomTracks.restore(link, row("atom_mass"), pos, old.get("atom_birth_time", nan),
                                  old.get("atom_end_time", nan), old.get("atom_parent", neg),
                                  old.get("atom_merged_into", neg))

    def _load_cells(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The cells' atom identities and masses at the last record of an appended archive
        (None: a new archive, or one written before ``atom_cell``)."""
        store = self._store
        if self._saved is not None and self._saved["atom_cell"] is not None:
            cells = self._saved["atom_cell"]
        elif store.n == 0 or not store.has(ATOM_CELL) or self._saved is not None:
            return None
        else:
            cells = store.read(ATOM_CELL).astype(np.int64).reshape(-1)
        rho = store.read("rho", store.n - 1).astype(float)
        return cells, (rho * self.grid.cell_weight).reshape(-1)

    def _create(self, config: RunConfig, overwrite: bool) -> Any:
        """Define the archive under a temporary name and rename it into place (replacing an
        old archive only by the rename: readers of the old file keep it intact)."""
        check_target(self.path, overwrite)  # nothing there, or (overwrite) an archive of ours
        spectral = bool(config.output.spectral)
        # every snapshot synced as it comes (sync_interval 0 or unset): chunks of one record,
        # else of the run's expected snapshots, at most 64 or about 2 MiB of rho
        expected = expected_records(config)
        records = time_chunk(self.grid, expected) if config.output.sync_interval else 1
        dirac = config.atoms.representation == "dirac"
        if is_zarr(self.path):
            from solvers.io.zarr_store import ZarrStore

            return ZarrStore.create(self.path, config, self.grid, spectral, records, dirac)
        with private_folder(self.path) as scratch:  # no link at a guessable name followed
            tmp = scratch / self.path.name
            nc = netCDF4.Dataset(tmp, "w", format="NETCDF4", clobber=False)
            try:
                nc.setncatts(_global_attributes(config))
                define(nc, self.grid, spectral, records, dirac)
                nc.sync()
                replace_file(tmp, self.path)
            except BaseException:
                nc.close()
                raise
        return NetCDFStore(nc, self.path, self.grid)

    def _open_append(self, config: RunConfig) -> Any:
        if is_zarr(self.path):
            from solvers.io.zarr_store import ZarrStore

            store = ZarrStore.open(self.path, self.grid)
        else:
            store = NetCDFStore(_open_append(self.path), self.path, self.grid)
        try:
            self._check_grid(store)
            line = f"{utc_now()} resumed by meanfield-spectral {package_version()}"
            changed = _changed_parameters(store, config)
            if changed:
                line += "; changed: " + ", ".join(changed)
            store.set_attr("history", f"{store.get_attr('history') or ''}\n{line}".lstrip("\n"))
        except BaseException:
            store.close()
            raise
        return store

    def _check_grid(self, store: Any) -> None:
        for name, ours in (("theta", self.theta), ("phi", self.phi)):
            old = store.read(name).astype(float) if store.has(name) else None
            if (old is None) != (ours is None) or (old is not None and (
                    old.shape != ours.shape or not np.allclose(old, ours, rtol=0, atol=1e-12))):
                size = "none" if old is None else old.size
                raise ArchiveError(f"cannot append to {self.path}: its {name} grid (size "
                                   f"{size}) differs from this run's (size "
                                   f"{'none' if ours is None else ours.size})")

    @property
    def n_records(self) -> int:
        """Number of records: complete in the archive plus buffered."""
        return self._store.n + len(self._buffer)

    def write_snapshot(self, snapshot: Snapshot) -> bool:
        """Buffer one record; append the buffer as one block when a time chunk is full or
        the sync interval has passed.

        Returns False (and writes nothing) when ``snapshot.t`` equals the last written time
        (a repeated final snapshot); raises ValueError when it is earlier.
        """
        return self.write_snapshots((snapshot,)) == 1

    __call__ = write_snapshot

    def write_snapshots(self, snapshots: Sequence[Snapshot]) -> int:
        """Buffer the records of ``snapshots`` (in time order) as :meth:`write_snapshot` does
        each, but decide once, after the last, whether they go out as a block: the first
        ``FIRST_RECORDS`` records of a writer then go out together, not one by one (a full
        time chunk is still written as it fills). Returns how many were buffered."""
        added = 0
        for snap in snapshots:
            if self._add(snap):
                added += 1
                if self.n_records % self._store.records == 0:
                    self._flush_synced()
        if len(self._buffer) and (self._written - added < FIRST_RECORDS
                                  or wallclock.monotonic() - self._synced >= self._wait):
            self._flush_synced()
        return added

    track_many = write_snapshots  # a tracker's batch form (solvers.core.snapshot.Tracker)

    def _add(self, snapshot: Snapshot) -> bool:
        """Check and buffer one record (False: a repeat of the last time, not buffered)."""
        rho = np.asarray(snapshot.rho, dtype=float)
        if rho.shape != self.grid.shape:
            raise ValueError(f"rho has shape {rho.shape}, archive grid has {self.grid.shape}")
        t = float(snapshot.t)
        if t <= self._last_t:
            if np.isclose(t, self._last_t, rtol=1e-12, atol=1e-14):
                return False
            raise ValueError(f"snapshot time {t} precedes the last archived time {self._last_t}")
        self._buffer.add(snapshot, rho)
        self._last_t, self._restart = t, snapshot.restart
        self._resume = getattr(snapshot, "resume", None)
        self._written += 1
        return True

    def _flush_synced(self) -> None:
        self.flush()
        self._synced, self._wait = wallclock.monotonic(), min(2.0 * self._wait, self._every)

    def flush(self) -> None:
        """Append the buffered records as one block, synced and counted complete."""
        if not len(self._buffer) or self._failed:
            return
        store, count = self._store, len(self._buffer)
        why = store.check_room(count)
        first, last = store.n + 1, store.n + count
        if why is None:
            try:
                block, width = self._buffer.block(store.atom_width)
                tracks = self._buffer.track_arrays()
                self._write_resume(self._last_t, tracks)
                store.write_block(block, width, tracks, self._restart)
            except (OSError, RuntimeError) as err:  # netCDF4 reports I/O errors as RuntimeError
                why = str(err)
        if why is not None:
            self._failed = True
            self._buffer.clear()
            raise ArchiveWriteError(f"cannot write records {first}-{last} to {self.path}: "
                                    f"{why}; it holds {store.n} complete records")
        self._buffer.clear()

    def _write_resume(self, after: float, tracks: dict[str, np.ndarray]) -> None:
        """The exact resume state behind the block's last record (at ``after``) into the slot
        that does not hold the archive's current one (:mod:`solvers.io.resume_slots`), before
        the block's records are synced and counted."""
        if self._resume is None:
            return
        slot = 1 - self._slot if self._slot >= 0 else 0
        vector = resume_slots.encode(self._resume, after, tracks)
        resume_slots.write(resume_slots.handle_of(self._store), slot, vector)
        self._slot = slot  # (valid once the block is counted; a failed block stops the writer)

    def set_attributes(self, attrs: dict[str, Any]) -> None:
        """Set global attributes (the run's verdict, :mod:`solvers.studies.verdict`), after
        writing the buffered records."""
        self.flush()
        for name, value in attrs.items():
            self._store.set_attr(name, value)

    def close(self) -> None:
        """Write the buffered records, close the archive and release its lock (idempotent)."""
        try:
            self.flush()
        finally:
            try:
                self._store.close()
            finally:
                self._lock.release()

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_append(path: Path) -> netCDF4.Dataset:
    path = existing_archive(path)
    try:
        nc = netCDF4.Dataset(path, "a")
    except OSError as err:
        raise ArchiveError(f"cannot open {path} for appending: not a NetCDF4 file, or open "
                           f"elsewhere (another run, or an unclosed reader) ({err})") from err
    check_archive(nc, path)
    return nc


def _check_target(path: Path) -> None:
    """Errors for paths that cannot hold an archive; creates missing parent folders."""
    if path.is_dir() and not is_zarr(path):
        raise IsADirectoryError(f"{path} is a folder; give an archive file name, e.g. {path}/run.nc")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"{parent} is a file, not a folder: cannot write {path}")
            break
    path.parent.mkdir(parents=True, exist_ok=True)


def _changed_parameters(store: Any, config: RunConfig) -> list[str]:
    """``"key old -> new"`` for every parameter attribute that differs from ``config``."""
    out = []
    for name, new in config_attributes(config).items():
        old = store.get_attr(name)
        if old != new:
            out.append(f"{name} {old!r} -> {new!r}")
    return out
