"""The NetCDF4 store of a run archive: defines the layout of :mod:`solvers.io.layout` in a file,
appends blocks of records, and keeps the ``records_complete`` count that readers trust.

A block is written in three syncs: the records (the record coordinate ``t`` last); the state a
resume continues from with the block's marker ``records_written``; the count
``records_complete``. A process killed during the first leaves the count of the blocks before;
one killed later leaves a block that readers count only when its marker is on disk.

Nothing a block writes is an attribute: the counts are 0-d variables and the step state's
description a vector (:mod:`solvers.io.restart`), all rewritten in place. netCDF-C rewrites an
attribute by deleting and re-creating it in an HDF5 object header, and a kill during that
flush can leave a file that does not open. Archives of the earlier layout keep these values
in attributes, and a resume appends to them in their own layout.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np

from solvers.core.snapshot import RunState
from solvers.io.errors import ArchiveError
from solvers.io.layout import (
    ATOM_CELL,
    COMPRESSION,
    RECORDS_COMPLETE,
    RECORDS_WRITTEN,
    RESTART,
    TIME,
    VarSpec,
    _Grid,
    is_ragged,
    on_records,
    record_dim,
    axis_specs,
    chunk_shape,
    dimension_sizes,
    record_specs,
    spectrum_prefix,
    track_specs,
)
from solvers.io.restart import (
    COUNT_VARIABLES,
    RESTART_INFO,
    RESTART_INFO_DIM,
    encode_info,
    restart_attributes,
)

# Compressed chunks change size when a block extends them, and HDF5 then moves them and
# rewrites its chunk index: a SIGKILL in the middle left unreadable files (1 kill in 2 in
# tests/io/test_kill_resume.py). Uncompressed chunks are rewritten in place.
COMPRESS_NETCDF = False
_MARGIN = 64 << 10  # bytes kept free beyond the chunks a block rewrites (HDF5 metadata)


def create_variable(nc: netCDF4.Dataset, spec: VarSpec, records: int) -> None:
    """Define ``spec`` in ``nc`` (time chunks of ``records``) and write its fixed data."""
    kw: dict[str, Any] = {} if spec.fill is None else {"fill_value": spec.fill}
    if on_records(spec.dims):
        sizes = {d: len(nc.dimensions[d]) for d in spec.dims}
        kw["chunksizes"] = chunk_shape(spec, sizes, records)
    if spec.compress and COMPRESS_NETCDF:
        kw.update(COMPRESSION)
    var = nc.createVariable(spec.name, spec.dtype, spec.dims, **kw)
    var.setncatts(spec.attrs)
    if spec.data is not None:
        var[:] = spec.data


def define(nc: netCDF4.Dataset, grid: _Grid, spectral: bool, records: int,
           dirac: bool = False) -> None:
    """Dimensions and variables of a new archive (``records`` per time chunk; ``dirac``: the
    Dirac atoms of a measure-valued run)."""
    for name, size in dimension_sizes(grid, spectral, dirac).items():
        nc.createDimension(name, size)
    specs = axis_specs(grid, spectral) + record_specs(grid, spectral, dirac)
    for spec in specs:
        create_variable(nc, spec, records)
    _define_block_state(nc)
    nc.sync()  # the HDF5 datasets now exist, with their fill values
    for spec in specs:
        if spec.fill is not None and not spec.fill_attr:
            nc[spec.name].delncattr("_FillValue")  # unwritten entries still read NaN


def _define_block_state(nc: netCDF4.Dataset) -> None:
    """The variables a block rewrites in place of attributes: the two record counts (0-d,
    written 0 now so that their storage exists) and the step state's description."""
    for name, text in zip(COUNT_VARIABLES, (
            "number of complete records: readers read records 0 .. records_complete - 1",
            "records written whole, records and the state a resume continues from (a larger "
            "value than records_complete counts)")):
        var = nc.createVariable(name, "i4", ())
        var.setncatts({"units": "1", "long_name": text})
        var.assignValue(0)
    nc.createDimension(RESTART_INFO_DIM, None)
    var = nc.createVariable(RESTART_INFO, "f8", (RESTART_INFO_DIM,), chunksizes=(1024,),
                            fill_value=np.nan)
    var.setncatts({"units": "1", "long_name": (
        "step state behind an interpolated last record: [after_time, restart_time, "
        "restart_step, restart_dt, n, d, dirac mass (n), dirac position (d n), dirac id (n)] "
        "(n = -1: no Dirac atoms; valid when after_time equals the last record's time)")})


def define_atom_tracks(nc: netCDF4.Dataset) -> None:
    """Add the per-identity records and stop criteria that an old archive lacks."""
    records = _records_per_chunk(nc)
    for spec in track_specs(record_dim(nc.dimensions)):
        if spec.name not in nc.variables:
            create_variable(nc, spec, records)


def _records_per_chunk(nc: netCDF4.Dataset) -> int:
    chunks = nc["rho"].chunking()
    return 1 if chunks == "contiguous" else int(chunks[0])


def _count_attribute(nc: netCDF4.Dataset, name: str) -> int | None:
    if name not in nc.ncattrs():
        return None
    try:
        return int(np.asarray(nc.getncattr(name)).reshape(-1)[0])
    except (TypeError, ValueError, OverflowError, IndexError):
        raise ArchiveError(f"{nc.filepath()} is damaged: its {name} attribute is not a count "
                           f"({nc.getncattr(name)!r:.60})") from None


def _count(nc: netCDF4.Dataset, name: str) -> int | None:
    """A record count: the 0-d variable ``name``, or the global attribute of archives written
    before it."""
    var = nc.variables.get(name)
    if var is None:
        return _count_attribute(nc, name)
    value = np.ma.filled(np.ma.asarray(var[...], dtype=float), np.nan).reshape(-1)
    if value.size != 1 or not np.isfinite(value[0]) or value[0] < 0:
        raise ArchiveError(f"{nc.filepath()} is damaged: its {name} variable is not a count")
    return int(value[0])


def valid_records(nc: netCDF4.Dataset) -> int:
    """Number of complete records: the ``records_complete`` count, or ``records_written`` when
    that is larger (a block synced whole, records and state, before a kill stopped its count:
    counted, so that a resume continues from the state the archive holds); in archives written
    before the counts, the records up to the last finite time (written last in a record)."""
    times = record_times(nc)
    size = len(nc.dimensions[times.dimensions[0]])
    complete = _count(nc, RECORDS_COMPLETE)
    if complete is not None:
        written = _count(nc, RECORDS_WRITTEN)
        if written is not None and complete < written <= size:
            return written
        return max(0, min(complete, size))
    t = np.ma.filled(np.ma.asarray(times[:], dtype=float), np.nan)
    finite = np.flatnonzero(np.isfinite(t))
    return int(finite[-1]) + 1 if finite.size else 0


def record_times(nc: netCDF4.Dataset) -> netCDF4.Variable:
    """The record coordinate of an archive: ``t``, or ``time`` in the earlier layout."""
    return nc.variables[record_dim(nc.dimensions)]


class NetCDFStore:
    """Block writer of an open NetCDF4 archive (created or opened for appending)."""

    def __init__(self, nc: netCDF4.Dataset, path: Path, grid: _Grid) -> None:
        self.nc, self.path = nc, path
        self.dim = record_dim(nc.dimensions)  # appended to in the archive's own layout
        self.n = valid_records(nc)
        self.records = _records_per_chunk(nc)
        self.spectral = f"{spectrum_prefix(grid)}_real" in nc.variables
        self._per_record: tuple[tuple | None, int] = (None, 0)  # (layout key, bytes): room check
        self._is_ragged: dict[str, bool] = {}

    @property
    def atom_width(self) -> int:
        return len(self.nc.dimensions["atom"])

    def has(self, name: str) -> bool:
        return name in self.nc.variables

    def get_attr(self, name: str) -> Any:
        value = self.nc.getncattr(name) if name in self.nc.ncattrs() else None
        return value.item() if isinstance(value, np.generic) else value

    def set_attr(self, name: str, value: Any) -> None:
        self.nc.setncattr(name, value)
        self.nc.sync()

    def add_missing_tracks(self) -> None:
        define_atom_tracks(self.nc)

    def read(self, name: str, index: Any = slice(None)) -> np.ndarray:
        """Values of a variable (masked entries as NaN, or -1 for integers)."""
        values = np.ma.asarray(self.nc[name][index])
        return np.ma.filled(values.astype(float) if values.dtype.kind == "f" else values,
                            np.nan if values.dtype.kind == "f" else -1)

    def last_time(self) -> float:
        return float(self.nc[self.dim][self.n - 1]) if self.n else -np.inf

    def _bytes_per_record(self) -> int:
        """Bytes one record allocates over all record variables; recomputed only when the
        variables or the sizes of the other dimensions (atoms, Dirac atoms) change."""
        nc = self.nc
        key = (len(nc.variables),
               tuple(len(d) for name, d in nc.dimensions.items() if name != self.dim))
        if self._per_record[0] != key:
            self._per_record = (key, sum(_bytes_per_record(var) for var in nc.variables.values()
                                         if var.dimensions[:1] == (self.dim,)))
        return self._per_record[1]

    def check_room(self, count: int) -> str | None:
        """Why a block of ``count`` records cannot be written (None: it can). Chunks are
        stored uncompressed: the block allocates, for each record variable, the whole
        chunks it starts (``records`` records each) and rewrites the others in place; plus a
        margin for metadata."""
        per_record = self._bytes_per_record()
        new_chunks = -(-(self.n + count) // self.records) - (-(-self.n // self.records))
        need = _MARGIN + new_chunks * self.records * per_record
        size = self.path.stat().st_size
        st = os.statvfs(self.path.parent)
        free = st.f_bavail * st.f_frsize
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if free < need:
            return f"no space left on the device ({free} bytes free)"
        if limit != resource.RLIM_INFINITY and size + need > limit:
            return f"the file-size limit (ulimit -f: {limit} bytes) is reached"
        return None

    def write_block(self, block: dict[str, np.ndarray], width: int,
                    tracks: dict[str, np.ndarray], restart: RunState | None = None) -> None:
        """Write records ``n ..`` from ``block`` (its ``time``, the record coordinate, last)
        and sync; then the state a resume continues from (the per-identity records, the cells'
        atom identities, the step state behind the last record when it is interpolated:
        ``restart``) with the block's marker ``records_written``, and sync; then count the
        records complete and sync again.
        A kill before the second sync leaves the state of the counted records (nothing of it
        is changed before the block's records are on disk); after it, the marker counts the
        block (:func:`valid_records`)."""
        nc, i = self.nc, self.n
        count, variables = len(block[TIME]), nc.variables  # not nc[name]: it parses a path
        for name, values in block.items():
            var = variables.get(name)
            if name == TIME or var is None:
                continue
            if self._ragged(name, var):
                if values.shape[1]:  # NaN padded to the block's width (atoms: >= the file's)
                    var[i:i + count, 0:values.shape[1]] = values
            else:
                var[i:i + count, ...] = values
        variables[self.dim][i:i + count] = block[TIME]
        nc.sync()
        k = len(tracks.get("atom_birth_time", ()))
        for name, values in tracks.items():
            if name == ATOM_CELL:
                if name in variables:
                    variables[name][...] = values.reshape(variables[name].shape)
            else:
                variables[name][0:k] = values
        if restart is not None and RESTART in variables:
            variables[RESTART][...] = restart.rho.reshape(variables[RESTART].shape)
            self._write_restart_info(restart_attributes(restart, float(block[TIME][-1])))
        self._set_count(RECORDS_WRITTEN, i + count)
        nc.sync()
        self.n += count
        self._set_count(RECORDS_COMPLETE, self.n)
        nc.sync()

    def _write_restart_info(self, attrs: dict[str, Any]) -> None:
        """The step state's description: the vector, its ``after_time`` last (archives
        written before it: the attributes of ``restart_rho``)."""
        info = self.nc.variables.get(RESTART_INFO)
        if info is None:
            self.nc.variables[RESTART].setncatts(attrs)
            return
        vector = encode_info(attrs)
        info[1:vector.size] = vector[1:]
        info[0] = vector[0]

    def _set_count(self, name: str, value: int) -> None:
        var = self.nc.variables.get(name)
        if var is None:
            self.nc.setncattr(name, np.int64(value))
        else:
            var.assignValue(value)

    def _ragged(self, name: str, var: netCDF4.Variable) -> bool:
        """Whether ``var`` is on ``(t, atom)`` or ``(t, dirac)`` (cached per name)."""
        ragged = self._is_ragged.get(name)
        if ragged is None:
            ragged = self._is_ragged[name] = is_ragged(var.dimensions)
        return ragged

    def close(self) -> None:
        if self.nc.isopen():
            self.nc.close()


def _bytes_per_record(var: netCDF4.Variable) -> int:
    """Bytes one record of ``var`` allocates, whole chunks along the other dimensions."""
    chunks = var.chunking()
    if chunks == "contiguous":
        return int(np.prod(var.shape[1:], dtype=np.int64)) * var.dtype.itemsize
    cells = 1
    for size, chunk in zip(var.shape[1:], chunks[1:]):
        cells *= max(1, -(-size // chunk)) * chunk
    return cells * var.dtype.itemsize
