"""Layout of the run archive, the same for NetCDF4 and zarr: variable tables, attributes, time
chunking, and :class:`VarSpec` definitions that both stores create their variables from (see
:mod:`solvers.io.archive` for the layout and the file-level guarantees).

To add a kind of record, add a row to a table here (e.g. :data:`DIAGNOSTIC_VARIABLES`) or a
:class:`VarSpec` to :func:`record_specs`, and fill it in :mod:`solvers.io.records`.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.io.cf import (  # noqa: F401  (RECORD_DIM, TIME re-exported)
    CONVENTIONS,
    RECORD_DIM,
    RECORD_DIMS,
    TIME,
    creation_history,
    package_version,
    record_dim,
)
from solvers.io.cf import utc_now as _utc_now
from solvers.model.params import RunConfig, flatten
from solvers.timestepping.manifolds import manifold_of

ARCHIVE_FORMAT = "meanfield-spectral-archive 1"
REQUIRED_VARIABLES = ("theta", "cell_weight", "rho", "step", "dt")  # and the record coordinate
KERNEL_CONVENTIONS = {
    "exp": "exp: K(x, y) = exp(beta <x, y>)",
    "exp_shifted": "exp_shifted: K(x, y) = exp(beta (<x, y> - 1))",
}
_ATOM_CHUNK = 8  # atoms per chunk of a (time, atom) variable (most runs keep a few atoms)
RECORDS_COMPLETE = "records_complete"  # records that readers may trust (set by each store)
RECORDS_WRITTEN = "records_written"  # global attribute: a block written whole, records and state
CHUNK_BYTES = 2 << 20  # target size of one uncompressed time chunk of rho
MAX_CHUNK_RECORDS = 64  # longest time chunk (small grids; NetCDF allocates chunks whole)
# NetCDF compression of the records: shuffle + zlib (docs/archive.md has the measurements)
COMPRESSION = {"zlib": True, "complevel": 4, "shuffle": True}
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
from solvers.io.variables import (  # noqa: E402,F401  (the tables, re-exported)
    _DENSITY,
    ATOM_TRACK_VARIABLES,
    CIRCLE_ATOM_VARIABLES,
    CIRCLE_DIRAC_VARIABLES,
    COMPONENT,
    DIAGNOSTIC_VARIABLES,
    DIRAC_MASS_LONG_NAME,
    POINT_ATOM_VARIABLES,
    POINT_DIRAC_VARIABLES,
    RAGGED_DIMS,
    SPHERE_ATOM_VARIABLES,
    SPHERE_DIRAC_VARIABLES,
)

ATOM_CELL = "atom_cell"  # (grid): identities of the cells at the last record, for resumes
RESTART = "restart_rho"  # (grid): the step state behind an interpolated last record, for resumes
# stop criteria at each snapshot, (time): 1 held, 0 not, -1 not evaluated
STATIONARITY_VARIABLES = ("window", "transport", "atoms", "masses")
ATOM_METHODS_TEXT = {
    "basin": "basin: flow basins split at density saddles (solvers.core.atoms)",
    "paper": "paper: cells denser than contrast * M / |S|, single linkage within radius",
}


def param_attr_name(key: str) -> str:
    """Global attribute name of a flattened parameter key (``model.beta`` -> ``model__beta``)."""
    return key.replace(".", "__")


def missing_variables(names: Iterable[Any]) -> list[str]:
    """The required variables that an archive with variables ``names`` lacks: the record
    coordinate (``t``, or ``time`` in the earlier layout), then :data:`REQUIRED_VARIABLES`."""
    names = set(names)
    missing = [] if names & set(RECORD_DIMS) else [RECORD_DIM]
    return missing + [v for v in REQUIRED_VARIABLES if v not in names]


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray | np.generic):
        return obj.tolist()
    raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


def attr_value(value: Any) -> str | int | float:
    """Encode one parameter value as a NetCDF attribute (JSON for lists/None, ints for bools)."""
    if isinstance(value, bool | np.bool_ | int | np.integer):
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
    if not flat.get("domain.dim"):  # 0: the manifold's own d (S1, S2), not recorded
        flat.pop("domain.dim", None)
    return {param_attr_name(k): attr_value(v) for k, v in flat.items()}


def rho_hat(rho: np.ndarray) -> np.ndarray:
    """Fourier coefficients ``c_k``, k = 0..N/2, with ``rho(theta) = sum_k c_k e^{i k theta}``."""
    rho = np.asarray(rho, dtype=float)
    return np.fft.rfft(rho) / rho.shape[-1]


def sphere_atom_columns(mass: np.ndarray, position: np.ndarray) -> dict[str, np.ndarray]:
    """S^2 atom variables from masses (n,) and positions (n, 3): x, y, z, colatitude, longitude."""
    pos = np.asarray(position, dtype=float).reshape(-1, 3)
    if pos.shape[0] != np.size(mass):
        raise ValueError(f"atom_position has shape {np.shape(position)}, expected "
                         f"({np.size(mass)}, 3)")
    unit = pos / np.maximum(np.linalg.norm(pos, axis=1, keepdims=True), 1e-300)
    return {"atom_mass": np.asarray(mass, dtype=float).reshape(-1), "atom_x": pos[:, 0],
            "atom_y": pos[:, 1], "atom_z": pos[:, 2],
            "atom_colatitude": np.arccos(np.clip(unit[:, 2], -1.0, 1.0)),
            "atom_longitude": np.mod(np.arctan2(unit[:, 1], unit[:, 0]), 2.0 * np.pi)}


@dataclass(frozen=True)
class _Grid:
    """The archive's grid: S^1 (``phi`` None), S^2 (with its :class:`SphereBasis`) or the one
    cell of Sd (``components`` = d: positions are unit vectors of ``R^d``)."""

    theta: np.ndarray
    cell_weight: np.ndarray
    phi: np.ndarray | None = None
    basis: Any = None
    components: int = 0

    @property
    def shape(self) -> tuple[int, ...]:
        return self.cell_weight.shape

    @property
    def density_units(self) -> str:
        return "1" if self.components else "radian-1" if self.phi is None else "sr-1"

    @property
    def position_dims(self) -> tuple[str, ...]:
        """The trailing dimensions of an atom's position variable: ``(component,)`` on Sd."""
        return (COMPONENT,) if self.components else ()


def _make_grid(config: RunConfig, theta: np.ndarray, cell_weight: np.ndarray,
               phi: np.ndarray | None) -> _Grid:
    theta, weight = np.asarray(theta, dtype=float), np.asarray(cell_weight, dtype=float)
    if config.domain.manifold == "Sd":
        return _Grid(theta, weight, components=config.domain.d)
    if phi is None:
        if theta.ndim != 1 or weight.shape != theta.shape:
            raise ValueError("theta and cell_weight must be 1-D arrays of the same length")
        return _Grid(theta, weight)
    from spectral.sphere import SphereBasis

    phi = np.asarray(phi, dtype=float)
    if theta.ndim != 1 or phi.ndim != 1 or weight.shape != (theta.size, phi.size):
        raise ValueError("S2 archive: theta (nlat,), phi (nphi,), cell_weight (nlat, nphi)")
    if "phi" not in manifold_of(config).grid_dims:
        raise ValueError(f"phi given but domain.manifold is {config.domain.manifold!r}")
    basis = SphereBasis(config.domain.resolution, nlat=theta.size, nphi=phi.size)
    if not np.allclose(theta, basis.theta, rtol=0, atol=1e-12):
        raise ValueError("S2 archive: theta must be the Gauss colatitudes of SphereBasis(lmax)")
    return _Grid(theta, weight, phi, basis)


def _global_attributes(config: RunConfig) -> dict[str, Any]:
    version, created = package_version(), _utc_now()
    attrs: dict[str, Any] = {
        "Conventions": CONVENTIONS,
        "title": "meanfield-spectral run",
        "archive_format": ARCHIVE_FORMAT,
        "version": version,
        "scheme": config.time.scheme,
        "kernel": KERNEL_CONVENTIONS.get(config.model.kernel, config.model.kernel),
        "manifold": config.domain.manifold,
        "created": created,
        "history": creation_history(created),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "config_text": config.text,
        "atom_method": ATOM_METHODS_TEXT.get(config.atoms.method, config.atoms.method),
        "representation": config.atoms.representation,
    }
    attrs.update(config_attributes(config))
    return attrs


@dataclass(frozen=True)
class VarSpec:
    """One archive variable, store-neutral.

    ``fill``: the fill value of unwritten entries (None: the store's default);
    ``fill_attr``: False for ``t``, a coordinate (CF: no ``_FillValue`` attribute): its
    unwritten entries still read NaN (the store keeps the fill, not the attribute);
    ``data``: the values of a fixed (grid) variable; ``compress``: compress its chunks.
    """

    name: str
    dtype: str
    dims: tuple[str, ...]
    attrs: dict[str, Any]
    fill: float | int | None = None
    fill_attr: bool = True
    data: np.ndarray | None = None
    compress: bool = False


def _spec(name: str, dtype: str, dims: tuple[str, ...], units: str, long_name: str,
          **kw: Any) -> VarSpec:
    """A :class:`VarSpec` with ``units`` and ``long_name`` (floats on records: NaN fill)."""
    attrs = {"units": units, "long_name": long_name} | kw.pop("attrs", {})
    if dtype == "f8" and on_records(dims):
        kw.setdefault("fill", np.nan)
    if on_records(dims):  # chunks of many records: compressed (NaN padding costs nothing)
        kw.setdefault("compress", True)
    return VarSpec(name, dtype, dims, attrs, **kw)


def on_records(dims: tuple[str, ...]) -> bool:
    """Whether a variable on ``dims`` is a record variable (on ``t``, or ``time`` in the
    earlier layout: always the first dimension)."""
    return bool(dims) and dims[0] in RECORD_DIMS


def _bounds(axis: str, faces: np.ndarray) -> VarSpec:
    """CF cell bounds ``<axis>_bounds(axis, nv)`` from the ``n + 1`` faces of the cells
    (lower, upper); no attributes: bounds inherit the coordinate's units (CF 7.1)."""
    return VarSpec(f"{axis}_bounds", "f8", (axis, "nv"), {},
                   data=np.stack([faces[:-1], faces[1:]], axis=1))


def dimension_sizes(grid: _Grid, spectral: bool, dirac: bool = False) -> dict[str, int | None]:
    """The archive's dimensions (None: unlimited; ``dirac``: a measure-valued run's atoms)."""
    dims: dict[str, int | None] = {RECORD_DIM: None, "theta": grid.theta.size, "atom": None,
                                   "nv": 2}
    if dirac:
        dims["dirac"] = None
    if grid.components:
        dims[COMPONENT] = grid.components
    if grid.phi is not None:
        dims["phi"] = grid.phi.size
    if spectral:
        dims["wavenumber" if grid.phi is None else "lm"] = (
            grid.theta.size // 2 + 1 if grid.phi is None else grid.basis.nlm)
    return dims


def axis_specs(grid: _Grid, spectral: bool) -> list[VarSpec]:
    """Coordinates, cell bounds and cell measures of the grid (fixed variables)."""
    if grid.components:
        return [_spec("theta", "f8", ("theta",), "1", "the one cell of Sd: the whole sphere "
                      "S^(d-1) (weighted points have no grid)", data=grid.theta),
                _spec("cell_weight", "f8", ("theta",), "1", "|S^(d-1)|, the measure of the one "
                      "cell", data=grid.cell_weight),
                _spec(COMPONENT, "i4", (COMPONENT,), "1", "component of a unit vector of R^d "
                      "(1 .. d)", data=np.arange(1, grid.components + 1))]
    if grid.phi is None:
        n, h = grid.theta.size, 2.0 * np.pi / grid.theta.size
        # angles in radians, not geographic longitudes: no axis attribute (CF 4.2 asks an X
        # axis for degrees_east); the cell measure is a length, not a CF "area" in m2
        out = [_spec("theta", "f8", ("theta",), "radian", "cell centre angle", data=grid.theta,
                     attrs={"bounds": "theta_bounds"}),
               _bounds("theta", np.append(grid.theta - 0.5 * h, grid.theta[-1] + 0.5 * h)),
               _spec("cell_weight", "f8", ("theta",), "radian",
                     "cell measure (arc length = quadrature weight)", data=grid.cell_weight)]
        if spectral:
            out.append(_spec("wavenumber", "i4", ("wavenumber",), "1", "Fourier wavenumber k",
                             data=np.arange(n // 2 + 1)))
        return out
    return _sphere_axis_specs(grid, spectral)


def _sphere_axis_specs(grid: _Grid, spectral: bool) -> list[VarSpec]:
    band = np.sum(grid.cell_weight, axis=1) / (2.0 * np.pi)  # cos(theta) drop across each band
    mu_faces = np.clip(1.0 - np.concatenate([[0.0], np.cumsum(band)]), -1.0, 1.0)
    dphi = 2.0 * np.pi / grid.phi.size
    # colatitude and longitude in radians; the geographic coordinates are lat, lon (degrees)
    out = [_spec("theta", "f8", ("theta",), "radian", "colatitude of the cell centre (Gauss node)",
                 data=grid.theta, attrs={"bounds": "theta_bounds"}),
           _spec("phi", "f8", ("phi",), "radian", "longitude of the cell centre", data=grid.phi,
                 attrs={"bounds": "phi_bounds"}),
           _bounds("theta", np.arccos(mu_faces)),
           _bounds("phi", np.append(grid.phi - 0.5 * dphi, grid.phi[-1] + 0.5 * dphi)),
           _spec("lat", "f8", ("theta",), "degrees_north", "latitude = 90 - colatitude",
                 data=90.0 - np.degrees(grid.theta), attrs={"standard_name": "latitude"}),
           _spec("lon", "f8", ("phi",), "degrees_east", "longitude",
                 data=np.degrees(grid.phi), attrs={"standard_name": "longitude"}),
           _spec("cell_weight", "f8", ("theta", "phi"), "sr",
                 "cell area = quadrature weight (sums to 4 pi)", data=grid.cell_weight)]
    if spectral:
        out += [_spec("degree", "i4", ("lm",), "1", "spherical-harmonic degree l",
                      data=grid.basis.degrees),
                _spec("order", "i4", ("lm",), "1", "spherical-harmonic order m >= 0",
                      data=grid.basis.orders)]
    return out


def spectrum_prefix(grid: _Grid) -> str:
    """``rho_hat`` (S^1) or ``rho_lm`` (S^2): the spectrum variables are ``<prefix>_real/imag``."""
    return "rho_hat" if grid.phi is None else "rho_lm"


def _spectrum_specs(grid: _Grid) -> list[VarSpec]:
    out = []
    for part in ("real", "imag"):
        if grid.phi is None:
            out.append(_spec(f"rho_hat_{part}", "f8", (RECORD_DIM, "wavenumber"),
                             grid.density_units,
                             f"{part} part of c_k, rho = sum_k c_k exp(i k theta), c = rfft(rho)/N",
                             compress=True))
        else:
            out.append(_spec(f"rho_lm_{part}", "f8", (RECORD_DIM, "lm"), "1",
                             f"{part} part of rho_lm = int conj(Y_lm) rho dsigma (orthonormal "
                             "Y_lm, Condon-Shortley phase, m >= 0)", compress=True,
                             attrs={"coordinates": "degree order"}))
    return out


def record_specs(grid: _Grid, spectral: bool, dirac: bool = False) -> list[VarSpec]:
    """Every variable on the record dimension ``t`` (its coordinate first), then the
    per-identity atom records; with ``dirac`` the Dirac atoms of a measure-valued run (one
    column per Dirac identity)."""
    s2, units = grid.phi is not None, grid.density_units
    # cell_weight is no CF cell measure (radian or sr, not m2): rho's quadrature weight
    rho_attrs = {"coordinates": "lat lon"} if s2 else {}
    # the model's dimensionless time, named "t" (not "time", no axis "T": CF asks a time axis
    # for "<unit> since <date>" units, which xarray would decode into dates; solvers.io.cf)
    t = (RECORD_DIM,)
    out = [_spec(RECORD_DIM, "f8", t, "1", "model time (dimensionless)", fill_attr=False),
           _spec("step", "i4", t, "1", "accepted steps since t = 0"),
           _spec("dt", "f8", t, "1", "last accepted step size"),
           _spec("steps_rejected", "i4", t, "1",
                 "steps refused and retried shorter since the solver started (error test of an "
                 "embedded Runge-Kutta pair, CFL condition, Lagrangian points out of order)"),
           _spec("time_error_estimate", "f8", t, "1",
                 "sum over the accepted steps of the embedded pair's local error estimate "
                 "max_i |err_i| (in the state's units; 0 with other integrators)"),
           _spec("rho", "f8", (*t, "theta", "phi") if s2 else (*t, "theta"), units,
                 "density (fv: cell averages; spectral: point values)", compress=True,
                 attrs=rho_attrs)]
    if spectral:
        out += _spectrum_specs(grid)
    out += [_spec(name, dtype, t, units if unit == _DENSITY else unit,
                  DIRAC_MASS_LONG_NAME if dirac and name == "mass" else long_name)
            for name, (dtype, unit, long_name) in DIAGNOSTIC_VARIABLES.items()]
    atom_table, dirac_table = atom_variables(grid)
    trail = {"atom_position": grid.position_dims, "dirac_position": grid.position_dims}
    out += [_spec(name, "f8", (*t, "atom", *trail.get(name, ())), unit, f"{long_name} (NaN padded)")
            for name, (unit, long_name) in atom_table.items()]
    if dirac:
        out += [_spec(name, "f8", (*t, "dirac", *trail.get(name, ())), unit,
                      f"{long_name} (NaN padded)")
                for name, (unit, long_name) in dirac_table.items()]
    out.append(_spec(ATOM_CELL, "i4", ("theta", "phi") if s2 else ("theta",), "1",
                     "identity of the atom each cell belonged to at the last complete record "
                     "(-1: diffuse)", attrs=rho_attrs,
                     data=np.full(grid.shape, -1, dtype=np.int32)))
    out.append(_spec(RESTART, "f8", ("theta", "phi") if s2 else ("theta",), units,
                     "step state a resume continues from when the last record is interpolated "
                     "(valid when its after_time equals the last record's time)", attrs=rho_attrs,
                     data=np.full(grid.shape, np.nan)))
    return out + track_specs()


def atom_variables(grid: _Grid) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """The atom and Dirac-atom variable tables of ``grid``'s manifold."""
    if grid.components:
        return POINT_ATOM_VARIABLES, POINT_DIRAC_VARIABLES
    if grid.phi is not None:
        return SPHERE_ATOM_VARIABLES, SPHERE_DIRAC_VARIABLES
    return CIRCLE_ATOM_VARIABLES, CIRCLE_DIRAC_VARIABLES


def track_specs(dim: str = RECORD_DIM) -> list[VarSpec]:
    """Per-identity atom records and the per-snapshot stop criteria (absent from old archives;
    ``dim``: the archive's record dimension, :func:`record_dim`)."""
    out = [_spec(name, dtype, ("atom",), unit, long_name,
                 fill=np.nan if dtype == "f8" else None)  # ints: -1 written, not a fill
           for name, (dtype, unit, long_name) in ATOM_TRACK_VARIABLES.items()]
    out += [_spec(f"stationary_{name}", "i1", (dim,), "1",
                  f"stop criterion '{name}' held at this snapshot (1), not (0), not evaluated (-1)",
                  fill=-1) for name in STATIONARITY_VARIABLES]
    return out


def record_bytes(grid: _Grid) -> int:
    """Bytes of one uncompressed ``rho`` record."""
    return int(np.prod(grid.shape)) * 8


def expected_records(config: RunConfig) -> int:
    """Snapshots a run of ``config`` writes when it runs from t = 0 to ``time.t_end``: t = 0,
    every ``output.snapshot_interval``, and ``t_end`` (a run that stops earlier writes fewer)."""
    interval, t_end = float(config.output.snapshot_interval), float(config.time.t_end)
    if not (interval > 0 and np.isfinite(t_end) and t_end >= 0):
        return MAX_CHUNK_RECORDS
    return int(min(np.ceil(t_end / interval - 1e-9), MAX_CHUNK_RECORDS)) + 1


def time_chunk(grid: _Grid, records: int = MAX_CHUNK_RECORDS) -> int:
    """Records per time chunk: about :data:`CHUNK_BYTES` of ``rho``, at most ``records`` (the
    snapshots the run expects, :func:`expected_records`) and :data:`MAX_CHUNK_RECORDS`, at
    least 1 (S^1 N = 512: 64 records of 4 KiB; S^2 lmax 127: 8 of 256 KiB). NetCDF allocates
    a chunk whole when its first record is written: the file outgrows its data by less than
    one chunk per variable."""
    return int(np.clip(min(CHUNK_BYTES // record_bytes(grid), records), 1, MAX_CHUNK_RECORDS))


def chunk_shape(spec: VarSpec, sizes: dict[str, int | None], records: int) -> tuple[int, ...]:
    """Chunks of a record variable: ``records`` along ``t``, :data:`_ATOM_CHUNK` along
    ``atom``, whole along the grid dimensions."""
    return tuple(records if d in RECORD_DIMS else _ATOM_CHUNK if d in RAGGED_DIMS else int(sizes[d])
                 for d in spec.dims)


def is_ragged(dims: tuple[str, ...]) -> bool:
    """Whether a record variable on ``dims`` has a ragged second axis (``atom`` or ``dirac``,
    then at most the ``component`` of a position)."""
    return len(dims) >= 2 and dims[1] in RAGGED_DIMS and dims[2:] in ((), (COMPONENT,))
