"""Summary figure and animation of one run archive (matplotlib, Agg, no pyplot state).

:func:`plot_run` reads an archive written by :mod:`solvers.archive` and writes a PNG; S^2
archives are drawn by :mod:`solvers.sphere_plotting`, S^1 archives with three panels:

(a) the density as a theta-time image of ``log10 rho`` (clipped: atoms are many orders
    of magnitude above the background) with the atom tracks, marker size by mass;
(b) the final density against theta (log scale) with the atoms and their masses, and
    the largest atom mass against the Theorem 3.5 constant ``16/(16 + 3 e^{11/8})``;
(c) the energy against time, with the dissipation on a log-scaled twin axis.

:func:`animate_run` writes one frame per snapshot (S^1: the density against theta with the
atoms; S^2: orthographic views or a Mollweide map) as a GIF (matplotlib's PillowWriter; the
frames are held in memory until the end) or an MP4 (needs ffmpeg on PATH).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from solvers.archive import open_run, param_attr_name

if TYPE_CHECKING:
    import xarray as xr

LOG_RANGE = 6.0  # decades of log10(rho) shown below the maximum in panel (a)
MAX_IMAGE_ROWS = 600  # time rows drawn in panel (a); longer runs are subsampled
MAX_TRACK_ROWS = 200  # snapshots whose atoms are drawn in panel (a)
THEOREM_3_5 = 16.0 / (16.0 + 3.0 * float(np.exp(11.0 / 8.0)))


def plot_run(
    path: str | os.PathLike, out_png: str | os.PathLike | None = None, dpi: int = 120
) -> Path:
    """Write the summary figure of a run archive.

    Parameters
    ----------
    path : str or PathLike
        Run archive (``RUN.nc``).
    out_png : str or PathLike, optional
        Output file; default ``RUN.png`` next to the archive.
    dpi : int
        Resolution of the PNG.

    Returns
    -------
    Path
        The PNG written.
    """
    path = Path(path)
    out = Path(out_png) if out_png is not None else path.with_suffix(".png")
    ds = open_run(path)
    if "phi" in ds.dims:
        from solvers.sphere_plotting import sphere_run_figure

        fig, _ = sphere_run_figure(ds)
    else:
        fig, _ = run_figure(ds)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(out, dpi=dpi)
    return out


def run_figure(ds: xr.Dataset) -> tuple[Figure, dict[str, Axes]]:
    """Build the three-panel figure of a loaded archive.

    Returns
    -------
    fig : Figure
    panels : dict
        ``{"density": ax_a, "final": ax_b, "energy": ax_c}`` (colour bar and twin axis
        not included).
    """
    if ds.sizes.get("time", 0) == 0:
        raise ValueError("the archive holds no snapshots: nothing to plot")
    fig = Figure(figsize=(18, 5.5), layout="constrained")
    axes = fig.subplots(1, 3, width_ratios=[1.2, 1.0, 1.0])
    panels = dict(zip(("density", "final", "energy"), axes, strict=True))
    _panel_density(panels["density"], ds)
    _panel_final(panels["final"], ds)
    _panel_energy(panels["energy"], ds)
    fig.suptitle(run_title(ds))
    return fig, panels


def _param(ds: xr.Dataset, key: str, default: Any = "?") -> Any:
    return ds.attrs.get(param_attr_name(key), default)


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float | np.number) else str(value)


def run_title(ds: xr.Dataset) -> str:
    """One-line description: manifold, beta, direction, attention, activation, kernel, scheme,
    grid (S^1: ``N`` cells; S^2: ``lmax``)."""
    kernel = str(ds.attrs.get("kernel", _param(ds, "model.kernel"))).split(":")[0]
    grid = f"lmax = {_param(ds, 'domain.resolution')}" if "phi" in ds.dims else \
        f"N = {ds.sizes['theta']}"
    return (
        f"{_param(ds, 'domain.manifold', ds.attrs.get('manifold', '?'))}   "
        f"beta = {_fmt(_param(ds, 'model.beta'))}   {_param(ds, 'model.direction')}   "
        f"attention: {_param(ds, 'model.attention')}   "
        f"activation: {_param(ds, 'model.perceptron.activation')}   kernel: {kernel}   "
        f"scheme: {ds.attrs.get('scheme', _param(ds, 'time.scheme'))}   {grid}"
    )


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
    """``log10 rho`` clipped to ``LOG_RANGE`` decades below its maximum."""
    top = float(np.nanmax(rho))
    top = top if top > 0 else 1.0
    vmax = np.log10(top)
    vmin = vmax - LOG_RANGE
    logr = np.log10(np.clip(rho, 10.0**vmin, None))
    return logr, vmin, vmax


def _panel_density(ax: Axes, ds: xr.Dataset) -> None:
    theta, time = ds["theta"].values, ds["time"].values
    rows = _subsample(time.size, MAX_IMAGE_ROWS)
    logr, vmin, vmax = _log_density(ds["rho"].values[rows])
    theta = np.append(theta, theta[0] + 2 * np.pi)  # periodic: close the circle at 2 pi
    logr = np.concatenate([logr, logr[:, :1]], axis=1)
    mesh = ax.pcolormesh(
        _edges(theta), _edges(time[rows]), logr, vmin=vmin, vmax=vmax, cmap="magma", rasterized=True
    )
    ax.figure.colorbar(mesh, ax=ax, label=r"$\log_{10}\rho$ (clipped)")
    _atom_tracks(ax, ds)
    ax.set(
        xlabel=r"$\theta$ (rad)",
        ylabel="time",
        xlim=(0, 2 * np.pi),
        title="(a) density and atom tracks",
    )


def _atom_tracks(ax: Axes, ds: xr.Dataset) -> None:
    if "atom_mass" not in ds or ds.sizes.get("atom", 0) == 0:
        return
    rows = _subsample(ds.sizes["time"], MAX_TRACK_ROWS)
    mass = ds["atom_mass"].values[rows]
    pos = ds["atom_position"].values[rows]
    t = np.broadcast_to(ds["time"].values[rows][:, None], mass.shape)
    ok = np.isfinite(mass) & np.isfinite(pos)
    if ok.any():
        ax.scatter(
            pos[ok],
            t[ok],
            s=4 + 120 * mass[ok],
            facecolors="none",
            edgecolors="cyan",
            linewidths=0.8,
            label="atoms (size ~ mass)",
        )
        ax.legend(loc="upper right", fontsize="small")


def _final_atoms(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    if "atom_mass" not in ds or ds.sizes.get("atom", 0) == 0:
        return np.zeros(0), np.zeros(0)
    mass = ds["atom_mass"].values[-1]
    pos = ds["atom_position"].values[-1]
    ok = np.isfinite(mass) & np.isfinite(pos)
    return mass[ok], pos[ok]


def _panel_final(ax: Axes, ds: xr.Dataset) -> None:
    theta, rho = ds["theta"].values, ds["rho"].values[-1]
    floor = max(float(np.nanmax(rho)), 1e-300) * 1e-12
    t = float(ds["time"].values[-1])
    ax.semilogy(
        np.append(theta, theta[0] + 2 * np.pi),
        np.clip(np.append(rho, rho[0]), floor, None),
        lw=1.0,
        label=rf"$\rho$ at t = {t:.4g}",
    )
    mass, pos = _final_atoms(ds)
    bound = float(ds["theorem_3_5_bound"].values[-1]) if "theorem_3_5_bound" in ds else THEOREM_3_5
    top = mass.max() if mass.size else 0.0
    if mass.size:
        cells = np.argmin(np.abs(np.angle(np.exp(1j * (theta[None, :] - pos[:, None])))), axis=1)
        heights = np.clip(rho[cells], floor, None)
        ax.plot(pos, heights, "v", color="tab:red", label=f"atoms: {mass.size}, max mass {top:.4f}")
        for p, h, m in zip(pos, heights, mass, strict=True):
            ax.annotate(
                f"{m:.3f}",
                (p, h),
                textcoords="offset points",
                xytext=(3, 4),
                fontsize="small",
                color="tab:red",
            )
    ax.plot([], [], " ", label=f"Thm 3.5 constant {bound:.4f}")
    ax.set(
        xlabel=r"$\theta$ (rad)",
        ylabel=r"$\rho$",
        xlim=(0, 2 * np.pi),
        title=f"(b) final density: max atom mass {top:.4f} (Thm 3.5: {bound:.4f})",
    )
    ax.legend(loc="best", fontsize="small")


def _panel_energy(ax: Axes, ds: xr.Dataset) -> None:
    time = ds["time"].values
    lines = ax.plot(time, ds["energy"].values, color="tab:blue", marker=".", label="energy")
    ax.set(xlabel="time", ylabel="energy E", title="(c) energy and dissipation")
    diss = ds["dissipation"].values
    if np.any(diss > 0):
        twin = ax.twinx()
        lines += twin.semilogy(
            time,
            np.where(diss > 0, diss, np.nan),
            color="tab:orange",
            marker=".",
            label=r"dissipation $\int|g|^2 d\rho$",
        )
        twin.set_ylabel("dissipation")
    ax.legend(lines, [ln.get_label() for ln in lines], loc="best", fontsize="small")


# --------------------------------------------------------------------------- animation

VIEWS = ("orthographic", "mollweide")


def frame_title(ds: xr.Dataset, i: int) -> str:
    """``t = ..., atoms: n, max atom mass ... (Thm 3.5: 0.5742)`` for record ``i``."""
    bound = float(ds["theorem_3_5_bound"].values[i]) if "theorem_3_5_bound" in ds else THEOREM_3_5
    n = int(ds["n_atoms"].values[i]) if "n_atoms" in ds else 0
    top = float(ds["max_atom_mass"].values[i]) if "max_atom_mass" in ds else 0.0
    return (f"t = {float(ds['time'].values[i]):.4g}   atoms: {n}   max atom mass {top:.4f} "
            f"(Thm 3.5: {bound:.4f})")


def movie_writer(out: Path, fps: int) -> Any:
    """PillowWriter for ``.gif``; FFMpegWriter for ``.mp4`` when ffmpeg is available."""
    from matplotlib.animation import FFMpegWriter, PillowWriter

    suffix = out.suffix.lower()
    if suffix == ".gif":
        return PillowWriter(fps=fps)
    if suffix == ".mp4":
        if not FFMpegWriter.isAvailable():
            raise ValueError(f"{out}: writing .mp4 needs ffmpeg on PATH; install it "
                             "(apt-get install ffmpeg) or write a .gif")
        return FFMpegWriter(fps=fps)
    raise ValueError(f"{out}: unknown animation format {suffix or '(none)'!r}: use .gif or .mp4")


def circle_animation(ds: xr.Dataset) -> tuple[Figure, Callable[[int], None]]:
    """Figure and ``update(i)`` drawing record ``i`` of an S^1 archive: rho(theta), log scale."""
    fig = Figure(figsize=(8.0, 4.5), layout="constrained")
    ax = fig.add_subplot()
    theta, rho = ds["theta"].values, ds["rho"].values
    top = max(float(np.nanmax(rho)), 1e-300)
    floor = top * 10.0**-LOG_RANGE
    (line,) = ax.semilogy(np.append(theta, theta[0] + 2 * np.pi), np.full(theta.size + 1, top))
    (marks,) = ax.plot([], [], "v", color="tab:red", label="atoms (mass written)")
    ax.set(xlabel=r"$\theta$ (rad)", ylabel=r"$\rho$", xlim=(0, 2 * np.pi), ylim=(floor, 2 * top))
    ax.legend(loc="upper right", fontsize="small")
    texts: list = []

    def update(i: int) -> None:
        values = np.clip(np.append(rho[i], rho[i, 0]), floor, None)
        line.set_ydata(values)
        mass, pos = _atoms_of_record(ds, i)
        cells = np.argmin(np.abs(np.angle(np.exp(1j * (theta[None, :] - pos[:, None])))), axis=1)
        marks.set_data(pos, values[cells])
        for text in texts:
            text.remove()
        texts[:] = [ax.annotate(f"{m:.3f}", (p, h), textcoords="offset points", xytext=(3, 4),
                                fontsize="small", color="tab:red")
                    for p, h, m in zip(pos, values[cells], mass)]
        fig.suptitle(f"{run_title(ds)}\n{frame_title(ds, i)}", fontsize="small")

    return fig, update


def _atoms_of_record(ds: xr.Dataset, i: int) -> tuple[np.ndarray, np.ndarray]:
    if "atom_mass" not in ds or ds.sizes.get("atom", 0) == 0:
        return np.zeros(0), np.zeros(0)
    mass, pos = ds["atom_mass"].values[i], ds["atom_position"].values[i]
    ok = np.isfinite(mass) & np.isfinite(pos)
    return mass[ok], pos[ok]


def animate_run(path: str | os.PathLike, out: str | os.PathLike | None = None, fps: int = 10,
                view: str = "orthographic", dpi: int = 80) -> Path:
    """Write one frame per snapshot of a run archive as a GIF or MP4.

    Parameters
    ----------
    path : str or PathLike
        Run archive (``RUN.nc``), S^1 or S^2.
    out : str or PathLike, optional
        ``.gif`` (default ``RUN.gif``) or ``.mp4`` (needs ffmpeg).
    fps : int
        Frames per second (> 0).
    view : {"orthographic", "mollweide"}
        S^2 only: two opposite orthographic hemispheres, or a Mollweide map.
    dpi : int
        Resolution of the frames.

    Returns
    -------
    Path
        The file written. Raises ValueError for a bad format, ``fps``, ``view``, a missing
        ffmpeg, or an archive without snapshots.
    """
    path = Path(path)
    out = Path(out) if out is not None else path.with_suffix(".gif")
    if isinstance(fps, bool) or not isinstance(fps, int) or fps <= 0:
        raise ValueError(f"fps must be a positive integer (got {fps!r})")
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)} (got {view!r})")
    writer = movie_writer(out, fps)
    ds = open_run(path)
    n = ds.sizes.get("time", 0)
    if n == 0:
        raise ValueError("the archive holds no snapshots: nothing to animate")
    if "phi" in ds.dims:
        from solvers.sphere_plotting import sphere_animation

        fig, update = sphere_animation(ds, view)
    else:
        fig, update = circle_animation(ds)
    FigureCanvasAgg(fig)
    update(0)
    fig.draw_without_rendering()  # lay out once (constrained), then keep the positions:
    fig.set_layout_engine("none")  # re-running the layout per frame doubles the cost
    out.parent.mkdir(parents=True, exist_ok=True)
    with writer.saving(fig, str(out), dpi):
        for i in range(n):
            update(i)
            writer.grab_frame()
    return out
