"""Readers of a zarr store hold a shared lock on its folder; ``--overwrite`` refuses while one is
held.

A zarr store is a folder of files read by path: a lazy reader (a Dataset whose arrays are
read on demand) would read the chunks of a new store moved to the same path, the data
swapped under it. So a lazy reader opened by :func:`solvers.io.zarr_store.open_zarr_run`
holds a shared :func:`fcntl.flock` on the store's folder for as long as its Dataset lives
(until ``ds.close()`` or garbage collection; :func:`solvers.open_run` loads the data and lets
go at once), and replacing a store (:func:`refuse_if_read`) takes the exclusive lock without
waiting: while a reader holds the store, the overwrite is refused with
:class:`~solvers.io.lock.ArchiveBusyError` and the store is left as it was. A reader that
opens the folder by other means (``xarray.open_zarr`` directly) holds no lock: load it
(``.load()``) before overwriting the store.
"""

from __future__ import annotations

import fcntl
import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_folder(path: Path) -> int | None:
    try:
        return os.open(path, _FLAGS)
    except OSError:  # not there, not a folder, a link: nothing to lock
        return None


def shared_lock(path: str | os.PathLike) -> int | None:
    """A descriptor of the folder ``path`` holding a shared lock (None when it cannot be
    locked). Waits while a writer swaps the store, and locks the folder that is then at the
    path."""
    for _ in range(10):
        fd = _open_folder(Path(path))
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        except OSError:
            pass
        os.close(fd)  # replaced meanwhile: lock the new folder
    return None


def attach(ds: Any, fd: int | None) -> Any:
    """Release the lock ``fd`` when ``ds`` (an :class:`xarray.Dataset`) is closed or
    collected; returns ``ds``."""
    if fd is None:
        return ds
    release = weakref.finalize(ds, os.close, fd)
    closer = getattr(ds, "_close", None)

    def close() -> None:
        release()
        if closer is not None:
            closer()

    ds.set_close(close)
    return ds


@contextmanager
def refuse_if_read(path: str | os.PathLike) -> Iterator[None]:
    """Hold the exclusive lock of the store folder ``path`` (if there is one) for the block;
    :class:`~solvers.io.lock.ArchiveBusyError` when a reader holds it."""
    fd = _open_folder(Path(path))
    if fd is None:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            from solvers.io.lock import ArchiveBusyError

            raise ArchiveBusyError(f"{path} is open for reading (a Dataset from open_zarr_run "
                                   "not closed): close it (ds.close()) and try again, or write "
                                   "elsewhere; the store is left as it was") from None
        yield
    finally:
        os.close(fd)
