"""The zarr store of a run archive (a path ending in ``.zarr``): the layout of
:mod:`solvers.io.layout` as zarr v3 arrays with ``dimension_names`` (what xarray reads), time
chunks as in the NetCDF file, ``rho`` and the spectra compressed with Blosc (zstd, shuffle).

Crash safety: zarr writes every chunk and metadata file to a temporary name and renames it
into place, so a killed writer leaves whole files. A block resizes the arrays, writes the
records (the record coordinate ``t`` last), then counts them in ``records_complete`` and
consolidates the metadata; :func:`open_zarr_run` (and a plain ``xarray.open_zarr``, which reads
the consolidated metadata) see only counted records.

Every chunk is written, also one that holds only the fill value (``write_empty_chunks``), and
the store says so (:data:`EVERY_CHUNK`): zarr reads a missing chunk as the fill value without
complaint, so the readers (:func:`open_zarr_run`) check that every chunk covering the complete
records is on disk (:func:`solvers.io.zarr_checks.missing_chunk`) and name the damaged variable. In a store written
before (without :data:`EVERY_CHUNK`) only ``rho`` and the record coordinate are checked, the
variables whose chunks are never all fill values.

A measure-valued run (``[atoms] representation = "dirac"``) has the Dirac variables of the
NetCDF file: ``dirac_mass`` and ``dirac_position`` (S^1) or ``dirac_x/y/z`` (S^2) on
``(t, dirac)``, the ``dirac`` dimension ragged like ``atom`` (resized to the widest block,
NaN padded), and the Dirac atoms of the step state behind an interpolated last record in the
attributes of ``restart_rho`` (:func:`solvers.io.restart.restart_attributes`, as JSON lists).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr
from zarr.codecs import BloscCodec

from solvers.core.snapshot import RunState
from solvers.io.cf import to_api
from solvers.io.errors import ArchiveError
from solvers.io.zarr_checks import EVERY_CHUNK, damaged_message, missing_chunk, settle_zarr_reads
from solvers.io.layout import (
    _ATOM_CHUNK,
    ATOM_CELL,
    RAGGED_DIMS,
    RECORDS_COMPLETE,
    RECORDS_WRITTEN,
    RESTART,
    TIME,
    VarSpec,
    _global_attributes,
    _Grid,
    axis_specs,
    chunk_shape,
    dimension_sizes,
    missing_variables,
    on_records,
    record_dim,
    record_specs,
    spectrum_prefix,
    track_specs,
)
from solvers.io.reader_lock import attach, refuse_if_read, shared_lock
from solvers.io.safe_paths import private_folder, replace_folder
from solvers.io.restart import restart_atoms, restart_attributes, restart_state
from solvers.model.params import RunConfig

_COMPRESSOR = BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")
def _create_array(group: zarr.Group, spec: VarSpec, sizes: dict[str, int | None],
                  records: int) -> None:
    shape = tuple(0 if sizes[d] is None else int(sizes[d]) for d in spec.dims)
    if on_records(spec.dims):
        chunks = chunk_shape(spec, sizes, records)
    else:
        chunks = tuple(_ATOM_CHUNK if d in RAGGED_DIMS else max(1, s)
                       for d, s in zip(spec.dims, shape))
    fill = spec.fill if spec.fill is not None else 0
    extra = {"compressors": _COMPRESSOR} if spec.compress else {}
    attrs = dict(spec.attrs)
    if spec.fill is not None and spec.fill_attr and np.dtype(spec.dtype).kind == "i":
        attrs["_FillValue"] = int(spec.fill)  # decoded as in the NetCDF file (floats: NaN)
    arr = group.create_array(spec.name, shape=shape, chunks=chunks, dtype=np.dtype(spec.dtype),
                             fill_value=fill, dimension_names=spec.dims, attributes=attrs,
                             **extra)
    if spec.data is not None:
        arr[...] = np.asarray(spec.data, dtype=spec.dtype)


def _consolidate(path: Path) -> None:
    with warnings.catch_warnings():  # consolidated metadata: not yet in the v3 specification
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(path))


class ZarrStore:
    """Block writer of a zarr run archive (same interface as the NetCDF store)."""

    def __init__(self, path: Path, grid: _Grid) -> None:
        self.path = path
        with _damaged(path):
            self.group = zarr.open_group(str(path), mode="r+", use_consolidated=False)
            names = list(self.group.array_keys())
            missing = missing_variables(names)
            if missing:
                raise ArchiveError(f"{path} is not a meanfield-spectral archive: missing "
                                   f"{missing}")
            self.dim = record_dim(names)  # appended to in the store's own layout
            self.n = _count(self.group)
            self.records = int(self.group["rho"].chunks[0])
            self.spectral = f"{spectrum_prefix(grid)}_real" in self.group

    @classmethod
    def create(cls, path: Path, config: RunConfig, grid: _Grid, spectral: bool,
               records: int, dirac: bool = False) -> ZarrStore:
        """Define a new store (``records`` per time chunk; ``dirac``: the Dirac atoms of a
        measure-valued run) in a private folder beside ``path`` and move it into place (an old
        store there, checked by the caller, goes with the folder)."""
        with private_folder(path) as scratch, refuse_if_read(path):  # no lazy reader swapped
            tmp = scratch / path.name
            group = zarr.open_group(str(tmp), mode="w", zarr_format=3)
            group.attrs.update({**_global_attributes(config), RECORDS_COMPLETE: 0,
                                EVERY_CHUNK: 1})
            sizes = dimension_sizes(grid, spectral, dirac)
            for spec in axis_specs(grid, spectral) + record_specs(grid, spectral, dirac):
                _create_array(group, spec, sizes, records)
            _consolidate(tmp)
            replace_folder(tmp, path, scratch)
        return cls(path, grid)

    @classmethod
    def open(cls, path: Path, grid: _Grid) -> ZarrStore:
        """Open an existing store for appending."""
        if not path.is_dir():
            raise FileNotFoundError(f"archive {path} does not exist")
        return cls(path, grid)

    @property
    def atom_width(self) -> int:
        with _damaged(self.path):
            return int(self.group["atom_mass"].shape[1])

    @property
    def dirac_width(self) -> int:
        """Columns of the ``dirac`` dimension (0 without Dirac variables)."""
        with _damaged(self.path):
            return int(self.group["dirac_mass"].shape[1]) if "dirac_mass" in self.group else 0

    def has(self, name: str) -> bool:
        return name in self.group

    def read(self, name: str, index: Any = slice(None)) -> np.ndarray:
        with _damaged(self.path):
            return np.asarray(self.group[name][index])

    def get_attr(self, name: str) -> Any:
        return self.group.attrs.get(name)

    def set_attr(self, name: str, value: Any) -> None:
        self.group.attrs[name] = value
        _consolidate(self.path)

    def add_missing_tracks(self) -> None:
        sizes = {self.dim: None, "atom": None}
        for spec in track_specs(self.dim):
            if spec.name not in self.group:
                _create_array(self.group, spec, sizes, self.records)

    def last_time(self) -> float:
        return float(self.group[self.dim][self.n - 1]) if self.n else -np.inf

    def check_room(self, count: int) -> str | None:
        """Why a block of ``count`` records cannot be written (None: it can)."""
        need = (64 << 10) + 2 * count * sum(
            int(np.prod(a.shape[1:], dtype=np.int64)) * a.dtype.itemsize
            for _, a in self.group.arrays() if a.metadata.dimension_names[:1] == (self.dim,))
        free = shutil.disk_usage(self.path).free
        return None if free >= need else f"no space left on the device ({free} bytes free)"

    def write_block(self, block: dict[str, np.ndarray], width: int,
                    tracks: dict[str, np.ndarray], restart: RunState | None = None) -> None:
        """Resize, write records ``n ..`` (the record coordinate last), the per-identity
        records and the step state behind an interpolated last record (``restart``), then count
        them complete and consolidate the metadata."""
        i, count = self.n, len(block[TIME])
        k = len(tracks.get("atom_birth_time", ()))
        width = max(width, k, self.atom_width)
        dirac = self.dirac_width
        if "dirac_mass" in block:  # Dirac identities only grow: the widest column so far
            dirac = max(dirac, int(block["dirac_mass"].shape[1]))
        new = {self.dim: i + count, "atom": width, "dirac": dirac}
        for _, arr in self.group.arrays():
            dims = arr.metadata.dimension_names
            if any(d in new for d in dims):
                arr.resize(tuple(new.get(d, s) for d, s in zip(dims, arr.shape)))
        for name, values in block.items():
            if name == TIME or name not in self.group:
                continue
            arr = self.group[name]
            if arr.ndim == 2 and arr.metadata.dimension_names[1] in RAGGED_DIMS:
                if values.shape[1]:  # NaN padded to the block's width (<= the store's)
                    arr[i:i + count, :values.shape[1]] = values
            else:
                arr[i:i + count] = values
        self.group[self.dim][i:i + count] = block[TIME]
        # the state a resume continues from, changed only now that the records are written
        for name, values in tracks.items():
            if name == ATOM_CELL:
                if name in self.group:
                    self.group[name][...] = values.reshape(self.group[name].shape)
            else:
                self.group[name][0:k] = values
        if restart is not None and RESTART in self.group:
            self.group[RESTART][...] = restart.rho.reshape(self.group[RESTART].shape)
            attrs = restart_attributes(restart, float(block[TIME][-1]))
            self.group[RESTART].attrs.update(
                {name: v.tolist() if isinstance(v, np.ndarray) else v for name, v in attrs.items()})
        self.group.attrs[RECORDS_WRITTEN] = i + count  # records and state: the block is whole
        self.n += count
        self.group.attrs[RECORDS_COMPLETE] = self.n
        _consolidate(self.path)

    def close(self) -> None:
        """Nothing to release: every block is on disk when written."""


def _complete(attrs: Any, size: int, path: Any) -> int:
    """Complete records: the ``records_complete`` count, or ``records_written`` when larger (a
    block whose records and state were written whole before a kill stopped its count)."""
    counts = []
    for name in (RECORDS_COMPLETE, RECORDS_WRITTEN):
        try:
            counts.append(int(attrs.get(name, 0)))
        except (TypeError, ValueError, OverflowError):
            raise ArchiveError(f"{path} is damaged: its {name} attribute is not a count "
                               f"({attrs.get(name)!r:.60})") from None
    n, written = counts
    return written if n < written <= size else max(0, min(n, size))


def _count(group: zarr.Group) -> int:
    dim = record_dim(group.array_keys())
    return _complete(group.attrs, int(group[dim].shape[0]), group.store)


def _open_dataset(path: Path) -> xr.Dataset:
    """The arrays' own metadata, as the writer sees them (the consolidated copy is stale after
    a kill between a block and its consolidation); the consolidated copy when the arrays'
    sizes disagree (a kill while a block resized them: the block was not written)."""
    try:
        return xr.open_zarr(str(path), consolidated=False)
    except ValueError as err:
        if "conflicting sizes" not in str(err):
            raise
        return xr.open_zarr(str(path), consolidated=True)


def open_zarr_run(path: Path) -> xr.Dataset:
    """The store's complete records as a lazy :class:`xarray.Dataset` (dask arrays; the
    record dimension ``t`` named ``time``, :func:`solvers.io.cf.to_api`). It holds
    a shared lock on the store until closed or collected, so that ``--overwrite`` cannot swap
    the data under it (:mod:`solvers.io.reader_lock`)."""
    fd = shared_lock(path)
    try:
        with warnings.catch_warnings():  # caught between a block's count and consolidation
            warnings.simplefilter("ignore", RuntimeWarning)
            ds = to_api(_open_dataset(path))  # the record dimension "t" read as "time"
        missing = missing_variables(ds.variables)
        if missing:
            raise ArchiveError(f"{path} is not a meanfield-spectral archive: missing {missing}")
        n = _complete(ds.attrs, ds.sizes["time"], path)
        gap = missing_chunk(path, n)
        if gap is not None:
            raise ArchiveError(damaged_message(path, *gap))
    except (OSError, ValueError, KeyError, RuntimeError, TypeError, AttributeError) as err:
        settle_zarr_reads()  # the reads of the other members, left pending by this failure
        if fd is not None:
            os.close(fd)
        if isinstance(err, ArchiveError):
            raise
        raise ArchiveError(f"{path} is not a readable zarr archive ({err})") from None
    return attach(ds.isel(time=slice(0, n)), fd)


@contextlib.contextmanager
def _damaged(path: Path) -> Iterator[None]:
    """Errors of reading a damaged store (a truncated chunk fails to decompress, a metadata
    file is not JSON, an attribute has the wrong type) as :class:`ArchiveError` naming the
    store and the cause."""
    try:
        yield
    except (ArchiveError, FileNotFoundError):
        raise
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError, AttributeError,
            OSError) as err:
        raise ArchiveError(f"{path} is damaged: cannot read it ({type(err).__name__}: "
                           f"{err})") from None


def _damaged_is_archive_error(read: Callable[..., Any]) -> Callable[..., Any]:
    """A reader of ``path`` whose errors on a damaged store are :class:`ArchiveError`."""
    @functools.wraps(read)
    def guarded(path: Path, *args: Any) -> Any:
        with _damaged(path):
            return read(path, *args)
    return guarded


@_damaged_is_archive_error
def load_run(path: Path) -> xr.Dataset:
    """:func:`open_zarr_run` loaded into memory (its read lock released)."""
    ds = open_zarr_run(path).load()
    ds.close()  # in memory: the store's read lock goes (solvers.io.reader_lock)
    return ds


@_damaged_is_archive_error
def count_values(path: Path) -> tuple[dict[str, Any], Any]:
    """The last complete record's ``steps_rejected`` and ``time_error_estimate`` (None where
    absent) and the ``method_history`` attribute (see
    :func:`solvers.io.reading.read_run_counts`)."""
    ds = open_zarr_run(path)
    last = ds.isel(time=-1) if ds.sizes.get("time", 0) else None
    values = {name: (last[name].values if last is not None and name in ds else None)
              for name in ("steps_rejected", "time_error_estimate")}
    return values, ds.attrs.get("method_history")


@_damaged_is_archive_error
def last_state(path: Path) -> tuple[float, int, float, np.ndarray]:
    """``(t, step, dt, rho)`` of the last complete record (for resuming)."""
    ds = open_zarr_run(path)
    if ds.sizes["time"] == 0:
        raise ArchiveError(f"archive {path} holds no snapshots")
    last = ds.isel(time=-1)
    return (float(last["time"]), int(last["step"]), float(last["dt"]),
            np.asarray(last["rho"].values, dtype=float))


@_damaged_is_archive_error
def restart_of(path: Path) -> Any:
    """The step state behind an interpolated last record, or None (see
    :func:`solvers.io.reading.read_restart`)."""
    ds = open_zarr_run(path)
    if ds.sizes["time"] == 0 or RESTART not in ds:
        return None
    return restart_state(ds[RESTART].attrs, ds[RESTART].values, float(ds["time"][-1]))


@_damaged_is_archive_error
def restart_atoms_of(path: Path) -> Any:
    """The Dirac atoms of the step state behind an interpolated last record of a
    measure-valued run, or None (see :func:`solvers.io.reading.read_restart_atoms`)."""
    ds = open_zarr_run(path)
    if ds.sizes["time"] == 0 or RESTART not in ds or "dirac_mass" not in ds:
        return None
    return restart_atoms(ds[RESTART].attrs, float(ds["time"][-1]), 3 if "dirac_x" in ds else 1)


@_damaged_is_archive_error
def dirac_near(path: Path, time: float | None) -> Any:
    """The Dirac atoms of the record nearest ``time`` (the last one if None), or None without
    Dirac variables (see :func:`solvers.io.reading.read_dirac`)."""
    from solvers.core.measure import DiracAtoms

    ds = open_zarr_run(path)
    if "dirac_mass" not in ds:
        return None
    n, s2 = ds.sizes["time"], "dirac_x" in ds
    i = n - 1 if time is None or n == 0 else _nearest(ds["time"].values, time)
    if i < 0 or ds.sizes.get("dirac", 0) == 0:
        return DiracAtoms.empty(3 if s2 else 1)

    def row(name: str) -> np.ndarray:  # (time, dirac) in a run; (dirac,) in a polished record
        var = ds[name]
        return np.asarray((var[i] if "time" in var.dims else var).values, dtype=float)

    mass = row("dirac_mass")
    pos = np.stack([row(f"dirac_{c}") for c in "xyz"], axis=1) if s2 else row("dirac_position")
    ids = np.flatnonzero(np.isfinite(mass))
    return DiracAtoms(mass[ids], pos[ids], ids)


def _nearest(times: np.ndarray, time: float) -> int:
    return int(np.argmin(np.abs(np.asarray(times, dtype=float) - time)))


@_damaged_is_archive_error
def snapshot_near(path: Path, time: float | None) -> tuple[float, Any, np.ndarray]:
    """``(t, grid, rho)`` of the record nearest ``time`` (the last one if None)."""
    ds = open_zarr_run(path)
    n = ds.sizes["time"]
    if n == 0:
        raise ArchiveError(f"archive {path} holds no snapshots")
    times = ds["time"].values
    i = n - 1 if time is None else _nearest(times, time)
    theta = np.asarray(ds["theta"].values, dtype=float)
    if "phi" in ds.variables:
        theta = (theta, np.asarray(ds["phi"].values, dtype=float))
    return float(times[i]), theta, np.asarray(ds["rho"].values[i], dtype=float)
