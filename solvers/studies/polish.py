"""Exact stationary measures: polish a run's final atoms with Newton's method.

``meanfield polish RUN.nc [-o OUT.nc]``: the last snapshot's atoms (basins, :mod:`solvers.core.atoms`)
become Dirac masses with their basin masses fixed; the diffuse remainder is merged into the
nearest atom cell by cell when it is at most ``merge_tol``, else kept as fixed sources. Then
``grad U(x_i) = 0`` is solved for the positions by Newton's method with the analytic Jacobian
(:mod:`solvers.core.point_atoms`), and the result's stability is reported:

- ``dirac_hess_u``: eigenvalues of the tangential Hessian of ``U`` at each atom, the atom's own
  mass included (descent: a stable atom sits at a local minimum of ``U``, all >= 0; ascent <= 0);
- ``energy_hessian``: eigenvalues of the Hessian of the energy in the atom positions (descent:
  a local minimum has none < 0; zero modes are symmetries, e.g. rotations without a perceptron).

The output archive is the input's last record with the polished measure in it: ``rho`` is
its density (the remainder kept as fixed sources, zero where it was merged: "atoms only") and
the polished atoms are the ``dirac_*`` variables, so that every command that reads a record of
a measure-valued run (``rho`` plus its Dirac atoms: ``initial.kind = "archive"``, ``lemma51
--archive``, ``plot``) reads the polished measure, of mass ``initial.mass``; the record's
diagnostics are the unpolished run's, the polished figures are the ``polish_*`` attributes.
(The density alone stays in ``rho``: with the atoms beside it, the mass is counted once.)
A measure-valued run (``[atoms] representation = "dirac"``) is polished as density plus its
Dirac atoms: the basins of the whole measure (its own diagnostics) give the masses; its
``dirac_*`` record is replaced by the polished atoms. A polished archive is not a run to
continue (``--resume`` refuses it): start a new run from it with ``initial.kind = "archive"``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from solvers.core.point_atoms import AtomSystem, newton, tangent_bases
from solvers.model.config import load_config
from solvers.model.params import RunConfig
from solvers.timestepping.manifolds import manifold_of

MERGE_TOL = 1e-3  # a remainder up to this mass is merged into the nearest atoms


@dataclass(frozen=True)
class Polished:
    """The polished measure and its report (``x`` (n, d) unit vectors, ``m`` (n,) masses)."""

    x: np.ndarray
    m: np.ndarray
    x0: np.ndarray
    residuals: list[float]
    converged: bool
    merged: bool
    remainder: float
    energy_before: float
    energy_after: float
    hess_u: np.ndarray  # (n, d - 1) eigenvalues per atom
    energy_hessian: np.ndarray  # (n (d - 1),) eigenvalues
    stable: bool
    direction: str
    sensitivity: np.ndarray  # (n, n) |d x_i / d m_j|, radians per unit mass
    diffuse: np.ndarray | None = None  # (cells,) bool: the cells of the remainder (in no atom)
    # atoms on a ReLU corner (n,) bool, and the one-sided Hessians' eigenvalues there (left,
    # right: (n, d - 1) each, NaN elsewhere): U is only C^1 at a corner, and the atom is a
    # strict local extremum of U iff it is one on both sides
    corner: np.ndarray | None = None
    hess_u_sides: tuple | None = None
    stability: str = ""
    # what the polished run's verdict says against its state (not stationary, not trusted):
    # the polished atoms are a stationary point near the run's last atoms, not the run's limit
    run_warnings: tuple[str, ...] = ()
    # Sd (solvers.studies.polish_points): |grad U| (n,) per atom, and what became of the remainder
    grad_u: np.ndarray | None = None
    remainder_note: str = ""


def grid_atoms(config: RunConfig, rho: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """``(atoms, points (cells, d), cell_mass (cells,), labels (cells,))`` of a grid state, by the
    run's own detector (the same basins the archive reports)."""
    from solvers.timestepping.registry import make_discretization

    disc = make_discretization(config)
    return manifold_of(config).grid_atoms(config, disc, rho)


def measure_atoms(config: RunConfig, rho: np.ndarray, dirac: Any
                  ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`grid_atoms` of a measure-valued state (``[atoms] representation = "dirac"``): the
    basins of density plus Dirac atoms (``dirac``: :class:`solvers.core.measure.DiracAtoms`), by
    the run's own measure diagnostics; ``cell_mass`` is the density's (the Dirac masses are in
    the atoms' masses), so the remainder is the density in no basin."""
    from solvers.circle.measure.lagrangian_discretization import eulerian_config
    from solvers.timestepping.registry import make_discretization

    disc = make_discretization(eulerian_config(config))  # a Lagrangian run archives this state
    state = disc.prepare_state(rho, dirac, fresh=False)  # (atoms closer than a cell merged)
    return manifold_of(config).measure_atoms(config, disc, rho, state)


def _positions(found: Any, d: int) -> np.ndarray:
    if d == 2:
        return np.stack([np.cos(found.position), np.sin(found.position)], axis=1)
    return np.asarray(found.position, dtype=float).reshape(-1, 3)


def polish(config: RunConfig, rho: np.ndarray, merge_tol: float = MERGE_TOL,
           tol: float = 1e-13, dirac: Any = None) -> Polished:
    """Polish the atoms of the grid state ``rho`` (module docstring); with ``dirac`` (the Dirac
    atoms of a measure-valued run) those of density plus atoms."""
    found, points, cell_mass, labels = (grid_atoms(config, rho) if dirac is None
                                        else measure_atoms(config, rho, dirac))
    if found.count == 0:
        raise ValueError("the state has no atoms to polish")
    d = points.shape[1]
    x0, m = _positions(found, d), np.asarray(found.mass, dtype=float).copy()
    diffuse = labels < 0
    remainder = float(cell_mass[diffuse].sum())
    merged = remainder <= merge_tol
    if merged:  # each diffuse cell's mass to the nearest atom
        nearest = np.argmax(points[diffuse] @ x0.T, axis=1)
        m += np.bincount(nearest, weights=cell_mass[diffuse], minlength=m.size)
        system = AtomSystem(config.model, m)
    else:
        system = AtomSystem(config.model, m, points[diffuse], cell_mass[diffuse])
    result = newton(system, x0, tol=tol)
    report = _report(system, x0, result, merged, remainder, config.model.direction)
    return replace(report, diffuse=diffuse)


def _report(system: AtomSystem, x0: np.ndarray, result: Any, merged: bool, remainder: float,
            direction: str) -> Polished:
    x = result.x
    bases = tangent_bases(x)
    corner = system.on_corners(x)
    sides = [replace(system, corner_side=k) for k in (0, 1)] if corner.any() else [system]
    hess, eigs, oks = [], [], []
    for side in sides:  # both one-sided Hessians at atoms on a ReLU corner (U is C^1 there)
        hess_u, eig, ok = _hessians(side, x, bases, direction)
        hess.append(hess_u), eigs.append(eig), oks.append(ok)
    stable = all(oks)
    if corner.any() and oks[0] != oks[1]:
        stability = (f"NOT stable: the one-sided Hessians at the {int(corner.sum())} atom(s) on a "
                     f"ReLU corner disagree ({'left' if oks[1] else 'right'} side unstable)")
    elif corner.any():
        stability = f"{'stable' if stable else 'NOT stable'} on both sides of the ReLU corner(s)"
    else:
        stability = "stable" if stable else "NOT stable"
    nan = np.full_like(hess[0], np.nan)
    one_sided = tuple(np.where(corner[:, None], h, nan) for h in hess) if corner.any() else None
    return Polished(x, system.m, x0, result.residuals, result.converged, merged, remainder,
                    system.energy(x0), system.energy(x), hess[-1], eigs[-1], stable, direction,
                    system.mass_sensitivity(x, bases), corner=corner, hess_u_sides=one_sided,
                    stability=stability)


def _hessians(system: AtomSystem, x: np.ndarray, bases: np.ndarray, direction: str
              ) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(hess_u (n, d-1), energy Hessian eigenvalues, stable)``: descent needs a local minimum
    of U at every atom and of E in the positions, ascent maxima."""
    hess_u = np.stack([np.linalg.eigvalsh(0.5 * (h + h.T)) for h in system.hess_u_full(x, bases)])
    q = x.shape[1] - 1
    energy_h = np.repeat(system.m, q)[:, None] * system.jacobian(x, bases)
    eig = np.linalg.eigvalsh(0.5 * (energy_h + energy_h.T))
    scale = max(float(np.abs(eig).max()), 1e-300)
    sign = 1.0 if direction == "ascent" else -1.0
    return hess_u, eig, bool(np.all(-sign * hess_u >= -1e-9 * scale) and np.all(-sign * eig >= -1e-9 * scale))


def polish_archive(path: str | Path, out: str | Path | None = None,
                   merge_tol: float = MERGE_TOL, tol: float = 1e-13) -> tuple[Polished, Path]:
    """Polish the last snapshot of a run archive and write ``out`` (default ``RUN.polished.nc``)."""
    from solvers.io.reading import open_run
    from solvers.io.reading import read_last_dirac

    path = Path(path)
    ds = open_run(path)
    if ds.sizes.get("time", 0) == 0:
        raise ValueError(f"{path}: the archive holds no snapshots")
    config = load_config(str(ds.attrs["config_text"]))
    if config.domain.manifold == "Sd":
        raise ValueError(f"{path}: an Sd archive: solvers.studies.polish_points.polish_run "
                         "polishes its Dirac atoms")
    last = ds.isel(time=[-1])
    dirac = read_last_dirac(path) if config.atoms.representation == "dirac" else None
    result = polish(config, np.asarray(last["rho"].values[0], dtype=float), merge_tol, tol, dirac)
    result = replace(result, run_warnings=run_warnings(ds.attrs))
    last = last.drop_vars([v for v in last.data_vars if str(v).startswith("dirac_")])
    last = last.drop_dims([d for d in ("dirac",) if d in last.dims])
    # rho: the polished measure's own density, the remainder kept as fixed sources (or none);
    # the atoms' cells are in the atoms' masses (every reader adds rho and the dirac_* atoms)
    keep = np.zeros(result.diffuse.shape, bool) if result.merged else result.diffuse
    last["rho"] = last["rho"].copy(data=last["rho"].values * keep.reshape(last["rho"].shape))
    target = Path(out) if out else path.with_name(path.stem + ".polished.nc")
    if target.resolve() == path.resolve():
        raise ValueError("-o: would overwrite the input archive; choose another path")
    # the safe writer of polish_to: built in a private folder and renamed into place, no link
    # followed, a file there replaced only when it is ours
    from solvers.io.safe_paths import write_netcdf

    write_netcdf(_with_dirac(last, result, config), target, option="-o")
    return result, target


def run_warnings(attrs: Any) -> tuple[str, ...]:
    """What the run's archived verdict says against the state being polished: that it was not
    stationary (its state line), that it was not trusted (its warnings), or that it has no
    verdict."""
    if "verdict_trusted" not in attrs:
        return ("the run has no verdict (an interrupted run?): its last state was not checked",)
    out: list[str] = []
    warnings = [w for w in str(attrs.get("verdict_warnings", "")).splitlines() if w.strip()]
    if int(attrs.get("verdict_stationary", 1)) == 0 or any("still moves" in w for w in warnings):
        out.append("the run was NOT at a stationary state")
        out += [line.strip() for line in str(attrs.get("verdict_state", "")).splitlines()[:1]]
    if not int(attrs["verdict_trusted"]):
        out += ["the run's verdict is NOT TRUSTED", *warnings]
    return tuple(out)


def _with_dirac(ds: Any, r: Polished, config: RunConfig) -> Any:
    """The record ``ds`` with the polished atoms as ``dirac_*`` variables and attributes."""
    from solvers.io.cf import describe
    from solvers.io.layout import SPHERE_DIRAC_VARIABLES, sphere_atom_columns

    n, d = r.x.shape
    out = _polished_atoms(ds, r)
    out["dirac_mass"] = ("dirac", r.m, {"units": "1", "long_name": "mass of the polished Dirac atom"})
    if d == 2:
        out["dirac_position"] = ("dirac", np.mod(np.arctan2(r.x[:, 1], r.x[:, 0]), 2 * np.pi),
                                 {"units": "radian", "long_name": "angle of the polished atom"})
    else:
        for k, c in enumerate("xyz"):
            out[f"dirac_{c}"] = ("dirac", r.x[:, k], {"units": "1",
                                 "long_name": f"{c} of the polished atom's unit vector"})
        angles = sphere_atom_columns(r.m, r.x)  # as the run archive's Dirac atoms
        for name in ("colatitude", "longitude"):
            units, long_name = SPHERE_DIRAC_VARIABLES[f"dirac_{name}"]
            out[f"dirac_{name}"] = ("dirac", angles[f"atom_{name}"],
                                    {"units": units, "long_name": long_name.replace("Dirac", "polished")})
    stability_variables(out, r)
    out.attrs.update(
        polish_representation=("atoms only: the remainder was merged into the nearest atoms"
                               if r.merged else "atoms plus the remainder (fixed sources)"),
        polish_remainder_mass=r.remainder, polish_converged=int(r.converged),
        polish_max_grad_u=r.residuals[-1], polish_energy_before=r.energy_before,
        polish_energy_after=r.energy_after, polish_stable=int(r.stable),
        polish_stability=r.stability,
        polish_direction=config.model.direction,
        polish_run_warnings="\n".join(r.run_warnings))
    return describe(out, str(ds.attrs.get("title", "meanfield-spectral run")) + " (polished)")


def stability_variables(out: Any, r: Polished) -> None:
    """Add the polished atoms' stability to the Dataset ``out``: the Hessian eigenvalues of
    ``U`` at each atom (one-sided ones at ReLU corners), of the energy, the Newton residuals and
    the mass sensitivity."""
    out["dirac_hess_u"] = (("dirac", "tangent"), r.hess_u, {"units": "1", "long_name":
                           "eigenvalues of the tangential Hessian of U at the atom (own mass included)"})
    if r.hess_u_sides is not None:
        for side, values in zip(("left", "right"), r.hess_u_sides):
            out[f"dirac_hess_u_{side}"] = (("dirac", "tangent"), values, {"units": "1", "long_name":
                                           f"eigenvalues of the {side}-sided tangential Hessian of U "
                                           "at an atom on a ReLU corner (NaN elsewhere)"})
    out["energy_hessian"] = ("mode", r.energy_hessian, {"units": "1", "long_name":
                             "eigenvalues of the Hessian of the energy in the atom positions"})
    out["newton_residual"] = ("iteration", np.asarray(r.residuals), {"units": "1", "long_name":
                              "max |grad U| at the atoms per Newton iteration"})
    out["dirac_mass_sensitivity"] = (("dirac", "dirac_source"), r.sensitivity, {"units": "radian",
                                     "long_name": "move of the polished atom's position per unit "
                                                  "mass added to atom dirac_source"})


def _polished_atoms(ds: Any, r: Polished) -> Any:
    """The record ``ds`` whose atom table (``atom_mass``, positions, ``n_atoms``,
    ``max_atom_mass``) is the polished atoms', so that every reader (``meanfield info``,
    ``plot``) shows them; the other per-atom variables of the run's detector are dropped."""
    n, d = r.x.shape
    keep = {v: dict(ds[v].attrs) for v in ("atom_mass", "atom_position", "atom_colatitude",
                                           "atom_longitude", "atom_x", "atom_y", "atom_z")
            if v in ds}
    out = ds.drop_vars([v for v in ds.variables if "atom" in ds[v].dims])
    out = out.drop_dims([dim for dim in ("atom",) if dim in out.dims])
    note = " (polished)"
    out["atom_mass"] = (("time", "atom"), r.m[None, :], {**keep.get("atom_mass", {}), "note": note.strip()})
    if d == 2:
        angle = np.mod(np.arctan2(r.x[:, 1], r.x[:, 0]), 2 * np.pi)
        out["atom_position"] = (("time", "atom"), angle[None, :], keep.get("atom_position", {}))
    else:
        colat = np.arccos(np.clip(r.x[:, 2], -1.0, 1.0))
        lon = np.mod(np.arctan2(r.x[:, 1], r.x[:, 0]), 2 * np.pi)
        out["atom_colatitude"] = (("time", "atom"), colat[None, :], keep.get("atom_colatitude", {}))
        out["atom_longitude"] = (("time", "atom"), lon[None, :], keep.get("atom_longitude", {}))
        for k, c in enumerate("xyz"):  # the unit vectors the figures read
            if f"atom_{c}" in keep:
                out[f"atom_{c}"] = (("time", "atom"), r.x[None, :, k], keep[f"atom_{c}"])
    for name, value in (("n_atoms", n), ("max_atom_mass", float(r.m.max()))):
        if name in out:
            out[name] = out[name].copy(data=np.array([value], dtype=out[name].dtype))
    return out


def format_report(r: Polished) -> str:
    """The table ``meanfield polish`` prints."""
    d = r.x.shape[1]
    rows = [f"Newton: max |grad U| at the atoms {r.residuals[0]:.2e} -> {r.residuals[-1]:.2e} "
            f"in {len(r.residuals) - 1} iterations ({'converged' if r.converged else 'NOT converged'})",
            f"remainder {r.remainder:.2e}: " + ("merged into the nearest atoms" if r.merged
                                                else "kept as fixed sources"),
            f"energy {r.energy_before:.12g} -> {r.energy_after:.12g}",
            f"  {'mass':>9}  {'moved (rad)':>11}  {'max|dx/dm|':>10}  {'Hess U eigenvalues':>22}"]
    for i in range(r.m.size):
        moved = float(np.arccos(np.clip(r.x[i] @ r.x0[i], -1, 1)))
        eig = " ".join(f"{e:10.3e}" for e in r.hess_u[i])
        rows.append(f"  {r.m[i]:9.6f}  {moved:11.3e}  {r.sensitivity[i].max():10.3g}  {eig:>22}")
    rows.append("max|dx/dm|: radians an atom moves per unit of mass added to one atom (a mass "
                "error dm moves the positions by up to this times dm)")
    low, high = float(r.energy_hessian.min()), float(r.energy_hessian.max())
    rows.append(f"energy Hessian in the positions ({d - 1} per atom): eigenvalues in [{low:.3e}, {high:.3e}]")
    if r.hess_u_sides is not None:
        for i in np.flatnonzero(r.corner):
            left, right = (" ".join(f"{e:10.3e}" for e in side[i]) for side in r.hess_u_sides)
            rows.append(f"atom {i} sits on a ReLU corner: Hess U eigenvalues {left} (left), "
                        f"{right} (right)")
    rows.append(f"{r.direction}: {r.stability or ('stable' if r.stable else 'NOT stable')} "
                "stationary point" + (" of the polished atoms (Newton), not a state the run "
                                      "reached:" if r.run_warnings else ""))
    rows += [f"  {w}" for w in r.run_warnings]
    return "\n".join(rows)
