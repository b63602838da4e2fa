"""The life of every atom identity in a run archive: births, ends, and the mass that changed
hands (the per-atom budget ``atom_mass_gained`` / ``atom_mass_lost``; docs/math.md §5).

:func:`transfers` lists the records where an atom gained or lost at least ``threshold`` of
mass in whole cells (merges, captures, basin splits); :func:`history_lines` is the text that
``meanfield info`` prints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TRANSFER_THRESHOLD = 0.005


def transfers(ds: Any, threshold: float = TRANSFER_THRESHOLD) -> list[dict[str, Any]]:
    """Budget entries of at least ``threshold``, in time order.

    Parameters
    ----------
    ds : xarray.Dataset
        A run archive (:func:`solvers.io.reading.open_run`).
    threshold : float

    Returns
    -------
    list of dict with ``time``, ``atom`` (identity), ``kind`` (``"birth"``: the gain at an
    atom's first record; ``"merge"``: the whole mass at its end; ``"gain"`` / ``"loss"``: cells
    joining or leaving a living atom, e.g. a basin split), ``mass``. Empty for archives without
    the budget.
    """
    if "atom_mass_gained" not in ds or ds.sizes.get("atom", 0) == 0:
        return []
    t = ds["time"].values
    gained, lost = ds["atom_mass_gained"].values, ds["atom_mass_lost"].values
    birth = ds["atom_birth_time"].values if "atom_birth_time" in ds else np.full(gained.shape[1], np.nan)
    end = ds["atom_end_time"].values if "atom_end_time" in ds else np.full(gained.shape[1], np.nan)
    out = []
    for i, j in zip(*np.nonzero(np.nan_to_num(gained) >= threshold)):
        out.append({"time": float(t[i]), "atom": int(j), "kind": "birth" if t[i] == birth[j]
                    else "gain", "mass": float(gained[i, j])})
    for i, j in zip(*np.nonzero(np.nan_to_num(lost) >= threshold)):
        out.append({"time": float(t[i]), "atom": int(j), "kind": "merge" if t[i] == end[j]
                    else "loss", "mass": -float(lost[i, j])})
    return sorted(out, key=lambda e: (e["time"], e["atom"]))


def history_lines(ds: Any, threshold: float = TRANSFER_THRESHOLD) -> list[str]:
    """Identities (birth, end, parent, merged into) and the transfers of at least ``threshold``."""
    if "atom_birth_time" not in ds or ds.sizes.get("atom", 0) == 0:
        return []
    birth, end = ds["atom_birth_time"].values, ds["atom_end_time"].values
    parent = ds["atom_parent"].values if "atom_parent" in ds else np.full(birth.size, -1)
    into = ds["atom_merged_into"].values if "atom_merged_into" in ds else np.full(birth.size, -1)
    lines = ["atom identities:", f"  {'atom':>4} {'born':>9} {'ended':>9} {'parent':>6} {'into':>5}"]
    for j in range(birth.size):
        ended = "alive" if not np.isfinite(end[j]) else f"{end[j]:g}"
        lines.append(f"  {j:4d} {birth[j]:9g} {ended:>9} {int(parent[j]):6d} {int(into[j]):5d}")
    events = transfers(ds, threshold)
    if events:
        lines.append(f"mass transfers >= {threshold:g} (whole cells joining or leaving an atom):")
        lines += [f"  t = {e['time']:<9g} atom {e['atom']:<3d} {e['kind']:5s} {e['mass']:+.6f}"
                  for e in events]
    return lines
