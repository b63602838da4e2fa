"""The verdict's check runs and how their atoms are compared (:mod:`solvers.studies.verdict`).

- :func:`coarse_config`: the resolution check, the run at half its resolution (twice it where
  half is too coarse); :func:`ladder_config`: its third level, a quarter of the resolution;
- :func:`time_check_config`: the Richardson time check of steps that are not error-controlled,
  the coarsest level (:func:`time_check_base`) with every step bound halved, and
  :func:`richardson_factor` ``2^p / (2^p - 1)``;
- :func:`check_runs`: all of them, as the companions start them and the cost model counts them;
- :func:`compare_atoms`: two runs' atoms matched nearest to nearest (count, largest mass and
  position differences).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.timestepping.manifolds import manifold_of


def _atoms_of(diag: Any) -> tuple[np.ndarray, np.ndarray]:
    mass = np.asarray(diag.atom_mass, float).ravel()
    pos = np.asarray(diag.atom_position, float)
    keep = np.isfinite(mass) & (mass > 0)
    return mass[keep], pos[keep] if pos.ndim == 1 else pos.reshape(mass.size, -1 if mass.size else
                                                                   max(pos.shape[-1], 1))[keep]


def _distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Geodesic distances (n, m) between angles (S^1) or unit vectors (S^2, Sd)."""
    if a.ndim == 1:
        d = np.abs(np.mod(a[:, None] - b[None, :] + np.pi, 2 * np.pi) - np.pi)
        return d
    return np.arccos(np.clip(a @ b.T, -1.0, 1.0))


def compare_atoms(fine: Any, coarse: Any) -> tuple[int, float | None, float | None]:
    """``(coarse count, max mass difference, max position difference)`` of the atoms of two
    diagnostics, each fine atom matched with the nearest coarse one (None when counts differ)."""
    mf, xf = _atoms_of(fine)
    mc, xc = _atoms_of(coarse)
    if mf.size != mc.size or mf.size == 0:
        return int(mc.size), None, None
    d = _distance(xf, xc)
    match = np.argmin(d, axis=1)
    if np.unique(match).size != match.size:
        return int(mc.size), None, None
    return int(mc.size), float(np.max(np.abs(mf - mc[match]))), float(np.max(d[np.arange(mf.size), match]))


def coarse_config(config: RunConfig) -> RunConfig | None:
    """The run the verdict compares with: the same run at half the resolution, or, where that
    grid would be too coarse (below ``min_coarse_resolution``, or not resolving the kernel), at
    twice the resolution (:meth:`~solvers.core.manifold.Manifold.refine`, at most
    ``max_check_resolution``); None where neither exists."""
    from solvers.model.config import ConfigError, check_resolution

    manifold = manifold_of(config)
    n = config.domain.resolution
    fine = manifold.refine(n)
    for res in (manifold.coarse_resolution(n), fine if fine <= manifold.max_check_resolution else None):
        if res is None:
            continue
        other = replace(config, domain=replace(config.domain, resolution=res),
                        output=replace(config.output, progress=False))
        try:
            check_resolution(other)  # the check's grid must resolve the kernel
        except ConfigError:
            continue
        return other
    return None


def ladder_config(config: RunConfig) -> RunConfig | None:
    """The third level of the resolution check (module docstring): the check's own half
    resolution, where the check is coarser than the run and its half exists
    (:func:`coarse_config` of the check, when coarser still); else None."""
    half = coarse_config(config)
    if half is None or half.domain.resolution >= config.domain.resolution:
        return None
    quarter = coarse_config(half)
    if quarter is None or quarter.domain.resolution >= half.domain.resolution:
        return None
    return quarter


def controlled_steps(config: RunConfig) -> bool:
    """Whether the run's steps are error-controlled (an embedded pair, no fixed ``time.dt``):
    its integrator then estimates the time error itself."""
    from solvers.timestepping.integrators import PAIRS

    return plan_method(config).integrator in PAIRS and config.time.dt is None


def time_check_base(config: RunConfig) -> RunConfig | None:
    """The check run the time check repeats with halved steps: the coarsest level of the
    resolution check below the run's resolution (:func:`ladder_config`, else
    :func:`coarse_config`: the cheapest, and its grid-bound steps are the longest); None where
    the check is finer than the run or there is none (the run itself is repeated)."""
    half = coarse_config(config)
    if half is None or half.domain.resolution >= config.domain.resolution:
        return None
    return ladder_config(config) or half


def time_check_config(config: RunConfig) -> RunConfig | None:
    """The Richardson time check of a run whose steps are not error-controlled (module
    docstring): :func:`time_check_base` (the run's own config where there is none) with
    ``time.cfl`` and ``time.rate_factor`` halved (a fixed ``time.dt`` halved),
    ``time.max_steps`` doubled; None for error-controlled steps."""
    if controlled_steps(config):
        return None
    base = time_check_base(config) or replace(config, output=replace(config.output, progress=False))
    tp = base.time
    return replace(base, time=replace(
        tp, cfl=plan_method(base).cfl / 2, rate_factor=tp.rate_factor / 2,
        dt=None if tp.dt is None else tp.dt / 2, max_steps=2 * tp.max_steps))


def check_runs(config: RunConfig) -> tuple[RunConfig, ...]:
    """The verdict's check runs of ``config``: the resolution check (:func:`coarse_config`),
    the time check for steps that are not error-controlled (:func:`time_check_config`) and
    the ladder's third level (:func:`ladder_config`), those that exist (what
    :func:`solvers.studies.companion.start_companions` starts and the cost model counts)."""
    found = (coarse_config(config), time_check_config(config), ladder_config(config))
    return tuple(c for c in found if c is not None)


def richardson_factor(config: RunConfig) -> float:
    """``2^p / (2^p - 1)``, ``p`` the order of the run's integrator: the time error of a run
    from the difference of its atoms with those at half the steps."""
    from solvers.timestepping.integrators import get_integrator

    order = get_integrator(plan_method(config).integrator).order
    return 2.0**order / (2.0**order - 1.0)
