"""Figures and animation frames of S^2 run archives (matplotlib, Agg, no pyplot state).

:func:`sphere_run_figure` (``meanfield plot`` of an S^2 run) has three panels:

(a) a Mollweide map of the final ``log10 rho`` (clipped :data:`LOG_RANGE` decades below its
    maximum) with the atoms (circle area ~ mass) and their masses written;
(b) the energy against time, with the dissipation on a log-scaled twin axis;
(c) the atom count against time, with the largest atom mass and the Theorem 3.5 constant
    ``16/(16 + 3 e^{11/8}) = 0.5742`` on a twin axis.

:func:`sphere_animation` builds the frames of ``meanfield animate``: either two orthographic
views (the hemisphere facing the heaviest final atom and the opposite one, as in the paper's
Figures 4 and 4.5) or a Mollweide map, one frame per snapshot, on a colour scale fixed over
the run.

Geometry (:class:`solvers.sphere.cells.SphereGrid`): cell ``(j, k)`` spans the band between
the colatitudes ``theta_faces[j]``, ``theta_faces[j + 1]`` (``cos theta_faces = 1 - cumulative
Gauss weights``, recovered here from ``cell_weight``) and the longitudes ``phi_k -+ dphi/2``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import patheffects, rcParams
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from solvers.plots.common import (
    LOG_RANGE,
    THEOREM_3_5,
    basin_splits,
    fit_title,
    frame_title,
    panel_energy,
    panel_state,
    single_state,
    record_values,
    run_title,
)
from solvers.plots.labels import label_points
from solvers.plots.style import (
    COLORS,
    DENSITY_CMAP,
    NOTE_SIZE,
    figsize,
    footnote,
    integer_ticks,
    legend_below,
    theorem_label,
    time_axis,
)

if TYPE_CHECKING:
    import xarray as xr

ATOM_COLOR = COLORS["vermillion"]  # on the cividis map (blue to yellow)
DIRAC_COLOR = COLORS["sky"]
EMPTY_SHARE = 1e-9  # a grid holding less than this share of the mass has no density to map
GRATICULE_DEG = 30


def cell_faces(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Cell boundaries of an S^2 archive: colatitudes (nlat + 1,) and longitudes (nphi + 1,)."""
    phi = ds["phi"].values
    dphi = 2.0 * np.pi / phi.size
    mu = 1.0 - np.concatenate([[0.0], np.cumsum(ds["cell_weight"].values[:, 0] / dphi)])
    mu[-1] = -1.0
    return np.arccos(np.clip(mu, -1.0, 1.0)), phi[0] - 0.5 * dphi + dphi * np.arange(phi.size + 1)


def unit_vectors(theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """Points of the outer product ``theta x phi``, shape (len(theta), len(phi), 3)."""
    st = np.sin(theta)[:, None]
    return np.stack(np.broadcast_arrays(st * np.cos(phi), st * np.sin(phi),
                                        np.cos(theta)[:, None]), axis=-1)


def atoms_at(ds: xr.Dataset, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Masses (n,) and unit positions (n, 3) of the atoms of record ``i`` (padding dropped)."""
    return _masses_and_units(ds, i, "atom")


def _masses_and_units(ds: xr.Dataset, i: int, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """``{prefix}_mass`` (n,) and ``{prefix}_x/y/z`` (n, 3) of record ``i``, padding dropped
    (empty without them)."""
    if f"{prefix}_mass" not in ds or f"{prefix}_x" not in ds or ds.sizes.get(prefix, 0) == 0:
        return np.zeros(0), np.zeros((0, 3))
    mass = record_values(ds, f"{prefix}_mass", i)
    xyz = np.stack([record_values(ds, f"{prefix}_{c}", i) for c in "xyz"], axis=1)
    ok = np.isfinite(mass) & np.isfinite(xyz).all(axis=1)
    return mass[ok], xyz[ok]


def log_limits(rho: np.ndarray) -> tuple[float, float]:
    """``(vmin, vmax)`` of ``log10 rho``: the maximum and :data:`LOG_RANGE` decades below."""
    top = float(np.nanmax(rho))
    vmax = np.log10(top) if top > 0 else 0.0
    return vmax - LOG_RANGE, vmax


def _log(rho: np.ndarray, vmin: float) -> np.ndarray:
    return np.log10(np.clip(rho, 10.0**vmin, None))


def _lon_lat(xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longitude in [-pi, pi) and latitude (radians) of unit vectors (..., 3)."""
    lon = np.mod(np.arctan2(xyz[..., 1], xyz[..., 0]) + np.pi, 2 * np.pi) - np.pi
    return lon, np.arcsin(np.clip(xyz[..., 2], -1.0, 1.0))


class _AtomMarks:
    """Atom circles (area ~ mass) and mass labels on one axes, replaced at every update."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        self.scatter = ax.scatter(np.zeros(0), np.zeros(0), s=np.zeros(0), facecolors="none",
                                  edgecolors=ATOM_COLOR, linewidths=1.2, zorder=3)
        self.placer = None
        self.halo = [patheffects.withStroke(linewidth=1.5, foreground="white")]

    def update(self, xy: np.ndarray, mass: np.ndarray) -> None:
        self.scatter.set_offsets(xy.reshape(-1, 2))
        self.scatter.set_sizes((2.0 + 30.0 * mass) * rcParams["lines.markersize"] ** 2 / 9.0)
        if self.placer is not None:
            self.placer.clear_labels()
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        self.placer = label_points(self.ax, xy[:, 0], xy[:, 1], [f"{m:.3f}" for m in mass],
                                   priority=mass, fontsize=NOTE_SIZE, color=ATOM_COLOR,
                                   zorder=4, path_effects=self.halo)


class MollweideMap:
    """``log10 rho`` of one record on a Mollweide axes (``projection="mollweide"``)."""

    def __init__(self, ax: Axes, ds: xr.Dataset, limits: tuple[float, float]) -> None:
        self.ax, self.ds, self.vmin = ax, ds, limits[0]
        theta_faces, phi_faces = cell_faces(ds)
        lon = np.mod(ds["phi"].values + np.pi, 2 * np.pi) - np.pi
        order = np.argsort(lon)
        self.order = np.append(order, order[0])  # the cell at lon = -pi is cut: repeat it at +pi
        dphi = phi_faces[1] - phi_faces[0]
        faces = np.concatenate([lon[order] - 0.5 * dphi, lon[order[-1:]] + 0.5 * dphi,
                                [np.pi + dphi]])
        lon_faces = np.clip(faces, -np.pi, np.pi)
        lat_faces = (0.5 * np.pi - theta_faces)[::-1]  # increasing
        shape = (lat_faces.size - 1, self.order.size)
        self.mesh = ax.pcolormesh(lon_faces, lat_faces, np.zeros(shape),
                                  vmin=limits[0], vmax=limits[1], cmap=DENSITY_CMAP,
                                  shading="flat", rasterized=True)
        ax.grid(True, alpha=0.3)
        ax.set_xticks(np.radians(np.arange(-120, 180, 60)))  # 30 degrees crowd at page width
        halo = [patheffects.withStroke(linewidth=1.5, foreground="black")]
        for label in ax.get_xticklabels():  # longitudes are drawn on the map: white on black
            label.set(color="white", path_effects=halo)
        self.atoms = _AtomMarks(ax)

    def update(self, i: int) -> None:
        self.mesh.set_array(_log(self.ds["rho"].values[i], self.vmin)[::-1][:, self.order])
        mass, xyz = atoms_at(self.ds, i)
        self.atoms.update(np.stack(_lon_lat(xyz), axis=-1), mass)


class OrthographicView:
    """``log10 rho`` of one record on the hemisphere centred at ``(lon0, lat0)`` (degrees).

    ``back=True`` shows the opposite hemisphere (centred at ``(lon0 + 180, -lat0)``), built by
    negating the view and east vectors exactly, so that a front and a back view partition the
    sphere: a point on the limb (depth 0) belongs to the back view only.
    """

    def __init__(self, ax: Axes, ds: xr.Dataset, limits: tuple[float, float], lon0: float,
                 lat0: float, back: bool = False) -> None:
        self.ax, self.ds, self.vmin = ax, ds, limits[0]
        lo, la, sign = np.radians(lon0), np.radians(lat0), -1.0 if back else 1.0
        self.east = sign * np.array([-np.sin(lo), np.cos(lo), 0.0])
        self.north = np.array([-np.sin(la) * np.cos(lo), -np.sin(la) * np.sin(lo), np.cos(la)])
        self.view = sign * np.array([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)])
        self.back = back
        corners = unit_vectors(*cell_faces(ds))
        self.hidden = ~self._visible(unit_vectors(ds["theta"].values, ds["phi"].values))
        self.mesh = ax.pcolormesh(corners @ self.east, corners @ self.north,
                                  np.ma.masked_array(np.zeros(self.hidden.shape), self.hidden),
                                  vmin=limits[0], vmax=limits[1], cmap=DENSITY_CMAP,
                                  shading="flat", rasterized=True)
        self._graticule()
        ax.add_patch(Circle((0.0, 0.0), 1.0, fill=False, color="0.3", lw=0.8))
        ax.set(xlim=(-1.05, 1.05), ylim=(-1.05, 1.05), aspect="equal")
        ax.set_axis_off()
        lon0, lat0 = (lon0 + 180.0, -lat0) if back else (lon0, lat0)
        ax.set_title(f"centred at lon {lon0 % 360:.0f}, lat {lat0:.0f} deg")
        self.atoms = _AtomMarks(ax)

    def _visible(self, xyz: np.ndarray) -> np.ndarray:
        depth = xyz @ self.view
        return depth >= 0.0 if self.back else depth > 0.0

    def _graticule(self) -> None:
        s = np.linspace(0.0, 2 * np.pi, 181)
        for deg in range(-90 + GRATICULE_DEG, 90, GRATICULE_DEG):  # parallels
            self._curve(unit_vectors(np.radians([90.0 - deg]), s)[0])
        for deg in range(0, 360, GRATICULE_DEG):  # meridians
            self._curve(unit_vectors(s[:91], np.radians([deg]))[:, 0])  # theta 0..pi

    def _curve(self, xyz: np.ndarray) -> None:
        x, y = xyz @ self.east, xyz @ self.north
        hide = ~self._visible(xyz)
        self.ax.plot(np.where(hide, np.nan, x), np.where(hide, np.nan, y), color="white",
                     lw=0.4, alpha=0.35)

    def update(self, i: int) -> None:
        values = _log(self.ds["rho"].values[i], self.vmin)
        self.mesh.set_array(np.ma.masked_array(values, self.hidden))
        mass, xyz = atoms_at(self.ds, i)
        front = self._visible(xyz)
        xy = np.stack([xyz[front] @ self.east, xyz[front] @ self.north], axis=-1)
        self.atoms.update(xy, mass[front])


def _front_longitude(ds: xr.Dataset) -> float:
    """Longitude (degrees) of the heaviest atom of the last record, 0 without atoms."""
    mass, xyz = atoms_at(ds, -1)
    return float(np.degrees(_lon_lat(xyz[np.argmax(mass)])[0])) if mass.size else 0.0


def sphere_animation(ds: xr.Dataset, view: str = "orthographic"
                     ) -> tuple[Figure, Callable[[int], None]]:
    """Figure and ``update(i)`` drawing record ``i`` of an S^2 archive.

    Parameters
    ----------
    view : {"orthographic", "mollweide"}
        Two opposite orthographic hemispheres, or one Mollweide map.
    """
    limits = log_limits(ds["rho"].values)
    if view == "orthographic":
        fig = Figure(figsize=(9.0, 4.8), layout="constrained")
        lon0 = _front_longitude(ds)
        axes = fig.subplots(1, 2)
        panels = [OrthographicView(axes[0], ds, limits, lon0, 20.0),
                  OrthographicView(axes[1], ds, limits, lon0, 20.0, back=True)]
    elif view == "mollweide":
        fig = Figure(figsize=(9.0, 5.0), layout="constrained")
        panels = [MollweideMap(fig.add_subplot(projection="mollweide"), ds, limits)]
    else:
        raise ValueError(f"view must be 'orthographic' or 'mollweide' (got {view!r})")
    fig.colorbar(panels[0].mesh, ax=fig.axes, shrink=0.8, label=r"$\log_{10}\rho$ (clipped)")

    def update(i: int) -> None:
        for panel in panels:
            panel.update(i)
        fig.suptitle(f"{run_title(ds)}\n{frame_title(ds, i)}", fontsize=NOTE_SIZE)

    return fig, update


def sphere_run_figure(ds: xr.Dataset, style: str = "paper") -> tuple[Figure, dict[str, Axes]]:
    """The three-panel summary figure of a loaded S^2 archive.

    Returns
    -------
    fig : Figure
    panels : dict
        ``{"map": Mollweide axes, "energy": ax, "atoms": ax}`` (twin axes not included); for
        a single state (a polished archive) ``{"map": ..., "state": ax}``: its numbers, no
        time axis.
    """
    if ds.sizes.get("time", 0) == 0:
        raise ValueError("the archive holds no snapshots: nothing to plot")
    fig = Figure(figsize=figsize(style, 0.8), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=[1.25, 1.0])
    panels = {"map": fig.add_subplot(grid[0, :], projection="mollweide"),
              "energy": fig.add_subplot(grid[1, 0]), "atoms": fig.add_subplot(grid[1, 1])}
    final = MollweideMap(panels["map"], ds, log_limits(ds["rho"].values[-1]))
    final.update(-1)
    _tracks_on_map(panels["map"], ds)
    dirac = _dirac_markers(panels["map"], ds)
    mass, _ = atoms_at(ds, -1)
    what = f"{mass.size} atoms, largest {_max(mass):.4f}"
    if dirac:
        what += f" (triangles: {dirac} Dirac atoms)"
    if _grid_share(ds) < EMPTY_SHARE:  # all the mass in Dirac atoms: no density to map
        final.mesh.set_visible(False)
        what += "; all the mass in Dirac atoms"
    else:
        fig.colorbar(final.mesh, ax=panels["map"], shrink=0.7, label=r"$\log_{10}\rho$ (clipped)")
    panels["map"].set_title(f"(a) final density at t = {float(ds['time'].values[-1]):.4g}: "
                            f"{what}", pad=10)
    if single_state(ds):  # a polished archive: no time axis, no energy history
        panels.pop("atoms").remove()
        panels.pop("energy").remove()
        panels["state"] = fig.add_subplot(grid[1, :])
        panel_state(panels["state"], ds, "(b) the state")
        footnote(fig, "* " + theorem_label(ds, _bound(ds)))
        fit_title(fig, run_title(ds))
        return fig, panels
    panel_energy(panels["energy"], ds)
    panels["energy"].set_title("(b) energy, dissipation")
    _panel_atoms(panels["atoms"], ds)
    footnote(fig, "* " + theorem_label(ds, _bound(ds)))
    fit_title(fig, run_title(ds))
    return fig, panels


def _grid_share(ds: xr.Dataset) -> float:
    """The share of the final mass on the grid (1 without Dirac atoms)."""
    rho = np.asarray(ds["rho"].values[-1], dtype=float)
    grid = float(np.nansum(np.clip(rho, 0.0, None) * ds["cell_weight"].values))
    dirac, _ = dirac_at(ds, -1)
    total = grid + float(dirac.sum())
    return grid / total if total > 0 else 1.0


def _max(mass: np.ndarray) -> float:
    return float(mass.max()) if mass.size else 0.0


def _bound(ds: xr.Dataset) -> float:
    return float(ds["theorem_3_5_bound"].values[-1]) if "theorem_3_5_bound" in ds else THEOREM_3_5


def _identity_columns(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """``(mass, xyz)`` of every atom identity over time, shapes (time, atom), (time, atom, 3)."""
    if "atom_x" not in ds or ds.sizes.get("atom", 0) == 0:
        return None
    xyz = np.stack([ds[f"atom_{c}"].values for c in "xyz"], axis=-1)
    return ds["atom_mass"].values, xyz


def _tracks_on_map(ax: Axes, ds: xr.Dataset) -> None:
    """Each identity's path on the map (broken where it crosses the +-180 degree seam)."""
    columns = _identity_columns(ds)
    if columns is None:
        return
    mass, xyz = columns
    for k in range(mass.shape[1]):
        alive = np.isfinite(mass[:, k]) & np.all(np.isfinite(xyz[:, k]), axis=-1)
        if alive.sum() < 2:
            continue
        lon, lat = _lon_lat(xyz[alive, k])
        lon = lon.astype(float).copy()
        lon[1:][np.abs(np.diff(lon)) > np.pi] = np.nan
        ax.plot(lon, lat, color=ATOM_COLOR, lw=0.8, alpha=0.7, zorder=3)


def dirac_at(ds: xr.Dataset, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Masses (n,) and unit positions (n, 3) of the Dirac atoms of record ``i`` of a
    measure-valued run (``dirac_mass``, ``dirac_x/y/z``; empty otherwise)."""
    return _masses_and_units(ds, i, "dirac")


def _dirac_markers(ax: Axes, ds: xr.Dataset) -> int:
    """The final Dirac atoms (exact positions) as markers on the map; returns their number."""
    mass, xyz = dirac_at(ds, -1)
    if not mass.size:
        return 0
    lon, lat = _lon_lat(xyz)
    ax.plot(lon, lat, "^", color=DIRAC_COLOR, mec=COLORS["black"], mew=0.5, ms=5, zorder=5,
            gid="dirac-atoms", label=f"{mass.size} Dirac atoms")
    return int(mass.size)


def _panel_atoms(ax: Axes, ds: xr.Dataset) -> None:
    time = ds["time"].values
    lines = ax.step(time, ds["n_atoms"].values, where="post", color=COLORS["black"],
                    label="atom count (left)")
    ax.set(xlabel="time", ylabel="atoms", title="(c) atoms: count and masses")
    integer_ticks(ax)
    twin = ax.twinx()
    columns = _identity_columns(ds)
    if columns is not None:
        for k in range(columns[0].shape[1]):
            (line,) = twin.plot(time, columns[0][:, k], lw=1.0, alpha=0.8)
        line.set_label("masses by identity")
        lines.append(line)
        lines += _split_marks(twin, ds, columns[0])
    lines += twin.plot(time, ds["max_atom_mass"].values, color=COLORS["vermillion"], ls=":",
                       label="max atom mass")
    lines.append(twin.axhline(_bound(ds), color="k", ls="--", lw=0.8,
                              label=f"Thm 3.5 term {_bound(ds):.4f}*"))
    time_axis(ax, time, ds["max_atom_mass"].values)
    twin.set(ylabel="mass", ylim=(0.0, 1.05 * max(1.0, np.nanmax(ds["max_atom_mass"].values))))
    legend_below(ax, lines, [ln.get_label() for ln in lines], ncol=2)


def _split_marks(ax: Axes, ds: xr.Dataset, mass: np.ndarray) -> list:
    """Crosses on the mass curves where an atom lost whole cells of its basin (the archive's
    mass budget: a new sink formed inside it)."""
    splits = basin_splits(ds)
    if not splits:
        return []
    y = [float(mass[i, k]) for i, k, _ in splits]
    return ax.plot([t for _, _, t in splits], y, "x", color=COLORS["black"], ms=5, label="basin split",
                   gid="basin-splits")
