"""Paper-style summary figures of parameter sweeps (``DIR/summary.nc`` of ``meanfield sweep``).

- :func:`figure_atom_counts`: atom count at convergence against beta, several setups
  overlaid and labelled (paper Fig. 4.7: ascent with and without ReLU, descent ReLU, GeLU).
- :func:`figure_atom_masses`: every atom mass against sqrt(beta), with the Theorem 3.5
  constant ``16/(16 + 3 e^{11/8}) = 0.5742`` as a horizontal line (paper Fig. 2).
- :func:`figure_dimension_masses`: the largest atom mass against the dimension ``d`` of an Sd
  sweep (``domain.dim``, one curve per beta), with the Theorem 3.5 constant (paper Fig. 4.10);
  :func:`figure_atom_counts` draws the atom (cluster) count against ``d`` (Fig. 4.9).
- :func:`figure_sensitivity`: final atoms of perturbed initial densities (a sweep over
  ``initial.seed``), overlaid per setup (paper Fig. 4.8): S^1 one stem per atom at its
  position with its mass as height, S^2 atoms on a longitude/colatitude map sized by mass.

Runs that stopped without becoming stationary (at ``t_end``) are drawn with open markers in
the first two; points whose resolution check (``meanfield sweep --auto-resolution``) never
passed get a red cross and a legend entry. Each takes ``{label: summary dataset}``; a summary swept over further parameters gives one
curve (or panel) per value of those, labelled ``label, key=value``. The functions build
:class:`matplotlib.figure.Figure` objects without pyplot state.

    meanfield sweep-figures DIR [DIR ...] [--label LABEL ...] [-o OUTDIR]

writes ``sweep_atom_counts.png`` and ``sweep_atom_masses.png`` when a summary has a ``beta``
dimension, ``sweep_dim_counts.png`` and ``sweep_dim_masses.png`` when one has a ``dim``
dimension (a sweep over ``domain.dim``), and ``sweep_sensitivity.png`` when one has a ``seed``
dimension.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from solvers.io.summary import THEOREM_3_5, open_summary
from solvers.plots.save import save_figure
from solvers.plots.style import (
    COLORS,
    COLUMN_WIDTH,
    PAGE_WIDTH,
    STYLES,
    figsize,
    integer_ticks,
    style_context,
)

RUN_DIMS = ("atom", "xyz")
UNRESOLVED_COLOR = COLORS["vermillion"]
UNRESOLVED_LABEL = "x: resolution check not passed (N and 2N disagree)"
FIGURES = {"beta": ("sweep_atom_counts.png", "sweep_atom_masses.png"),
           "dim": ("sweep_dim_counts.png", "sweep_dim_masses.png"),
           "seed": ("sweep_sensitivity.png",)}
AXIS_LABELS = {"beta": r"$\beta$", "dim": r"dimension $d$ (measures on $S^{d-1}$)"}


def load_summaries(sources: Sequence[str | Path | Any],
                   labels: Sequence[str] | None = None) -> dict[str, Any]:
    """``{label: dataset}`` from sweep folders, ``summary.nc`` paths or datasets.

    Labels default to the folder names (``setup i`` for datasets).
    """
    if labels is not None and len(labels) != len(sources):
        raise ValueError(f"{len(labels)} labels for {len(sources)} sweeps: give one per sweep")
    out: dict[str, Any] = {}
    for i, src in enumerate(sources):
        is_path = isinstance(src, (str, Path))
        path = Path(src) if is_path else None
        default = (path if path.is_dir() else path.parent).name if path else f"setup {i + 1}"
        label = labels[i] if labels is not None else default
        if label in out:
            label = f"{label} ({i + 1})"
        out[label] = open_summary(src) if is_path else src
    return out


def slices(ds: Any, dim: str) -> Iterator[tuple[str, Any]]:
    """``(suffix, sub-dataset)`` for each combination of the dimensions other than ``dim``."""
    if dim not in ds.dims:
        raise ValueError(f"summary has no {dim!r} dimension (dimensions: {list(ds.dims)})")
    others = [d for d in ds["n_atoms"].dims if d != dim]
    for values in itertools.product(*(ds[d].values for d in others)):
        sel = dict(zip(others, values))
        yield ", ".join(f"{k}={_text(v)}" for k, v in sel.items()), ds.sel(sel)


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def _curves(summaries: Mapping[str, Any], dim: str) -> Iterator[tuple[str, Any]]:
    for label, ds in summaries.items():
        for suffix, sub in slices(ds, dim):
            yield (f"{label}, {suffix}" if suffix else label), sub


def _width(style: str) -> float:
    """One column in the ``paper`` style, half the screen width in ``screen``."""
    return COLUMN_WIDTH if style == "paper" else 0.5 * STYLES[style]["width"]


def _when(summaries: Mapping[str, Any]) -> str:
    """``at convergence`` when every run stopped stationary, else ``at the end of the runs``
    (the summaries' ``reason``: a run stopped at t_end has not converged)."""
    reasons = {str(r) for ds in summaries.values() if "reason" in ds
               for r in np.asarray(ds["reason"].values).ravel()}
    return "at convergence" if reasons <= {"stationary"} else "at the end of the runs"


def _legend(fig: Figure, ax: Any) -> None:
    """The legend below the axes (the layout makes room): never over the data or a label."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=1)


def figure_atom_counts(summaries: Mapping[str, Any], dim: str = "beta", style: str = "paper") -> Figure:
    """Atom count at the end of each run against ``dim`` (log axis), one curve per setup."""
    fig = Figure(figsize=figsize(style, 0.9, _width(style)), layout="constrained")
    ax = fig.add_subplot()
    markers = itertools.cycle("osD^v<>p*")
    hollow = unchecked = False
    for label, sub in _curves(summaries, dim):
        line, = ax.plot(sub[dim].values, sub["n_atoms"].values, marker=next(markers), label=label)
        hollow |= _mark_unsettled(ax, sub, dim, sub["n_atoms"].values, line)
        unchecked |= _mark_unresolved(ax, sub, dim, sub["n_atoms"].values)
    _note_unsettled(ax, hollow)
    _note_unresolved(ax, unchecked)
    _swept_axis(ax, summaries, dim)
    ax.set_ylabel("number of atoms")
    integer_ticks(ax)
    ax.grid(alpha=0.3)
    _legend(fig, ax)
    ax.set_title(f"Atoms {_when(summaries)}")
    return fig


def _swept_axis(ax: Any, summaries: Mapping[str, Any], dim: str) -> None:
    """A log x axis over the swept values of ``dim``, labelled by them when at most 12."""
    ax.set_xscale("log")
    values = sorted({float(v) for _, sub in _curves(summaries, dim) for v in sub[dim].values})
    if len(values) <= 12:  # label the swept values themselves (no crowded 3x10^1 4x10^1)
        from matplotlib.ticker import NullLocator

        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(AXIS_LABELS.get(dim, dim))


def _theorem_line(ax: Any, summaries: Mapping[str, Any]) -> None:
    """Theorem 3.5's constant 0.5742 as a dashed line; its label says when it is not a bound
    (a shifted-kernel sweep: docs/math.md §5)."""
    kernels = {_kernel(ds) for ds in summaries.values()}
    ax.axhline(THEOREM_3_5, color="k", ls="--", lw=1, gid="theorem-3-5",
               label=("Thm 3.5 term 0.5742" + (
                   " (not a bound: shifted kernel)" if "exp_shifted" in kernels else "")))


def figure_atom_masses(summaries: Mapping[str, Any], dim: str = "beta", style: str = "paper") -> Figure:
    """Every atom mass against ``sqrt(dim)``; the largest joined by a line; Theorem 3.5."""
    fig = Figure(figsize=figsize(style, 0.9, _width(style)), layout="constrained")
    ax = fig.add_subplot()
    colors, hollow = itertools.cycle([f"C{i}" for i in range(8)]), False
    unchecked = False
    for label, sub in _curves(summaries, dim):
        color, x = next(colors), np.sqrt(np.asarray(sub[dim].values, dtype=float))
        masses = sub["atom_mass"].transpose(dim, "atom").values
        xs = np.repeat(x[:, None], masses.shape[1], axis=1)
        ax.scatter(xs.ravel(), masses.ravel(), s=14, color=color, alpha=0.7, label=label)
        line, = ax.plot(x, sub["max_atom_mass"].values, color=color, lw=1, alpha=0.8)
        hollow |= _mark_unsettled(ax, sub, dim, sub["max_atom_mass"].values, line, x)
        unchecked |= _mark_unresolved(ax, sub, dim, sub["max_atom_mass"].values, x)
    _note_unsettled(ax, hollow)
    _note_unresolved(ax, unchecked)
    _theorem_line(ax, summaries)
    ax.set_xlabel(rf"$\sqrt{{\{dim}}}$" if dim == "beta" else f"sqrt({dim})")
    ax.set_ylabel("atom mass")
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    _legend(fig, ax)
    ax.set_title(f"Atom masses {_when(summaries)}")
    return fig


def figure_dimension_masses(summaries: Mapping[str, Any], dim: str = "dim",
                            style: str = "paper") -> Figure:
    """The largest atom mass at the end of each run against ``dim`` (log axis), one curve per
    setup and value of the other swept keys (``gid`` ``max-mass-<i>``), with the Theorem 3.5
    constant (``gid`` ``theorem-3-5``)."""
    fig = Figure(figsize=figsize(style, 0.9, _width(style)), layout="constrained")
    ax = fig.add_subplot()
    markers, hollow, unchecked = itertools.cycle("osD^v<>p*"), False, False
    for i, (label, sub) in enumerate(_curves(summaries, dim)):
        y = sub["max_atom_mass"].values
        line, = ax.plot(sub[dim].values, y, marker=next(markers), label=label, gid=f"max-mass-{i}")
        hollow |= _mark_unsettled(ax, sub, dim, y, line)
        unchecked |= _mark_unresolved(ax, sub, dim, y)
    _note_unsettled(ax, hollow)
    _note_unresolved(ax, unchecked)
    _theorem_line(ax, summaries)
    _swept_axis(ax, summaries, dim)
    ax.set_ylabel("largest atom mass")
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    _legend(fig, ax)
    ax.set_title(f"Largest atom mass {_when(summaries)}")
    return fig


def _kernel(ds: Any) -> str:
    """The kernel of a sweep, from its base config (``exp`` when unset)."""
    import re

    found = re.search(r'^\s*kernel\s*=\s*"([a-z_]+)"', str(ds.attrs.get("base_config_text", "")), re.M)
    return found.group(1) if found else "exp"


def _mark_unsettled(ax: Any, sub: Any, dim: str, y: np.ndarray, line: Any,
                    x: np.ndarray | None = None) -> bool:
    """Open markers where a run stopped without becoming stationary; True if any."""
    x = np.asarray(sub[dim].values if x is None else x, dtype=float)
    mask = (sub["reason"].values != "stationary") & np.isfinite(y)
    ax.scatter(x[mask], y[mask], s=60, facecolors="white", edgecolors=line.get_color(),
               marker=line.get_marker() if line.get_marker() != "None" else "o", zorder=3)
    return bool(mask.any())


def _mark_unresolved(ax: Any, sub: Any, dim: str, y: np.ndarray,
                     x: np.ndarray | None = None) -> bool:
    """A red cross where the resolution check never passed; True if any."""
    if "resolution_check" not in sub:
        return False
    x = np.asarray(sub[dim].values if x is None else x, dtype=float)
    mask = (np.asarray(sub["resolution_check"].values, dtype=str) == "failed") & np.isfinite(y)
    if mask.any():
        ax.scatter(x[mask], y[mask], s=90, marker="x", color=UNRESOLVED_COLOR, linewidths=1.5,
                   zorder=4)
    return bool(mask.any())


def _note_unresolved(ax: Any, unchecked: bool) -> None:
    if unchecked:
        ax.scatter([], [], s=90, marker="x", color=UNRESOLVED_COLOR, linewidths=1.5,
                   label=UNRESOLVED_LABEL)


def _note_unsettled(ax: Any, hollow: bool) -> None:
    if hollow:
        ax.scatter([], [], s=60, facecolors="white", edgecolors="0.3",
                   label="open: not stationary when stopped (t_end)")


def figure_sensitivity(summaries: Mapping[str, Any], dim: str = "seed", style: str = "paper") -> Figure:
    """Final atoms of each perturbed start overlaid, one panel per setup (colour = seed)."""
    curves = list(_curves(summaries, dim))
    width = min(PAGE_WIDTH, COLUMN_WIDTH * len(curves)) if style == "paper" else \
        min(STYLES[style]["width"], 4.2 * len(curves))
    fig = Figure(figsize=(width, 0.9 * width / len(curves)), layout="constrained")
    axes = fig.subplots(1, len(curves), squeeze=False)[0]
    for ax, (label, sub) in zip(axes, curves):
        for i, seed in enumerate(sub[dim].values):
            run = sub.sel({dim: seed})
            mass = run["atom_mass"].values
            keep = np.isfinite(mass)
            pos = run["atom_position"].values[keep]
            _draw_atoms(ax, mass[keep], pos, f"C{i % 8}", f"{dim} {_text(seed)}")
        ax.set_title(label)
    s2 = any("xyz" in ds.dims for ds in summaries.values())
    for ax in axes:
        ax.set_xlabel("longitude (deg)" if s2 else "atom position (deg)")
        ax.set_ylabel("colatitude (deg)" if s2 else "atom mass")
        ax.set_xlim(0.0, 360.0)
        ax.set_ylim((180.0, 0.0) if s2 else (0.0, 1.02))
        ax.grid(alpha=0.3)
    handles, labels = axes[-1].get_legend_handles_labels()
    if handles:  # below the panels: clear of the title and the data
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(handles), 5))
    fig.suptitle("Sensitivity to the initial state: final atoms of perturbed starts")
    return fig


def _draw_atoms(ax: Any, mass: np.ndarray, pos: np.ndarray, color: str, label: str) -> None:
    """S^1 (positions (n,)): stems at the angle, height = mass; S^2 ((n, 3)): map dots."""
    if pos.ndim == 1:
        deg = np.degrees(pos) % 360.0
        ax.vlines(deg, 0.0, mass, color=color, alpha=0.6, lw=1.5)
        ax.scatter(deg, mass, color=color, s=16, label=label, zorder=3)
        return
    unit = pos / np.linalg.norm(pos, axis=1, keepdims=True)
    lon = np.degrees(np.arctan2(unit[:, 1], unit[:, 0])) % 360.0
    colat = np.degrees(np.arccos(np.clip(unit[:, 2], -1.0, 1.0)))
    ax.scatter(lon, colat, s=400.0 * mass, color=color, alpha=0.5, label=label)


MAKERS = {"beta": (figure_atom_counts, figure_atom_masses),
          "dim": (figure_atom_counts, figure_dimension_masses), "seed": (figure_sensitivity,)}


def write_figures(sources: Sequence[str | Path], labels: Sequence[str] | None = None,
                  outdir: str | Path | None = None, style: str = "paper") -> list[Path]:
    """Write every figure the summaries allow (module doc) into ``outdir``; return the paths.

    ``outdir`` defaults to the first sweep folder; ``style`` is ``paper`` (column width, 8 pt
    text, 300 dpi) or ``screen`` (:mod:`solvers.plots.style`).
    """
    with style_context(style) as spec:
        return _write_figures(sources, labels, outdir, style, spec["dpi"])


def _write_figures(sources: Sequence[str | Path], labels: Sequence[str] | None,
                   outdir: str | Path | None, style: str, dpi: int) -> list[Path]:
    summaries = load_summaries(sources, labels)
    first = Path(sources[0])
    out = Path(outdir) if outdir else (first if first.is_dir() else first.parent)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for dim, names in FIGURES.items():
        chosen = {k: ds for k, ds in summaries.items() if dim in ds.dims}
        if not chosen:
            continue
        for name, make in zip(names, MAKERS[dim]):
            fig = make(chosen, dim, style)
            save_figure(out / name, lambda tmp, fig=fig: fig.savefig(tmp, dpi=dpi))
            written.append(out / name)
    if not written:
        *first, last = map(repr, FIGURES)
        raise ValueError(f"no summary has a {', '.join(first)} or {last} dimension: nothing to draw")
    return written
