"""Summary figure and animation of one run archive (matplotlib, Agg, no pyplot state).

:func:`run_figure` draws an S^1 archive (written by :mod:`solvers.io.archive`) in three panels
(:func:`solvers.plots.run.plot_run` writes it as a PNG):

(a) the density as a theta-time image of ``log10 rho`` (clipped: atoms are many orders
    of magnitude above the background) with the atom tracks, marker size by mass;
(b) the final density against theta (log scale) with the atoms and their masses, and
    the largest atom mass against the Theorem 3.5 constant ``16/(16 + 3 e^{11/8})``;
(c) the energy against time, with the dissipation on a log-scaled twin axis.

:func:`circle_animation` builds the frames of :func:`solvers.plots.run.animate_run` (the density
against theta with the atoms).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps, rcParams
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from solvers.plots.common import (
    LOG_RANGE,
    THEOREM_3_5,
    basin_splits,
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
    DENSITY_CMAP,
    NOTE_SIZE,
    figsize,
    footnote,
    legend_below,
    pi_ticks,
    symlog_ticks,
    theorem_label,
    time_axis,
)

if TYPE_CHECKING:
    import xarray as xr

MAX_IMAGE_ROWS = 600  # time rows drawn in panel (a); longer runs are subsampled
MAX_TRACK_ROWS = 200  # snapshots whose atoms are drawn in panel (a)
TRACK_COLOR = COLORS["vermillion"]  # atoms on the density image (cividis: blue to yellow)
ATOM_COLOR = COLORS["vermillion"]
DIRAC_COLOR = COLORS["blue"]
SPLIT_COLOR = COLORS["sky"]


def run_figure(ds: xr.Dataset, style: str = "paper") -> tuple[Figure, dict[str, Axes]]:
    """Build the three-panel figure of a loaded archive (call inside
    :func:`solvers.plots.style.style_context` for the style's text sizes).

    Returns
    -------
    fig : Figure
    panels : dict
        ``{"density": ax_a, "final": ax_b, "energy": ax_c}`` (colour bar and twin axis
        not included); for a single state (a polished archive) ``{"final": ax_a, "state":
        ax_b}``: the density and the state's numbers, no time axis.
    """
    if ds.sizes.get("time", 0) == 0:
        raise ValueError("the archive holds no snapshots: nothing to plot")
    if single_state(ds):  # a polished archive: no time axis, no energy history
        fig = Figure(figsize=figsize(style, 0.38), layout="constrained")
        axes = fig.subplots(1, 2, width_ratios=[1.4, 1.0])
        panels = dict(zip(("final", "state"), axes, strict=True))
        bound = _panel_final(panels["final"], ds)
        panels["final"].set_title(f"(a) density, t = {float(ds['time'].values[-1]):.4g}")
        panel_state(panels["state"], ds, "(b) the state")
        fit_title(fig, run_title(ds))
        footnote(fig, "* " + theorem_label(ds, bound))
        return fig, panels
    fig = Figure(figsize=figsize(style, 0.38), layout="constrained")
    axes = fig.subplots(1, 3, width_ratios=[1.2, 1.0, 1.0])
    panels = dict(zip(("density", "final", "energy"), axes, strict=True))
    _panel_density(panels["density"], ds)
    bound = _panel_final(panels["final"], ds)
    panel_energy(panels["energy"], ds)
    fit_title(fig, run_title(ds))
    footnote(fig, "(a) circles: atoms (area ~ mass); x: basin split.   * "
             + theorem_label(ds, bound))
    return fig, panels


def _edges(x: np.ndarray, period: float | None = None) -> np.ndarray:
    """Cell edges around increasing centres ``x`` (half-spacing beyond the ends)."""
    if x.size == 1:
        half = period / 2 if period else 0.5
        return np.array([x[0] - half, x[0] + half])
    mid = 0.5 * (x[1:] + x[:-1])
    return np.concatenate([[2 * x[0] - mid[0]], mid, [2 * x[-1] - mid[-1]]])


def _subsample(n: int, m: int) -> np.ndarray:
    """At most ``m`` indices out of ``range(n)``, evenly spread, first and last included."""
    return np.unique(np.linspace(0, n - 1, min(n, m)).round().astype(int))


def _log_density(rho: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``log10 rho`` clipped to ``LOG_RANGE`` decades below its maximum; negative values are
    set below the colour range (drawn in the colour map's "under" colour, never hidden)."""
    top = float(np.nanmax(rho))
    top = top if top > 0 else 1.0
    vmax = np.log10(top)
    vmin = vmax - LOG_RANGE
    logr = np.maximum(np.log10(np.clip(rho, 10.0**vmin, None)), vmin)  # the floor, exactly
    return np.where(rho < 0, vmin - 1.0, logr), vmin, vmax


def _panel_density(ax: Axes, ds: xr.Dataset) -> None:
    theta, time = ds["theta"].values, ds["time"].values
    rows = _subsample(time.size, MAX_IMAGE_ROWS)
    rho = ds["rho"].values[rows]
    logr, vmin, vmax = _log_density(rho)
    theta = np.append(theta, theta[0] + 2 * np.pi)  # periodic: close the circle at 2 pi
    logr = np.concatenate([logr, logr[:, :1]], axis=1)
    negative = bool((rho < 0).any())
    cmap = colormaps[DENSITY_CMAP].with_extremes(under=COLORS["vermillion"])
    mesh = ax.pcolormesh(_edges(theta), _edges(time[rows]), logr, vmin=vmin, vmax=vmax, cmap=cmap,
                         rasterized=True)
    label = rf"$\log_{{10}}\rho$ (floor $10^{{-{LOG_RANGE:g}}}\max$)"
    ax.figure.colorbar(mesh, ax=ax, label=label + ("; red: $\rho<0$" if negative else ""),
                       extend="min" if negative else "neither")
    _atom_tracks(ax, ds)
    ax.set(xlabel=r"$\theta$", ylabel="time", xlim=(0, 2 * np.pi),
           title="(a) density and atom tracks")
    pi_ticks(ax)
    time_axis(ax, time, ds["energy"].values, axis="y")


def _track_rows(time: np.ndarray, markers: int = 40) -> np.ndarray:
    """Rows whose atoms are marked: about ``markers`` of them, evenly spread in log time (the
    density panel's time axis goes log when the run settles early)."""
    if time.size <= markers:
        return np.arange(time.size)
    start = time[time > time[0]][0] - time[0] if (time > time[0]).any() else 1.0
    targets = time[0] + np.geomspace(start, time[-1] - time[0], markers)
    rows = np.searchsorted(time, targets).clip(0, time.size - 1)
    return np.unique(np.concatenate([[0, time.size - 1], rows]))


def _atom_tracks(ax: Axes, ds: xr.Dataset) -> None:
    """One line per atom identity (every snapshot, broken at the seam); circles (area ~ mass)
    at about 40 snapshots spread in log time."""
    if "atom_mass" not in ds or ds.sizes.get("atom", 0) == 0:
        return
    rows = _subsample(ds.sizes["time"], MAX_TRACK_ROWS)
    mass, pos = ds["atom_mass"].values[rows], ds["atom_position"].values[rows]
    t = ds["time"].values[rows]
    ok = np.isfinite(mass) & np.isfinite(pos)
    for k in range(mass.shape[1]):
        track = np.where(ok[:, k], pos[:, k], np.nan)
        track[1:][np.abs(np.diff(track)) > np.pi] = np.nan
        ax.plot(track, t, color=TRACK_COLOR, lw=0.6, alpha=0.8)
    marks = _track_rows(ds["time"].values)
    mass, pos = ds["atom_mass"].values[marks], ds["atom_position"].values[marks]
    t = np.broadcast_to(ds["time"].values[marks][:, None], mass.shape)
    ok = np.isfinite(mass) & np.isfinite(pos)
    if ok.any():
        ax.scatter(pos[ok], t[ok], s=(1.0 + 20.0 * mass[ok]) * rcParams["lines.markersize"],
                   facecolors="none", edgecolors=TRACK_COLOR, linewidths=0.6)
    _split_marks(ax, ds)


def _split_marks(ax: Axes, ds: xr.Dataset) -> None:
    """A cross where an atom lost whole cells of its basin (the archive's mass budget: a new
    sink formed inside it), at the atom's position and the record's time."""
    splits = basin_splits(ds)
    if not splits:
        return
    x = [float(ds["atom_position"].values[i, k]) for i, k, _ in splits]
    ax.plot(x, [t for _, _, t in splits], "x", color=SPLIT_COLOR, ms=6, mew=1.2,
            label="basin split", gid="basin-splits")


def _final_atoms(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    if "atom_mass" not in ds or ds.sizes.get("atom", 0) == 0:
        return np.zeros(0), np.zeros(0)
    mass = ds["atom_mass"].values[-1]
    pos = ds["atom_position"].values[-1]
    ok = np.isfinite(mass) & np.isfinite(pos)
    return mass[ok], pos[ok]


def _dirac_stems(ax: Axes, ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Dirac atoms of a measure-valued run (``dirac_*``) as stems at their exact positions; the
    height is ``m / h``, the density the atom would have spread over one cell. Returns the
    stems' positions and heights (empty without Dirac atoms)."""
    if "dirac_mass" not in ds or ds.sizes.get("dirac", 0) == 0:
        return np.zeros(0), np.zeros(0)
    mass, pos = record_values(ds, "dirac_mass", -1), record_values(ds, "dirac_position", -1)
    ok = np.isfinite(mass) & np.isfinite(pos)
    if not ok.any():
        return np.zeros(0), np.zeros(0)
    height = mass[ok] / float(ds["cell_weight"].values[0])
    ax.vlines(pos[ok], 0.0, height, color=DIRAC_COLOR, lw=1.2)
    ax.plot(pos[ok], height, "^", color=DIRAC_COLOR,
            label=f"{int(ok.sum())} Dirac atoms (height m/h)")
    return pos[ok], height


def _nearest_cells(theta: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return np.argmin(np.abs(np.angle(np.exp(1j * (theta[None, :] - pos[:, None])))), axis=1)


def _panel_final(ax: Axes, ds: xr.Dataset) -> float:
    """The final density on a symlog axis (negative values show), atoms and their masses (an
    atom holding a Dirac atom is marked at the top of its stem). Returns the Theorem 3.5 term."""
    theta, rho = ds["theta"].values, ds["rho"].values[-1]
    t = float(ds["time"].values[-1])
    ax.plot(np.append(theta, theta[0] + 2 * np.pi), np.append(rho, rho[0]), lw=0.8,
            color=COLORS["black"])
    if (rho < 0).any():
        ax.axhline(0.0, color="0.5", lw=0.5)
        ax.plot([], [], " ", label=f"min rho = {float(rho.min()):.3g} < 0")
    stems, stem_heights = _dirac_stems(ax, ds)
    mass, pos = _final_atoms(ds)
    bound = float(ds["theorem_3_5_bound"].values[-1]) if "theorem_3_5_bound" in ds else THEOREM_3_5
    heights = np.zeros(0)
    if mass.size:
        cells = _nearest_cells(theta, pos)
        heights = rho[cells].astype(float)
        if stems.size:  # the stem in the atom's cell carries it
            stem_cells = _nearest_cells(theta, stems)
            for i, c in enumerate(cells):
                heights[i] = max(heights[i], stem_heights[stem_cells == c].max(initial=0.0))
        ax.plot(pos, heights, "v", color=ATOM_COLOR,
                label=f"{mass.size} atoms, largest {mass.max():.4f}")
    top = max(float(np.nanmax(np.abs(rho))), float(heights.max(initial=0.0)),
              float(stem_heights.max(initial=0.0)), 1e-300)
    linthresh = top * 10.0**-LOG_RANGE
    ax.set_yscale("symlog", linthresh=linthresh, linscale=1.0)
    ax.set_ylim(top=top * 10.0 ** 1.2)  # room for the labels above the highest atom
    symlog_ticks(ax, linthresh, top)
    label_points(ax, pos, heights, [f"{m:.3f}" for m in mass], priority=mass,
                 fontsize=NOTE_SIZE, color=ATOM_COLOR)
    ax.axhline(np.nan, color="none", label=f"Thm 3.5 term {bound:.4f}*")
    ax.set(xlabel=r"$\theta$", ylabel=r"$\rho$ (symlog)", xlim=(0, 2 * np.pi),
           title=f"(b) final density, t = {t:.4g}")
    pi_ticks(ax)
    legend_below(ax)
    return bound


# --------------------------------------------------------------------------- animation


def _dirac_of_record(ds: xr.Dataset, i: int, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Positions and stem heights ``m / h`` of the Dirac atoms of record ``i`` (empty without)."""
    if "dirac_mass" not in ds or ds.sizes.get("dirac", 0) == 0:
        return np.zeros(0), np.zeros(0)
    mass, pos = record_values(ds, "dirac_mass", i), record_values(ds, "dirac_position", i)
    ok = np.isfinite(mass) & np.isfinite(pos) & (mass > 0)
    return pos[ok], mass[ok] / cell


def circle_animation(ds: xr.Dataset) -> tuple[Figure, Callable[[int], None]]:
    """Figure and ``update(i)`` drawing record ``i`` of an S^1 archive: rho(theta), log scale.

    Point-mass (Dirac) atoms of a measure-valued run are stems of height ``m / h`` (the density
    the atom would have spread over one cell, as in the summary figure's panel (b)); an atom
    is marked at the top of the stem in its cell, or on the density where there is none."""
    fig = Figure(figsize=(8.0, 4.5), layout="constrained")
    ax = fig.add_subplot()
    theta, rho = ds["theta"].values, ds["rho"].values
    cell = float(ds["cell_weight"].values[0]) if "cell_weight" in ds else 2 * np.pi / theta.size
    stem_top = max((float(_dirac_of_record(ds, i, cell)[1].max(initial=0.0))
                    for i in range(ds.sizes.get("time", 0))), default=0.0)
    top = max(float(np.nanmax(rho)), stem_top, 1e-300)
    floor = top * 10.0**-LOG_RANGE
    (line,) = ax.semilogy(np.append(theta, theta[0] + 2 * np.pi), np.full(theta.size + 1, top),
                          color=COLORS["black"])
    stems = ax.vlines([], floor, [], color=DIRAC_COLOR, lw=1.2)
    (marks,) = ax.plot([], [], "v", color=ATOM_COLOR, label="atoms (mass written)")
    if stem_top > 0:
        ax.plot([], [], "-", color=DIRAC_COLOR, lw=1.2, label="Dirac atoms (height m/h)")
    ax.set(xlabel=r"$\theta$", ylabel=r"$\rho$", xlim=(0, 2 * np.pi), ylim=(floor, 20 * top))
    pi_ticks(ax)
    ax.legend(loc="upper right")
    placed: list = []

    def update(i: int) -> None:
        values = np.clip(np.append(rho[i], rho[i, 0]), floor, None)
        line.set_ydata(values)
        dpos, dheight = _dirac_of_record(ds, i, cell)
        stems.set_segments([[(x, floor), (x, h)] for x, h in zip(dpos, dheight, strict=True)])
        mass, pos = _atoms_of_record(ds, i)
        cells = _nearest_cells(theta, pos)
        heights = values[cells].astype(float)
        if dpos.size:  # the stem in the atom's cell carries it
            stem_cells = _nearest_cells(theta, dpos)
            for k, c in enumerate(cells):
                heights[k] = max(heights[k], dheight[stem_cells == c].max(initial=0.0))
        marks.set_data(pos, heights)
        for placer in placed:
            placer.clear_labels()
        placed[:] = [label_points(ax, pos, heights, [f"{m:.3f}" for m in mass],
                                  priority=mass, fontsize=NOTE_SIZE, color=ATOM_COLOR)]
        fig.suptitle(f"{run_title(ds)}\n{frame_title(ds, i)}", fontsize=NOTE_SIZE)

    return fig, update


def _atoms_of_record(ds: xr.Dataset, i: int) -> tuple[np.ndarray, np.ndarray]:
    if "atom_mass" not in ds or ds.sizes.get("atom", 0) == 0:
        return np.zeros(0), np.zeros(0)
    mass, pos = ds["atom_mass"].values[i], ds["atom_position"].values[i]
    ok = np.isfinite(mass) & np.isfinite(pos)
    return mass[ok], pos[ok]


