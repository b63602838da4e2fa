"""Bifurcation diagram of a continuation archive (``meanfield continue``; matplotlib Agg, no pyplot).

Left: the continuation parameter against the largest moment ``max_k |int Y_k rho| / M`` (on
S^1 ``max_k |rho_hat_k| / rho_hat_0``: the order parameter ``|rho_hat_1| / rho_hat_0`` on the
branches of the first mode, and the branches of mode ``j`` visible too), one colour per branch,
stable stretches solid and unstable ones dashed (an archive of ``continue --no-stability``: every
branch dotted, the legend says that the stability was not computed); branch points as circles,
folds as triangles, requested points as small dots. Right: a
few densities (S^1: ``rho`` against angle at the requested points and the ends of each branch;
S^2: ``rho`` against colatitude along the meridian ``phi = 0``, where the axisymmetric states of
pure attention vary). The parameter axis is logarithmic for the noise. Saved at the style's dpi
(``paper``: 300).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from solvers.plots.style import COLORS, CYCLE, figsize, legend_below, style_context

MARKERS = {"branch_point": "o", "fold": "^"}


def _stretches(stable: np.ndarray) -> list[tuple[int, int, bool]]:
    """Runs ``(start, stop, stable)`` of equal stability, each sharing its end with the next."""
    out, start = [], 0
    for i in range(1, stable.size + 1):
        if i == stable.size or stable[i] != stable[start]:
            out.append((start, min(i + 1, stable.size), bool(stable[start])))
            start = i
    return out


def _known(ds: xr.Dataset) -> bool:
    from solvers.io.attributes import stability_computed

    return stability_computed(ds)


def panel_diagram(ax: Axes, ds: xr.Dataset) -> None:
    """The bifurcation diagram (module docstring) on ``ax``."""
    branches = np.unique(ds["branch"].values)
    known = _known(ds)
    for b in branches:
        sel = ds["branch"].values == b
        p, o = ds["parameter"].values[sel], ds["moments"].values[sel].max(axis=1)
        colour = COLORS[CYCLE[int(b) % len(CYCLE)]]
        if not known:
            ax.plot(p, o, ls=":", color=colour, lw=1.2)
        for i, j, ok in _stretches(ds["stable"].values[sel]) if known else ():
            ax.plot(p[i:j], o[i:j], ls="-" if ok else "--", color=colour, lw=1.4 if ok else 1.0)
        req = ds["point_kind"].values[sel] == "requested"
        ax.plot(p[req], o[req], ".", color=colour, ms=4)
    for kind, marker in MARKERS.items():
        k = ds["special_kind"].values == kind
        ax.plot(ds["special_parameter"].values[k], ds["special_moment"].values[k],
                marker, mfc="none", mec="black", ms=7)
    if ds.attrs.get("parameter_name") == "model.noise":
        ax.set_xscale("log")
    ax.set_xlabel(str(ds.attrs.get("parameter_name", "parameter")))
    ax.set_ylabel(r"largest moment $|\int Y_k\,\rho|\,/\,M$")
    lines = [Line2D([], [], color="black", ls="-", label="stable"),
             Line2D([], [], color="black", ls="--", label="unstable")] if known else \
        [Line2D([], [], color="black", ls=":", label="stability not computed")]
    handles = [*lines,
               Line2D([], [], marker="o", ls="", mfc="none", mec="black", label="branch point"),
               Line2D([], [], marker="^", ls="", mfc="none", mec="black", label="fold")]
    legend_below(ax, handles=handles, labels=[h.get_label() for h in handles], ncol=4)


def panel_densities(ax: Axes, ds: xr.Dataset) -> None:
    """Densities at the requested points (or the branches' last points) on ``ax``."""
    idx = np.nonzero(ds["point_kind"].values == "requested")[0]
    if idx.size == 0:
        br = ds["branch"].values
        idx = np.array([np.nonzero(br == b)[0][-1] for b in np.unique(br)])
    s2 = "phi" in ds["rho"].dims
    known = _known(ds)
    for i in idx[:12]:
        rho = ds["rho"].values[i]
        y = rho[:, 0] if s2 else rho
        b = int(ds["branch"].values[i])
        ax.plot(ds["theta"].values, y, color=COLORS[CYCLE[b % len(CYCLE)]],
                ls=(":" if not known else "-" if ds["stable"].values[i] else "--"), lw=1.0)
    ax.set_xlabel("colatitude (phi = 0)" if s2 else "angle")
    ax.set_ylabel(r"$\rho$")


def plot_bifurcation(ds: xr.Dataset, out: str | os.PathLike, style: str = "paper",
                     option: str = "--figure") -> Path:
    """Draw the two panels to ``out`` (PNG/PDF by suffix) through the figure saver
    (:func:`solvers.plots.save.save_figure`: no link followed, only our own figure replaced;
    ``option`` names the path in its errors)."""
    from solvers.plots.save import save_figure

    with style_context(style) as spec:
        fig = Figure(figsize=figsize(style, 0.42))
        FigureCanvasAgg(fig)
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.4, 1.0]})
        panel_diagram(left, ds)
        panel_densities(right, ds)
        cfg = ds.attrs
        fig.suptitle(f"{cfg.get('manifold', '')} {cfg.get('direction', '')}, kernel "
                     f"{cfg.get('kernel', '')}, beta = {cfg.get('beta', '')}: stationary states "
                     "with noise", fontsize="medium")
        fig.tight_layout()
        save_figure(out, lambda tmp: fig.savefig(tmp, dpi=spec["dpi"]), option=option)
    return Path(out)
