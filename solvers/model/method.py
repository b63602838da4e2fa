"""The default method: what ``time.scheme = "auto"`` (a config that names no scheme) runs, and why.

The choice rests on measurements (docs/methods.md, "Which method when"):

- S^1, every direction and attention: pseudo-spectral while the density is smooth and resolved
  (exponentially accurate: linear growth rates to round-off), then Lagrangian cells with Dirac
  atoms (:mod:`solvers.circle.handover`). The cells carry mass exactly and never go negative,
  and no atom is held in a fixed cell, so none is trapped there: the fv grid's ascent trap
  (an atom held in one cell pulls on both faces of its cell and freezes) gave 3 atoms where the
  exact flow has 2 on the paper's S^1 ascent at beta = 10.
- S^2, ascent or softmax attention: Lagrangian particles with Dirac atoms (the same reason:
  the grid traps atoms under ascent).
- S^2, descent with unnormalized attention: the finite-volume grid with Dirac atoms (descent
  carries atoms out of their cells rather than into them; the particles' pair sums cost
  O(n^2) per stage, 10-100x the grid at lmax 63-127).
- With noise (``model.noise > 0``), both manifolds: pseudo-spectral with the exact heat
  semigroup (Lawson steps, docs/noise.md §5). The noise keeps the density smooth and positive
  (no atoms form: a peak is about ``sqrt(nu / |U''|)`` wide), which the spectral scheme resolves
  to exponential accuracy; Dirac atoms and Lagrangian points would carry no diffusion.

:func:`choose_method` returns the concrete scheme and the reason; the archive records both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from solvers.model.params import RunConfig, auto_grid


@dataclass(frozen=True)
class MethodChoice:
    """``scheme``: the concrete scheme (``"spectral+lagrangian"`` on S^1: the hand-over of
    :mod:`solvers.circle.handover`); ``reason``: one sentence for the archive and ``meanfield info``."""

    scheme: str
    reason: str
    automatic: bool


def choose_method(config: RunConfig) -> MethodChoice:
    """The method a run uses: the config's explicit ``time.scheme``, or for ``"auto"`` the default."""
    scheme = config.time.scheme
    if scheme != "auto":
        return MethodChoice(scheme, f"time.scheme = \"{scheme}\" given in the config", False)
    model = config.model
    if model.noise > 0:
        return MethodChoice("spectral", f"default with noise on {config.domain.manifold}: "
                            "pseudo-spectral with the exact heat semigroup (the noise keeps the "
                            "density smooth and positive: no atoms; exponential accuracy while the "
                            "peaks, about sqrt(nu/|U''|) wide, are resolved)", True)
    if config.domain.manifold == "S1":
        return MethodChoice("spectral+lagrangian", "default on S1: pseudo-spectral while the density "
                            "is smooth and resolved, then Lagrangian cells with Dirac atoms (exact "
                            "mass, rho >= 0, no atom trapped in a grid cell)", True)
    if not auto_grid(config.domain.manifold, model):
        why = "ascent" if model.direction == "ascent" else "softmax attention"
        return MethodChoice("lagrangian", f"default on S2 for {why}: Lagrangian particles with Dirac "
                            "atoms (no atom trapped in a grid cell)", True)
    return MethodChoice("fv", "default on S2 for descent with unnormalized attention: finite volumes "
                        "with Dirac atoms (atoms leave their cells under descent; the particles' "
                        "pair sums cost 10-100x more)", True)


def concrete(config: RunConfig) -> RunConfig:
    """``config`` with ``time.scheme = "auto"`` replaced by the default's scheme (S^1 without
    noise keeps ``"auto"``: its hand-over is a discretisation of its own)."""
    choice = choose_method(config)
    if not choice.automatic or (config.domain.manifold == "S1" and config.model.noise == 0):
        return config
    return replace(config, time=replace(config.time, scheme=choice.scheme))
