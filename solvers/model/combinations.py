"""Checks across config sections: settings that are valid alone but not together.

Each raises :class:`~solvers.model.validators.ConfigError` naming the key to change and how.
"""

from __future__ import annotations

from solvers.model.method import GRID_SCHEMES, plan_method
from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError


def check_combinations(config: RunConfig) -> None:
    """All the checks below, in order."""
    check_points(config)
    check_representation(config)
    check_auto_cfl(config)
    check_lagrangian(config)
    check_basin_refine(config)
    check_kink_faces(config)
    check_limiter(config)
    check_noise(config)


def check_points(config: RunConfig) -> None:
    """``domain.manifold = "Sd"`` moves weighted points (``time.scheme`` ``"auto"`` or
    ``"lagrangian"``, Dirac atoms): no noise, and a start from a uniform sample (``kind =
    "uniform"``, its ``modes`` zonal) or from atoms."""
    if config.domain.manifold != "Sd":
        return
    if config.time.scheme not in ("auto", "lagrangian"):
        raise ConfigError("time.scheme", f"\"{config.time.scheme}\" needs a grid; on Sd the "
                          "measure is weighted points: remove it (or \"lagrangian\")")
    if config.model.noise > 0:
        raise ConfigError("model.noise", "weighted points carry no diffusion: set it to 0 on Sd")
    if config.initial.kind not in ("uniform", "atoms"):
        raise ConfigError("initial.kind", f"\"{config.initial.kind}\" is not available on Sd: "
                          "use \"uniform\" (a seeded sample; modes are zonal Gegenbauer "
                          "perturbations [j, amplitude]) or \"atoms\"")
    if config.atoms.method != "basin":
        raise ConfigError("atoms.method", "on Sd the atoms are the merged points: remove it")


def check_noise(config: RunConfig) -> None:
    """``model.noise > 0`` (docs/noise.md §5) runs a grid density with the heat semigroup:
    ``time.scheme`` ``"auto"`` or ``"spectral"`` (S1, S2) or ``"fv"`` (S1), no Dirac atoms, no
    moved faces, unnormalized attention."""
    m, t = config.model, config.time
    if m.noise == 0:
        return
    if m.attention == "softmax":
        raise ConfigError("model.attention", "\"softmax\" with model.noise > 0: its drift grad "
                          "log(K*rho)/beta is not the first variation of any energy, so the noisy "
                          "flow has no free energy to follow (and meanfield continue no stationary "
                          "equation for it); use \"unnormalized\", or set model.noise = 0")
    if config.atoms.representation == "dirac" or t.scheme == "lagrangian":
        key = "time.scheme" if t.scheme == "lagrangian" else "atoms.representation"
        raise ConfigError(key, "Dirac atoms and Lagrangian points carry no diffusion, and with "
                          "model.noise > 0 no atoms form: remove it (the default with noise is "
                          "the spectral grid) or set model.noise = 0")
    if t.scheme == "fv" and config.domain.manifold == "S2":
        raise ConfigError("time.scheme", "\"fv\" on S2 has no exact heat step (its merged polar "
                          "cells): with model.noise > 0 use \"spectral\" or leave time.scheme out")
    if t.kink_faces is True:
        raise ConfigError("time.kink_faces", "with model.noise > 0 the heat step needs the uniform "
                          "cells: remove it or set it to false")
    if t.stop_when_stationary and t.stationary_measure == "velocity":
        raise ConfigError("time.stationary_measure", "\"velocity\" never settles with model.noise "
                          "> 0 (a noisy stationary state's drift balances its diffusion): use "
                          "\"transport\" (||d rho/dt||_1 / M)")


def check_limiter(config: RunConfig) -> None:
    """``time.limiter = "weno5"`` is for S^1 (the S^2 kernels have the slope limiters only)."""
    if config.time.limiter == "weno5" and config.domain.manifold != "S1":
        raise ConfigError("time.limiter", "\"weno5\" is for S1 only; on S2 use \"mc\", "
                                          "\"minmod\", \"vanleer\" or \"none\"")


def check_kink_faces(config: RunConfig) -> None:
    """``time.kink_faces = true`` moves faces of the S^1 finite volumes (None: where it applies)."""
    if config.time.kink_faces is not True:
        return
    if config.domain.manifold != "S1":
        raise ConfigError("time.kink_faces", "is for S1 only (the S2 grid keeps its faces); "
                                             "remove it or set it to false")
    if config.time.scheme != "fv":
        raise ConfigError("time.kink_faces", "moves finite-volume faces: it needs "
                                             "time.scheme = \"fv\"")



def check_representation(config: RunConfig) -> None:
    """``representation = "dirac"`` needs a measure-valued scheme (``fv``, ``lagrangian`` or
    ``auto``); with softmax attention (paper eq. 2.9) it needs ``lagrangian`` or ``auto`` (the S^1
    cells and S^2 particles divide by ``f = K*mu``; the fv Dirac state's compiled kernels move
    their atoms with unnormalized attention only); ``kind = "atoms"`` needs ``representation =
    "dirac"``."""
    dirac = config.atoms.representation == "dirac"
    scheme = config.time.scheme
    if config.initial.kind == "atoms" and not dirac:
        raise ConfigError("initial.kind", "\"atoms\" needs [atoms] representation = \"dirac\"")
    if dirac and scheme not in ("fv", "lagrangian", "auto"):
        raise ConfigError("atoms.representation", "\"dirac\" needs time.scheme = \"lagrangian\", "
                                                  "\"auto\" or \"fv\"")
    if dirac and scheme == "fv" and config.model.attention != "unnormalized":
        raise ConfigError("time.scheme", "\"fv\" with [atoms] representation = \"dirac\" moves the "
                                         "atoms with unnormalized attention only; for model.attention "
                                         f"= \"{config.model.attention}\" set time.scheme = "
                                         "\"lagrangian\" or \"auto\", or [atoms] representation = "
                                         "\"grid\"")


def check_lagrangian(config: RunConfig) -> None:
    """``time.scheme = "lagrangian"`` (S^1: moving cells; S^2: particles; docs/methods.md §6.4,
    §6.7) moves the measure-valued state: it needs ``[atoms] representation = "dirac"`` and
    snapshots that land on their times (a step's points are not interpolated)."""
    plan = plan_method(config)  # the default method's cells or particles land on snapshot times
    if plan.automatic and plan.scheme not in GRID_SCHEMES \
            and config.output.snapshot_mode == "interpolate":
        raise ConfigError("output.snapshot_mode", "\"interpolate\" is for the fv scheme; the "
                                                  "default method (no time.scheme) moves cells or "
                                                  "particles: use \"land\" or \"auto\"")
    if config.time.scheme != "lagrangian":
        return
    if config.atoms.representation != "dirac":
        raise ConfigError("time.scheme", "\"lagrangian\" carries Dirac atoms: set [atoms] "
                                         "representation = \"dirac\"")
    if config.output.snapshot_mode == "interpolate":
        raise ConfigError("output.snapshot_mode", "\"interpolate\" is for the fv scheme; with "
                                                  "time.scheme = \"lagrangian\" use \"land\" "
                                                  "or \"auto\"")


def check_basin_refine(config: RunConfig) -> None:
    """``time.basin_refine > 1`` refines the S^2 Lagrangian particles on basin boundaries: it
    needs manifold S2 and ``time.scheme = "lagrangian"``."""
    if config.time.basin_refine > 1 and (config.domain.manifold != "S2"
                                         or config.time.scheme != "lagrangian"):
        raise ConfigError("time.basin_refine", "refines the S2 Lagrangian particles: it needs "
                                               "manifold S2 and time.scheme = \"lagrangian\"; "
                                               "remove it or set it to 1")


def check_auto_cfl(config: RunConfig) -> None:
    """Where the default method runs the fv grid (S2 descent, unnormalized attention), a given
    ``time.cfl`` must keep it positive (<= 0.5)."""
    plan = plan_method(config)
    if plan.automatic and plan.scheme == "fv" and plan.cfl > 0.5:
        raise ConfigError("time.cfl", f"must be <= 0.5 here: the default method runs finite "
                                      f"volumes on S2 for descent (positivity; got {config.time.cfl:g})")
