"""The report of ``meanfield compare-particles`` as text (:func:`format_table`), from the Dataset
of :func:`solvers.studies.compare_particles.compare`: distances and their rates in n, then the
atoms of the PDE and of the particles per time."""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.timestepping.manifolds import manifold_of


def format_table(ds: Any) -> str:
    """The report as text: one row per n (wall time, steps, distance per time), the rates in
    n (least-squares slopes), then the atoms of the PDE and of the particles."""
    times = ds["time"].values
    heads = [f"t={t:.4g}" for t in times]
    lines = [(f"PDE: {ds.attrs['scheme']} resolution {ds.attrs['resolution']} "
              f"({ds.attrs['manifold']}), {ds.attrs['pde_wall_time']:.2f} s; particles: "
              f"{ds.attrs['placement']} placement, RK4")]
    names = (("w1", "W1(PDE, particles)", "w1_rate"),
             ("kernel_distance", "sqrt(<K(mu-nu), mu-nu>)", "kernel_rate"),
             ("atom_mass_error", "largest atom mass difference (matched by position)",
              "atom_mass_rate"))
    for var, title, rate in names:
        if not np.any(np.isfinite(ds[var].values)):
            continue
        lines += ["", title, f"{'n':>8} {'wall (s)':>9} {'steps':>6} "
                  + " ".join(f"{h:>11}" for h in heads)]
        for i, n in enumerate(ds["n"].values):
            vals = " ".join(f"{v:11.3e}" for v in ds[var].values[i])
            lines.append(f"{n:8d} {ds['wall_time'].values[i]:9.2f} "
                         f"{ds['n_steps'].values[i]:6d} {vals}")
        lines.append(f"{'rate in n':>25} " + " ".join(f"{v:11.2f}" for v in ds[rate].values))
    return "\n".join(lines + _atom_lines(ds))


def _masses(values: np.ndarray) -> str:
    return " ".join(f"{m:.4f}" for m in values[np.isfinite(values)])


def _atom_lines(ds: Any) -> list[str]:
    """Atom counts and masses of the PDE and of each n, per time. On a manifold without a
    particle grouping (S^2) the PDE's atoms only, and a line that says the particles' are not
    formed."""
    grouped = manifold_of(str(ds.attrs.get("manifold"))).ordered
    lines = ["", "atoms (count: masses, largest first)"]
    if ds.attrs.get("pde_note"):
        lines.append(f"note: {ds.attrs['pde_note']}")
    if not grouped:
        lines.append(f"particles: no atoms formed: particles are grouped into atoms on S^1 only "
                     f"(not on {ds.attrs.get('manifold')}); the distances above compare the measures")
    for j, t in enumerate(ds["time"].values):
        lines.append(f"t={t:.4g}  PDE {_count(ds['pde_n_atoms'].values[j])}"
                     f"{_masses(ds['pde_atom_mass'].values[j])}")
        for i, n in enumerate(ds["n"].values if grouped else ()):
            lines.append(f"{'':8}n={n:<7d} {_count(ds['particle_n_atoms'].values[i, j])}"
                         f"{_masses(ds['particle_atom_mass'].values[i, j])}")
    return lines


def _count(n: Any) -> str:
    return "0 (no atoms)" if int(n) == 0 else f"{int(n)}: "
