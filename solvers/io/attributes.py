"""What an archive's attributes say beyond its records, read by ``meanfield info`` and the figures.

:func:`polish_lines`: the ``polish_*`` attributes of a polished run archive
(:mod:`solvers.studies.polish`) as text; :func:`stability_computed`: whether a continuation
archive (:mod:`solvers.studies.continuation_archive`) holds the states' stability.
"""

from __future__ import annotations

from typing import Any


def polish_lines(attrs: Any) -> list[str]:
    """The ``polish_*`` attributes of a polished archive as text (``meanfield info``, the
    figure of a single state); empty for any other archive."""
    if "polish_stability" not in attrs:
        return []
    nan = float("nan")
    lines = ["polished (Newton on grad U = 0 at the last snapshot's atoms; the accuracy verdict "
             "is the unpolished run's):",
             f"  Newton: {'converged' if int(attrs.get('polish_converged', 0)) else 'NOT converged'}, "
             f"max |grad U| = {float(attrs.get('polish_max_grad_u', nan)):.2e}",
             f"  {attrs.get('polish_representation', '')} (remainder "
             f"{float(attrs.get('polish_remainder_mass', nan)):.2e})",
             f"  energy {float(attrs.get('polish_energy_before', nan)):.12g} -> "
             f"{float(attrs.get('polish_energy_after', nan)):.12g}",
             f"  {attrs.get('polish_direction', '')}: {attrs['polish_stability']} stationary point"]
    warnings = [w for w in str(attrs.get("polish_run_warnings", "")).splitlines() if w.strip()]
    if warnings:
        lines[-1] += " of the polished atoms, not a state the run reached:"
        lines += [f"    {w}" for w in warnings]
    return lines


def stability_computed(ds: Any) -> bool:
    """Whether the archive ``ds`` holds the states' stability (not ``continue --no-stability``)."""
    return ds.attrs.get("stability", "computed") != "not computed" and ds["stable"].dtype == bool
