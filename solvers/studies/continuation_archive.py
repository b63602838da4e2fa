"""The archive of ``meanfield continue``: branches of noisy stationary states in NetCDF (docs/noise.md §4).

Variables (dimension ``point``: every computed state, ordered by branch and arclength):
``parameter``, ``branch``, ``stable`` (bool; missing values, NaN, where the stability was not
computed: ``continue --no-stability``, global attribute ``stability = "not computed"``),
``free_energy`` (``E - s nu int rho log rho``),
``order_parameter`` (``|int x rho| / M``: on S^1 ``|rho_hat_1| / rho_hat_0``), ``point_kind``
(``""``, ``"requested"``, ``"branch_point"``, ``"fold"``), ``moments(point, degree)``
(``|int Y_k rho| / M``, k = 1..8), ``growth_rate`` (the leading eigenvalue
with the rotations' neutral modes set aside), ``eigenvalues(point, eig)`` (the leading
eigenvalues of the linearised PDE, neutral modes included), ``rho(point, theta)`` on S^1 or
``rho(point, theta, phi)`` on S^2; ``special_parameter(special)``, ``special_kind(special)``,
``special_branch(special)``, ``special_order_parameter(special)``; ``branch_parent(branch)`` (the
branch a branch leaves, at its first point, -1 for the first) and ``branch_stop(branch)`` (why it ended).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from solvers.studies.continuation_run import Record, Result
from solvers.studies.stationary_linear import stability, stability_basis

N_EIGENVALUES = 6
N_MOMENTS = 8
TABLE = {
    "parameter": ("1", "value of the continuation parameter"),
    "branch": ("1", "branch index"),
    "stable": ("1", "linearly stable (the leading eigenvalue, neutral rotations aside, < 0)"),
    "free_energy": ("1", "free energy E - s nu int rho log rho"),
    "order_parameter": ("1", "|int x rho| / M (S1: |rho_hat_1| / rho_hat_0)"),
    "moments": ("1", "|int Y_k rho| / M per degree k (S1: |rho_hat_k| / rho_hat_0)"),
    "degree": ("1", "degree k of the moments"),
    "point_kind": ("1", "'' (a step), 'requested', 'branch_point' or 'fold'"),
    "growth_rate": ("1", "leading eigenvalue of the linearised PDE, neutral rotations aside"),
    "eigenvalues": ("1", "leading eigenvalues of the linearised PDE (real parts)"),
    "rho": ("1", "stationary density"),
    "special_parameter": ("1", "parameter value of a fold or branch point"),
    "special_kind": ("1", "'branch_point' or 'fold'"),
    "special_branch": ("1", "branch the special point was found on"),
    "special_order_parameter": ("1", "order parameter at the special point"),
    "special_moment": ("1", "largest moment at the special point"),
    "branch_parent": ("1", "branch this branch leaves at its first point (-1: the starting branch)"),
    "branch_stop": ("1", "why the branch ended"),
}


def _specials(records: list[Record], result: Result) -> list[tuple[Record, float, float]]:
    """Folds and branch points, each once (a branch point also starts its new branches), with
    their order parameter and largest moment."""
    out: list[tuple[Record, float, float]] = []
    for rec in records:
        if rec.kind not in ("branch_point", "fold"):
            continue
        same = [o for o, _, _ in out if o.kind == rec.kind
                and abs(o.value - rec.value) <= 1e-9 * abs(rec.value)
                and np.max(np.abs(o.x - rec.x)) <= 1e-6 * result.problem.rho0]
        if not same:
            pr = result.problem.at(result.key, rec.value)
            out.append((rec, pr.order_parameter(pr.density(rec.x)),
                        float(pr.moments(rec.x, N_MOMENTS).max())))
    return out


def to_dataset(result: Result, with_stability: bool = True) -> Any:
    """The archive's content as an ``xarray.Dataset`` (module docstring)."""
    import xarray as xr

    from solvers.io.cf import describe

    base, key, recs = result.problem, result.key, result.records
    sb = stability_basis(base) if with_stability else None
    rho, energy, order, stable, growth, moments = [], [], [], [], [], []
    eig = np.full((len(recs), N_EIGENVALUES), np.nan)
    for i, rec in enumerate(recs):
        pr = base.at(key, rec.value)
        r = pr.density(rec.x)
        rho.append(r.reshape(base.basis.shape))
        energy.append(pr.free_energy(r))
        order.append(pr.order_parameter(r))
        moments.append(pr.moments(rec.x, N_MOMENTS))
        if sb is not None:
            st = stability(pr, rec.x, sb, keep=N_EIGENVALUES)
            n = min(N_EIGENVALUES, st.eigenvalues.size)
            eig[i, :n] = st.eigenvalues[:n]
            stable.append(st.stable)
            growth.append(st.growth)
        else:  # unknown, not unstable
            stable.append(np.nan)
            growth.append(np.nan)
    specials = _specials(recs, result)
    grid = base.basis.manifold.grid_dims
    ds = xr.Dataset({
        "parameter": ("point", [r.value for r in recs]),
        "branch": ("point", np.array([r.branch for r in recs], dtype=np.int32)),
        "stable": ("point", np.array(stable, dtype=bool if sb is not None else float)),
        "free_energy": ("point", energy),
        "order_parameter": ("point", order),
        "moments": (("point", "degree"), np.array(moments)),
        "point_kind": ("point", np.array([r.kind for r in recs], dtype=str)),
        "growth_rate": ("point", growth),
        "eigenvalues": (("point", "eig"), eig),
        "rho": (("point",) + grid, np.array(rho)),
        "special_parameter": ("special", [r.value for r, _, _ in specials]),
        "special_kind": ("special", np.array([r.kind for r, _, _ in specials], dtype=str)),
        "special_branch": ("special", np.array([r.branch for r, _, _ in specials], dtype=np.int32)),
        "special_order_parameter": ("special", [o for _, o, _ in specials]),
        "special_moment": ("special", [m for _, _, m in specials]),
        "branch_parent": ("branch_index", np.array(result.parents, dtype=np.int32)),
        "branch_stop": ("branch_index", np.array(result.stops, dtype=str)),
    }, coords={**base.basis.coords, "degree": np.arange(1, N_MOMENTS + 1)},
        attrs={**_attributes(result), "stability": "computed" if sb is not None else "not computed"})
    return describe(ds, "meanfield-spectral continuation of noisy stationary states", TABLE)


def _attributes(result: Result) -> dict[str, Any]:
    cfg = result.problem.config
    return {"archive_kind": "continuation", "parameter_name": result.key,
            "manifold": cfg.domain.manifold, "direction": cfg.model.direction,
            "kernel": cfg.model.kernel, "beta": cfg.model.beta, "noise": cfg.model.noise,
            "mass": cfg.initial.mass, "unknowns": int(result.problem.basis.size),
            "symmetric_subspace": int(result.problem.basis.size != _full_size(result)),
            "config_text": cfg.text}


def _full_size(result: Result) -> int:
    b = result.problem.basis
    top = int(b.degree.max())
    return b.manifold.basis_size(top)


def write(ds: Any, path: str | Path, overwrite: bool = True) -> Path:
    """Write through the safe writer (:func:`solvers.io.safe_paths.write_netcdf`: built in a
    private folder, renamed into place, only a file of ours replaced)."""
    from solvers.io.safe_paths import write_netcdf

    return write_netcdf(ds, path, overwrite=overwrite, option="-o")
