"""Figure of a Lemma 5.1 report (:func:`solvers.studies.lemma51.run_lemma51`; matplotlib Agg, no pyplot).

Panels (log scales; one colour per beta, the exact values in black; one legend below):

(a) recovery error per degree (solid) against the predicted floor ``eps max|f| / lambda_l``
    (dashed), with the exact ``|m_l|``; circles: measured l*, crosses: predicted l*;
(b) partial sums ``P_L`` of ``|m_l|^2`` (exact and recovered) and ``int rho^2`` (dotted);
(c) S^1 only: the error at 16, 32 and 64 digits (line styles), exact ``|m_k|`` in black;
(d) injectivity: computed ``|f_l - f'_l|`` (solid) against ``lambda_l |m_l - m'_l|`` (dashed)
    and the resolution ``eps max f`` (dotted);
(e) parity: ``|f_l|``, even degrees filled, odd degrees open;
(f) the l* table and the odd share of ``f``.

An S^2 report (no precision study) has five panels, the table spanning two columns. The y
ranges stop a few decades below the round-off floors: what lies below (an exact ``|m_l|``
decaying to 1e-100) says nothing about the inversion.
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

from solvers.plots.style import NOTE_SIZE, SEQUENCE_CMAP, figsize, log_ticks, style_context

STYLES = {16: "-", 32: "--", 64: ":"}
BELOW_FLOOR = 1e-3  # y ranges stop this factor below the smallest round-off floor
ABOVE_EXACT = 1e3  # ... and this factor above the largest exact value


def _colours(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps[SEQUENCE_CMAP]
    return [cmap(x) for x in np.linspace(0.0, 0.85, max(n, 1))]


def _positive(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    return np.where(np.isfinite(y) & (y > 0), y, np.nan)


def _limits(ax: Axes, low: float, high: float) -> None:
    """Clip the y range to ``[low, high]`` (positive, finite) and thin the log ticks."""
    if np.isfinite(low) and np.isfinite(high) and 0 < low < high:
        ax.set_ylim(low, high)
    log_ticks(ax, "y")


def _panel_error(ax: Axes, ds: xr.Dataset, colours: list, letter: str) -> None:
    deg = ds["degree"].values
    exact = _positive(ds["exact_norm"])
    keep = np.isfinite(exact)  # zero coefficients (symmetric, uniform) are skipped, not gaps
    ax.semilogy(deg[keep], exact[keep], "k.-", lw=1.6, ms=3)
    for c, b in zip(colours, ds["beta"].values):
        r = ds.sel(beta=b)
        ax.semilogy(deg, _positive(r["error"]), "-", color=c)
        ax.semilogy(deg, _positive(r["floor"]), "--", color=c)
        for key, marker in (("lstar_measured", "o"), ("lstar_predicted", "x")):
            l = int(r[key])
            if l >= 0:
                ax.plot([l], [float(ds["exact_norm"][l])], marker, color=c, ms=6, mfc="none")
    _limits(ax, BELOW_FLOOR * float(np.nanmin(_positive(ds["floor"]))),
            ABOVE_EXACT * float(np.nanmax(exact)))
    ax.set(xlabel="degree $l$", ylabel="norm", title=f"({letter}) error, floor (dashed)")


def _panel_partial_sums(ax: Axes, ds: xr.Dataset, colours: list, letter: str) -> None:
    deg = ds["degree"].values
    exact = _positive(ds["partial_sum_exact"])
    ax.semilogy(deg, exact, "k-", lw=1.6)
    for c, b in zip(colours, ds["beta"].values):
        ax.semilogy(deg, _positive(ds["partial_sum_recovered"].sel(beta=b)), "-", color=c)
    l2 = float(ds.attrs.get("density_l2", np.inf))
    if np.isfinite(l2):
        ax.axhline(l2, color="0.4", ls=":")
    _limits(ax, 0.3 * float(np.nanmin(exact)), 1e2 * float(np.nanmax(exact)))
    ax.set(xlabel="$L$", ylabel="$P_L$",
           title=rf"({letter}) partial sums of $|m_l|^2$" + (r", $\int\rho^2$ dotted"
                                                             if np.isfinite(l2) else ""))


def _panel_precision(ax: Axes, ds: xr.Dataset, colours: list, letter: str) -> None:
    deg = ds["degree"].values
    floors = []
    for c, b in zip(colours, ds["beta"].values):
        exact = _positive(ds["p_exact_norm"].sel(beta=b))
        ax.semilogy(deg[np.isfinite(exact)], exact[np.isfinite(exact)], "k-", lw=0.8)
        for p in ds["precision"].values:
            r = ds.sel(beta=b, precision=p, refinement=1)
            err = _positive(r["p_error"])
            floors.append(np.nanmin(err, initial=np.inf))
            ax.semilogy(deg, err, STYLES.get(int(p), "-."), color=c)
            l = int(r["p_lstar_measured"])
            if l >= 0:
                ax.plot([l], [float(ds["p_exact_norm"].sel(beta=b)[l])], "o", color=c, mfc="none")
    top = float(np.nanmax(_positive(ds["p_exact_norm"])))
    _limits(ax, BELOW_FLOOR * min(floors, default=np.nan), ABOVE_EXACT * top)
    digits = ", ".join(str(int(p)) for p in ds["precision"].values)
    ax.set(xlabel="wavenumber $k$", ylabel="error",
           title=f"({letter}) error at {digits} digits")
    keys = [Line2D([], [], color="k", ls=STYLES.get(int(p), "-."), label=f"{int(p)} digits")
            for p in ds["precision"].values]
    ax.legend(handles=keys, loc="best")


def _panel_injectivity(ax: Axes, ds: xr.Dataset, colours: list, letter: str) -> None:
    deg = ds["degree"].values
    floors = []
    for c, b in zip(colours, ds["beta"].values):
        r = ds.sel(beta=b)
        ax.semilogy(deg, _positive(r["injectivity_df"]), "-", color=c)
        ax.semilogy(deg, _positive(r["injectivity_df_exact"]), "--", color=c)
        floors.append(float(ds.attrs["eps"]) * float(r["max_f"]))
        ax.axhline(floors[-1], color=c, ls=":", lw=0.8)
    top = float(np.nanmax(_positive(ds["injectivity_df"])))
    _limits(ax, BELOW_FLOOR * min(floors), 10.0 * top)
    ax.set(xlabel="degree $l$", ylabel=r"$|f_l - f'_l|$",
           title=f"({letter}) injectivity, p = {ds.attrs['perturbation']:g}")


def _panel_parity(ax: Axes, ds: xr.Dataset, colours: list, letter: str) -> None:
    deg = ds["degree"].values
    for c, b in zip(colours, ds["beta"].values):
        f = _positive(ds["f_norm"].sel(beta=b))
        even, odd = deg % 2 == 0, deg % 2 == 1
        ax.semilogy(deg[even], f[even], "o", color=c, ms=3)
        ax.semilogy(deg[odd], f[odd], "o", color=c, ms=4, mfc="none")
    log_ticks(ax, "y")
    ax.set(xlabel="degree $l$", ylabel=r"$|f_l|$ (scaled kernel)",
           title=f"({letter}) parity: odd degrees open")


def _panel_table(ax: Axes, ds: xr.Dataset, letter: str) -> None:
    """The l* table (at most 34 characters a line: it fits a third of a page)."""
    ax.set_axis_off()
    rows = [f"{ds.attrs['sphere']}: {ds.attrs['measure_label']}", "",
            f"{'beta':>4} {'l*meas':>6} {'l*pred':>6} {'err/flr':>7} {'odd/all':>7}"]
    for b in ds["beta"].values:
        r = ds.sel(beta=b)
        rows.append(f"{b:4g} {int(r['lstar_measured']):6d} {int(r['lstar_predicted']):6d} "
                    f"{float(r['floor_ratio']):7.2f} {float(r['odd_fraction']):7.1e}")
    if "p_lstar_measured" in ds:
        rows += ["", "S^1 l* meas/pred by digits:"]
        rows.append(f"{'beta':>4} " + " ".join(f"{int(p):>7}d" for p in ds["precision"].values))
        for b in ds["beta"].values:
            r = ds.sel(beta=b, refinement=1)
            rows.append(f"{b:4g} " + " ".join(
                f"{int(m):>4}/{int(q):<3}" for m, q in zip(r["p_lstar_measured"].values,
                                                          r["p_lstar_predicted"].values)))
    rows += ["", "l*meas: first l, error > |m_l|/2", "l*pred: first l, floor >= |m_l|",
             "-1: no breakdown up to lmax", "odd/all: ||f_odd|| / ||f||"]
    ax.text(0.0, 1.0, "\n".join(rows), va="top", family="monospace", fontsize=NOTE_SIZE,
            transform=ax.transAxes)
    ax.set_title(f"({letter}) breakdown degrees")


def _legend(fig: Figure, ds: xr.Dataset, colours: list) -> None:
    """One legend for all panels: the betas' colours, black for exact, the markers."""
    handles = [Line2D([], [], color="k", lw=1.6, marker=".", ms=3, label="exact")]
    handles += [Line2D([], [], color=c, label=f"beta = {b:g}")
                for c, b in zip(colours, ds["beta"].values)]
    handles += [Line2D([], [], color="0.3", marker="o", mfc="none", ls="", label="measured l*"),
                Line2D([], [], color="0.3", marker="x", ls="", label="predicted l*")]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles))


def plot_lemma51(ds: xr.Dataset, out_png: str | os.PathLike, dpi: int | None = None,
                 style: str = "paper") -> Path:
    """Write the six-panel figure of a Lemma 5.1 report (page width in the ``paper`` style;
    .png, or vector .pdf/.svg); returns the path."""
    from solvers.plots.save import save_figure

    with style_context(style) as spec:
        fig = lemma51_figure(ds, style)
        return save_figure(Path(out_png), lambda tmp: fig.savefig(tmp, dpi=dpi or spec["dpi"]))


def lemma51_figure(ds: xr.Dataset, style: str = "paper") -> Figure:
    """The six-panel figure of a Lemma 5.1 report (build it inside
    :func:`solvers.plots.style.style_context`)."""
    fig = Figure(figsize=figsize(style, 0.66), layout="constrained")
    FigureCanvasAgg(fig)
    colours = _colours(ds.sizes["beta"])
    panels = [_panel_error, _panel_partial_sums]
    if "p_error" in ds:  # the precision study (S^1)
        panels.append(_panel_precision)
        mosaic = [["0", "1", "2"], ["3", "4", "5"]]
    else:  # no empty panel: the table takes two columns
        mosaic = [["0", "1", "2"], ["3", "4", "4"]]
    panels += [_panel_injectivity, _panel_parity]
    axes = fig.subplot_mosaic(mosaic)
    for i, draw in enumerate(panels):
        draw(axes[str(i)], ds, colours, "abcdef"[i])
    _panel_table(axes[str(len(panels))], ds, "abcdef"[len(panels)])
    _legend(fig, ds, colours)
    fig.suptitle(f"Lemma 5.1: spectral inversion of f = K*mu on {ds.attrs['sphere']} "
                 f"({ds.attrs['measure_label']})")
    return fig
