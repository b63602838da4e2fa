"""Issue 34, items 1 and 2, with real files in a temporary folder: the archive writer never
follows a link planted at its side files (``.NAME.lock``, ``.NAME.<pid>.tmp``, ``.NAME.<pid>.old``),
and ``overwrite`` replaces only an archive this project wrote (never a user's file or folder,
a link, a FIFO or a device). Every victim file is compared byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import WRITER_CONFIG_TOML
import xarray as xr

import solvers
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run
from solvers.io.lock import ArchiveBusyError, ArchiveLock, check_not_busy, lock_path
from solvers.io.safe_paths import (
    UnsafePathError,
    check_target,
    is_ours,
    write_netcdf,
    write_text,
)
from solvers.model.config import ConfigError, load_config

CONFIG = WRITER_CONFIG_TOML
VICTIM = b"the user's precious data\n\x00\x01\x02"


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


def run_to(path: Path, overwrite: bool = False) -> None:
    solvers.run(CONFIG, path=path, overwrite=overwrite)


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (a file or a folder) with its bytes."""
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


# ------------------------------------------------------------------ item 1: side files


@pytest.mark.parametrize("name", ["run.nc", "run.zarr"])
def test_symlinked_lock_file_is_refused_and_the_victim_kept(tmp_path: Path, name: str) -> None:
    target, bait = tmp_path / name, victim(tmp_path)
    lock_path(target).symlink_to(bait)
    with pytest.raises(UnsafePathError, match="symbolic link") as err:
        run_to(target)
    assert str(lock_path(target)) in str(err.value)
    assert bait.read_bytes() == VICTIM
    assert not os.path.lexists(target)
    assert lock_path(target).is_symlink()  # left as it was: the user's to remove


def test_hard_linked_lock_file_is_refused(tmp_path: Path) -> None:
    target, bait = tmp_path / "run.nc", victim(tmp_path)
    os.link(bait, lock_path(target))
    with pytest.raises(UnsafePathError, match="hard links"):
        run_to(target)
    assert bait.read_bytes() == VICTIM


def test_busy_probe_sees_a_held_lock_and_creates_nothing(tmp_path: Path) -> None:
    # a resume probes the lock before reading the archive (its slots are in flux while written)
    target = tmp_path / "run.nc"
    check_not_busy(target)
    assert not lock_path(target).exists()  # the probe creates no lock file
    with ArchiveLock(target):  # flock: a second open file description conflicts, same process
        with pytest.raises(ArchiveBusyError, match=f"being written by another process \\(pid {os.getpid()}\\)"):
            check_not_busy(target)
    check_not_busy(target)
    assert not lock_path(target).exists()


def test_fifo_at_the_lock_name_is_refused_without_hanging(tmp_path: Path) -> None:
    target = tmp_path / "run.nc"
    os.mkfifo(lock_path(target))
    with pytest.raises(UnsafePathError, match="not a plain file"):
        ArchiveLock(target).acquire()


@pytest.mark.parametrize("name", ["run.nc", pytest.param("run.zarr", marks=pytest.mark.slow)])
@pytest.mark.parametrize("overwrite", [False, True])
def test_links_at_the_old_temporary_names_are_never_followed(tmp_path: Path, name: str,
                                                             overwrite: bool) -> None:
    """Links at ``.NAME.<pid>.tmp`` and ``.NAME.<pid>.old`` for this process's pid and its
    neighbours (the names the writer once used): a new archive and an overwrite both leave
    the victim and the links untouched."""
    target, bait = tmp_path / name, victim(tmp_path)
    if overwrite:
        run_to(target)
    pid = os.getpid()
    planted = [tmp_path / f".{name}.{p}.{ext}" for p in range(pid - 20, pid + 21)
               for ext in ("tmp", "old")]
    for link in planted:
        link.symlink_to(bait)
    run_to(target, overwrite=overwrite)
    assert bait.read_bytes() == VICTIM
    assert all(link.is_symlink() and os.readlink(link) == str(bait) for link in planted)
    assert open_run(target).sizes["time"] == 3
    leftovers = {p.name for p in tmp_path.iterdir()} - {p.name for p in planted}
    assert leftovers == {name, "victim.txt"}  # no private folder, no lock left behind


def test_write_netcdf_and_write_text_ignore_links_at_temporary_names(tmp_path: Path) -> None:
    bait = victim(tmp_path)
    for suffix in (".tmp", f".{os.getpid()}.tmp"):
        (tmp_path / f"report.nc{suffix}").symlink_to(bait)
        (tmp_path / f"x.done{suffix}").symlink_to(bait)
    write_netcdf(xr.Dataset({"a": ("x", np.arange(3.0))}), tmp_path / "report.nc")
    write_text(tmp_path / "x.done.json", "{}")
    assert bait.read_bytes() == VICTIM
    assert is_ours(tmp_path / "report.nc")
    assert (tmp_path / "x.done.json").read_text() == "{}"


# ---------------------------------------------------------- item 2: overwrite: ours only


def test_overwrite_refuses_a_user_text_file(tmp_path: Path) -> None:
    notes = tmp_path / "notes.nc"
    notes.write_bytes(VICTIM)
    with pytest.raises(UnsafePathError, match="not a NetCDF file written by meanfield") as err:
        run_to(notes, overwrite=True)
    assert str(notes) in str(err.value) and "move or delete it" in str(err.value)
    assert notes.read_bytes() == VICTIM


def test_overwrite_refuses_a_foreign_netcdf_file(tmp_path: Path) -> None:
    other = tmp_path / "theirs.nc"
    xr.Dataset({"rho": ("x", np.ones(4))}, attrs={"title": "someone else's"}).to_netcdf(other)
    before = other.read_bytes()
    with pytest.raises(UnsafePathError, match="not a NetCDF file written by meanfield"):
        run_to(other, overwrite=True)
    assert other.read_bytes() == before


def test_overwrite_refuses_a_folder_holding_a_users_file(tmp_path: Path) -> None:
    store = tmp_path / "x.zarr"
    store.mkdir()
    (store / "thesis.tex").write_bytes(VICTIM)
    with pytest.raises(UnsafePathError, match="not a meanfield-spectral zarr archive"):
        run_to(store, overwrite=True)
    assert snapshot(store) == {"thesis.tex": VICTIM}


def test_overwrite_refuses_our_zarr_store_with_a_users_file_inside(tmp_path: Path) -> None:
    store = tmp_path / "x.zarr"
    run_to(store)
    (store / "rho" / "notes.txt").write_bytes(VICTIM)
    before = snapshot(store)
    with pytest.raises(UnsafePathError, match="notes.txt"):
        run_to(store, overwrite=True)
    assert snapshot(store) == before


def test_overwrite_refuses_a_fake_zarr_store(tmp_path: Path) -> None:
    store = tmp_path / "x.zarr"
    store.mkdir()
    (store / "zarr.json").write_text('{"node_type": "group", "attributes": {"title": "mine"}}')
    before = snapshot(store)
    with pytest.raises(UnsafePathError, match="not a meanfield-spectral zarr archive"):
        run_to(store, overwrite=True)
    assert snapshot(store) == before


@pytest.mark.parametrize("name", ["link.nc", "link.zarr"])
def test_overwrite_refuses_a_symlink_target(tmp_path: Path, name: str) -> None:
    bait, link = victim(tmp_path), tmp_path / name
    link.symlink_to(bait)
    for overwrite in (False, True):
        with pytest.raises(UnsafePathError, match="symbolic link"):
            run_to(link, overwrite=overwrite)
    assert bait.read_bytes() == VICTIM and link.is_symlink()


def test_dangling_symlink_target_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "run.nc"
    link.symlink_to(tmp_path / "elsewhere.nc")
    with pytest.raises(UnsafePathError, match="symbolic link"):
        run_to(link)
    assert not (tmp_path / "elsewhere.nc").exists() and link.is_symlink()


def test_overwrite_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.nc"
    os.mkfifo(fifo)
    with pytest.raises(UnsafePathError, match="not a regular file"):
        run_to(fifo, overwrite=True)
    assert fifo.is_fifo()


def test_devices_are_refused_before_anything_is_written() -> None:
    """Only the check: nothing is written (the writer calls it under the lock, before it
    builds the new file)."""
    for device in ("/dev/null", "/dev/zero"):
        if os.path.exists(device):
            with pytest.raises(UnsafePathError, match="not a regular file"):
                check_target(device, True)


@pytest.mark.parametrize("name", ["run.nc", "run.zarr"])
def test_overwrite_replaces_our_own_archive(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    run_to(target)
    assert is_ours(target)
    with pytest.raises(FileExistsError, match="--overwrite"):
        run_to(target)
    solvers.run(CONFIG, path=target, overwrite=True, time__t_end=0.002)
    assert open_run(target).sizes["time"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_reports_of_ours_are_recognised(tmp_path: Path) -> None:
    ours = write_netcdf(xr.Dataset({"a": ("x", np.arange(3.0))}), tmp_path / "r.nc")
    assert is_ours(ours)
    plain = tmp_path / "plain.nc"
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(plain)
    assert not is_ours(plain)
    with pytest.raises(UnsafePathError):
        write_netcdf(xr.Dataset(), plain)
    write_netcdf(xr.Dataset({"b": 1.0}), ours)  # its own file: replaced
    assert "b" in xr.load_dataset(ours)


@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, [True]])
def test_overwrite_accepts_only_booleans(tmp_path: Path, value: object) -> None:
    target = tmp_path / "run.nc"
    run_to(target)
    before = target.read_bytes()
    with pytest.raises(ConfigError, match="overwrite: must be True or False"):
        solvers.run(CONFIG, path=target, overwrite=value)
    cfg = load_config(CONFIG)
    with pytest.raises(ConfigError, match="overwrite"):
        ArchiveWriter(target, cfg, np.zeros(64), np.ones(64), overwrite=value)
    assert target.read_bytes() == before


def test_resume_through_a_symlink_is_refused(tmp_path: Path) -> None:
    """The lock would sit beside the link, not beside the archive: two writers could append."""
    target, link = tmp_path / "run.nc", tmp_path / "link.nc"
    run_to(target)
    link.symlink_to(target)
    before = target.read_bytes()
    with pytest.raises(UnsafePathError, match="real path"):
        solvers.resume(link, t_end=0.008)
    assert target.read_bytes() == before
    assert solvers.resume(target, t_end=0.008).sizes["time"] == 5
