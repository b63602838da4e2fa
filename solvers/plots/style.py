"""Figure styles: ``paper`` (page width, 8 pt text, for a journal figure) and ``screen``.

A style fixes the figure width and the text sizes; every figure of the package is built
inside :func:`style_context` so that the same code gives both. Helpers shared by all figures:
a time axis that shows the dynamics (:func:`time_axis`), integer ticks for counts, and the
label of Theorem 3.5's constant (:func:`theorem_label`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import xarray as xr
    from matplotlib.axes import Axes

PAGE_WIDTH = 7.0  # inches: a two-column journal page (text width)
COLUMN_WIDTH = 3.4  # inches: one column
STYLES: dict[str, dict[str, Any]] = {
    "paper": {"width": PAGE_WIDTH, "dpi": 300, "rc": {
        "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 6.5,
        "xtick.labelsize": 7, "ytick.labelsize": 7, "figure.titlesize": 8,
        "lines.linewidth": 1.0, "lines.markersize": 3, "axes.linewidth": 0.6,
        "legend.framealpha": 0.85, "savefig.bbox": "tight", "savefig.pad_inches": 0.02}},
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

    spec = STYLES[check_style(style)]
    with matplotlib.rc_context(spec["rc"]):
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
    from matplotlib.ticker import MaxNLocator

    getattr(ax, f"{axis}axis").set_major_locator(MaxNLocator(integer=True))


def theorem_label(ds: xr.Dataset | None, value: float) -> str:
    """What the 0.5742 line is: Theorem 3.5's numerical term, and for a shifted-kernel run, not
    a bound (the perceptron's term is not damped there; docs/math.md §5)."""
    kernel = str((ds.attrs if ds is not None else {}).get("kernel", "")).split(":")[0]
    if kernel == "exp_shifted":
        return f"Thm 3.5 numerical term {value:.4f} (not a bound with the shifted kernel)"
    return f"Thm 3.5 numerical term {value:.4f} (bound without the perceptron term)"
