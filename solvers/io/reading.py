"""Reading run archives, NetCDF4 files or zarr stores (see :mod:`solvers.io.archive` for the
layout): robust to archives that a live process holds open, to trailing partial records (only
the ``records_complete`` count is read; older archives: the finite times) and to damaged
files, with errors that name the user's file. On disk the record dimension is ``t``; the
Datasets these readers return name it ``time`` (:func:`solvers.io.cf.to_api`), and archives of
the earlier layout, with ``time`` on disk, read the same."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import netCDF4
import numpy as np

from solvers.io.cf import to_api
from solvers.io.errors import ArchiveError
from solvers.io.lock import check_not_busy
from solvers.io.layout import (
    _HDF5_SIGNATURE,
    RESTART,
    missing_variables,
)
from solvers.io.netcdf_store import record_times, valid_records
from solvers.io.restart import (
    RESTART_INFO,
    decode_info,
    fold_block_state,
    restart_atoms,
    restart_state,
)

if TYPE_CHECKING:  # xarray (pandas with it) costs 0.3 s of a run's start-up: imported where read
    import xarray as xr


def is_zarr(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a zarr store (it ends in ``.zarr``)."""
    return Path(path).suffix == ".zarr"


def existing_archive(path: str | os.PathLike) -> Path:
    """``path`` as a Path; FileNotFoundError when no archive (a file, or a ``.zarr`` folder)
    is there."""
    path = Path(path)
    if not (path.is_dir() if is_zarr(path) else path.is_file()):
        raise FileNotFoundError(f"archive {path} does not exist")
    return path


def _is_hdf5(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(_HDF5_SIGNATURE)) == _HDF5_SIGNATURE


@contextmanager
def _readable(path: str | os.PathLike) -> Iterator[Path]:
    """Yield ``path``, or a temporary copy of it when a writing process holds its HDF5 lock."""
    path = existing_archive(path)
    try:
        netCDF4.Dataset(path, "r").close()
    except OSError as err:
        if not _is_hdf5(path):
            raise ArchiveError(f"{path} is not a readable NetCDF4 archive ({err})") from err
        with tempfile.TemporaryDirectory(prefix="archive-read-") as tmp:
            copy = Path(tmp) / path.name
            shutil.copyfile(path, copy)
            yield copy
        return
    yield path


def check_archive(nc: netCDF4.Dataset, shown: str | os.PathLike) -> None:
    """ArchiveError naming ``shown`` (and ``nc`` closed) when the open file ``nc`` lacks a
    variable every run archive has."""
    missing = missing_variables(nc.variables)
    if missing:
        nc.close()
        raise ArchiveError(f"{shown} is not a meanfield-spectral archive: missing {missing}")


def _named(err: BaseException, copy: str | os.PathLike, shown: str | os.PathLike) -> str:
    """The error's text with the temporary copy's path replaced by the user's."""
    return str(err).replace(str(copy), str(shown))


@contextmanager
def _reading(path: str | os.PathLike, shown: str | os.PathLike | None = None
             ) -> Iterator[netCDF4.Dataset]:
    """Open an archive read-only, with clear errors for missing files and non-archives
    (naming ``shown``, the user's file, when ``path`` is a temporary copy of it)."""
    shown = path if shown is None else shown
    with _readable(path) as readable:
        try:
            nc = netCDF4.Dataset(readable, "r")
        except OSError as err:
            raise ArchiveError(f"{shown} is not a readable NetCDF4 archive "
                             f"({_named(err, readable, shown)})") from None
        check_archive(nc, shown)
        try:
            yield nc
        except ArchiveError:
            raise
        except (OSError, RuntimeError, AttributeError, KeyError, IndexError, TypeError,
                ValueError) as err:  # damaged inside (netCDF4: RuntimeError, AttributeError)
            raise ArchiveError(f"{shown} is damaged: cannot read it ({type(err).__name__}: "
                               f"{_named(err, readable, shown)})") from None
        finally:
            nc.close()


def open_run(path: str | os.PathLike) -> xr.Dataset:
    """Load a run archive into memory as an :class:`xarray.Dataset`.

    Incomplete trailing records (a run killed while writing one) are dropped. Works on
    archives that a running process is still writing. The record dimension and coordinate
    are ``time`` (``t`` on disk).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not a NetCDF4 run archive.
    """
    if is_zarr(path):
        from solvers.io.zarr_store import load_run

        return load_run(existing_archive(path))
    import xarray as xr

    with _readable(path) as readable:
        with _reading(readable, shown=path) as nc:  # validates
            n = valid_records(nc)
        try:
            ds = fold_block_state(to_api(xr.load_dataset(readable, engine="netcdf4")))
        except (OSError, RuntimeError, KeyError, AttributeError, TypeError, ValueError) as err:
            raise ArchiveError(f"{path} is damaged: cannot read it "
                             f"({_named(err, readable, path)})") from None
    return ds.isel(time=slice(0, n))


def read_last_state(path: str | os.PathLike) -> tuple[float, int, float, np.ndarray]:
    """The last complete record of an archive, for resuming.

    Returns
    -------
    t : float
    step : int
    dt : float
    rho : ndarray, shape (N,) on S^1, (nlat, nphi) on S^2
    """
    if is_zarr(path):
        from solvers.io.zarr_store import last_state

        return _finite_state(path, *last_state(existing_archive(path)))
    with _reading(path) as nc:
        i = valid_records(nc) - 1
        if i < 0:
            raise ArchiveError(f"archive {path} holds no snapshots")
        rho = np.asarray(np.ma.filled(np.ma.asarray(nc["rho"][i, ...], float), np.nan))
        return _finite_state(path, float(np.ma.filled(record_times(nc)[i], np.nan)), nc["step"][i],
                             float(np.ma.filled(nc["dt"][i], np.nan)), rho)


def _finite_state(path: Any, t: float, step: Any, dt: float,
                  rho: np.ndarray) -> tuple[float, int, float, np.ndarray]:
    """The last record as read, or ArchiveError when its time, step, step size or density is
    not finite (a damaged archive: nothing to continue from)."""
    if not (np.isfinite(t) and np.isfinite(dt) and dt > 0 and np.all(np.isfinite(rho))) or \
            np.ma.is_masked(step):
        raise ArchiveError(f"{path} is damaged: its last record's time, step, step size or "
                           f"density is missing or not finite (t = {t}, dt = {dt})")
    return float(t), int(step), float(dt), rho


def read_run_counts(path: str | os.PathLike) -> dict[str, Any]:
    """What a resume continues besides the state: ``rejected0`` and ``time_error0``, the last
    complete record's ``steps_rejected`` and ``time_error_estimate`` (0 in archives that predate
    them), and ``history0``, the run's method history (global attribute ``method_history``,
    JSON; [] when absent). NetCDF files and zarr stores alike."""
    import json

    if is_zarr(path):
        from solvers.io.zarr_store import count_values

        values, history = count_values(existing_archive(path))
    else:
        with _reading(path) as nc:
            i = valid_records(nc) - 1
            values = {name: (nc[name][i] if i >= 0 and name in nc.variables else None)
                      for name in ("steps_rejected", "time_error_estimate")}
            history = nc.getncattr("method_history") if "method_history" in nc.ncattrs() else None

    def number(value: Any, kind: type) -> Any:
        value = None if value is None else np.ma.filled(np.ma.asarray(value, float), np.nan)
        return kind(0) if value is None or not np.isfinite(value) else kind(value)

    try:
        history0 = json.loads(str(history)) if history else []
        if not isinstance(history0, list):
            raise ValueError(f"a {type(history0).__name__}, not a list")
    except ValueError as err:
        raise ArchiveError(f"{path} is damaged: its method_history attribute is not a JSON "
                           f"list ({err})") from None
    return {"rejected0": number(values["steps_rejected"], int),
            "time_error0": number(values["time_error_estimate"], float),
            "history0": history0}


def read_restart(path: str | os.PathLike) -> Any:
    """The step state (:class:`~solvers.core.snapshot.RunState`: ``t``, ``step``, ``dt``,
    ``rho``) behind an interpolated last record (the state
    a resume continues from, ``output.snapshot_mode = "interpolate"``), or None when the last
    complete record is a step state itself (resume from :func:`read_last_state`)."""
    if is_zarr(path):
        from solvers.io.zarr_store import restart_of

        return restart_of(existing_archive(path))
    with _reading(path) as nc:
        i = valid_records(nc) - 1
        if i < 0 or RESTART not in nc.variables:
            return None
        return restart_state(_restart_attrs(nc), np.ma.filled(nc[RESTART][...], np.nan),
                             float(record_times(nc)[i]))


def read_restart_atoms(path: str | os.PathLike) -> Any:
    """The Dirac atoms of the step state behind an interpolated last record of a measure-valued
    run (:func:`solvers.io.restart.restart_atoms`); None otherwise (then the last record's own
    atoms, :func:`read_last_dirac`, are the resume's)."""
    if is_zarr(path):
        from solvers.io.zarr_store import restart_atoms_of

        return restart_atoms_of(existing_archive(path))
    with _reading(path) as nc:
        i = valid_records(nc) - 1
        if i < 0 or RESTART not in nc.variables or "dirac_mass" not in nc.variables:
            return None
        dim = 3 if "dirac_x" in nc.variables else 1
        return restart_atoms(_restart_attrs(nc), float(record_times(nc)[i]), dim)


def _restart_attrs(nc: netCDF4.Dataset) -> dict[str, Any]:
    """The description of the archived step state: its vector (:data:`RESTART_INFO`), or the
    attributes of ``restart_rho`` in archives written before it."""
    if RESTART_INFO in nc.variables:
        return decode_info(nc[RESTART_INFO][...])
    var = nc[RESTART]
    return {k: var.getncattr(k) for k in var.ncattrs()}


def resume_atoms(path: str | os.PathLike) -> Any:
    """The Dirac atoms a resume of ``path`` starts with: the step state's behind an
    interpolated last record, else the last record's (None for a grid run)."""
    behind = read_restart_atoms(path)
    return behind if behind is not None else read_last_dirac(path)


def read_last_dirac(path: str | os.PathLike) -> Any:
    """The Dirac atoms (:class:`solvers.core.measure.DiracAtoms`) of the last complete record of
    a measure-valued run, for resuming; None for a grid run (no ``dirac_mass`` variable)."""
    return read_dirac(path)


def read_dirac(path: str | os.PathLike, time: float | None = None) -> Any:
    """The Dirac atoms (:class:`solvers.core.measure.DiracAtoms`) of the record nearest to
    ``time`` (the last complete one if None), the record :func:`read_snapshot` reads; None
    for a grid run (no ``dirac_mass`` variable). NetCDF files and zarr stores alike."""
    from solvers.core.measure import DiracAtoms

    if is_zarr(path):
        from solvers.io.zarr_store import dirac_near

        return dirac_near(existing_archive(path), time)
    with _reading(path) as nc:
        if "dirac_mass" not in nc.variables:
            return None
        n = valid_records(nc)
        i = n - 1 if time is None or n == 0 else _nearest_record(nc, n, time)
        width = len(nc.dimensions["dirac"])
        s2 = "dirac_x" in nc.variables  # S^2: unit vectors (n, 3); S^1: angles (n,)
        sd = "component" in nc.dimensions  # Sd: unit vectors (n, d)
        if i < 0 or width == 0:
            return DiracAtoms.empty(len(nc.dimensions["component"]) if sd else 3 if s2 else 1)

        def row(name: str) -> np.ndarray:  # (time, dirac, ...) in a run; (dirac, ...) polished
            var = nc[name]
            on_records = var.dimensions[0] != "dirac"
            values = var[i, :width] if on_records else var[:width]
            return np.ma.filled(np.ma.asarray(values, float), np.nan)

        mass = row("dirac_mass")
        pos = np.stack([row(f"dirac_{c}") for c in "xyz"], axis=1) if s2 else row("dirac_position")
        ids = np.flatnonzero(np.isfinite(mass))
        return DiracAtoms(mass[ids], pos[ids], ids)


def _nearest_record(nc: Any, n: int, time: float) -> int:
    """Index of the complete record (of the first ``n``) nearest to ``time``."""
    times = np.ma.filled(np.ma.asarray(record_times(nc)[:n], dtype=float), np.inf)
    return int(np.argmin(np.abs(times - time)))


def read_snapshot(path: str | os.PathLike, time: float | None = None
                  ) -> tuple[float, np.ndarray | tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The record nearest to ``time`` (the last one if None).

    Returns
    -------
    t : float
        The record's time.
    grid : ndarray, shape (N,) on S^1; tuple ``(theta, phi)`` of shapes (nlat,), (nphi,) on S^2
        Cell centres in radians (S^2: colatitudes and longitudes).
    rho : ndarray, shape (N,) on S^1, (nlat, nphi) on S^2
    """
    if is_zarr(path):
        from solvers.io.zarr_store import snapshot_near

        return snapshot_near(existing_archive(path), time)
    with _reading(path) as nc:
        n = valid_records(nc)
        if n == 0:
            raise ArchiveError(f"archive {path} holds no snapshots")
        times = np.ma.filled(np.ma.asarray(record_times(nc)[:n], dtype=float), np.inf)
        i = n - 1 if time is None else _nearest_record(nc, n, time)
        theta = np.asarray(nc["theta"][:], dtype=float)
        if "phi" in nc.variables:
            theta = (theta, np.asarray(nc["phi"][:], dtype=float))
        return float(times[i]), theta, np.asarray(nc["rho"][i, ...], dtype=float)


POLISHED = "polish_representation"  # the global attribute of a `meanfield polish` archive


def check_resumable(path: str | os.PathLike) -> None:
    """Raise ValueError when ``path`` is a polished measure (``meanfield polish``), not a run, or
    an Sd run (its archive keeps the atoms, not every point);
    :class:`~solvers.io.lock.ArchiveBusyError` when another process is writing it."""
    check_not_busy(path)
    if is_zarr(path):
        from solvers.io.zarr_store import open_zarr_run

        attrs = dict(open_zarr_run(existing_archive(path)).attrs)
    else:
        with _reading(path) as nc:
            attrs = {k: nc.getncattr(k) for k in nc.ncattrs()}
    if POLISHED in attrs:
        raise ArchiveError(polished_message(path))
    if attrs.get("manifold") == "Sd":
        raise ArchiveError(f"{path} is an Sd run: its archive keeps the atoms and the diffuse mass, "
                           "not every point, so it cannot be continued; run the config again "
                           "with a later time.t_end")


def polished_message(name: Any) -> str:
    return (f"{name} is a polished stationary measure (meanfield polish), not a run to continue: "
            'start a new run from it with [initial] kind = "archive", path = ...')


def read_config_text(path: str | os.PathLike) -> str:
    """The full TOML text of the run configuration stored in the archive."""
    if is_zarr(path):
        from solvers.io.zarr_store import open_zarr_run

        text = open_zarr_run(existing_archive(path)).attrs.get("config_text")
        if text is None:
            raise ArchiveError(f"archive {path} has no config_text attribute")
        return str(text)
    with _reading(path) as nc:
        if "config_text" not in nc.ncattrs():
            raise ArchiveError(f"archive {path} has no config_text attribute")
        return str(nc.getncattr("config_text"))
