"""What the S^1, S^2 and Sd figures share: titles, the energy panel, constants, movie writers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.axes import Axes

from solvers.io.layout import COMPONENT, param_attr_name

if TYPE_CHECKING:
    import xarray as xr

LOG_RANGE = 6.0  # decades of log10(rho) shown below the maximum
# Theorem 3.5's numerical term (docs/math.md §5); not the full bound of a shifted-kernel run
THEOREM_3_5 = 16.0 / (16.0 + 3.0 * float(np.exp(11.0 / 8.0)))
VIEWS = ("orthographic", "mollweide")


def record_values(ds: xr.Dataset, name: str, i: int) -> np.ndarray:
    """``ds[name]`` of record ``i``: its row when it has a ``time`` dimension (a run's
    ``dirac_*``), itself when not (the one record of a ``meanfield polish`` archive)."""
    var = ds[name]
    return np.asarray(var.isel(time=i).values if "time" in var.dims else var.values)


def _param(ds: xr.Dataset, key: str, default: Any = "?") -> Any:
    return ds.attrs.get(param_attr_name(key), default)


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float | np.number) else str(value)


def run_title(ds: xr.Dataset) -> str:
    """One-line description: manifold, beta, direction, noise (when > 0), attention, activation,
    kernel, scheme, grid (S^1: ``N`` cells; S^2: ``lmax``; Sd: ``d`` and ``N`` points)."""
    kernel = str(ds.attrs.get("kernel", _param(ds, "model.kernel"))).split(":")[0]
    grid = f"lmax = {_param(ds, 'domain.resolution')}" if "phi" in ds.dims else \
        f"d = {ds.sizes[COMPONENT]}   N = {_param(ds, 'domain.resolution')} points" \
        if COMPONENT in ds.dims else f"N = {ds.sizes['theta']}"
    noise = float(_param(ds, "model.noise", 0.0))
    return (
        f"{_param(ds, 'domain.manifold', ds.attrs.get('manifold', '?'))}   "
        f"beta = {_fmt(_param(ds, 'model.beta'))}   {_param(ds, 'model.direction')}   "
        + (f"noise nu = {noise:g}   " if noise > 0 else "") +
        f"attention: {_param(ds, 'model.attention')}   "
        f"activation: {_param(ds, 'model.perceptron.activation')}   kernel: {kernel}   "
        f"method: {ds.attrs.get('method') or ds.attrs.get('scheme', _param(ds, 'time.scheme'))}   {grid}"
    )


def fit_title(fig: Any, text: str) -> Any:
    """``fig.suptitle(text)``, broken into two lines (at a wide gap) when one would not fit
    the figure's width (estimated at 0.52 em per character)."""
    from matplotlib import rcParams
    from matplotlib.font_manager import FontProperties

    size = FontProperties(size=rcParams["figure.titlesize"]).get_size_in_points()
    if 0.52 * size * len(text) > 0.95 * 72.0 * fig.get_figwidth() and "   " in text:
        parts = text.split("   ")
        half = len(parts) // 2
        text = "   ".join(parts[:half]) + "\n" + "   ".join(parts[half:])
    return fig.suptitle(text)


def frame_title(ds: xr.Dataset, i: int) -> str:
    """``t = ..., atoms: n, max atom mass ... (Thm 3.5 term: 0.5742)`` for record ``i``."""
    bound = float(ds["theorem_3_5_bound"].values[i]) if "theorem_3_5_bound" in ds else THEOREM_3_5
    n = int(ds["n_atoms"].values[i]) if "n_atoms" in ds else 0
    top = float(ds["max_atom_mass"].values[i]) if "max_atom_mass" in ds else 0.0
    return (f"t = {float(ds['time'].values[i]):.4g}   atoms: {n}   max atom mass {top:.4f} "
            f"(Thm 3.5 term: {bound:.4f})")


def single_state(ds: xr.Dataset) -> bool:
    """Whether ``ds`` holds one state (a ``meanfield polish`` archive, a one-record run): its
    figure has no time axis and no energy history, the state's numbers are written instead."""
    return int(ds.sizes.get("time", 0)) == 1


def state_lines(ds: xr.Dataset) -> list[str]:
    """The numbers of a single state (:func:`single_state`): time, energy, atoms and, for a
    polished archive, Newton's result and the stability."""
    i = -1
    lines = [f"one state, t = {float(ds['time'].values[i]):.6g}"]
    for name, label in (("energy", "energy E"), ("free_energy", "free energy F"), ("mass", "mass")):
        if name in ds:
            lines.append(f"{label} = {float(ds[name].values[i]):.10g}")
    if "n_atoms" in ds:
        lines.append(f"atoms: {int(ds['n_atoms'].values[i])}"
                     + (f", largest {float(ds['max_atom_mass'].values[i]):.6f}"
                        if "max_atom_mass" in ds else ""))
    from solvers.io.attributes import polish_lines

    lines += polish_lines(ds.attrs)
    return lines


def panel_state(ax: Axes, ds: xr.Dataset, title: str) -> None:
    """The numbers of a single state (:func:`state_lines`) as text, in place of the energy
    history a single state does not have."""
    from matplotlib.font_manager import FontProperties

    from solvers.plots.style import NOTE_SIZE

    ax.set_axis_off()
    ax.set_title(title)
    import textwrap

    # as many monospace characters (about 0.6 em wide) as the panel is wide
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    points = FontProperties(size=NOTE_SIZE).get_size_in_points()
    chars = max(30, int(width_in * 72.0 / (0.6 * points)))
    text = "\n".join(textwrap.fill(line, chars,
                                   subsequent_indent=" " * (len(line) - len(line.lstrip()) + 2))
                     for line in state_lines(ds))
    ax.text(0.0, 1.0, text, transform=ax.transAxes, va="top", ha="left",
            fontsize=NOTE_SIZE, family="monospace")


def panel_energy(ax: Axes, ds: xr.Dataset) -> None:
    """Energy against time (a log time axis when it settles early), dissipation on a twin axis."""
    from solvers.plots.style import COLORS, legend_below, log_ticks, time_axis

    time = ds["time"].values
    lines = ax.plot(time, ds["energy"].values, color=COLORS["blue"], label="energy E")
    ax.set(xlabel="time", ylabel="energy E", title="(c) energy, dissipation")
    if float(ds.attrs.get("model__noise", 0.0)) > 0 and "free_energy" in ds:  # docs/noise.md §1
        lines += ax.plot(time, ds["free_energy"].values, color=COLORS["green"], ls="-.",
                         label=r"free energy $F = E - s\nu\int\rho\log\rho$")
        ax.set_ylabel("E, F")
    time_axis(ax, time, ds["energy"].values)
    diss = ds["dissipation"].values
    if np.any(diss > 0):
        twin = ax.twinx()
        lines += twin.semilogy(time, np.where(diss > 0, diss, np.nan), color=COLORS["orange"],
                               ls="--", label=r"dissipation $\int|g|^2 d\rho$ (right)")
        twin.set_ylabel("dissipation")
        log_ticks(twin, "y")
    legend_below(ax, lines, [ln.get_label() for ln in lines])


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


def basin_splits(ds: xr.Dataset) -> list[tuple[int, int, float]]:
    """``(record, atom identity, time)`` of every basin split of a run (an atom losing whole
    cells to a new sink: the budget's "loss" transfers, :mod:`solvers.io.atom_history`)."""
    from solvers.io.atom_history import transfers

    time = ds["time"].values
    return [(int(np.searchsorted(time, e["time"])), e["atom"], e["time"])
            for e in transfers(ds) if e["kind"] == "loss"]
