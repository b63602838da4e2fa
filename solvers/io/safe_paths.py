"""Writing next to the user's files without touching what is not ours.

Every archive and report that ``meanfield`` writes goes through this module:

- **Side files never follow links.** A new file is built inside a private folder made by
  :func:`tempfile.mkdtemp` beside the target (a fresh, unguessable name, mode 0700, created
  with ``O_EXCL`` semantics), then renamed into place: a symbolic link planted at a
  predictable name (``.run.nc.<pid>.tmp``) is never opened. Lock files are opened with
  ``O_NOFOLLOW`` and must be plain files with one link (:func:`open_side_file`).
- **Only our files are replaced.** :func:`check_target` lets an existing path be replaced
  only when it is an archive or report this project wrote (:func:`is_ours`): a NetCDF4 file
  whose global attributes say so (``archive_format``, or a ``config_text`` with the archive's
  variables, or a ``software`` / ``title`` naming meanfield-spectral), or a zarr store whose
  root ``zarr.json`` (``.zattrs``) says so and which holds nothing but zarr metadata and chunk
  files. Anything else (a symbolic link, a device, a FIFO, a user's text file, a folder that
  is not our zarr store) is refused with :class:`UnsafePathError` naming the path and what to
  do (the command line: exit 2). Figures (``kind="figure"``) are ours when they are PNG files
  that matplotlib wrote; a config copied out by ``meanfield example --overwrite``
  (``kind="text"``) may replace any plain file, never a link or a device.

The write paths that use it: ``meanfield run`` (new, ``--overwrite``; ``--resume`` appends
under the same lock), :func:`solvers.run` / :func:`solvers.resume`, the sweep's runs and its
``summary.nc`` and ``.done.json`` files, ``polish`` (and ``run --polish``), ``lemma51``,
``converge`` and ``compare-particles`` (:func:`write_netcdf`, :func:`write_text`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SOFTWARE = "meanfield-spectral"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ZARR_METADATA = frozenset({"zarr.json", ".zgroup", ".zattrs", ".zarray", ".zmetadata"})
# chunk files ("0", "0.1", "c/0/1" as folders), and zarr's own half-written files (killed)
_ZARR_CHUNK = re.compile(r"\d+(\.\d+)*")
_ZARR_PARTIAL = re.compile(r".+\.[0-9a-f]{32}\.partial")
_METADATA_LIMIT = 64 << 20  # bytes of a zarr.json read to recognise a store
_ZARR_ENTRIES_LIMIT = 1_000_000  # files looked at in a store before giving up (not ours)


class UnsafePathError(ValueError):
    """A path that ``meanfield`` refuses to write or replace (not its own file, a link, a
    device); the message names the path and what to do."""


def check_bool(value: Any, name: str = "overwrite") -> bool:
    """``value`` when it is a bool; a ConfigError naming ``name`` otherwise (``"no"`` is not
    False)."""
    if isinstance(value, bool):
        return value
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    from solvers.model.validators import ConfigError, clip

    raise ConfigError(name, f"must be True or False (got {clip(repr(value), 60)})")


# ------------------------------------------------------------------------ side files


def sync_folder(folder: Path) -> None:
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


def open_side_file(path: Path, what: str = "side file") -> int:
    """Open (creating it) the side file ``path`` for reading and writing without following a
    link: a file descriptor of a plain file with one link (a hard link to a victim file, or a
    device, would be written through). UnsafePathError otherwise."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        if os.path.islink(path):
            raise UnsafePathError(f"{path} (the {what}) is a symbolic link; meanfield never "
                                  "writes through a link there: remove it and try again") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        kind = "not a plain file" if not stat.S_ISREG(st.st_mode) else \
            f"a file with {st.st_nlink} hard links"
        raise UnsafePathError(f"{path} (the {what}) is {kind}; meanfield writes only a plain "
                              "file of its own there: remove it and try again")
    return fd


@contextmanager
def private_folder(target: Path) -> Iterator[Path]:
    """A new folder beside ``target`` that nobody else can have prepared
    (``.NAME.<random>.tmp``, mode 0700), removed with what it holds on leaving."""
    target = Path(target)
    folder = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def replace_file(new: Path, target: Path) -> None:
    """Rename the file ``new`` onto ``target`` (atomic; a link at ``target`` is replaced,
    never followed) and sync the folder."""
    os.replace(new, target)
    sync_folder(target.parent)


def replace_folder(new: Path, target: Path, scratch: Path) -> None:
    """Move the folder ``new`` (a zarr store) to ``target``, an old one there renamed into
    ``scratch`` (a :func:`private_folder`) first and removed with it: a reader opens the old
    or the new store, never a mixture."""
    old = scratch / "old"
    if os.path.lexists(target):
        os.replace(target, old)
    os.replace(new, target)
    sync_folder(target.parent)
    shutil.rmtree(old, ignore_errors=True)


# ------------------------------------------------------------------- whose file is it


@contextmanager
def plain_file(path: Path) -> Iterator[tuple[int, os.stat_result] | None]:
    """``(fd, stat)`` of the plain file ``path`` opened read-only without following a link (or
    blocking on a FIFO), closed on exit; None when it is not a plain file or cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        yield None
        return
    try:
        st = os.fstat(fd)
        yield (fd, st) if stat.S_ISREG(st.st_mode) else None
    finally:
        os.close(fd)


def _read_small(path: Path, limit: int) -> bytes | None:
    """The bytes of the plain file ``path`` (no link followed), or None."""
    with plain_file(path) as opened:
        if opened is None or opened[1].st_size > limit:
            return None
        return os.pread(opened[0], limit, 0)


def _our_attributes(attrs: dict[str, Any], variables: Any) -> bool:
    """Whether global attributes (and variable names) are those of a file we wrote."""
    def text(name: str) -> str:
        value = attrs.get(name)
        return value if isinstance(value, str) else ""

    if text("archive_format").startswith(SOFTWARE) or text("software").startswith(SOFTWARE):
        return True
    if text("config_text") and all(v in variables for v in ("time", "theta", "rho")):
        return True  # a run archive older than archive_format
    title = text("title")
    return title.startswith(SOFTWARE) or title.startswith("Lemma 5.1 check")


def _is_our_netcdf(path: Path) -> bool:
    head = _read_small_head(path)
    if head != HDF5_SIGNATURE:
        return False
    try:
        import netCDF4

        with netCDF4.Dataset(path, "r") as nc:
            attrs = {k: nc.getncattr(k) for k in nc.ncattrs()}
            return _our_attributes(attrs, set(nc.variables))
    except Exception:  # noqa: BLE001 (unreadable: not ours to replace)
        return False


def _read_small_head(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, len(HDF5_SIGNATURE))
    finally:
        os.close(fd)


def _zarr_attributes(path: Path) -> tuple[dict[str, Any], set[str]] | None:
    """Root attributes and array names of a zarr store (v3 ``zarr.json``, v2 ``.zattrs``)."""
    raw = _read_small(path / "zarr.json", _METADATA_LIMIT)
    try:
        if raw is not None:
            meta = json.loads(raw)
            if not isinstance(meta, dict) or meta.get("node_type") != "group":
                return None
            attrs = meta.get("attributes") or {}
        else:
            if _read_small(path / ".zgroup", _METADATA_LIMIT) is None:
                return None
            attrs = json.loads(_read_small(path / ".zattrs", _METADATA_LIMIT) or b"{}")
    except ValueError:
        return None
    if not isinstance(attrs, dict):
        return None
    names = {p.name for p in path.iterdir() if p.is_dir() and not p.is_symlink()}
    return attrs, names


def _foreign_entry(path: Path) -> str | None:
    """The first entry of a zarr store that zarr did not write (a user's file, a link,
    anything but metadata, chunks and zarr's half-written files), or None."""
    seen = 0
    for folder, dirs, files in os.walk(path):
        base = Path(folder)
        for name in dirs + files:
            seen += 1
            entry = base / name
            if seen > _ZARR_ENTRIES_LIMIT:
                return f"{entry} (and more than {_ZARR_ENTRIES_LIMIT} entries)"
            st = os.lstat(entry)
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                return str(entry)
            if not (name in ZARR_METADATA or _ZARR_CHUNK.fullmatch(name)
                    or _ZARR_PARTIAL.fullmatch(name)):
                return str(entry)
    return None


def _is_our_figure(path: Path) -> bool:
    """A PNG file that matplotlib wrote (its ``Software`` text chunk, in the first bytes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        head = os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    return head.startswith(PNG_SIGNATURE) and b"Matplotlib" in head


KINDS = ("archive", "figure", "text")


def is_ours(path: str | os.PathLike, kind: str = "archive") -> bool:
    """Whether ``path`` is a file of ``kind`` this project wrote (see the module doc):
    ``archive`` a NetCDF archive or report or a zarr store, ``figure`` a matplotlib PNG,
    ``text`` any plain file (a config the user asked to replace)."""
    return _whose(Path(path), kind)[0]


def _whose(path: Path, kind: str = "archive") -> tuple[bool, str]:
    """``(ours, why not)`` of an existing path."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False, "it does not exist"
    if stat.S_ISLNK(st.st_mode):
        return False, "it is a symbolic link"
    if stat.S_ISDIR(st.st_mode) and kind != "archive":
        return False, "it is a folder"
    if stat.S_ISDIR(st.st_mode):
        found = _zarr_attributes(path)
        if found is None or not _our_attributes(found[0], found[1]):
            return False, "it is a folder that is not a meanfield-spectral zarr archive"
        foreign = _foreign_entry(path)
        if foreign is not None:
            return False, (f"it is a meanfield-spectral zarr archive that also holds {foreign}, "
                           "which meanfield did not write")
        return True, ""
    if not stat.S_ISREG(st.st_mode):
        return False, "it is not a regular file (a device, FIFO or socket)"
    if kind == "figure" and not _is_our_figure(path):
        return False, "it is not a PNG figure written by meanfield-spectral (matplotlib)"
    if kind == "archive" and not _is_our_netcdf(path):
        return False, "it is not a NetCDF file written by meanfield-spectral"
    return True, ""


def check_writable_folder(folder: Path, option: str = "-o") -> None:
    """PermissionError naming ``folder`` when it exists and this process cannot create files
    in it (a read-only folder): refused before any work, as one line naming ``option``."""
    if os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK):
        import errno

        raise PermissionError(errno.EACCES, "cannot write in this folder (read-only?); write "
                              f"elsewhere with {option}", str(folder))


def check_target(path: str | os.PathLike, overwrite: bool, option: str = "--overwrite",
                 kind: str = "archive") -> None:
    """Whether a new archive or report may be written at ``path``: nothing there, or (with
    ``overwrite``) a file of ``kind`` this project wrote (:func:`is_ours`).

    Raises
    ------
    FileExistsError
        Something is there and ``overwrite`` is False.
    UnsafePathError
        A link, a device, a user's file or folder: never replaced.
    PermissionError
        The folder exists and is read-only (:func:`check_writable_folder`).
    """
    path = Path(path)
    overwrite = check_bool(overwrite)
    check_writable_folder(path.parent)
    if not os.path.lexists(path):
        return
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(f"{path} is a symbolic link: meanfield does not write through "
                              "links or replace them; give the real path, or remove the link")
    if not overwrite:
        raise FileExistsError(f"archive {path} already exists: pass --overwrite "
                              "(overwrite=True) to replace it, --resume to continue it, "
                              "or delete it")
    ours, why = _whose(path, kind)
    if not ours:
        what = {"archive": "archives", "figure": "figures"}.get(kind, "plain files")
        raise UnsafePathError(f"{path} exists and {why}; {option} replaces only {what} that "
                              "meanfield-spectral wrote: move or delete it yourself, or write "
                              "elsewhere (-o)")


# ------------------------------------------------------------------------ safe writes


def write_via_private(path: str | os.PathLike, write: Callable[[Path], Any],
                      overwrite: bool = True, option: str = "-o", kind: str = "archive") -> Path:
    """Check ``path`` (:func:`check_target`), let ``write(tmp)`` build the file inside a
    :func:`private_folder` beside it, and rename it into place. Returns ``path``."""
    path = Path(path)
    check_target(path, overwrite, option, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    with private_folder(path) as folder:
        tmp = folder / path.name
        write(tmp)
        if os.path.lexists(tmp):  # (a writer may decide to write nothing)
            check_target(path, overwrite, option, kind)  # still nothing, or still ours
            replace_file(tmp, path)
    return path


def write_netcdf(ds: Any, path: str | os.PathLike, overwrite: bool = True,
                 option: str = "-o", **kwargs: Any) -> Path:
    """``ds.to_netcdf`` through :func:`write_via_private`; the file gets the global attribute
    ``software = "meanfield-spectral <version>"`` (how :func:`is_ours` knows it later), a
    ``time`` dimension renamed ``t`` (:func:`solvers.io.cf.to_disk`; the readers rename it
    back) and the CF encoding of :func:`solvers.io.cf.netcdf_encoding` (``kwargs["encoding"]``
    added on top)."""
    from solvers.io.cf import netcdf_encoding, to_disk
    from solvers.io.layout import package_version

    if hasattr(ds, "assign_attrs") and "software" not in ds.attrs:  # the caller's ds unchanged
        ds = ds.assign_attrs(software=f"{SOFTWARE} {package_version()}")
    if hasattr(ds, "rename"):
        ds = to_disk(ds)
    if hasattr(ds, "variables"):  # CF encoding (no fill on coordinates, int32); caller's wins
        encoding = netcdf_encoding(ds)
        for name, enc in (kwargs.get("encoding") or {}).items():
            encoding[name] = encoding.get(name, {}) | enc
        kwargs["encoding"] = encoding
    return write_via_private(path, lambda tmp: ds.to_netcdf(tmp, **kwargs), overwrite, option)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write a small text side file (a sweep's ``.done.json``) atomically: built in a
    :func:`private_folder`, renamed into place. A link or anything but a plain file at
    ``path`` is refused."""
    path = Path(path)
    if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        raise UnsafePathError(f"{path} is not a plain file; meanfield replaces only its own "
                              "side files: remove it and try again")
    with private_folder(path) as folder:
        tmp = folder / path.name
        tmp.write_text(text, encoding="utf-8")
        replace_file(tmp, path)
    return path
