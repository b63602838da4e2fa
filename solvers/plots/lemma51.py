"""Figure of a Lemma 5.1 report (:func:`solvers.studies.lemma51.run_lemma51`; matplotlib Agg, no pyplot).

Panels (log scales):

(a) recovery error per degree (solid) against the predicted floor ``eps max|f| / lambda_l``
    (dashed), with the exact ``|m_l|`` (black); circles: measured l*, crosses: predicted l*;
(b) partial sums ``P_L`` of ``|m_l|^2`` (exact: black; recovered: colours) and ``int rho^2``;
(c) S^1 precision study: the error at 16, 32 and 64 digits (line styles), exact ``|m_k|`` in black;
(d) injectivity: computed ``|f_l - f'_l|`` (solid) against ``lambda_l |m_l - m'_l|`` (dashed)
    and the resolution ``eps max f`` (dotted);
(e) parity: ``|f_l|``, even degrees filled, odd degrees open;
(f) the l* table.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from solvers.plots.style import figsize, style_context

STYLES = {16: "-", 32: "--", 64: ":"}


def _colours(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(x) for x in np.linspace(0.0, 0.85, max(n, 1))]


def _positive(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    return np.where(np.isfinite(y) & (y > 0), y, np.nan)


def _panel_error(ax: Axes, ds: xr.Dataset, colours: list) -> None:
    deg = ds["degree"].values
    exact = _positive(ds["exact_norm"])
    keep = np.isfinite(exact)  # zero coefficients (symmetric, uniform) are skipped, not gaps
    ax.semilogy(deg[keep], exact[keep], "k.-", lw=2.2, ms=4, label="exact $|m_l|$ (nonzero)")
    top = 1e4 * float(np.nanmax(ds["exact_norm"]))
    for c, b in zip(colours, ds["beta"].values):
        r = ds.sel(beta=b)
        err = _positive(r["error"])
        ax.semilogy(deg, err, "-", color=c, lw=1.2, label=f"error, beta={b:g}")
        ax.semilogy(deg, _positive(r["floor"]), "--", color=c, lw=1.0)
        for key, marker in (("lstar_measured", "o"), ("lstar_predicted", "x")):
            l = int(r[key])
            if l >= 0:
                ax.plot([l], [float(ds["exact_norm"][l])], marker, color=c, ms=7, mfc="none")
    ax.set_ylim(top=top)
    ax.set(xlabel="degree l", ylabel="norm", title="(a) error (solid), floor (dashed)")
    ax.legend(fontsize="xx-small", loc="lower right")


def _panel_partial_sums(ax: Axes, ds: xr.Dataset, colours: list) -> None:
    deg = ds["degree"].values
    ax.semilogy(deg, _positive(ds["partial_sum_exact"]), "k-", lw=2.2, label="exact")
    for c, b in zip(colours, ds["beta"].values):
        ax.semilogy(deg, _positive(ds["partial_sum_recovered"].sel(beta=b)), "-", color=c, lw=1,
                    label=f"recovered, beta={b:g}")
    l2 = float(ds.attrs.get("density_l2", np.inf))
    if np.isfinite(l2):
        ax.axhline(l2, color="0.5", ls=":", label=f"int rho^2 = {l2:.6g}")
    ax.set_ylim(0.3 * float(np.nanmin(_positive(ds["partial_sum_exact"]))),
                1e3 * float(np.nanmax(ds["partial_sum_exact"])))
    ax.set(xlabel="L", ylabel="P_L", title="(b) partial sums of |m_l|^2")
    ax.legend(fontsize="xx-small")


def _panel_precision(ax: Axes, ds: xr.Dataset, colours: list) -> None:
    if "p_error" not in ds:
        ax.text(0.5, 0.5, "precision study: S^1 only\n(meanfield lemma51 --sphere S1)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    deg = ds["degree"].values
    for c, b in zip(colours, ds["beta"].values):
        exact = _positive(ds["p_exact_norm"].sel(beta=b))
        ax.semilogy(deg[np.isfinite(exact)], exact[np.isfinite(exact)], "k-", lw=0.8)
        for p in ds["precision"].values:
            r = ds.sel(beta=b, precision=p, refinement=1)
            ax.semilogy(deg, _positive(r["p_error"]), STYLES.get(int(p), "-."), color=c, lw=1.1,
                        label=f"beta={b:g}, {int(p)} digits")
            l = int(r["p_lstar_measured"])
            if l >= 0:
                ax.plot([l], [float(ds["p_exact_norm"].sel(beta=b)[l])], "o", color=c, mfc="none")
    ax.set_ylim(1e-80, 1e10)
    ax.set(xlabel="wavenumber k", ylabel="error", title="(c) error at 16/32/64 digits")
    ax.legend(fontsize="xx-small", ncol=2)


def _panel_injectivity(ax: Axes, ds: xr.Dataset, colours: list) -> None:
    deg = ds["degree"].values
    for c, b in zip(colours, ds["beta"].values):
        r = ds.sel(beta=b)
        ax.semilogy(deg, _positive(r["injectivity_df"]), "-", color=c, lw=1.2, label=f"beta={b:g}")
        ax.semilogy(deg, _positive(r["injectivity_df_exact"]), "--", color=c, lw=1)
        ax.axhline(float(ds.attrs["eps"]) * float(r["max_f"]), color=c, ls=":", lw=0.8)
    ax.set(xlabel="degree l", ylabel="|f_l - f'_l|", title=f"(d) injectivity, p = {ds.attrs['perturbation']:g}")
    ax.legend(fontsize="xx-small")


def _panel_parity(ax: Axes, ds: xr.Dataset, colours: list) -> None:
    deg = ds["degree"].values
    for c, b in zip(colours, ds["beta"].values):
        f = _positive(ds["f_norm"].sel(beta=b))
        even, odd = deg % 2 == 0, deg % 2 == 1
        ax.semilogy(deg[even], f[even], "o", color=c, ms=3,
                    label=f"beta={b:g}: odd/all = {float(ds['odd_fraction'].sel(beta=b)):.1e}")
        ax.semilogy(deg[odd], f[odd], "o", color=c, ms=4, mfc="none")
    ax.set(xlabel="degree l", ylabel="|f_l| (scaled kernel)", title="(e) parity: odd degrees open")
    ax.legend(fontsize="xx-small")


def _panel_table(ax: Axes, ds: xr.Dataset) -> None:
    ax.set_axis_off()
    rows = [f"{ds.attrs['sphere']}: {ds.attrs['measure_label']}", "",
            f"{'beta':>6} {'l* meas':>7} {'l* pred':>7} {'err/floor':>9}"]
    for b in ds["beta"].values:
        r = ds.sel(beta=b)
        rows.append(f"{b:6g} {int(r['lstar_measured']):7d} {int(r['lstar_predicted']):7d} "
                    f"{float(r['floor_ratio']):9.2f}")
    if "p_lstar_measured" in ds:
        rows += ["", "S^1 l* (measured/predicted), grid N:"]
        rows.append(f"{'beta':>6} " + " ".join(f"{int(p):>7}d" for p in ds["precision"].values))
        for b in ds["beta"].values:
            r = ds.sel(beta=b, refinement=1)
            rows.append(f"{b:6g} " + " ".join(
                f"{int(m):>4}/{int(q):<3}" for m, q in zip(r["p_lstar_measured"].values,
                                                          r["p_lstar_predicted"].values)))
    rows += ["", "l* meas: first l with error > |m_l|/2", "l* pred: first l with floor >= |m_l|",
             "(-1: no breakdown up to lmax)"]
    ax.text(0.0, 1.0, "\n".join(rows), va="top", family="monospace", fontsize="x-small",
            transform=ax.transAxes)
    ax.set_title("(f) breakdown degrees")


def plot_lemma51(ds: xr.Dataset, out_png: str | os.PathLike, dpi: int | None = None,
                 style: str = "paper") -> Path:
    """Write the six-panel figure of a Lemma 5.1 report (page width in the ``paper`` style);
    returns the path."""
    with style_context(style) as spec:
        return _plot(ds, Path(out_png), dpi or spec["dpi"], style)


def _plot(ds: xr.Dataset, out: Path, dpi: int, style: str) -> Path:
    fig = Figure(figsize=figsize(style, 0.62), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 3)
    colours = _colours(ds.sizes["beta"])
    _panel_error(axes[0, 0], ds, colours)
    _panel_partial_sums(axes[0, 1], ds, colours)
    _panel_precision(axes[0, 2], ds, colours)
    _panel_injectivity(axes[1, 0], ds, colours)
    _panel_parity(axes[1, 1], ds, colours)
    _panel_table(axes[1, 2], ds)
    fig.suptitle(f"Lemma 5.1: spectral inversion of f = K*mu on {ds.attrs['sphere']} "
                 f"({ds.attrs['measure_label']})")
    from solvers.plots.save import save_figure

    return save_figure(out, lambda tmp: fig.savefig(tmp, dpi=dpi))
