"""CF-1.8 metadata for the files the study commands write (Lemma 5.1 reports, convergence
ladders, sweep summaries, polished archives). Run archives get theirs from
:mod:`solvers.io.layout`; both pass the IOOS compliance checker's ``cf:1.8`` test with no error
and no warning (``tests/io/test_cf_compliance.py``).

The record dimension is ``t`` on disk (:data:`RECORD_DIM`) and ``time`` in the Python API
(:data:`TIME`): CF and the checker take a dimension named ``time`` for a time axis with units
``<unit> since <date>``, which the dimensionless model time has not (and xarray would decode
such units into dates). The readers rename ``t`` to ``time`` (:func:`to_api`), the writers
``time`` to ``t`` (:func:`to_disk`); files of the earlier layout, with ``time`` on disk, are
read alike (:func:`record_dim`).

:func:`describe` fills what a Dataset lacks: ``Conventions``, a ``title``, a ``history``, and
``units`` and ``long_name`` on every variable and coordinate but cell bounds (CF 7.1: bounds
inherit them from their coordinate), from a table of known names (most quantities here are
dimensionless: CF writes that ``units = "1"``). It never overwrites what is set.
:func:`netcdf_encoding` is the encoding :func:`solvers.io.safe_paths.write_netcdf` writes with:
no ``_FillValue`` on coordinates and bounds (CF 2.5.1), 32-bit integers (CF 1.8 has no 64-bit
type).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

CONVENTIONS = "CF-1.8"
RECORD_DIM = "t"  # the record dimension and coordinate on disk (the model time, units "1")
TIME = "time"  # its name in the Python API, and on disk in files of the earlier layout
RECORD_DIMS = (RECORD_DIM, TIME)

# name -> (units, long_name) of names shared by several kinds of output
KNOWN: dict[str, tuple[str, str]] = {
    "beta": ("1", "inverse temperature beta of the kernel exp(beta x.y)"),
    "degree": ("1", "spherical-harmonic degree (S^2) or Fourier wavenumber (S^1)"),
    "precision": ("1", "working precision in decimal digits"),
    "resolution": ("1", "grid resolution (S^1: cells N; S^2: lmax)"),
    "dt": ("1", "fixed time step"),
    "seed": ("1", "seed of the perturbed initial state"),
    "atom": ("1", "atom index"),
    "time": ("1", "model time (dimensionless)"),
    "t": ("1", "model time (dimensionless)"),
}
_INT32 = np.iinfo(np.int32)


def package_version() -> str:
    """Installed version of ``meanfield-spectral`` ("unknown" when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("meanfield-spectral")
    except PackageNotFoundError:
        return "unknown"


def utc_now() -> str:
    """The time now in UTC, ISO 8601 to the second (``2026-01-31T12:00:00Z``)."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def creation_history(created: str | None = None) -> str:
    """The ``history`` line of a new file: ``<UTC time> created by meanfield-spectral <version>``."""
    return f"{created or utc_now()} created by meanfield-spectral {package_version()}"


def record_dim(names: Iterable[Any]) -> str:
    """The record dimension of a file whose dimensions (or variables) are ``names``:
    :data:`RECORD_DIM`, or :data:`TIME` in a file of the earlier layout."""
    names = set(names)
    return TIME if TIME in names and RECORD_DIM not in names else RECORD_DIM


def to_api(ds: Any) -> Any:
    """``ds`` (an xarray.Dataset as read from disk) with its record dimension and coordinate
    named ``time`` (unchanged when it has no ``t`` dimension: the earlier layout)."""
    if RECORD_DIM in ds.dims and TIME not in ds.variables:
        return ds.rename({RECORD_DIM: TIME})
    return ds


def to_disk(ds: Any) -> Any:
    """``ds`` (an xarray.Dataset) with a ``time`` dimension and coordinate renamed ``t`` for
    writing (the inverse of :func:`to_api`; unchanged without a ``time`` dimension)."""
    if TIME in ds.dims and RECORD_DIM not in ds.variables:
        return ds.rename({TIME: RECORD_DIM})
    return ds


def _long_name(name: str) -> str:
    return name.replace("_", " ")


def bounds_names(ds: Any) -> set[str]:
    """Names of the cell-bounds variables of ``ds`` (those a ``bounds`` attribute names)."""
    return {str(var.attrs["bounds"]) for var in ds.variables.values() if "bounds" in var.attrs}


def describe(ds: Any, title: str, table: Mapping[str, tuple[str, str]] | None = None) -> Any:
    """``ds`` (an xarray.Dataset, changed in place and returned) with CF attributes filled in.

    Parameters
    ----------
    ds : xarray.Dataset
    title : str
        The file's ``title`` attribute (kept when already set).
    table : mapping, optional
        ``name -> (units, long_name)`` for this kind of file; :data:`KNOWN` covers shared names.
    """
    known = {**KNOWN, **(table or {})}
    ds.attrs.setdefault("Conventions", CONVENTIONS)
    ds.attrs.setdefault("title", title)
    ds.attrs.setdefault("history", creation_history())
    bounds = bounds_names(ds)
    for name, var in ds.variables.items():
        if name in bounds:
            continue
        units, long_name = known.get(str(name), ("1", _long_name(str(name))))
        if var.dtype.kind in "OSU":  # text: units do not apply
            var.attrs.setdefault("long_name", long_name)
            continue
        var.attrs.setdefault("units", units)
        var.attrs.setdefault("long_name", long_name)
    return ds


def check(ds: Any) -> list[str]:
    """Names of the variables that lack ``units`` (numeric) or ``long_name`` (empty: complete);
    cell bounds need neither."""
    missing = [] if ds.attrs.get("Conventions", "").startswith("CF-") else ["(Conventions)"]
    bounds = bounds_names(ds)
    for name, var in ds.variables.items():
        if name in bounds:
            continue
        if not var.attrs.get("long_name") or (var.dtype.kind not in "OSU" and "units" not in var.attrs):
            missing.append(str(name))
    return missing


def netcdf_encoding(ds: Any) -> dict[str, dict[str, Any]]:
    """``encoding`` for ``ds.to_netcdf``: coordinates and cell bounds without ``_FillValue``
    (CF 2.5.1), 64-bit integers stored as 32-bit ones when their values fit (CF 1.8 types)."""
    fixed = set(map(str, ds.coords)) | bounds_names(ds)
    out: dict[str, dict[str, Any]] = {}
    for name, var in ds.variables.items():
        enc: dict[str, Any] = {}
        if str(name) in fixed and var.dtype.kind == "f":
            enc["_FillValue"] = None
        if var.dtype.kind in "iu" and var.dtype.itemsize == 8:
            values = np.asarray(var.values)
            if values.size == 0 or (values.min() >= _INT32.min and values.max() <= _INT32.max):
                enc["dtype"] = "int32"
        if enc:
            out[str(name)] = enc
    return out
