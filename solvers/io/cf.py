"""CF-1.10 metadata for the files the study commands write (Lemma 5.1 reports, convergence
ladders, sweep summaries). Run archives get theirs from :mod:`solvers.io.layout`.

:func:`describe` fills what a Dataset lacks: ``Conventions``, a ``title``, and ``units`` and
``long_name`` on every variable and coordinate, from a table of known names (most quantities
here are dimensionless: CF writes that ``units = "1"``). It never overwrites what is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CONVENTIONS = "CF-1.10"

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
}


def _long_name(name: str) -> str:
    return name.replace("_", " ")


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
    for name, var in ds.variables.items():
        units, long_name = known.get(str(name), ("1", _long_name(str(name))))
        if var.dtype.kind in "OSU":  # text: units do not apply
            var.attrs.setdefault("long_name", long_name)
            continue
        var.attrs.setdefault("units", units)
        var.attrs.setdefault("long_name", long_name)
    return ds


def check(ds: Any) -> list[str]:
    """Names of the variables that lack ``units`` (numeric) or ``long_name`` (empty: complete)."""
    missing = [] if ds.attrs.get("Conventions", "").startswith("CF-") else ["(Conventions)"]
    for name, var in ds.variables.items():
        if not var.attrs.get("long_name") or (var.dtype.kind not in "OSU" and "units" not in var.attrs):
            missing.append(str(name))
    return missing
