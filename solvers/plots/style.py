"""Figure styles: ``paper`` (page width, 8 pt text, for a journal figure) and ``screen``.

A style fixes the figure width, the text sizes and the colours; every figure of the package is
built inside :func:`style_context` so that the same code gives both. Colours are set here
only: the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"; distinguishable
with the common colour-vision deficiencies) as the line cycle and :data:`COLORS`, and the
perceptually uniform, colour-blind-safe colormaps :data:`DENSITY_CMAP` (cividis, Nunez et
al. 2018) and :data:`SEQUENCE_CMAP` (viridis) for ordered families of curves. Text sizes are
the style's four: ``font.size`` (titles, labels), tick labels, legends, and ``small`` for
annotations and footnotes (:data:`NOTE_SIZE`). Helpers shared by all figures: a time axis that
shows the dynamics (:func:`time_axis`), integer ticks for counts, uncluttered log ticks
(:func:`log_ticks`), the footnote (:func:`footnote`) and the label of Theorem 3.5's constant
(:func:`theorem_label`). Figures saved to ``.pdf`` or ``.svg`` are vector files (images of
densities are embedded as rasters at the figure's dpi; lines and texts stay vectors).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.ticker import NullLocator

if TYPE_CHECKING:
    import xarray as xr
    from matplotlib.axes import Axes

# Okabe-Ito: black, orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple
COLORS = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
          "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7"}
CYCLE = ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")
DENSITY_CMAP = "cividis"  # log10 rho maps and images
SEQUENCE_CMAP = "viridis"  # curves ordered by a parameter (beta)
NOTE_SIZE = "small"  # annotations (atom masses) and footnotes, relative to font.size
_COMMON_RC: dict[str, Any] = {
    "axes.prop_cycle": None,  # filled in by style_context (cycler import deferred)
    "image.cmap": DENSITY_CMAP, "font.family": "DejaVu Sans", "mathtext.fontset": "dejavusans",
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",  # editable text in vectors
    "legend.borderaxespad": 0.3, "legend.handlelength": 1.6,
}
PAGE_WIDTH = 7.0  # inches: a two-column journal page (text width)
COLUMN_WIDTH = 3.4  # inches: one column
STYLES: dict[str, dict[str, Any]] = {
    "paper": {"width": PAGE_WIDTH, "dpi": 300, "rc": {
        "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 6.5,
        "xtick.labelsize": 7, "ytick.labelsize": 7, "figure.titlesize": 8,
        "lines.linewidth": 1.0, "lines.markersize": 3, "axes.linewidth": 0.6,
        "legend.framealpha": 0.85}},
    "screen": {"width": 13.0, "dpi": 120, "rc": {
        "font.size": 11, "axes.titlesize": 11, "axes.labelsize": 11, "legend.fontsize": 9,
        "xtick.labelsize": 10, "ytick.labelsize": 10, "figure.titlesize": 12}},
}
FLAT = 0.01  # a run is "flat" once within 1% of its final value
FLAT_SHARE = 0.25  # ... and if that happens in the first quarter of the run, time goes log


def check_style(style: str) -> str:
    if style not in STYLES:
        raise ValueError(f"--style: unknown style {style!r}; use one of {', '.join(STYLES)}")
    return style


@contextmanager
def style_context(style: str) -> Iterator[dict[str, Any]]:
    """matplotlib rc settings of ``style`` while building and saving a figure."""
    import matplotlib

    from cycler import cycler

    spec = STYLES[check_style(style)]
    rc = {**_COMMON_RC, "axes.prop_cycle": cycler(color=[COLORS[c] for c in CYCLE]),
          **spec["rc"]}
    with matplotlib.rc_context(rc):
        yield spec


def figsize(style: str, aspect: float, width: float | None = None) -> tuple[float, float]:
    """``(width, width * aspect)`` in inches for ``style`` (width: the style's by default)."""
    w = width or STYLES[check_style(style)]["width"]
    return w, w * aspect


def settle_time(time: np.ndarray, series: np.ndarray) -> float:
    """First time after which ``series`` stays within :data:`FLAT` of its range from its end."""
    values = np.asarray(series, dtype=float)
    ok = np.isfinite(values)
    if ok.sum() < 3:
        return float(time[-1])
    values, t = values[ok], np.asarray(time, dtype=float)[ok]
    span = float(np.ptp(values))
    if span == 0.0:
        return float(t[0])
    off = np.abs(values - values[-1]) > FLAT * span
    return float(t[np.flatnonzero(off)[-1] + 1]) if off.any() else float(t[0])


def time_axis(ax: Axes, time: np.ndarray, series: np.ndarray, axis: str = "x") -> bool:
    """Log-like (symlog) time axis when ``series`` settles in the first quarter of the run.

    Returns True when the axis was switched (its label then says so).
    """
    time = np.asarray(time, dtype=float)
    if time.size < 3 or time[-1] <= time[0]:
        return False
    settle = settle_time(time, series)
    if settle - time[0] > FLAT_SHARE * (time[-1] - time[0]):
        return False
    step = float(np.min(np.diff(time))) if time.size > 1 else 1.0
    linthresh = max(step, 1e-3 * float(time[-1]))
    getattr(ax, f"set_{axis}scale")("symlog", linthresh=linthresh, linscale=1.0)
    getattr(ax, f"set_{axis}lim")(time[0], time[-1])
    label = getattr(ax, f"get_{axis}label")() or "time"
    getattr(ax, f"set_{axis}label")(f"{label} (symlog)")
    return True


def integer_ticks(ax: Axes, axis: str = "y") -> None:
    """Integer ticks only (counts), one tick where the range holds one integer."""
    from matplotlib.ticker import MaxNLocator

    getattr(ax, f"{axis}axis").set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def log_ticks(ax: Axes, axis: str = "y", most: int = 6) -> None:
    """Log-axis ticks that cannot crowd: at most ``most`` labelled decades, no labelled minor
    ticks; within less than a decade, labelled 1-2-5 ticks."""
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter

    lo, hi = getattr(ax, f"get_{axis}lim")()
    target = getattr(ax, f"{axis}axis")
    if lo > 0 and hi / lo < 10.0:
        target.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=most))
        target.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False))
    else:
        target.set_major_locator(LogLocator(numticks=most))
    target.set_minor_formatter(NullFormatter())


def footnote(fig: Any, text: str) -> None:
    """``text`` below the panels, left-aligned, inside the canvas (the layout engine keeps a
    figure's x super-label clear of the axes)."""
    fig.supxlabel(text, x=0.01, ha="left", fontsize=NOTE_SIZE)


def theorem_label(ds: xr.Dataset | None, value: float) -> str:
    """What the 0.5742 line is: Theorem 3.5's numerical term, and for a shifted-kernel run, not
    a bound (the perceptron's term is not damped there; docs/math.md §5)."""
    kernel = str((ds.attrs if ds is not None else {}).get("kernel", "")).split(":")[0]
    if kernel == "exp_shifted":
        return f"Thm 3.5 numerical term {value:.4f} (not a bound with the shifted kernel)"
    return f"Thm 3.5 numerical term {value:.4f} (bound without the perceptron term)"


def pi_ticks(ax: Axes, axis: str = "x") -> None:
    """Angle ticks at 0, pi/2, pi, 3pi/2, 2pi (an axis over [0, 2 pi])."""
    labels = ["0", r"$\pi/2$", r"$\pi$", r"$3\pi/2$", r"$2\pi$"]
    getattr(ax, f"set_{axis}ticks")(np.pi * np.arange(5) / 2, labels)


def symlog_ticks(ax: Axes, linthresh: float, top: float, most: int = 5) -> None:
    """Ticks of a symlog axis from 0 (linear below ``linthresh``) to ``top``: 0 and at most
    ``most`` decades, evenly spaced (no labels crowding at the linear threshold)."""
    lo = int(np.ceil(np.log10(linthresh)))
    hi = int(np.floor(np.log10(top))) if top > 0 else lo
    step = max(1, int(np.ceil((hi - lo + 1) / most)))
    decades = np.arange(hi, lo - 1, -step)[::-1]
    ax.set_yticks([0.0, *(10.0 ** decades)])
    ax.yaxis.set_minor_locator(NullLocator())


def _points(size: Any) -> float:
    from matplotlib.font_manager import FontProperties

    return float(FontProperties(size=size).get_size_in_points())


def legend_below(ax: Axes, handles: list | None = None, labels: list | None = None,
                 ncol: int = 1) -> Any:
    """A legend under the x axis label of ``ax`` (never over the data or the ticks); the
    layout engine makes room for it."""
    from matplotlib import rcParams

    below = (rcParams["xtick.major.size"] + rcParams["xtick.major.pad"]
             + _points(rcParams["xtick.labelsize"]) + rcParams["axes.labelpad"]
             + 1.3 * _points(rcParams["axes.labelsize"]) + 2.0)
    pad = below / _points(rcParams["legend.fontsize"])
    args = (handles, labels) if handles is not None else ()
    return ax.legend(*args, loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=pad,
                     ncol=ncol)
