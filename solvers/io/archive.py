"""NetCDF4 run archive: the only module that touches netCDF4 / xarray.

One run is one NetCDF4 file with an unlimited ``time`` dimension. The writer appends one
record per :class:`~solvers.core.snapshot.Snapshot` and calls ``Dataset.sync()`` after each, so a
run killed at any moment (``kill -9``, Ctrl-C) leaves a file that ``xarray.open_dataset``
reads with every snapshot written so far.

Layout on S^1
-------------
Dimensions: ``time`` (unlimited), ``theta`` (N), ``wavenumber`` (N//2 + 1), ``atom``
(unlimited; rows are NaN-padded up to the largest atom count seen).
Variables: ``theta(theta)``, ``cell_weight(theta)``, ``wavenumber(wavenumber)``,
``time(time)``, ``step(time)`` int64, ``dt(time)``, ``rho(time, theta)``,
``rho_hat_real/imag(time, wavenumber)`` with ``rho = sum_k c_k e^{i k theta}``,
``c = numpy.fft.rfft(rho) / N``, every diagnostic of :class:`~solvers.core.snapshot.Diagnostics`
as ``(time)``, and ``atom_mass/atom_position(time, atom)``.

Layout on S^2 (``lmax = domain.resolution``, the grid of ``SphereGrid(lmax)``)
-------------------------------------------------------------------------------
Dimensions: ``time``, ``theta`` (nlat), ``phi`` (nphi), ``lm`` (nlm), ``atom``.
Variables: ``theta(theta)`` colatitudes of the Gauss nodes and ``phi(phi)`` longitudes
(radians), auxiliary coordinates ``lat(theta)``, ``lon(phi)`` in degrees,
``cell_weight(theta, phi)`` (cell areas = quadrature weights, summing to 4 pi: the mass is
``(rho * cell_weight).sum(("theta", "phi"))``), ``rho(time, theta, phi)``,
``rho_lm_real/imag(time, lm)`` = :meth:`spectral.SphereBasis.forward` of ``rho`` (orthonormal
complex ``Y_lm``, Condon-Shortley phase, ``m >= 0`` stored) with coordinates ``degree(lm)``,
``order(lm)``, the diagnostics as on S^1, and ``atom_mass``, ``atom_x``, ``atom_y``,
``atom_z`` (unit vectors), ``atom_colatitude``, ``atom_longitude`` (radians), all
``(time, atom)`` and NaN padded.

Global attributes: every parameter of :func:`solvers.model.params.flatten` under
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
A new archive is defined under a temporary name in its folder and renamed into place
(``--overwrite`` replaces an old file only by that rename). Before each record the writer
checks the free space and the file-size limit and raises :class:`ArchiveWriteError` (the
archive keeps its complete records and stays readable) when the record would not fit. The
readers live in :mod:`solvers.io.reading` and are re-exported here.
"""

from __future__ import annotations

import logging
import os
import resource
from pathlib import Path

import netCDF4
import numpy as np

from solvers.core.atom_tracks import AtomTracks, link_radius
from solvers.core.snapshot import Snapshot
from solvers.io.layout import (  # noqa: F401  (public names re-exported)
    _HDF5_SIGNATURE,
    ARCHIVE_FORMAT,
    ATOM_TRACK_VARIABLES,
    STATIONARITY_VARIABLES,
    define_atom_tracks,
    define_dirac,
    CIRCLE_ATOM_VARIABLES,
    DIAGNOSTIC_VARIABLES,
    KERNEL_CONVENTIONS,
    REQUIRED_VARIABLES,
    SPHERE_ATOM_VARIABLES,
    _define_circle_axes,
    _define_records,
    _define_sphere_axes,
    _global_attributes,
    _make_grid,
    _utc_now,
    _valid_records,
    attr_value,
    config_attributes,
    package_version,
    param_attr_name,
    rho_hat,
    sphere_atom_columns,
)
from solvers.io.lock import ArchiveBusyError, ArchiveLock, temporary_sibling  # noqa: F401
from solvers.io.reading import (  # noqa: F401  (public names re-exported)
    _check_archive,
    _existing,
    _reading,
    open_run,
    read_config_text,
    read_last_dirac,
    read_last_state,
    read_snapshot,
)
from solvers.model.params import RunConfig

log = logging.getLogger(__name__)
_MARGIN = 64 << 10  # bytes kept free beyond the chunks a record allocates (HDF5 metadata)


def _time_chunks(nc: netCDF4.Dataset) -> list[tuple[int, int]]:
    """``(records per chunk, chunk bytes)`` of every variable along ``time``: record ``i``
    allocates the chunks of the variables with ``i % records == 0`` (the worst case, every
    chunk uncompressed)."""
    out = []
    for var in nc.variables.values():
        chunks = var.chunking()
        if not var.dimensions or var.dimensions[0] != "time" or chunks == "contiguous":
            continue
        out.append((int(chunks[0]), int(np.prod(chunks)) * var.dtype.itemsize))
    return out


class ArchiveWriteError(OSError):
    """A record could not be written (disk full, file-size limit); the archive keeps the
    records before it and stays readable."""


def _open_append(path: Path) -> netCDF4.Dataset:
    path = _existing(path)
    try:
        nc = netCDF4.Dataset(path, "a")
    except OSError as err:
        raise ValueError(f"cannot open {path} for appending: not a NetCDF4 file, or open "
                         f"elsewhere (another run, or an unclosed reader) ({err})") from err
    _check_archive(nc, path)
    return nc


class ArchiveWriter:
    """Append :class:`~solvers.core.snapshot.Snapshot` records to a NetCDF4 archive.

    Parameters
    ----------
    path : str or PathLike
        The archive file (parent folders are created).
    config : RunConfig
        The run configuration, stored as global attributes.
    theta : ndarray, shape (N,) on S^1, (nlat,) on S^2
        Cell centres in radians (S^2: the Gauss colatitudes, ``SphereGrid(lmax).theta``).
    cell_weight : ndarray, shape (N,) on S^1, (nlat, nphi) on S^2
        Cell measures, ``(rho * cell_weight).sum()`` is the mass (S^2: ``SphereGrid.area``).
    append : bool
        Resume: open the existing file (which must exist and have the same grid) and append
        records after its last time; a ``history`` line is added. ``overwrite`` is ignored.
    overwrite : bool
        Replace an existing file for a new run (otherwise FileExistsError).
    phi : ndarray, shape (nphi,), optional
        Longitudes of an S^2 grid (``SphereGrid(lmax).phi``); given = S^2 layout, and then
        ``config.domain`` must be S2 with ``lmax = domain.resolution``.

    Notes
    -----
    Use as a context manager, or call :meth:`close`. Instances are callable, so they can be
    handed to ``simulate`` as trackers. Each record is synced to disk when written.
    """

    def __init__(self, path: str | os.PathLike, config: RunConfig, theta: np.ndarray,
                 cell_weight: np.ndarray, append: bool = False, overwrite: bool = False,
                 phi: np.ndarray | None = None) -> None:
        self.path = Path(path)
        self.grid = _make_grid(config, theta, cell_weight, phi)
        self.theta, self.phi = self.grid.theta, self.grid.phi
        self.cell_weight = self.grid.cell_weight
        if not append:
            _check_target(self.path)
        self._lock = ArchiveLock(self.path).acquire()
        try:
            self._nc = self._open_append(config) if append else self._create(config, overwrite)
        except BaseException:
            self._lock.release()
            raise
        self._n = _valid_records(self._nc)
        self._last_t = float(self._nc["time"][self._n - 1]) if self._n else -np.inf
        self._chunks = _time_chunks(self._nc)
        self._tracks = self._load_tracks(config)

    def _load_tracks(self, config: RunConfig) -> AtomTracks:
        """Atom identities: new, or continued from the last record of an appended archive."""
        link = link_radius(config.atoms.link_radius)
        dim = 2 if self.phi is None else 3
        nc, width = self._nc, len(self._nc.dimensions["atom"])
        if self._n == 0 or width == 0:
            define_atom_tracks(nc)
            return AtomTracks(link, dim)
        row = lambda name: np.ma.filled(np.ma.asarray(nc[name][self._n - 1, :width], float), np.nan)
        pos = row("atom_position") if dim == 2 else np.stack([row(f"atom_{c}") for c in "xyz"], 1)
        old = {k: np.ma.filled(np.ma.asarray(nc[k][:width]), -1 if k.endswith(("parent", "into"))
                               else np.nan) for k in ATOM_TRACK_VARIABLES if k in nc.variables}
        define_atom_tracks(nc)
        nan, neg = np.full(width, np.nan), np.full(width, -1)
        return AtomTracks.restore(link, row("atom_mass"), pos, old.get("atom_birth_time", nan),
                                  old.get("atom_end_time", nan), old.get("atom_parent", neg),
                                  old.get("atom_merged_into", neg))

    def _create(self, config: RunConfig, overwrite: bool) -> netCDF4.Dataset:
        """Define the file under a temporary name and rename it into place (replacing an old
        archive only by the rename: readers of the old file keep it intact)."""
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"archive {self.path} already exists: pass --overwrite "
                                  "(overwrite=True) to replace it, --resume to continue it, "
                                  "or delete it")
        tmp = temporary_sibling(self.path)
        nc = netCDF4.Dataset(tmp, "w", format="NETCDF4", clobber=True)
        try:
            nc.setncatts(_global_attributes(config))
            nc.createDimension("time", None)
            nc.createDimension("theta", self.theta.size)
            nc.createDimension("atom", None)
            (_define_circle_axes if self.phi is None else _define_sphere_axes)(nc, self.grid)
            _define_records(nc, self.grid)
            if config.atoms.representation == "dirac":
                define_dirac(nc)
            nc.sync()
            os.replace(tmp, self.path)
            _sync_folder(self.path.parent)
        except BaseException:
            nc.close()
            tmp.unlink(missing_ok=True)
            raise
        return nc

    def _open_append(self, config: RunConfig) -> netCDF4.Dataset:
        nc = _open_append(self.path)
        try:
            self._check_grid(nc)
            line = f"{_utc_now()} resumed by meanfield-spectral {package_version()}"
            changed = _changed_parameters(nc, config)
            if changed:
                line += "; changed: " + ", ".join(changed)
            nc.setncattr("history", f"{getattr(nc, 'history', '')}\n{line}".lstrip("\n"))
            nc.sync()
        except BaseException:
            nc.close()
            raise
        return nc

    def _check_grid(self, nc: netCDF4.Dataset) -> None:
        for name, ours in (("theta", self.theta), ("phi", self.phi)):
            old = np.asarray(nc[name][:], dtype=float) if name in nc.variables else None
            if (old is None) != (ours is None) or (old is not None and (
                    old.shape != ours.shape or not np.allclose(old, ours, rtol=0, atol=1e-12))):
                size = "none" if old is None else old.size
                raise ValueError(f"cannot append to {self.path}: its {name} grid (size {size}) "
                                 f"differs from this run's (size "
                                 f"{'none' if ours is None else ours.size})")

    @property
    def n_records(self) -> int:
        """Number of complete records in the file."""
        return self._n

    def write_snapshot(self, snapshot: Snapshot) -> bool:
        """Append one record and sync it to disk.

        Returns False (and writes nothing) when ``snapshot.t`` equals the last written time
        (a repeated final snapshot); raises ValueError when it is earlier.
        """
        rho = np.asarray(snapshot.rho, dtype=float)
        if rho.shape != self.grid.shape:
            raise ValueError(f"rho has shape {rho.shape}, archive grid has {self.grid.shape}")
        t = float(snapshot.t)
        if t <= self._last_t:
            if np.isclose(t, self._last_t, rtol=1e-12, atol=1e-14):
                return False
            raise ValueError(f"snapshot time {t} precedes the last archived time {self._last_t}")
        self._check_room()
        try:
            self._write_record(self._n, snapshot, rho)
            self._nc.sync()
        except (OSError, RuntimeError) as err:  # netCDF4 reports I/O errors as RuntimeError
            raise ArchiveWriteError(f"cannot write record {self._n + 1} to {self.path} ({err}); "
                                    f"it holds {self._n} complete records") from None
        self._n += 1
        self._last_t = t
        return True

    def _check_room(self) -> None:
        """Refuse a record that the disk or the file-size limit (``ulimit -f``) cannot take,
        before writing any of it: a half-written HDF5 file may not open again."""
        need = sum(size for every, size in self._chunks if self._n % every == 0) + _MARGIN
        st = os.statvfs(self.path.parent)
        free = st.f_bavail * st.f_frsize
        size = self.path.stat().st_size
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if free < need:
            why = f"no space left on the device ({free} bytes free)"
        elif limit != resource.RLIM_INFINITY and size + need > limit:
            why = f"the file-size limit (ulimit -f: {limit} bytes) is reached"
        else:
            return
        raise ArchiveWriteError(f"cannot write record {self._n + 1} to {self.path}: {why}; "
                                f"it holds {self._n} complete records")

    __call__ = write_snapshot

    def _write_record(self, i: int, snapshot: Snapshot, rho: np.ndarray) -> None:
        nc, d = self._nc, snapshot.diagnostics
        nc["rho"][i, ...] = rho
        mass, pos, core = self._by_identity(snapshot)
        if self.phi is None:
            c, prefix = rho_hat(rho), "rho_hat"
            atoms = {"atom_mass": mass, "atom_position": pos}
        else:
            c, prefix = self.grid.basis.forward(rho), "rho_lm"
            atoms = sphere_atom_columns(mass, pos)
        atoms["atom_core_mass"] = core
        nc[f"{prefix}_real"][i, :] = c.real
        nc[f"{prefix}_imag"][i, :] = c.imag
        nc["step"][i] = int(snapshot.step)
        nc["dt"][i] = float(snapshot.dt)
        for name in DIAGNOSTIC_VARIABLES:
            nc[name][i] = getattr(d, name)
        self._write_atoms(i, atoms)
        self._write_dirac(i, d)
        self._write_tracks(i, snapshot)
        nc["time"][i] = float(snapshot.t)  # last: a record counts once its time is written

    def _by_identity(self, snapshot: Snapshot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Link the snapshot's atoms to identities; mass (k,), position (k,) or (k, 3), core
        mass (k,) with one column per identity so far, NaN where an identity is not alive."""
        d = snapshot.diagnostics
        mass = np.asarray(d.atom_mass, float).reshape(-1)
        position = np.asarray(d.atom_position, float)
        if position.size != mass.size * (1 if self.phi is None else 3):
            raise ValueError(f"atom_position has shape {position.shape}, expected "
                             f"({mass.size},{'' if self.phi is None else ' 3'})")
        ids = self._tracks.link(float(snapshot.t), mass, position)
        k = self._tracks.size
        core = np.asarray(d.atom_core_mass, float).reshape(-1)
        out_m, out_c = np.full(k, np.nan), np.full(k, np.nan)
        out_p = np.full(k, np.nan) if self.phi is None else np.full((k, 3), np.nan)
        out_m[ids] = mass
        out_p[ids] = position.reshape(-1) if self.phi is None else position.reshape(-1, 3)
        out_c[ids] = core if core.size == mass.size else np.nan
        return out_m, out_p, out_c

    def _write_tracks(self, i: int, snapshot: Snapshot) -> None:
        """Per-identity records (whole arrays) and the stop criteria of this snapshot."""
        nc, tr, k = self._nc, self._tracks, self._tracks.size
        if k:
            for name, values in (("atom_birth_time", tr.birth_time), ("atom_end_time", tr.end_time),
                                 ("atom_parent", tr.parent), ("atom_merged_into", tr.merged_into)):
                nc[name][0:k] = values
        st = snapshot.stationarity
        for name in STATIONARITY_VARIABLES:
            nc[f"stationary_{name}"][i] = -1 if st is None else int(getattr(st, name))

    def _write_atoms(self, i: int, columns: dict[str, np.ndarray]) -> None:
        """Write equal-length 1-D atom columns as NaN-padded rows of the ``atom`` dimension."""
        sizes = {v.shape for v in columns.values()}
        if len(sizes) != 1 or len(next(iter(sizes))) != 1:
            raise ValueError("atom_mass and atom_position must be 1-D arrays of equal length")
        n = next(iter(sizes))[0]
        width = max(len(self._nc.dimensions["atom"]), n)
        if width == 0:
            return
        for name, values in columns.items():
            row = np.full(width, np.nan)
            row[:n] = values
            self._nc[name][i, 0:width] = row

    def _write_dirac(self, i: int, d: object) -> None:
        """Dirac atoms (measure-valued runs) in the columns of their identities, NaN padded."""
        if "dirac_mass" not in self._nc.variables:
            return
        ids = np.asarray(d.dirac_id, int)
        width = max(len(self._nc.dimensions["dirac"]), int(ids.max()) + 1 if ids.size else 0)
        if width == 0:
            return
        for name, values in (("dirac_mass", d.dirac_mass), ("dirac_position", d.dirac_position)):
            row = np.full(width, np.nan)
            row[ids] = values
            self._nc[name][i, 0:width] = row

    def close(self) -> None:
        """Sync and close the file (idempotent)."""
        try:
            if self._nc.isopen():
                self._nc.close()
        finally:
            self._lock.release()

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_target(path: Path) -> None:
    """Errors for paths that cannot hold an archive; creates missing parent folders."""
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give an archive file name, e.g. {path}/run.nc")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"{parent} is a file, not a folder: cannot write {path}")
            break
    path.parent.mkdir(parents=True, exist_ok=True)


def _sync_folder(folder: Path) -> None:
    """fsync a folder so that a rename in it survives a crash (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _changed_parameters(nc: netCDF4.Dataset, config: RunConfig) -> list[str]:
    """``"key old -> new"`` for every parameter attribute that differs from ``config``."""
    out = []
    for name, new in config_attributes(config).items():
        old = nc.getncattr(name) if name in nc.ncattrs() else None
        if isinstance(old, np.generic):
            old = old.item()
        if old != new:
            out.append(f"{name} {old!r} -> {new!r}")
    return out
