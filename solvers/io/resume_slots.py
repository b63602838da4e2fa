"""The exact state a resume continues from, kept in two alternating slots of the archive.

A record is what a reader wants; a resume needs more to take bitwise the uninterrupted run's
steps: the solver's own state array (the default method's spectral point values or its
Lagrangian cells ``[X, m, A, ids]`` with the phase tag; a Dirac state's flat array; the grid
step state behind an interpolated record), the discretisation's own state (the next atom
identity, mass floors), the controller's next step, the counts at that step state, and the
atom tracks and cell identities the archive links the next records with. That is a
:class:`~solvers.core.snapshot.RunState` plus the per-identity tracks, kept in one float64
vector per slot:

``[VERSION, after_time, len_0, ..., len_8, section_0, ..., section_8]``

sections: the scalars ``(t, step, dt, n_rejected, time_error, dt_next, mass)``, the
discretisation's extras, the state, ``atom_birth_time``, ``atom_end_time``, ``atom_parent``,
``atom_merged_into``, ``atom_cell``, the stop rule's window and atom identities
(:func:`~solvers.timestepping.stop_rule.pack_state`; integers are exact in float64). ``after_time`` is the
time of the record the slot belongs to: the slot is valid when it equals the time of the
archive's last complete record.

Two slots, ``resume_state_0`` and ``resume_state_1`` (1-d variables on their own dimensions
``resume_0`` and ``resume_1``, grown as needed): a block writes the slot that does not hold
the state of the archive's last complete record, body first and header (with ``after_time``)
last, before the block's records are synced and counted. A kill at any moment leaves the
other slot whole and valid for the records the archive counts; a kill after the block is
counted finds the new slot whole (it was synced with the records, before the count).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from solvers.core.snapshot import RunState
from solvers.timestepping.stop_rule import pack_state

log = logging.getLogger(__name__)
VERSION = 2.0
SLOTS = ("resume_state_0", "resume_state_1")
SLOT_DIMS = ("resume_0", "resume_1")  # (not the variables' names: xarray would index by them)
TRACKS = ("atom_birth_time", "atom_end_time", "atom_parent", "atom_merged_into")
ATOM_CELL = "atom_cell"
_SECTIONS = 9  # scalars, extras, state, the four tracks, atom_cell, the stop rule
HEADER = 2 + _SECTIONS
_CHUNK = 4096  # values per chunk (the header sits in the first)
_INT_TRACKS = ("atom_parent", "atom_merged_into")


def encode(resume: RunState, after: float, tracks: dict[str, np.ndarray]) -> np.ndarray:
    """The slot vector of ``resume`` behind the record at time ``after``, with the archive's
    per-identity ``tracks`` and ``atom_cell`` (:meth:`RecordBuffer.track_arrays`)."""
    scalars = np.array([resume.t, resume.step, resume.dt, resume.n_rejected, resume.time_error,
                        resume.dt_next, resume.mass], dtype=float)
    empty = np.zeros(0)
    sections = [scalars, np.asarray(resume.extras, dtype=float).reshape(-1),
                np.asarray(resume.state, dtype=float).reshape(-1)]
    sections += [np.asarray(tracks.get(name, empty), dtype=float).reshape(-1)
                 for name in (*TRACKS, ATOM_CELL)]
    rule = resume.rule
    sections.append(empty if rule is None else pack_state(rule) if isinstance(rule, tuple)
                    else np.asarray(rule, dtype=float).reshape(-1))
    head = [VERSION, float(after)] + [float(s.size) for s in sections]
    return np.concatenate([np.asarray(head), *sections])


def decode(vector: np.ndarray) -> dict[str, Any] | None:
    """``{"after": time, "resume": RunState, "tracks": {...}, "atom_cell": ids or None}``
    of a slot vector (None: empty, another version, or inconsistent lengths)."""
    v = np.asarray(vector, dtype=float).reshape(-1)
    if v.size < HEADER or v[0] != VERSION:
        return None
    sizes = v[2:HEADER]
    if not (np.all(np.isfinite(sizes)) and np.all(sizes >= 0) and np.all(sizes == np.rint(sizes))
            and np.isfinite(v[1])) or HEADER + sizes.sum() > v.size:
        return None
    bounds = np.concatenate([[0], np.cumsum(sizes.astype(np.int64))]) + HEADER
    part = [v[bounds[i]:bounds[i + 1]] for i in range(_SECTIONS)]
    if part[0].size != 7:
        return None
    t, step, dt, rejected, error, dt_next, mass = part[0]
    resume = RunState(float(t), int(step), float(dt), part[2].copy(), int(rejected),
                         float(error), float(dt_next), float(mass), tuple(map(float, part[1])),
                         part[8].copy() if part[8].size else None, exact=True)
    tracks = {}
    if part[3].size:
        tracks = {name: (part[3 + i].astype(np.int32) if name in _INT_TRACKS else part[3 + i].copy())
                  for i, name in enumerate(TRACKS)}
    cells = part[7].astype(np.int64) if part[7].size else None
    return {"after": float(v[1]), "resume": resume, "tracks": tracks, "atom_cell": cells}


def saved_tracks(found: dict[str, Any], width: int) -> dict[str, np.ndarray]:
    """The per-identity tracks of a decoded slot, cut or padded (NaN, or -1 for integers) to
    ``width`` identities (the archive's atom columns)."""
    out = {}
    for name, values in found["tracks"].items():
        fill = -1 if values.dtype.kind == "i" else np.nan
        pad = np.full(max(0, width - values.size), fill, dtype=values.dtype)
        out[name] = np.concatenate([values[:width], pad])
    return out


# -- the two stores -------------------------------------------------------------------------
def handle_of(store: Any) -> Any:
    """The open NetCDF dataset or zarr group of an archive store."""
    return store.nc if hasattr(store, "nc") else store.group


def _slot_values(handle: Any, name: str) -> np.ndarray | None:
    """A slot's values in an open NetCDF dataset, zarr group or :class:`xarray.Dataset`
    (None: no such slot)."""
    if name not in (handle.variables if hasattr(handle, "variables") else handle):
        return None
    values = handle[name][:]
    values = getattr(values, "values", values)  # (a DataArray's)
    return np.ma.filled(np.ma.asarray(values, dtype=float), np.nan)


def pick(handle: Any, last_time: float, damaged: Any = ()) -> tuple[int, dict[str, Any] | None]:
    """``(index, decoded)`` of the slot whose ``after_time`` is ``last_time`` (the archive's last
    complete record), or ``(-1, None)`` when neither is; the slots named in ``damaged`` are
    not valid."""
    for i, name in enumerate(SLOTS):
        if name in damaged:
            continue
        try:
            values = _slot_values(handle, name)
            found = decode(values) if values is not None and values.size >= HEADER else None
        except (OSError, ValueError, KeyError, TypeError, IndexError, RuntimeError):
            found = None  # a damaged slot is not valid (the other, or the last record, is used)
        if found is not None and found["after"] == last_time:
            return i, found
    return -1, None


def valid_vector(handle: Any, last_time: float) -> np.ndarray:
    """The valid slot of ``handle`` (an open archive or :class:`xarray.Dataset`) for its last
    record at ``last_time``, re-encoded without the stale tail (empty: none). Two runs that
    took the same steps have equal ones, whichever slot holds it (that depends on how the
    records were blocked, as does what the other slot holds)."""
    found = pick(handle, last_time)[1]
    if found is None:
        return np.zeros(0)
    cells = found["atom_cell"]
    tracks = {**found["tracks"], **({} if cells is None else {ATOM_CELL: cells})}
    return encode(found["resume"], found["after"], tracks)


def write(handle: Any, slot: int, vector: np.ndarray) -> None:
    """Write ``vector`` into slot ``slot`` of an open NetCDF dataset (``netCDF4.Dataset``) or
    zarr group: the body first, the header (which makes it valid) last. Nothing is synced here:
    the block's record sync that follows makes both durable before the block is counted."""
    name, dim = SLOTS[slot], SLOT_DIMS[slot]
    if hasattr(handle, "createVariable"):
        if name not in handle.variables:
            handle.createDimension(dim, None)
            var = handle.createVariable(name, "f8", (dim,), chunksizes=(_CHUNK,))
            var.setncatts({"units": "1",
                           "long_name": "exact state a resume continues from (one of two slots; "
                                        "valid when its after_time, value 1, is the last "
                                        "record's time)"})
        var = handle.variables[name]
    else:
        if name not in handle:
            handle.create_array(name, shape=(0,), chunks=(_CHUNK,), dtype=np.float64,
                                fill_value=np.nan, dimension_names=(dim,))
        var = handle[name]
        if var.shape[0] < vector.size:
            var.resize((vector.size,))
    var[HEADER:vector.size] = vector[HEADER:]
    var[0:HEADER] = vector[:HEADER]


def read_resume(path: str | os.PathLike, last_time: float) -> dict[str, Any] | None:
    """The decoded valid slot of the archive at ``path`` (see :func:`decode`) for its last
    complete record at ``last_time``; None when it has none (an archive written before the
    slots, or a discretisation that cannot be restored exactly)."""
    try:
        return _read_resume(Path(path), last_time)
    except (OSError, ValueError, KeyError, TypeError, IndexError, RuntimeError) as err:
        # a damaged slot does not stop a resume: it continues from the last record instead
        log.warning("%s: its resume slots cannot be read (%s); resuming from the last record",
                    path, err)
        return None


def _read_resume(path: Path, last_time: float) -> dict[str, Any] | None:
    if path.suffix == ".zarr" or path.is_dir():
        import zarr

        with warnings.catch_warnings():  # a killed writer's temporary '.partial' files
            warnings.simplefilter("ignore")
            damaged = damaged_slots(path)
            group = zarr.open_group(str(path), mode="r", use_consolidated=False)
            found = pick(group, last_time, damaged)[1]
        if found is None and damaged:
            log.warning("%s: resume slot %s is damaged; resuming from the last record, "
                        "not bitwise the uninterrupted run", path,
                        " and ".join(f"{name} ({why})" for name, why in damaged.items()))
        return found
    import netCDF4

    with netCDF4.Dataset(path, "r") as nc:
        return pick(nc, last_time)[1]


def damaged_slots(path: Path) -> dict[str, str]:
    """The resume slots of the zarr store at ``path`` that are damaged, with why: a slot the
    store's metadata lists whose folder or a chunk of whose values is not on disk (zarr would
    read the gap as NaN)."""
    import zarr

    from solvers.io.zarr_checks import absent_chunk

    group = zarr.open_group(str(path), mode="r")  # the consolidated metadata lists the slots
    out = {}
    for name in SLOTS:
        if name not in group:
            continue
        array = group[name]
        key = absent_chunk(path, name, array, tuple(array.shape))
        if key is not None:
            out[name] = f"{'metadata' if key == 'zarr.json' else 'chunk ' + key} missing"
    return out


def exact_start(path: str | os.PathLike, last_time: float) -> RunState | None:
    """The exact solver state behind the last record (at ``last_time``) of the archive at
    ``path``, from its valid slot (what :func:`~solvers.timestepping.loop.simulate` resumes
    from, ``exact``); None when it has none (the resume then starts from the record, or the
    step state behind it)."""
    return _exact(read_resume(path, last_time))


def exact_from(ds: Any, last_time: float) -> RunState | None:
    """:func:`exact_start` of a run :class:`xarray.Dataset` (as :func:`solvers.open_run` reads
    an archive: its slot variables loaded)."""
    return _exact(pick(ds, last_time)[1])


def _exact(found: dict[str, Any] | None) -> RunState | None:
    return None if found is None else found["resume"]
