"""Advisory write locks and atomic replacement for run archives.

A writer of ``dir/run.nc`` holds an exclusive :func:`fcntl.flock` on the sidecar
``dir/.run.nc.lock`` for as long as it writes; a second writer of the same path (a second
``meanfield run -o``, a ``--resume``, an ``--overwrite``) is refused at once with
:class:`ArchiveBusyError` naming the holder's process id. New archives are built under a
temporary name in the same folder and renamed into place
(:func:`solvers.io.safe_paths.private_folder`, ``os.replace``), so a reader never sees a truncated file and an old archive is replaced only
by the rename. Neither side file follows a link planted at its name: the lock file is opened
with ``O_NOFOLLOW`` and must be a plain file with one link, and the temporary archive lives
in a private folder of a random name (:mod:`solvers.io.safe_paths`).

The lock file holds the writer's pid (for the message); it is removed on release. A locker
checks after ``flock`` that the lock file it holds is still the one at the path (another
writer may have released and removed it meanwhile) and retries otherwise.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from pathlib import Path

from solvers.io.safe_paths import open_side_file, sync_folder  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)
BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)  # flock's answers when another holds the lock


class ArchiveBusyError(RuntimeError):
    """Another live process writes the archive (it holds the archive's lock)."""


def lock_path(path: str | os.PathLike) -> Path:
    """The sidecar lock file of an archive: ``dir/.NAME.lock``."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def _holder(fd: int) -> str:
    """`` (pid N)`` of the lock's holder, read from the open lock file ``fd``."""
    try:
        pid = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        pid = ""
    return f" (pid {pid})" if pid.isdigit() else ""


def check_not_busy(path: str | os.PathLike) -> None:
    """Raise :class:`ArchiveBusyError` when a live process holds the lock of the archive at
    ``path`` (a resume must not read a file another process is writing: its slots and last
    records are in flux). Creates nothing: an absent lock file means nobody writes, and the
    probe takes a shared lock on an existing one only for the test."""
    lock = lock_path(path)
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # absent (nobody writes), or a link (the writer itself refuses it)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in BUSY:
            raise _busy(path, fd) from None
        raise
    finally:
        os.close(fd)


def _busy(path: str | os.PathLike, fd: int) -> ArchiveBusyError:
    """The error for an archive whose lock (open as ``fd``) another process holds."""
    return ArchiveBusyError(f"{Path(path)} is being written by another process{_holder(fd)}; "
                            "wait for it to finish or write elsewhere with -o")


class ArchiveLock:
    """Exclusive, non-blocking advisory lock of one archive path (a context manager).

    Raises
    ------
    ArchiveBusyError
        When another process holds the lock.
    OSError
        When the lock file cannot be created (e.g. a read-only folder).
    UnsafePathError
        When a link, or anything but a plain file with one link, sits at the lock's name.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.lock = lock_path(self.path)
        self._fd: int | None = None

    def acquire(self) -> ArchiveLock:
        for _ in range(20):
            fd = open_side_file(self.lock, "archive's lock file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                busy = _busy(self.path, fd)
                os.close(fd)
                if err.errno in BUSY:
                    raise busy from None
                raise
            if self._same_file(fd):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return self
            os.close(fd)  # released and removed by its holder meanwhile: retry
        raise ArchiveBusyError(f"{self.path}: could not take its lock {self.lock}")

    def _same_file(self, fd: int) -> bool:
        try:
            return os.path.samestat(os.fstat(fd), os.lstat(self.lock))
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Remove the lock file and release the lock (idempotent)."""
        if self._fd is None:
            return
        try:
            self.lock.unlink(missing_ok=True)
        except OSError as err:  # a read-only folder after the fact: the lock still goes
            log.debug("cannot remove %s: %s", self.lock, err)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> ArchiveLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
