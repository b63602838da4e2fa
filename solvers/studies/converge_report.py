"""Reports of refinement ladders (``meanfield converge``): the printed table, the NetCDF and the
log-log figure of :class:`solvers.studies.converge.Ladder` tables.

Flags after an order: ``E`` erratic, ``P`` pre-asymptotic, ``L`` below an upper bound; after
an atom mass change: ``D`` detector (see :mod:`solvers.studies.converge` and :mod:`solvers.studies.orders`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from solvers.studies.orders import ORDER_TOL

if TYPE_CHECKING:
    from solvers.studies.converge import Ladder

SCALAR_KEYS = ("distance_finest_error", "energy_limit", "energy_finest_error")
REF_ATOM_KEYS = ("atom_mass_limit", "atom_mass_finest_error")
LEGEND = ("succ: orders of successive differences. Flags: E erratic (order differs from the "
          f"previous by > {ORDER_TOL:g}), P pre-asymptotic (not within {ORDER_TOL:g} of the design "
          "order), L low (more than "
          f"{ORDER_TOL:g} below an upper bound 'algebraic <= p': allowed, but the scheme's order "
          "is not observed), D detector (atom mass change x radius > W1 of the pair: the detector's "
          "threshold, not discretisation error)")


def _cell(value: float, width: int, spec: str) -> str:
    return f"{value:{width}{spec}}" if np.isfinite(value) else f"{'-':>{width}}"


def _estimates(ladder: Ladder, data: dict[str, np.ndarray]) -> str:
    """The Richardson line: estimates, or why there are none."""
    parts = []
    if np.isfinite(data["distance_finest_error"]):
        parts.append(f"{ladder.metric()} error of the finest run ~ {data['distance_finest_error']:.2e}")
    if np.isfinite(data["energy_limit"]):
        parts.append(f"energy limit {data['energy_limit']:.12g} (finest run off by "
                     f"{data['energy_finest_error']:.2e})")
    ok = np.isfinite(data["atom_mass_limit"])
    if ok.any():
        parts.append("atom mass limits " + " ".join(
            f"{m:.5f}+-{e:.1e}" for m, e in zip(data["atom_mass_limit"][ok],
                                                  data["atom_mass_finest_error"][ok])))
    if not parts:
        return ("Richardson: none (the finest three levels are not in the asymptotic range)")
    return "Richardson (finest three levels): " + "; ".join(parts)


def method_line(config: Any) -> str:
    """Which method the ladder ran, and whether it was chosen by default (``time.scheme`` not
    set: the default method, which changes discretisation during a run)."""
    from solvers.model.method import plan_method

    plan = plan_method(config)
    if plan.automatic:
        return (f"method: {plan.scheme}, the default method (time.scheme is not set; {plan.reason}): "
                "it changes discretisation during a run; for the orders of one discretisation "
                "name it: --set time.scheme=\"fv\" (or \"spectral\")")
    return f"method: {plan.scheme} (time.scheme = \"{config.time.scheme}\")"


def format_table(ladder: Ladder, data: dict[str, np.ndarray]) -> str:
    """The ladder's table as text (one line per run; the last is the reference), the
    Richardson estimates and the legend of the flags."""
    ref = ladder.runs[-1].config
    head = (f"{ladder.name} ladder ({ref.domain.manifold} {ref.time.scheme}, T = {ref.time.t_end:g}"
            f", factor {ladder.ratio:g}): {ladder.metric()} and energy error against "
            f"{ladder.dim} = {ladder.values[-1]:g}; design order {ladder.design.label()}")
    cols = (f"{ladder.dim:>10} {ladder.metric():>11} {'order':>6} {'succ':>6} {'':2} "
            f"{'energy err':>11} {'succ':>6} {'':2} {'atoms':>5} {'atom dm next':>12} {'':1} "
            f"{'succ':>6} {'':2} {'steps':>7} {'wall s':>7}")
    rows = [head, method_line(ref), cols]
    for k, value in enumerate(ladder.values):
        rows.append(
            f"{value:>10g} {_cell(data['distance'][k], 11, '.3e')} "
            f"{_cell(data['order'][k], 6, '.2f')} "
            f"{_cell(data['successive_order'][k], 6, '.2f')} {data['successive_order_flag'][k]:2} "
            f"{_cell(data['energy_error'][k], 11, '.3e')} "
            f"{_cell(data['energy_change_order'][k], 6, '.2f')} "
            f"{data['energy_change_order_flag'][k]:2} {data['n_atoms'][k]:>5d} "
            f"{_cell(data['atom_mass_change'][k], 12, '.3e')} "
            f"{data['atom_mass_change_detector'][k]:1} "
            f"{_cell(data['atom_mass_change_order'][k], 6, '.2f')} "
            f"{data['atom_mass_change_order_flag'][k]:2} "
            f"{data['steps'][k]:>7d} {data['wall_time'][k]:>7.2f}")
    return "\n".join(rows + [_estimates(ladder, data), LEGEND])


def to_dataset(ladders: Sequence[Ladder], tables: Sequence[dict[str, np.ndarray]]) -> Any:
    """xarray Dataset: variables ``<space|time>_<quantity>`` on dims ``resolution`` / ``dt``
    (``successive[k] = d(run k, run k + 1)``, ``atom_mass_change[k]`` likewise; atom masses
    matched to the reference atoms; ``*_flag``: E/P/D; Richardson estimates 0-d or per
    reference atom, NaN outside the asymptotic range)."""
    import xarray as xr

    ds = xr.Dataset()
    for lad, data in zip(ladders, tables):
        ds = ds.assign_coords({lad.dim: lad.values.astype(int if lad.dim == "resolution" else float)})
        atom = f"{lad.name}_atom"
        for key, value in data.items():
            dims = ((lad.dim, atom) if key == "atom_mass" else (atom,) if key in REF_ATOM_KEYS
                    else () if key in SCALAR_KEYS else (lad.dim,))
            ds[f"{lad.name}_{key}"] = (dims, value)
        pos = lad.runs[-1].diagnostics.atom_position
        ds[f"{lad.name}_reference_atom_position"] = ((atom, "xyz")[:pos.ndim], pos)
        ds.attrs[f"{lad.name}_metric"] = lad.metric()
        ds.attrs[f"{lad.name}_ratio"] = lad.ratio
        ds.attrs[f"{lad.name}_design_order"] = lad.design.attr()
        ds.attrs[f"{lad.name}_config_text"] = lad.runs[-1].config.text
        ds.attrs[f"{lad.name}_scheme"] = lad.runs[-1].config.time.scheme
        ds.attrs[f"{lad.name}_t_end"] = float(lad.runs[-1].config.time.t_end)
        ds.attrs[f"{lad.name}_slopes"] = np.asarray(lad.slopes, dtype=int)  # of the figure
        ds.attrs[f"{lad.name}_offset"] = int(lad.offset)  # S^2 space: the factor of lmax + 1
    ds.attrs["description"] = ("errors against the finest run of each ladder "
                               "(solvers/studies/converge.py); " + LEGEND)
    from solvers.io.cf import describe

    return describe(ds, "meanfield-spectral convergence ladders")


def plot_ladders(ladders: Sequence[Ladder], tables: Sequence[dict[str, np.ndarray]],
                 style: str = "paper") -> Any:
    """Log-log error plots (one panel per ladder, a column wide in the ``paper`` style) with
    reference slopes: :func:`solvers.plots.converge.converge_figure` of :func:`to_dataset`
    (build it inside ``style_context(style)``)."""
    from solvers.plots.converge import converge_figure

    return converge_figure(to_dataset(ladders, tables), style)
