"""One writer policy for every ``meanfield`` command that writes: open, refuse, replace, lock,
and never follow a link.

Built on :mod:`solvers.io.safe_paths` (the checks and the private-folder writes) and
:mod:`solvers.io.lock` (the advisory locks), this module is what a command calls:

- **A single output file** (:func:`claim_file`): nothing there, or, with ``overwrite``, a file
  of the given kind that this project wrote. An existing file without ``overwrite`` is refused
  with :class:`FileExistsError` naming the path and the option; a link, a device, a user's
  file or folder is refused with :class:`~solvers.io.safe_paths.UnsafePathError` even with
  ``overwrite``. Both are input errors (the command line: one line, exit 2). The file itself
  is then written with :func:`~solvers.io.safe_paths.write_netcdf` or
  :func:`~solvers.io.safe_paths.write_via_private` (built in a private folder, renamed).
- **A folder of outputs** (:class:`OutputFolder`, a context manager): the folder is created
  when missing (and removed again when the command fails and leaves it empty), is never a
  symbolic link, and must be writable (a read-only folder: one :class:`PermissionError`,
  before any work starts). :meth:`OutputFolder.lock` takes the folder's exclusive lock
  (``DIR/.NAME.lock``; a second writer of the same folder is refused at once with
  :class:`~solvers.io.lock.ArchiveBusyError` naming the holder's pid), and
  :meth:`OutputFolder.entry` gives the path of a name inside the folder after checking that
  nothing but a file of ours sits there (no link, no device, no user's file): everything a
  command writes in the folder (archives, markers, summaries, side files) is named through it,
  so nothing is written outside the folder or through a link.
- **Side files read back** (:func:`read_side_text`): a small plain file read without following
  a link or blocking on a FIFO (None otherwise), e.g. a sweep's ``NAME.done.json``.

``meanfield run`` (:mod:`solvers.runner`), ``sweep`` (:mod:`solvers.studies.sweep`),
``continue``, ``polish``, ``sweep-figures``, ``lemma51``, ``converge``, ``compare-particles``
and the figures (:mod:`solvers.plots.save`) go through these functions.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import TracebackType

from solvers.io.lock import ArchiveBusyError, ArchiveLock, lock_path
from solvers.io.safe_paths import (
    KINDS,
    UnsafePathError,
    _whose,
    check_bool,
    check_writable_folder,
    plain_file,
)

SIDE_TEXT_LIMIT = 1 << 20  # bytes of a side file read back


def claim_file(path: str | os.PathLike, overwrite: bool, option: str = "--overwrite",
               kind: str = "archive", what: str = "output") -> Path:
    """Check that a command may write its single output file ``path``; return it.

    Parameters
    ----------
    path : path
        The output file.
    overwrite : bool
        Whether an existing file of ours may be replaced.
    option : str
        The option that allows replacing (named in the message).
    kind : {"archive", "figure", "text"}
        What counts as a file of ours (:func:`solvers.io.safe_paths.is_ours`).
    what : str
        What the file is, for the message (``"output"``, ``"polished archive"``).

    Raises
    ------
    UnsafePathError
        A link, a device, a user's file or folder is there: never replaced.
    FileExistsError
        A file of ours is there and ``overwrite`` is False.
    PermissionError
        The folder exists and is read-only.
    """
    path = Path(path)
    overwrite = check_bool(overwrite, option.lstrip("-"))
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r})")
    check_writable_folder(path.parent)
    if not os.path.lexists(path):
        return path
    if stat.S_ISLNK(os.lstat(path).st_mode):
        raise UnsafePathError(f"{path} is a symbolic link: meanfield does not write through "
                              "links or replace them; give the real path, or remove the link")
    ours, why = _whose(path, kind)
    if not ours:
        raise UnsafePathError(f"{path} exists and {why}; {option} replaces only files that "
                              "meanfield-spectral wrote: move or delete it yourself, or write "
                              "elsewhere (-o)")
    if not overwrite:
        raise FileExistsError(f"{what} {path} already exists: pass {option} to replace it "
                              "(only a file meanfield-spectral wrote), or write elsewhere with -o")
    return path


def read_side_text(path: str | os.PathLike, limit: int = SIDE_TEXT_LIMIT) -> str | None:
    """The text of the small plain file ``path`` (no link followed, no FIFO opened for long),
    or None when it is absent, not a plain file, larger than ``limit`` or not UTF-8."""
    with plain_file(Path(path)) as opened:
        if opened is None or opened[1].st_size > limit:
            return None
        try:
            return os.pread(opened[0], limit, 0).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None


class OutputFolder:
    """A folder a command writes several outputs into (module doc); a context manager.

    Parameters
    ----------
    path : path
        The folder (created with its parents when missing).
    option : str
        The option that named it, for messages (``"-o"``).

    On leaving with an exception, the folders this object created are removed again when
    they are empty (a failed command leaves no empty folder behind).
    """

    def __init__(self, path: str | os.PathLike, option: str = "-o") -> None:
        self.path = Path(os.path.abspath(path))
        self.option = option
        self._created: list[Path] = []
        self._locks: list[ArchiveLock] = []

    def __enter__(self) -> OutputFolder:
        return self.open()

    def open(self) -> OutputFolder:
        """Create the folder when missing and check it (no link, a folder, writable)."""
        path = self.path
        if os.path.islink(path):
            raise UnsafePathError(f"{self.option} {path} is a symbolic link: meanfield does "
                                  "not write through links; give the real folder")
        if os.path.lexists(path) and not os.path.isdir(path):
            raise NotADirectoryError(errno.ENOTDIR, f"{self.option}: not a folder (give a "
                                     "folder for the outputs)", str(path))
        missing = []
        for parent in [path, *path.parents]:
            if os.path.lexists(parent):
                break
            missing.append(parent)
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:
                continue
            except OSError as err:
                self._remove_created()
                raise PermissionError(errno.EACCES, f"cannot create the output folder "
                                      f"({err.strerror or err})", str(folder)) from None
            self._created.append(folder)
        if not os.access(path, os.W_OK | os.X_OK):
            self._remove_created()
            raise PermissionError(errno.EACCES, "cannot write in the output folder (read-only?); "
                                  f"choose another with {self.option}", str(path))
        return self

    def lock(self, name: str) -> ArchiveLock:
        """Take the folder's exclusive lock ``DIR/.NAME.lock`` (released on leaving).

        Raises
        ------
        ArchiveBusyError
            Another process writes this folder.
        """
        self.entry(lock_path(self.path / name).name, kind=None)  # the lock file: no link
        lock = ArchiveLock(self.path / name)
        try:
            lock.acquire()
        except ArchiveBusyError as err:  # name the folder, not the lock's stem
            raise ArchiveBusyError(str(err).replace(str(self.path / name), str(self.path), 1)
                                   ) from None
        except OSError as err:
            if isinstance(err, UnsafePathError) or not err.strerror:
                raise
            raise PermissionError(errno.EACCES, "cannot write in the output folder "
                                  f"({err.strerror})", str(self.path)) from None
        self._locks.append(lock)
        return lock

    def entry(self, name: str, kind: str | None = "archive") -> Path:
        """The path of ``name`` inside the folder, after checking what sits there.

        ``kind``: nothing there, or a plain file (or zarr store) of this kind that this
        project wrote; None: only that no link and no special file sits there (the name of
        a side file that is replaced by rename, or a lock).

        Raises
        ------
        UnsafePathError
            ``name`` leaves the folder, or a link, a device or a file that is not ours sits
            there.
        """
        if not name or name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
            raise UnsafePathError(f"{name!r} is not a name inside the folder {self.path}")
        path = self.path / name
        if not os.path.lexists(path):
            return path
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            raise UnsafePathError(f"{path} is a symbolic link: meanfield never writes through "
                                  "a link in its output folder; remove it, or choose another "
                                  f"folder ({self.option})")
        if kind is None:
            if not stat.S_ISREG(mode):
                raise UnsafePathError(f"{path} is not a plain file; meanfield writes only its "
                                      f"own files there: remove it, or choose another folder "
                                      f"({self.option})")
            return path
        ours, why = _whose(path, kind)
        if not ours:
            raise UnsafePathError(f"{path} exists and {why}; meanfield replaces only files it "
                                  f"wrote: move it, or choose another folder ({self.option})")
        return path

    def close(self, failed: bool = False) -> None:
        """Release the locks; after a failure, remove the folders this object created when
        they are empty."""
        while self._locks:
            self._locks.pop().release()
        if failed:
            self._remove_created()

    def _remove_created(self) -> None:
        for folder in reversed(self._created):  # innermost first
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (or gone): keep it and its parents
        self._created.clear()

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(failed=kind is not None)
