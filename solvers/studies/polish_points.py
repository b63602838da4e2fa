"""``meanfield polish`` of an Sd archive (``S^{d-1}`` by weighted points, any d).

The atoms are the last record's Dirac atoms (``dirac_mass`` (t, dirac), ``dirac_position``
(t, dirac, component): unit vectors of R^d, exact masses). The diffuse remainder (the points not
yet merged into an atom; the archive holds only its mass, as the one placeholder cell's ``rho``)
has no positions there and is left out: the polished measure is the atoms alone, of mass
``initial.mass`` minus the remainder, and the report and the ``polish_representation``
attribute say so. ``grad U(x_i) = 0`` is solved by the Newton method of
:mod:`solvers.core.point_atoms` (unnormalized attention only: softmax attention has no closed
form for the atoms, a ValueError); the stability of each atom is read from the eigenvalues of
the tangential Hessian of ``U`` at it (its own mass included), that of the whole set from the
energy Hessian in the positions, as on S^1 and S^2 (:mod:`solvers.studies.polish`).

The output is the last record with ``rho = 0`` (atoms only), the polished atoms as
``dirac_mass`` (dirac,) and ``dirac_position`` (dirac, component), the atom table
(``atom_mass`` (time, atom), ``atom_position`` (time, atom, component)) replaced by them, and the
polish variables and ``polish_*`` attributes of the S^2 archive, with ``dirac_grad_u`` (dirac,)
the per-atom ``|grad U|`` beside them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from solvers.core.point_atoms import AtomSystem, newton
from solvers.io.variables import COMPONENT, POINT_ATOM_VARIABLES, POINT_DIRAC_VARIABLES
from solvers.model.params import RunConfig
from solvers.studies.polish import (MERGE_TOL, Polished, _report, format_report, polish_archive,
                                    run_warnings, stability_variables)

LEFT_OUT = ("atoms only: the diffuse remainder (points not merged into an atom) has no positions "
            "in the archive and is left out")


def polish_points(config: RunConfig, mass: np.ndarray, position: np.ndarray, remainder: float,
                  tol: float = 1e-13) -> Polished:
    """Polish Dirac atoms on ``S^{d-1}``.

    Parameters
    ----------
    config : RunConfig
        The run's configuration (its model: kernel, beta, perceptron in d dimensions).
    mass : ndarray, shape (n,)
        The atoms' masses (kept fixed).
    position : ndarray, shape (n, d)
        The atoms' positions (normalised here), Newton's start.
    remainder : float
        The mass left out (reported, not used).
    tol : float
        Newton tolerance on max |grad U|.

    Returns
    -------
    Polished
        With ``grad_u`` (n,) the per-atom |grad U| and ``remainder_note`` set.
    """
    if config.model.attention == "softmax":
        raise ValueError("meanfield polish on Sd: softmax attention has no closed form for the "
                         "atoms' potential (unnormalized attention only)")
    m = np.asarray(mass, dtype=float)
    if m.size == 0:
        raise ValueError("the state has no Dirac atoms to polish (no point has merged into an "
                         "atom yet: run longer, a larger time.t_end)")
    x0 = np.asarray(position, dtype=float).reshape(m.size, -1)
    x0 = x0 / np.linalg.norm(x0, axis=1, keepdims=True)
    system = AtomSystem(config.model, m)
    result = newton(system, x0, tol=tol)
    report = _report(system, x0, result, False, float(remainder), config.model.direction)
    grad = np.linalg.norm(system.gradient(report.x), axis=1)
    return replace(report, grad_u=grad, remainder_note=LEFT_OUT)


def last_dirac(ds: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(mass (n,), position (n, d))`` of the alive Dirac atoms of the record ``ds`` (one
    record: ``time`` of size 1)."""
    mass = np.asarray(ds["dirac_mass"].values, dtype=float).reshape(-1)
    d = ds.sizes[COMPONENT]
    position = np.asarray(ds["dirac_position"].values, dtype=float).reshape(-1, d)
    alive = np.isfinite(mass) & (mass > 0) & np.all(np.isfinite(position), axis=1)
    return mass[alive], position[alive]


def polish_run(path: str | Path, out: str | Path | None = None, merge_tol: float = MERGE_TOL,
               tol: float = 1e-13) -> tuple[Polished, Path]:
    """Polish the last snapshot of any run archive and write ``out`` (default
    ``RUN.polished.nc``): an Sd archive here (``merge_tol`` unused: the remainder is left out),
    an S^1 or S^2 one by :func:`solvers.studies.polish.polish_archive`."""
    from solvers.io.reading import open_run
    from solvers.model.config import load_config

    path = Path(path)
    ds = open_run(path)
    if str(ds.attrs.get("manifold", "")) != "Sd":
        return polish_archive(path, out, merge_tol, tol)
    if ds.sizes.get("time", 0) == 0:
        raise ValueError(f"{path}: the archive holds no snapshots")
    target = Path(out) if out else path.with_name(path.stem + ".polished.nc")
    if target.resolve() == path.resolve():
        raise ValueError("-o: would overwrite the input archive; choose another path")
    config = load_config(str(ds.attrs["config_text"]))
    return polish_points_archive(ds, config, target, tol), target


def report_text(r: Polished) -> str:
    """The table ``meanfield polish`` prints: :func:`format_points_report` for an Sd result,
    :func:`solvers.studies.polish.format_report` otherwise."""
    return format_points_report(r) if r.grad_u is not None else format_report(r)


def polish_points_archive(ds: Any, config: RunConfig, target: Path, tol: float = 1e-13
                          ) -> Polished:
    """Polish the last record of the Sd run ``ds`` (``open_run``) and write ``target``."""
    from solvers.io.safe_paths import write_netcdf

    last = ds.isel(time=[-1])
    if "dirac_mass" not in last or COMPONENT not in last.dims:
        raise ValueError("an Sd archive without Dirac atoms (dirac_mass, dirac_position)")
    mass, position = last_dirac(last)
    rho = np.asarray(last["rho"].values, dtype=float).reshape(-1)
    weight = np.asarray(last["cell_weight"].values, dtype=float).reshape(-1)
    remainder = float(np.sum(rho * weight))
    result = polish_points(config, mass, position, remainder, tol)
    result = replace(result, run_warnings=run_warnings(ds.attrs))
    write_netcdf(_with_points(last, result, config), target, option="-o")
    return result


def _with_points(ds: Any, r: Polished, config: RunConfig) -> Any:
    """The record ``ds`` with the polished atoms in the Dirac and atom tables (module
    docstring)."""
    from solvers.io.cf import describe

    n, d = r.x.shape
    keep = {v: dict(ds[v].attrs) for v in ("atom_mass", "atom_position") if v in ds}
    out = ds.drop_vars([v for v in ds.variables
                        if ("atom" in ds[v].dims or "dirac" in ds[v].dims)])
    out = out.drop_dims([dim for dim in ("atom", "dirac") if dim in out.dims])
    out["rho"] = out["rho"].copy(data=np.zeros_like(out["rho"].values))  # atoms only
    polished = {k: (u, long.replace("Dirac atom", "polished atom"))
                for k, (u, long) in POINT_DIRAC_VARIABLES.items()}
    out["dirac_mass"] = ("dirac", r.m, _attrs(polished["dirac_mass"]))
    out["dirac_position"] = (("dirac", COMPONENT), r.x, _attrs(polished["dirac_position"]))
    out["dirac_grad_u"] = ("dirac", r.grad_u, {"units": "1", "long_name":
                           "|grad U| at the polished atom (tangential)"})
    out["atom_mass"] = (("time", "atom"), r.m[None, :],
                        {**keep.get("atom_mass", _attrs(POINT_ATOM_VARIABLES["atom_mass"])),
                         "note": "polished"})
    out["atom_position"] = (("time", "atom", COMPONENT), r.x[None],
                            keep.get("atom_position", _attrs(POINT_ATOM_VARIABLES["atom_position"])))
    stability_variables(out, r)
    for name, value in (("n_atoms", n), ("max_atom_mass", float(r.m.max())),
                        ("diffuse_mass", 0.0), ("mass", float(r.m.sum()))):
        if name in out:
            out[name] = out[name].copy(data=np.array([value], dtype=out[name].dtype))
    out.attrs.update(
        polish_representation=LEFT_OUT, polish_remainder_mass=r.remainder,
        polish_converged=int(r.converged), polish_max_grad_u=r.residuals[-1],
        polish_energy_before=r.energy_before, polish_energy_after=r.energy_after,
        polish_stable=int(r.stable), polish_stability=r.stability,
        polish_direction=config.model.direction, polish_run_warnings="\n".join(r.run_warnings))
    return describe(out, str(ds.attrs.get("title", "meanfield-spectral run")) + " (polished)")


def _attrs(entry: tuple[str, str]) -> dict[str, str]:
    return {"units": entry[0], "long_name": entry[1]}


def atom_kind(eigenvalues: np.ndarray, scale: float) -> str:
    """``"minimum"``, ``"maximum"`` or ``"saddle"`` of U at an atom, from the eigenvalues
    (d - 1,) of its tangential Hessian (``scale``: the size below which an eigenvalue counts
    as zero, at 1e-9 of it)."""
    small = 1e-9 * max(scale, 1e-300)
    if np.all(eigenvalues >= -small):
        return "minimum"
    return "maximum" if np.all(eigenvalues <= small) else "saddle"


def format_points_report(r: Polished) -> str:
    """The table ``meanfield polish`` prints for an Sd archive: per atom its mass, how far it
    moved, ``|grad U|``, the extreme eigenvalues of the tangential Hessian of ``U`` and what
    the atom is for ``U`` (descent: a stable atom is a minimum)."""
    n, d = r.x.shape
    scale = float(np.abs(r.energy_hessian).max()) if r.energy_hessian.size else 1.0
    rows = [f"Newton: max |grad U| at the atoms {r.residuals[0]:.2e} -> {r.residuals[-1]:.2e} "
            f"in {len(r.residuals) - 1} iterations ({'converged' if r.converged else 'NOT converged'})",
            f"S^{d - 1} in R^{d}: {n} Dirac atom(s); remainder {r.remainder:.2e}: {r.remainder_note}",
            f"energy {r.energy_before:.12g} -> {r.energy_after:.12g}",
            f"  {'atom':>4}  {'mass':>9}  {'moved (rad)':>11}  {'|grad U|':>9}  "
            f"{'Hess U: min eig':>15}  {'max eig':>10}  {'U has':>7}  {'max|dx/dm|':>10}"]
    for i in range(n):
        moved = float(np.arccos(np.clip(r.x[i] @ r.x0[i], -1, 1)))
        eig = r.hess_u[i]
        rows.append(f"  {i:4d}  {r.m[i]:9.6f}  {moved:11.3e}  {r.grad_u[i]:9.2e}  {eig.min():15.6e}  "
                    f"{eig.max():10.3e}  {atom_kind(eig, scale):>7}  {r.sensitivity[i].max():10.3g}")
    rows.append(f"Hess U: the {d - 1} eigenvalues of the tangential Hessian of U at the atom (own "
                "mass included); descent: a stable atom is a minimum of U, ascent a maximum")
    rows.append("max|dx/dm|: radians an atom moves per unit of mass added to one atom")
    low, high = float(r.energy_hessian.min()), float(r.energy_hessian.max())
    rows.append(f"energy Hessian in the positions ({d - 1} per atom): eigenvalues in "
                f"[{low:.3e}, {high:.3e}]")
    if r.corner is not None:
        rows += [f"atom {i} sits on a ReLU corner: both one-sided Hessians checked"
                 for i in np.flatnonzero(r.corner)]
    rows.append(f"{r.direction}: {r.stability or ('stable' if r.stable else 'NOT stable')} "
                "stationary point" + (" of the polished atoms (Newton), not a state the run "
                                      "reached:" if r.run_warnings else ""))
    rows += [f"  {w}" for w in r.run_warnings]
    return "\n".join(rows)
