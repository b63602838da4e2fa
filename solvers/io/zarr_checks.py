"""Damage checks of a zarr run archive and the clean-up of zarr's reads.

zarr reads a missing chunk as the fill value without complaint: :func:`missing_chunk` finds a
chunk that the complete records of a store need and that is not on disk, and
:func:`damaged_message` is the one-line error that names the variable. A store that says
:data:`EVERY_CHUNK` was written with every chunk, also one of fill values only (zarr's
``array.write_empty_chunks``, set here for the process: zarr does not keep it with the array).

zarr v3 reads a group's members in asyncio tasks on its own loop thread: :func:`settle_zarr_reads`
waits for the reads a failed open left pending, and at exit (:func:`_close_zarr_loop`, registered
after zarr's own clean-up so that it runs first) the loop is stopped and closed without printing
``Event loop is closed`` after the command's error line.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import warnings
from collections.abc import Iterator
from concurrent.futures import TimeoutError as concurrent_timeout
from pathlib import Path
from typing import Any

import zarr

from solvers.io.layout import ATOM_CELL, RAGGED_DIMS, RESTART, record_dim

EVERY_CHUNK = "every_chunk_written"  # group attribute: no chunk left out as all fill values
# chunks that are all fill values are written too (a missing one is then damage); zarr's
# array configuration is not stored with the array, so it is set for the process
zarr.config.set({"array.write_empty_chunks": True})
_SETTLE_S = 10.0  # seconds given to zarr's pending reads to finish at a failure or at exit


def settle_zarr_reads(cancel: bool = False, timeout: float = _SETTLE_S) -> None:
    """Wait until the tasks on zarr's event loop are done (``cancel``: cancel those still
    pending after ``timeout`` and wait for them to unwind).

    zarr v3 reads a group's members in asyncio tasks on its own loop thread; when one member
    is damaged the read raises and leaves the others pending. Left so, at interpreter exit
    zarr closes its loop under them and each one prints ``Exception ignored in: <coroutine
    _getitem_semaphore> ... RuntimeError: Event loop is closed`` (now and then, when the
    machine is busy), after the command's one error line."""
    from zarr.core import sync

    loop = sync.loop[0]
    if loop is None or loop.is_closed() or not loop.is_running():
        return

    async def settle() -> None:
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        if not tasks:
            return
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        if pending and cancel:
            for task in pending:
                task.cancel()
            done |= (await asyncio.wait(pending, timeout=timeout))[0]
        for task in done:  # retrieved: "exception was never retrieved" is not reported
            if not task.cancelled():
                task.exception()

    try:
        asyncio.run_coroutine_threadsafe(settle(), loop).result(2 * timeout + 1)
    except (RuntimeError, TimeoutError, asyncio.CancelledError, concurrent_timeout):
        pass


def _close_zarr_loop() -> None:
    """At exit, before zarr's own clean-up (atexit runs the later registration first): settle
    the pending reads, stop zarr's loop and join its thread without zarr's 0.2 s limit (a busy
    machine missed it: a warning and ``Cannot close a running event loop``), then close it."""
    from zarr.core import sync

    settle_zarr_reads(cancel=True)
    loop, thread = sync.loop[0], sync.iothread[0]
    if loop is None or loop.is_closed():
        return
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(loop.stop)
    if thread is not None:
        thread.join(_SETTLE_S)
        if thread.is_alive():
            return  # zarr's clean-up deals with it
    with contextlib.suppress(RuntimeError):
        loop.close()
        sync.loop[0] = sync.iothread[0] = None


atexit.register(_close_zarr_loop)  # after zarr's (imported above): it runs before it
_SLOTS = ("resume_state_0", "resume_state_1")  # solvers.io.resume_slots.SLOTS (checked there)
_WRITTEN_LATER = (ATOM_CELL, *_SLOTS)  # written only by some runs, or checked elsewhere




def chunk_keys(array: Any, extent: tuple[int, ...]) -> Iterator[str]:
    """The keys (``c/0/1``) of the chunks of ``array`` that cover its first ``extent`` values."""
    grid = [range(-(-int(e) // int(c))) for e, c in zip(extent, array.chunks)]
    for coords in itertools.product(*grid):
        yield array.metadata.encode_chunk_key(coords)


def absent_chunk(path: Path, name: str, array: Any, extent: tuple[int, ...]) -> str | None:
    """The first chunk of the variable ``name`` covering ``extent`` that is not on disk in the
    store at ``path`` (None: all are)."""
    folder = Path(path) / name
    if not (folder / "zarr.json").is_file():
        return "zarr.json"
    for key in chunk_keys(array, extent):
        if not (folder / key).is_file():
            return key
    return None


def missing_chunk(path: Path, n: int) -> tuple[str, str] | None:
    """``(variable, chunk key)`` of a chunk that the complete records (the first ``n``) or an
    axis need and that is not on disk (deleted, or lost with a disk), else None. A store with
    :data:`EVERY_CHUNK` has every such chunk; older ones are checked on ``rho`` and the record
    coordinate only (their chunks that held only fill values were left out). The step state
    behind an interpolated last record (``restart_rho``) is checked when its attributes say
    that it holds one."""
    with warnings.catch_warnings():  # a killed writer's temporary '.partial' files
        warnings.simplefilter("ignore")
        group = zarr.open_group(str(path), mode="r")  # the consolidated metadata: one file
    names = sorted(group.array_keys())
    dim = record_dim(names)
    every = bool(group.attrs.get(EVERY_CHUNK))
    checked = names if every else [v for v in (dim, "rho", RESTART) if v in names]
    for name in checked:
        if name in _WRITTEN_LATER:
            continue
        array = group[name]
        if name == RESTART and "restart_time" not in array.attrs:
            continue  # no step state behind the last record: never written
        dims = tuple(array.metadata.dimension_names or ())
        if any(d in RAGGED_DIMS for d in dims):  # columns added later: NaN before they were
            continue
        extent = tuple(array.shape)
        if dims[:1] == (dim,):
            extent = (n, *extent[1:])
        key = absent_chunk(path, name, array, extent)
        if key is not None:
            return name, key
    return _ragged_gap(path, group, names) if every else None


def _ragged_gap(path: Path, group: Any, names: list[str]) -> tuple[str, str] | None:
    """``(variable, chunk key)`` of a per-identity variable (``(t, atom)``, ``(t, dirac)``)
    that lacks a chunk which another variable of its dimension has on disk. A block writes
    the columns it holds into every such variable at once, so their chunk files come and go
    together; a column chunk a block did not reach is absent from all of them (not damage)."""
    for ragged in RAGGED_DIMS:
        family = {}
        for name in names:
            dims = tuple(group[name].metadata.dimension_names or ())
            if len(dims) == 2 and dims[1] == ragged and name not in _WRITTEN_LATER:
                folder = Path(path) / name / "c"
                family[name] = ({str(f.relative_to(Path(path) / name)) for f in
                                 folder.rglob("*") if f.is_file()} if folder.is_dir() else set(),
                                group[name].chunks)
        for name, (keys, chunks) in sorted(family.items()):
            for other, (theirs, their_chunks) in sorted(family.items()):
                missing = sorted(theirs - keys) if their_chunks == chunks else []
                if missing:
                    return name, missing[0]
    return None


def damaged_message(path: Path, name: str, key: str) -> str:
    """The one-line error of a store whose variable ``name`` lacks the file ``key``."""
    what = "its metadata" if key == "zarr.json" else f"chunk {key}"
    return (f"{path} is damaged: variable '{name}' lacks {what} (deleted or lost; zarr would "
            f"read it as missing values); restore the store from a copy, or run again "
            f"(meanfield run CONFIG -o {path} --overwrite)")
