"""NetCDF4 run archive: the only module that touches netCDF4 / xarray.

One run is one NetCDF4 file with an unlimited ``time`` dimension. The writer
appends one record per :class:`~solvers.snapshot.Snapshot` and calls
``Dataset.sync()`` after each, so a run killed at any moment (``kill -9``,
Ctrl-C) leaves a file that ``xarray.open_dataset`` reads with every snapshot
written so far.

Layout
------
Dimensions: ``time`` (unlimited), ``theta`` (N), ``wavenumber`` (N//2 + 1),
``atom`` (unlimited; rows are NaN-padded up to the largest atom count seen).

Variables: ``theta(theta)``, ``cell_weight(theta)``, ``wavenumber(wavenumber)``,
``time(time)``, ``step(time)`` int64, ``dt(time)``, ``rho(time, theta)``,
``rho_hat_real/imag(time, wavenumber)`` with ``rho = sum_k c_k e^{i k theta}``,
``c = numpy.fft.rfft(rho) / N``, every diagnostic of
:class:`~solvers.snapshot.Diagnostics` as ``(time)``, and
``atom_mass/atom_position(time, atom)``.

Global attributes: every parameter of :func:`solvers.params.flatten` under
:func:`param_attr_name` (``model.beta`` -> ``model__beta``; lists and None as
JSON strings, bools as ints), ``config_text``, ``version``, ``scheme``,
``kernel``, ``manifold``, ``created``, ``history``, ``python``, ``numpy``.

Concurrent reading
------------------
HDF5 locks a file that a process holds open for writing: from another process a
plain ``xarray.open_dataset`` of a running archive fails (unless that process was
started with ``HDF5_USE_FILE_LOCKING=FALSE``; HDF5 reads it once, at import). The
readers of this module then read a temporary copy of the file (the last synced
state), and load the data into memory. The lock also keeps a second writer out.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import xarray as xr

from solvers.params import RunConfig, flatten
from solvers.snapshot import Snapshot

ARCHIVE_FORMAT = "meanfield-spectral-archive 1"
REQUIRED_VARIABLES = ("time", "theta", "cell_weight", "rho", "step", "dt")
KERNEL_CONVENTIONS = {
    "exp": "exp: K(x, y) = exp(beta <x, y>)",
    "exp_shifted": "exp_shifted: K(x, y) = exp(beta (<x, y> - 1))",
}
_ATOM_CHUNK = 32
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

# name -> (netCDF type, units, long_name)
DIAGNOSTIC_VARIABLES: dict[str, tuple[str, str, str]] = {
    "mass": ("f8", "1", "total mass: sum of rho * cell_weight"),
    "min_rho": ("f8", "radian-1", "minimum of the grid density"),
    "max_rho": ("f8", "radian-1", "maximum of the grid density"),
    "energy": ("f8", "1", "energy E = (1/(2 beta)) iint K drho drho + (1/2) int v drho"),
    "dissipation": ("f8", "1", "dissipation int |g|^2 drho (dE/dt = s * dissipation)"),
    "transport_rate": ("f8", "1", "transport rate ||d rho / dt||_1 of the scheme"),
    "max_support_velocity": ("f8", "radian", "max |velocity| over cells holding mass"),
    "tail_energy": ("f8", "1", "fraction of sum |rho_k|^2 in the top third of resolved modes"),
    "n_atoms": ("i4", "1", "number of detected atoms (clusters)"),
    "max_atom_mass": ("f8", "1", "largest atom mass (0 without atoms)"),
    "theorem_3_5_bound": ("f8", "1", "16 / (16 + 3 e^(11/8)), paper Theorem 3.5"),
}


def param_attr_name(key: str) -> str:
    """Global attribute name of a flattened parameter key (``model.beta`` -> ``model__beta``)."""
    return key.replace(".", "__")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray | np.generic):
        return obj.tolist()
    raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


def attr_value(value: Any) -> str | int | float:
    """Encode one parameter value as a NetCDF attribute (JSON for lists/None, ints for bools)."""
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, default=_json_default)


def config_attributes(config: RunConfig) -> dict[str, str | int | float]:
    """Flattened parameters of ``config`` as ``{attribute name: attribute value}``."""
    flat = flatten(config)
    flat.pop("text", None)  # stored whole as ``config_text``
    return {param_attr_name(k): attr_value(v) for k, v in flat.items()}


def package_version() -> str:
    """Installed version of ``meanfield-spectral`` ("unknown" when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("meanfield-spectral")
    except PackageNotFoundError:
        return "unknown"


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def rho_hat(rho: np.ndarray) -> np.ndarray:
    """Fourier coefficients ``c_k``, k = 0..N/2, with ``rho(theta) = sum_k c_k e^{i k theta}``."""
    rho = np.asarray(rho, dtype=float)
    return np.fft.rfft(rho) / rho.shape[-1]


def _global_attributes(config: RunConfig) -> dict[str, Any]:
    version = package_version()
    created = _utc_now()
    attrs: dict[str, Any] = {
        "Conventions": "CF-1.8",
        "title": "meanfield-spectral run",
        "archive_format": ARCHIVE_FORMAT,
        "version": version,
        "scheme": config.time.scheme,
        "kernel": KERNEL_CONVENTIONS.get(config.model.kernel, config.model.kernel),
        "manifold": config.domain.manifold,
        "created": created,
        "history": f"{created} created by meanfield-spectral {version}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "config_text": config.text,
    }
    attrs.update(config_attributes(config))
    return attrs


def _define_axes(nc: netCDF4.Dataset, theta: np.ndarray, cell_weight: np.ndarray) -> None:
    n = theta.shape[0]
    nc.createDimension("time", None)
    nc.createDimension("theta", n)
    nc.createDimension("wavenumber", n // 2 + 1)
    nc.createDimension("atom", None)
    _var(nc, "theta", "f8", ("theta",), "radian", "cell centre angle")[:] = theta
    _var(nc, "cell_weight", "f8", ("theta",), "radian", "cell measure (quadrature weight)")[:] = (
        cell_weight
    )
    _var(nc, "wavenumber", "i8", ("wavenumber",), "1", "Fourier wavenumber k")[:] = np.arange(
        n // 2 + 1
    )
    nc["theta"].setncattr("axis", "X")


def _var(
    nc: netCDF4.Dataset,
    name: str,
    dtype: str,
    dims: tuple[str, ...],
    units: str,
    long_name: str,
    **kwargs: Any,
) -> netCDF4.Variable:
    """Create a variable with ``units`` and ``long_name`` (floats with NaN fill on ``time``)."""
    if dtype == "f8" and "time" in dims:
        kwargs.setdefault("fill_value", np.nan)
    var = nc.createVariable(name, dtype, dims, **kwargs)
    var.setncatts({"units": units, "long_name": long_name})
    return var


def _define_records(nc: netCDF4.Dataset, n: int) -> None:
    k = n // 2 + 1
    comp = {"zlib": True, "complevel": 4, "shuffle": True}
    time = _var(nc, "time", "f8", ("time",), "1", "time (dimensionless model time)")
    time.setncattr("axis", "T")
    _var(nc, "step", "i8", ("time",), "1", "accepted steps since t = 0")
    _var(nc, "dt", "f8", ("time",), "1", "last accepted step size")
    _var(
        nc,
        "rho",
        "f8",
        ("time", "theta"),
        "radian-1",
        "density (cell averages)",
        chunksizes=(1, n),
        **comp,
    )
    for part in ("real", "imag"):
        _var(
            nc,
            f"rho_hat_{part}",
            "f8",
            ("time", "wavenumber"),
            "radian-1",
            f"{part} part of c_k, rho = sum_k c_k exp(i k theta), c = rfft(rho)/N",
            chunksizes=(1, k),
            **comp,
        )
    for name, (dtype, units, long_name) in DIAGNOSTIC_VARIABLES.items():
        _var(nc, name, dtype, ("time",), units, long_name)
    _var(
        nc,
        "atom_mass",
        "f8",
        ("time", "atom"),
        "1",
        "atom mass (NaN padded)",
        chunksizes=(1, _ATOM_CHUNK),
    )
    _var(
        nc,
        "atom_position",
        "f8",
        ("time", "atom"),
        "radian",
        "atom position: circular centre of mass in [0, 2 pi) (NaN padded)",
        chunksizes=(1, _ATOM_CHUNK),
    )


def _valid_records(nc: netCDF4.Dataset) -> int:
    """Number of complete records: up to the last finite ``time`` (written last in a record)."""
    t = np.ma.filled(np.ma.asarray(nc["time"][:], dtype=float), np.nan)
    finite = np.flatnonzero(np.isfinite(t))
    return int(finite[-1]) + 1 if finite.size else 0


def _existing(path: str | os.PathLike) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"archive {path} does not exist")
    return path


def _is_hdf5(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(_HDF5_SIGNATURE)) == _HDF5_SIGNATURE


@contextmanager
def _readable(path: str | os.PathLike) -> Iterator[Path]:
    """Yield ``path``, or a temporary copy of it when a writing process holds its HDF5 lock."""
    path = _existing(path)
    try:
        netCDF4.Dataset(path, "r").close()
    except OSError as err:
        if not _is_hdf5(path):
            raise ValueError(f"{path} is not a readable NetCDF4 archive ({err})") from err
        with tempfile.TemporaryDirectory(prefix="archive-read-") as tmp:
            copy = Path(tmp) / path.name
            shutil.copyfile(path, copy)
            yield copy
        return
    yield path


def _check_archive(nc: netCDF4.Dataset, shown: str | os.PathLike) -> None:
    missing = [v for v in REQUIRED_VARIABLES if v not in nc.variables]
    if missing:
        nc.close()
        raise ValueError(f"{shown} is not a meanfield-spectral archive: missing {missing}")


@contextmanager
def _reading(path: str | os.PathLike) -> Iterator[netCDF4.Dataset]:
    """Open an archive read-only, with clear errors for missing files and non-archives."""
    with _readable(path) as readable:
        try:
            nc = netCDF4.Dataset(readable, "r")
        except OSError as err:
            raise ValueError(f"{path} is not a readable NetCDF4 archive ({err})") from err
        _check_archive(nc, path)
        try:
            yield nc
        finally:
            nc.close()


def _open_append(path: Path) -> netCDF4.Dataset:
    path = _existing(path)
    try:
        nc = netCDF4.Dataset(path, "a")
    except OSError as err:
        raise ValueError(
            f"cannot open {path} for appending: not a NetCDF4 file, or open elsewhere "
            f"(another run, or an unclosed reader) ({err})"
        ) from err
    _check_archive(nc, path)
    return nc


class ArchiveWriter:
    """Append :class:`~solvers.snapshot.Snapshot` records to a NetCDF4 archive.

    Parameters
    ----------
    path : str or PathLike
        The archive file (parent folders are created).
    config : RunConfig
        The run configuration, stored as global attributes.
    theta : ndarray, shape (N,)
        Cell centres in radians.
    cell_weight : ndarray, shape (N,)
        Cell measures, ``(rho * cell_weight).sum()`` is the mass.
    append : bool
        Resume: open the existing file (which must exist and have the same ``theta``) and
        append records after its last time; a ``history`` line is added. ``overwrite`` is
        ignored.
    overwrite : bool
        Replace an existing file for a new run (otherwise FileExistsError).

    Notes
    -----
    Use as a context manager, or call :meth:`close`. Instances are callable, so they can
    be handed to ``simulate`` as trackers. Each record is synced to disk when written.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        config: RunConfig,
        theta: np.ndarray,
        cell_weight: np.ndarray,
        append: bool = False,
        overwrite: bool = False,
    ) -> None:
        self.path = Path(path)
        self.theta = np.asarray(theta, dtype=float)
        self.cell_weight = np.asarray(cell_weight, dtype=float)
        if self.theta.ndim != 1 or self.cell_weight.shape != self.theta.shape:
            raise ValueError("theta and cell_weight must be 1-D arrays of the same length")
        if append:
            self._nc = self._open_append(config)
        else:
            self._nc = self._create(config, overwrite)
        self._n = _valid_records(self._nc)
        self._last_t = float(self._nc["time"][self._n - 1]) if self._n else -np.inf

    def _create(self, config: RunConfig, overwrite: bool) -> netCDF4.Dataset:
        if self.path.exists() and not overwrite:
            raise FileExistsError(
                f"archive {self.path} already exists: pass --overwrite (overwrite=True) "
                "to replace it, --resume to continue it, or delete it"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        nc = netCDF4.Dataset(self.path, "w", format="NETCDF4", clobber=True)
        try:
            nc.setncatts(_global_attributes(config))
            _define_axes(nc, self.theta, self.cell_weight)
            _define_records(nc, self.theta.shape[0])
            nc.sync()
        except BaseException:
            nc.close()
            self.path.unlink(missing_ok=True)
            raise
        return nc

    def _open_append(self, config: RunConfig) -> netCDF4.Dataset:
        nc = _open_append(self.path)
        try:
            self._check_grid(nc)
            line = f"{_utc_now()} resumed by meanfield-spectral {package_version()}"
            changed = _changed_parameters(nc, config)
            if changed:
                line += "; changed: " + ", ".join(changed)
            nc.setncattr("history", f"{getattr(nc, 'history', '')}\n{line}".lstrip("\n"))
            nc.sync()
        except BaseException:
            nc.close()
            raise
        return nc

    def _check_grid(self, nc: netCDF4.Dataset) -> None:
        old = np.asarray(nc["theta"][:], dtype=float)
        if old.shape != self.theta.shape or not np.allclose(old, self.theta, rtol=0, atol=1e-12):
            raise ValueError(
                f"cannot append to {self.path}: its theta grid (N = {old.size}) differs "
                f"from this run's (N = {self.theta.size})"
            )

    @property
    def n_records(self) -> int:
        """Number of complete records in the file."""
        return self._n

    def write_snapshot(self, snapshot: Snapshot) -> bool:
        """Append one record and sync it to disk.

        Returns False (and writes nothing) when ``snapshot.t`` equals the last written time
        (a repeated final snapshot); raises ValueError when it is earlier.
        """
        rho = np.asarray(snapshot.rho, dtype=float)
        if rho.shape != self.theta.shape:
            raise ValueError(f"rho has shape {rho.shape}, archive grid has {self.theta.shape}")
        t = float(snapshot.t)
        if t <= self._last_t:
            if np.isclose(t, self._last_t, rtol=1e-12, atol=1e-14):
                return False
            raise ValueError(f"snapshot time {t} precedes the last archived time {self._last_t}")
        self._write_record(self._n, snapshot, rho)
        self._nc.sync()
        self._n += 1
        self._last_t = t
        return True

    __call__ = write_snapshot

    def _write_record(self, i: int, snapshot: Snapshot, rho: np.ndarray) -> None:
        nc, d = self._nc, snapshot.diagnostics
        nc["rho"][i, :] = rho
        c = rho_hat(rho)
        nc["rho_hat_real"][i, :] = c.real
        nc["rho_hat_imag"][i, :] = c.imag
        nc["step"][i] = int(snapshot.step)
        nc["dt"][i] = float(snapshot.dt)
        for name in DIAGNOSTIC_VARIABLES:
            nc[name][i] = getattr(d, name)
        self._write_atoms(i, np.asarray(d.atom_mass, float), np.asarray(d.atom_position, float))
        nc["time"][i] = float(snapshot.t)  # last: a record counts once its time is written

    def _write_atoms(self, i: int, mass: np.ndarray, position: np.ndarray) -> None:
        if mass.shape != position.shape or mass.ndim != 1:
            raise ValueError("atom_mass and atom_position must be 1-D arrays of equal length")
        width = max(len(self._nc.dimensions["atom"]), mass.size)
        if width == 0:
            return
        for name, values in (("atom_mass", mass), ("atom_position", position)):
            row = np.full(width, np.nan)
            row[: values.size] = values
            self._nc[name][i, 0:width] = row

    def close(self) -> None:
        """Sync and close the file (idempotent)."""
        if self._nc.isopen():
            self._nc.sync()
            self._nc.close()

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _changed_parameters(nc: netCDF4.Dataset, config: RunConfig) -> list[str]:
    """``"key old -> new"`` for every parameter attribute that differs from ``config``."""
    out = []
    for name, new in config_attributes(config).items():
        old = nc.getncattr(name) if name in nc.ncattrs() else None
        if isinstance(old, np.generic):
            old = old.item()
        if old != new:
            out.append(f"{name} {old!r} -> {new!r}")
    return out


def open_run(path: str | os.PathLike) -> xr.Dataset:
    """Load a run archive into memory as an :class:`xarray.Dataset`.

    Incomplete trailing records (a run killed while writing one) are dropped. Works on
    archives that a running process is still writing.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not a NetCDF4 run archive.
    """
    with _readable(path) as readable:
        with _reading(readable):  # validates
            pass
        ds = xr.load_dataset(readable, engine="netcdf4")
    return ds.isel(time=np.isfinite(ds["time"].values))


def read_last_state(path: str | os.PathLike) -> tuple[float, int, float, np.ndarray]:
    """The last complete record of an archive, for resuming.

    Returns
    -------
    t : float
    step : int
    dt : float
    rho : ndarray, shape (N,)
    """
    with _reading(path) as nc:
        i = _valid_records(nc) - 1
        if i < 0:
            raise ValueError(f"archive {path} holds no snapshots")
        rho = np.asarray(nc["rho"][i, :], dtype=float)
        return float(nc["time"][i]), int(nc["step"][i]), float(nc["dt"][i]), rho


def read_snapshot(
    path: str | os.PathLike, time: float | None = None
) -> tuple[float, np.ndarray, np.ndarray]:
    """The record nearest to ``time`` (the last one if None).

    Returns
    -------
    t : float
        The record's time.
    theta : ndarray, shape (N,)
    rho : ndarray, shape (N,)
    """
    with _reading(path) as nc:
        n = _valid_records(nc)
        if n == 0:
            raise ValueError(f"archive {path} holds no snapshots")
        times = np.ma.filled(np.ma.asarray(nc["time"][:n], dtype=float), np.inf)
        i = n - 1 if time is None else int(np.argmin(np.abs(times - time)))
        theta = np.asarray(nc["theta"][:], dtype=float)
        return float(times[i]), theta, np.asarray(nc["rho"][i, :], dtype=float)


def read_config_text(path: str | os.PathLike) -> str:
    """The full TOML text of the run configuration stored in the archive."""
    with _reading(path) as nc:
        if "config_text" not in nc.ncattrs():
            raise ValueError(f"archive {path} has no config_text attribute")
        return str(nc.getncattr("config_text"))
