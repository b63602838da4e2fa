"""Figures and animation frames of Sd run archives (``S^{d-1}`` by weighted points).

An Sd archive has no grid to map: its atoms are unit vectors of ``R^d`` (``atom_position``,
``(time, atom, component)``). :func:`points_run_figure` (``meanfield plot`` of an Sd run) has
four panels:

(a) the mass of every atom identity against time (one line per identity) with the largest atom
    mass and Theorem 3.5's numerical term ``16/(16 + 3 e^{11/8}) = 0.5742``: a dashed line for
    the kernel ``exp`` (the bound without the perceptron term), a dotted grey reference for
    ``exp_shifted``, where it is not a bound (docs/math.md §5);
(b) the geodesic distance ``arccos <x_j, x_k>`` of every pair of identities against time
    (while both live), with the grouping radius ``min(1/(2 beta), pi/(2d))`` of the clusters
    (:meth:`~solvers.hypersphere.manifold.HyperSphere.atom_radius`);
(c) the final atoms projected on the plane of their two principal axes (:func:`project`: a
    mass-weighted PCA of their unit vectors), marker area by mass;
(d) the energy against time, with the dissipation on a log-scaled twin axis.

A single state (a polished archive) has (c) and the state's numbers. :func:`points_animation`
builds the frames of ``meanfield animate``: the atoms of each record in one fixed projection
(the principal plane of every record's atoms together).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from solvers.plots.common import (
    THEOREM_3_5,
    fit_title,
    frame_title,
    panel_energy,
    panel_state,
    record_values,
    run_title,
    single_state,
)
from solvers.plots.labels import label_points
from solvers.plots.style import (
    COLORS,
    figsize,
    footnote,
    legend_below,
    theorem_label,
    time_axis,
)

if TYPE_CHECKING:
    import xarray as xr

ATOM_COLOR = COLORS["vermillion"]
AREA_PER_MASS = 600.0  # marker area (points^2) of an atom of mass 1 in panel (c)
MAX_LABELLED_PAIRS = 6  # panel (b) names its pairs in the legend up to this many


def _kernel(ds: xr.Dataset) -> str:
    return str(ds.attrs.get("kernel", ds.attrs.get("model__kernel", "exp"))).split(":")[0].strip()


def _bound(ds: xr.Dataset) -> float:
    return float(ds["theorem_3_5_bound"].values[-1]) if "theorem_3_5_bound" in ds else THEOREM_3_5


def identity_columns(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """Mass ``(time, atom)`` and unit position ``(time, atom, d)`` of every atom identity (NaN
    while an identity is not alive); None without atoms."""
    if "atom_position" not in ds or ds.sizes.get("atom", 0) == 0 or "time" not in ds["atom_mass"].dims:
        return None
    mass = np.asarray(ds["atom_mass"].transpose("time", "atom").values, dtype=float)
    unit = np.asarray(ds["atom_position"].transpose("time", "atom", ...).values, dtype=float)
    return mass, unit


def atoms_at(ds: xr.Dataset, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Masses ``(n,)`` and unit positions ``(n, d)`` of the atoms of record ``i`` (padding
    dropped; empty without atoms)."""
    d = int(ds.sizes.get("component", 0))
    if "atom_position" not in ds or ds.sizes.get("atom", 0) == 0:
        return np.zeros(0), np.zeros((0, d))
    mass = record_values(ds, "atom_mass", i).astype(float)
    unit = record_values(ds, "atom_position", i).astype(float).reshape(mass.size, -1)
    ok = np.isfinite(mass) & np.isfinite(unit).all(axis=1)
    return mass[ok], unit[ok]


def pair_distances(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Geodesic distances of every pair of identities.

    Parameters
    ----------
    unit : ndarray, shape (time, k, d)
        Unit vectors (NaN while an identity is not alive).

    Returns
    -------
    dist : ndarray, shape (time, k (k - 1) / 2)
        ``arccos <x_j, x_k>`` in radians (NaN unless both live).
    j, k : ndarray of int, shape (k (k - 1) / 2,)
        The identities of each pair, ``j < k``.
    """
    j, k = np.triu_indices(unit.shape[1], 1)
    dots = np.einsum("tpc,tpc->tp", unit[:, j], unit[:, k])
    return np.arccos(np.clip(dots, -1.0, 1.0)), j, k


def project(unit: np.ndarray, mass: np.ndarray, basis: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points projected on their mass-weighted principal plane.

    Parameters
    ----------
    unit : ndarray, shape (n, d)
        Unit vectors.
    mass : ndarray, shape (n,)
        Weights (non-negative).
    basis : ndarray, shape (2, d), optional
        The plane to project on (default: the two principal axes of ``unit`` about its
        weighted mean, the leading first).

    Returns
    -------
    xy : ndarray, shape (n, 2)
        ``unit @ basis.T``: the orthogonal projection on the plane through the origin spanned
        by ``basis`` (inside the unit disc). With at most three points it keeps their pairwise
        chord distances exactly.
    basis : ndarray, shape (2, d)
        The orthonormal axes.
    share : ndarray, shape (2,)
        The share of the weighted variance along each axis (0 when there is none).
    """
    unit = np.asarray(unit, dtype=float).reshape(len(mass), -1)
    w = np.clip(np.asarray(mass, dtype=float), 0.0, None)
    d = unit.shape[1]
    total = float(w.sum())
    centre = (w @ unit) / total if total > 0 else np.zeros(d)
    spread = (unit - centre) * np.sqrt(w)[:, None]
    if basis is None:
        _, _, vt = np.linalg.svd(spread, full_matrices=True) if unit.size else (0, 0, np.eye(d))
        basis = np.asarray(vt)[:2] if d >= 2 else np.vstack([np.eye(d), np.zeros((1, d))])
    var = np.sum((spread @ basis.T) ** 2, axis=0)
    whole = float(np.sum(spread**2))
    share = var / whole if whole > 0 else np.zeros(2)
    return unit @ basis.T, basis, share


def points_run_figure(ds: xr.Dataset, style: str = "paper") -> tuple[Figure, dict[str, Axes]]:
    """Build the figure of a loaded Sd archive (call inside
    :func:`solvers.plots.style.style_context` for the style's text sizes).

    Returns
    -------
    fig : Figure
    panels : dict
        ``{"masses": ax_a, "distances": ax_b, "projection": ax_c, "energy": ax_d}`` (twin
        axis not included); for a single state ``{"projection": ax_a, "state": ax_b}``.
    """
    if ds.sizes.get("time", 0) == 0:
        raise ValueError("the archive holds no snapshots: nothing to plot")
    if single_state(ds):  # a polished archive: no time axis, no energy history
        fig = Figure(figsize=figsize(style, 0.42), layout="constrained")
        axes = fig.subplots(1, 2)
        panels = dict(zip(("projection", "state"), axes, strict=True))
        panel_projection(panels["projection"], ds, "(a)")
        panel_state(panels["state"], ds, "(b) the state")
    else:
        fig = Figure(figsize=figsize(style, 0.72), layout="constrained")
        axes = fig.subplots(2, 2).ravel()
        panels = dict(zip(("masses", "distances", "projection", "energy"), axes, strict=True))
        panel_masses(panels["masses"], ds)
        panel_distances(panels["distances"], ds)
        panel_projection(panels["projection"], ds, "(c)")
        panel_energy(panels["energy"], ds)
        panels["energy"].set_title("(d) energy, dissipation")
    fit_title(fig, run_title(ds))
    footnote(fig, "* " + theorem_label(ds, _bound(ds)))
    return fig, panels


def panel_masses(ax: Axes, ds: xr.Dataset) -> None:
    """(a) One line per atom identity (``gid`` ``atom-<k>``), the largest atom mass and
    Theorem 3.5's numerical term (``gid`` ``theorem-3-5``; dashed for the kernel ``exp``)."""
    time = ds["time"].values
    lines = []
    columns = identity_columns(ds)
    if columns is not None:
        for k in range(columns[0].shape[1]):
            (line,) = ax.plot(time, columns[0][:, k], lw=1.0, alpha=0.85, gid=f"atom-{k}")
        line.set_label(f"{columns[0].shape[1]} atom identities")
        lines.append(line)
    if "max_atom_mass" in ds:
        lines += ax.plot(time, ds["max_atom_mass"].values, color=COLORS["black"], ls=":", lw=0.8,
                         label="max atom mass")
    bound = _bound(ds)
    if _kernel(ds) == "exp_shifted":  # docs/math.md §5: the perceptron's term is not damped
        lines.append(ax.axhline(bound, color="0.6", ls=":", lw=0.8, gid="theorem-3-5",
                                label=f"Thm 3.5 term {bound:.4f}, not a bound*"))
    else:
        lines.append(ax.axhline(bound, color="k", ls="--", lw=0.8, gid="theorem-3-5",
                                label=f"Thm 3.5 term {bound:.4f}*"))
    top = np.nanmax(ds["max_atom_mass"].values) if "max_atom_mass" in ds else bound
    ax.set(xlabel="time", ylabel="atom mass", title="(a) atom masses by identity",
           ylim=(0.0, 1.05 * max(bound, float(np.nan_to_num(top)), 0.1)))
    time_axis(ax, time, ds["max_atom_mass"].values if "max_atom_mass" in ds else time)
    legend_below(ax, lines, [ln.get_label() for ln in lines], ncol=2)


def grouping_radius(ds: xr.Dataset) -> float:
    """``min(1/(2 beta), pi/(2d))``, the geodesic radius the clusters are grouped at."""
    from solvers.hypersphere.manifold import hypersphere

    d = int(ds.attrs.get("domain__dim", ds.sizes.get("component", 0)))
    return float(hypersphere(d).atom_radius(float(ds.attrs["model__beta"])))


def panel_distances(ax: Axes, ds: xr.Dataset) -> None:
    """(b) One line per pair of identities (``gid`` ``pair-<j>-<k>``) and the grouping radius
    (``gid`` ``grouping-radius``)."""
    time = ds["time"].values
    columns = identity_columns(ds)
    lines = []
    if columns is not None and columns[0].shape[1] > 1:
        dist, first, second = pair_distances(columns[1])
        named = first.size <= MAX_LABELLED_PAIRS
        width, alpha = (1.0, 0.85) if named else (0.6, 0.6)  # many pairs: thinner lines
        for p, (j, k) in enumerate(zip(first, second)):
            lines += ax.plot(time, dist[:, p], lw=width, alpha=alpha, gid=f"pair-{j}-{k}",
                             label=f"atoms {j}, {k}" if named else None)
        if not named:
            lines[-1].set_label(f"{first.size} pairs of identities")
            lines = lines[-1:]
    else:
        ax.text(0.5, 0.5, "fewer than two atoms", transform=ax.transAxes, ha="center")
    if "model__beta" in ds.attrs:
        radius = grouping_radius(ds)
        lines.append(ax.axhline(radius, color="k", ls=":", lw=0.8, gid="grouping-radius",
                                label=rf"grouping radius $\min(1/(2\beta), \pi/(2d))$ = {radius:.3g}"))
    ax.set(xlabel="time", ylabel="geodesic distance (rad)", ylim=(0.0, np.pi),
           title="(b) distances between atoms")
    ax.set_yticks(np.pi * np.arange(5) / 4, ["0", r"$\pi/4$", r"$\pi/2$", r"$3\pi/4$", r"$\pi$"])
    time_axis(ax, time, ds["max_atom_mass"].values if "max_atom_mass" in ds else time)
    legend_below(ax, lines, [ln.get_label() for ln in lines], ncol=2)


def panel_projection(ax: Axes, ds: xr.Dataset, letter: str) -> None:
    """(c) The final atoms on their principal plane (a scatter with ``gid`` ``atoms``), marker
    area by mass, masses written."""
    mass, unit = atoms_at(ds, -1)
    t = float(ds["time"].values[-1])
    ax.set_title(f"{letter} final atoms at t = {t:.4g}: {mass.size}, projected")
    ax.set_aspect("equal")
    ax.set(xlim=(-1.1, 1.1), ylim=(-1.1, 1.1))
    ax.grid(alpha=0.3)
    if not mass.size:
        ax.text(0.5, 0.5, "no atoms", transform=ax.transAxes, ha="center")
        return
    xy, _, share = project(unit, mass)
    ax.scatter(xy[:, 0], xy[:, 1], s=AREA_PER_MASS * mass, color=ATOM_COLOR, alpha=0.75,
               edgecolors=COLORS["black"], linewidths=0.5, gid="atoms", zorder=3)
    ax.set_xlabel(f"principal axis 1 ({100 * share[0]:.0f}% of the spread)")
    ax.set_ylabel(f"axis 2 ({100 * share[1]:.0f}%)")
    label_points(ax, xy[:, 0], xy[:, 1], [f"{m:.3f}" for m in mass], priority=mass)


def points_animation(ds: xr.Dataset, view: str = "orthographic"
                     ) -> tuple[Figure, Callable[[int], None]]:
    """One frame per snapshot: the atoms of the record on one fixed principal plane (``view``
    is not used: there is one projection).

    Returns
    -------
    fig : Figure
    update : callable
        ``update(i)`` draws record ``i``.
    """
    columns = identity_columns(ds)
    fig = Figure(figsize=(4.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    ax.set(xlim=(-1.1, 1.1), ylim=(-1.1, 1.1), aspect="equal")
    ax.grid(alpha=0.3)
    basis = None
    if columns is not None:
        alive = np.isfinite(columns[0]) & np.isfinite(columns[1]).all(axis=-1)
        if alive.any():
            _, basis, _ = project(columns[1][alive], columns[0][alive])
    dots = ax.scatter([], [], color=ATOM_COLOR, alpha=0.75, edgecolors=COLORS["black"],
                      linewidths=0.5)

    def update(i: int) -> None:
        mass, unit = atoms_at(ds, i)
        if mass.size and basis is not None:
            dots.set_offsets(unit @ basis.T)
            dots.set_sizes(AREA_PER_MASS * mass)
        else:
            dots.set_offsets(np.zeros((0, 2)))
        ax.set_title(frame_title(ds, i), fontsize="small")

    return fig, update
