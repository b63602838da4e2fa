"""Figure of ``meanfield converge``: errors of refinement ladders against their finest run.

:func:`converge_figure` draws the NetCDF file of the command (``OUT_PREFIX.nc``, built by
:func:`solvers.studies.converge_report.to_dataset`): one log-log panel per ladder (``space``
against ``resolution``, ``time`` against ``dt``) with the distance to the finest run (W1 on
S^1, the kernel norm on S^2), the energy error, the atom mass change to the next run, and
reference slopes through the coarsest error. The x ticks are the ladder's own values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from solvers.plots.style import COLUMN_WIDTH, figsize, log_ticks

if TYPE_CHECKING:
    import xarray as xr
    from matplotlib.axes import Axes

LADDERS = (("space", "resolution"), ("time", "dt"))
SERIES = (("distance", "o-", None), ("energy_error", "s--", "|E - E_ref|"),
          ("atom_mass_change", "^:", "atom mass change (next run)"))


def ladders_of(ds: xr.Dataset) -> list[tuple[str, str]]:
    """``(name, dim)`` of the ladders a converge dataset holds (space, then time)."""
    return [(name, dim) for name, dim in LADDERS if f"{name}_distance" in ds]


def converge_figure(ds: xr.Dataset, style: str = "paper") -> Figure:
    """One log-log panel per ladder of a converge dataset (a column wide per panel in the
    ``paper`` style; build it inside :func:`solvers.plots.style.style_context`)."""
    ladders = ladders_of(ds)
    if not ladders:
        raise ValueError("the dataset holds no refinement ladder (no space_distance or "
                         "time_distance): is it the NetCDF file of meanfield converge?")
    fig = Figure(figsize=figsize(style, 0.85 / len(ladders), COLUMN_WIDTH * len(ladders)),
                 layout="constrained")
    axes = fig.subplots(1, len(ladders), squeeze=False)[0]
    for ax, (name, dim) in zip(axes, ladders, strict=True):
        _panel(ax, ds, name, dim)
    handles, labels = axes[0].get_legend_handles_labels()
    seen = set(labels)
    for ax in axes[1:]:  # one legend for all panels, below them
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in seen:
                handles.append(h)
                labels.append(lab)
                seen.add(lab)
    fig.legend(handles, labels, loc="outside lower center", ncol=min(3, len(labels)))
    return fig


def _panel(ax: Axes, ds: xr.Dataset, name: str, dim: str) -> None:
    x = np.asarray(ds[dim].values, dtype=float)
    metric = str(ds.attrs.get(f"{name}_metric", "distance"))
    for key, fmt, label in SERIES:
        y = np.asarray(ds[f"{name}_{key}"].values, dtype=float)
        ok = np.isfinite(y) & (y > 0)
        if ok.any():
            ax.loglog(x[ok], y[ok], fmt, label=label or metric)
    _slopes(ax, ds, name, dim, x)
    ax.xaxis.set_minor_locator(NullLocator())  # the ladder's values with errors are the ticks
    shown = x[:-1] if x.size > 2 else x  # the last run is the reference: no error there
    ax.set_xticks(shown, [f"{v:g}" for v in shown])
    pad = (shown.max() / shown.min()) ** 0.08 if shown.min() > 0 else 1.0
    ax.set_xlim(shown.min() / pad, shown.max() * pad)
    log_ticks(ax, "y")
    scheme = ds.attrs.get(f"{name}_scheme")
    t_end = ds.attrs.get(f"{name}_t_end")
    title = name + (f": {scheme}" if scheme else "") + (f", T = {t_end:g}" if t_end else "")
    ax.set(xlabel=dim, ylabel="error against the finest run", title=title)


def _slopes(ax: Axes, ds: xr.Dataset, name: str, dim: str, x: np.ndarray) -> None:
    """Reference slopes (``{name}_slopes``) through the coarsest distance, on the refinement
    variable ``value + offset`` (S^2 space ladders: lmax + 1)."""
    y = np.asarray(ds[f"{name}_distance"].values, dtype=float)
    ok = np.isfinite(y) & (y > 0)
    slopes: Sequence[float] = np.atleast_1d(ds.attrs.get(f"{name}_slopes", ())).tolist()
    if not ok.any() or not slopes:
        return
    offset = float(ds.attrs.get(f"{name}_offset", 0))
    sign = -1.0 if dim == "resolution" else 1.0
    h = (x[:-1] + offset) / (x[ok][0] + offset)
    for i, p in enumerate(sorted(slopes)):
        ax.loglog(x[:-1], y[ok][0] * h ** (sign * p), color=f"{0.25 + 0.3 * i:.2f}", ls=":",
                  lw=1.0, label=f"slope {sign * p:+g}")
