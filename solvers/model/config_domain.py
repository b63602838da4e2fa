"""The ``[domain]`` and ``[perceptron]`` sections of a config file: where the measure lives and
the perceptron, given or drawn from a seed (read by :func:`solvers.model.config.build_config`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.model.activations import ACTIVATIONS as _ACTIVATION_TABLE
from solvers.model.limits import (
    MAX_DIM,
    MAX_DRAWN_UNITS,
    MAX_POINTS,
    MAX_RESOLUTION,
    MIN_POINTS,
    MIN_RESOLUTION,
    WEIGHT_MAX,
)
from solvers.model.params import MANIFOLDS, DomainParams, PerceptronParams
from solvers.model.perceptron import draw_units
from solvers.model.validators import ConfigError, choice, integer, matrix, number, number_list

ACTIVATIONS = tuple(_ACTIVATION_TABLE) + ("none",)
S2_MIN_LMAX = 31  # shtns needs a Gauss grid of >= 32 latitudes


def _scalars(section: str, table: dict[str, Any], rules: dict[str, Callable]) -> dict[str, Any]:
    return {k: rules[k](f"{section}.{k}", v) for k, v in table.items() if k in rules}


def _domain(t: dict[str, Any]) -> DomainParams:
    manifold = choice("domain.manifold", t.get("manifold", "S1"), MANIFOLDS)
    if manifold == "Sd":
        return _points_domain(t)
    for key in ("points", "dim"):
        if key in t:
            raise ConfigError(f"domain.{key}", f"is a key of domain.manifold = \"Sd\" (S^(d-1) "
                              f"by weighted points); on {manifold} remove it ({manifold}: "
                              f"domain.resolution sets the grid)")
    domain = DomainParams(**_scalars("domain", t, {
        "manifold": lambda k, v: choice(k, v, MANIFOLDS),
        "resolution": lambda k, v: integer(k, v, MIN_RESOLUTION, max(MAX_RESOLUTION.values()))}))
    top = MAX_RESOLUTION[domain.manifold]
    if domain.resolution > top:
        raise ConfigError("domain.resolution", f"must be <= {top} on {domain.manifold} "
                          f"(got {domain.resolution})")
    if domain.manifold == "S2" and domain.resolution < S2_MIN_LMAX:  # shtns: nlat >= 32
        raise ConfigError("domain.resolution", f"is lmax on S2: must be >= {S2_MIN_LMAX} "
                          f"(got {domain.resolution})")
    return domain


def _points_domain(t: dict[str, Any]) -> DomainParams:
    """``[domain]`` of ``manifold = "Sd"``: ``dim`` (d) and ``points`` (N), both required."""
    if "resolution" in t:
        raise ConfigError("domain.resolution", "on Sd the measure is a set of weighted points: "
                          "give their number as domain.points (e.g. points = 10000)")
    for key, example in (("dim", "dim = 5 for S^4"), ("points", "points = 10000")):
        if key not in t:
            raise ConfigError(f"domain.{key}", f"required with manifold = \"Sd\" ({example})")
    return DomainParams(manifold="Sd", dim=integer("domain.dim", t["dim"], 2, MAX_DIM),
                        resolution=integer("domain.points", t["points"], MIN_POINTS, MAX_POINTS))


def _perceptron(t: dict[str, Any], domain: DomainParams) -> PerceptronParams:
    act = choice("perceptron.activation", t.get("activation", "none"), ACTIVATIONS)
    given = [k for k in ("a", "omega", "b", "units", "seed", "scale") if k in t]
    if act == "none":
        if given:
            raise ConfigError(f"perceptron.{given[0]}", "weights are given but activation is "
                              "\"none\": remove them or set perceptron.activation, e.g. \"relu\"")
        return PerceptronParams()
    if "seed" in t:
        return _drawn_units(t, act, domain)
    for k in ("units", "scale"):
        if k in t:
            raise ConfigError(f"perceptron.{k}", "draws the units from perceptron.seed: add "
                              "seed = <integer>, or give perceptron.a and perceptron.omega")
    for k in ("a", "omega"):
        if k not in t or t[k] == []:
            raise ConfigError(f"perceptron.{k}", f"required (at least one unit) with activation "
                              f"{json.dumps(act)}, or set perceptron.activation = \"none\" "
                              "(or draw the units: perceptron.seed)")
    a = matrix("perceptron.a", t["a"], domain.d, domain.manifold, hi=WEIGHT_MAX)
    n = (a.shape[0], "one entry per row of perceptron.a")
    omega = number_list("perceptron.omega", t["omega"], length=n, hi=WEIGHT_MAX)
    b = number_list("perceptron.b", t.get("b", [0.0] * n[0]), length=n, hi=WEIGHT_MAX)
    return PerceptronParams(activation=act, a=a, omega=omega, b=b)


def _drawn_units(t: dict[str, Any], act: str, domain: DomainParams) -> PerceptronParams:
    """Units drawn from ``perceptron.seed`` in d = ``domain.dim`` dimensions, as the paper's
    particle code draws them: ``a_j`` uniform on ``S^{d-1}`` (a normalised standard normal),
    ``omega_j`` normal with standard deviation ``perceptron.scale`` (default 1), ``b_j = 0``;
    ``perceptron.units`` of them (default d)."""
    for k in ("a", "omega", "b"):
        if k in t:
            raise ConfigError(f"perceptron.{k}", "is drawn from perceptron.seed: remove one of "
                              "the two (seed draws a, omega; b = 0)")
    seed = integer("perceptron.seed", t["seed"], 0, 2**63 - 1)
    units = integer("perceptron.units", t.get("units", domain.d), 1, MAX_DRAWN_UNITS)
    scale = number("perceptron.scale", t.get("scale", 1.0), lo=0.0, hi=WEIGHT_MAX, lo_open=False)
    a, omega = draw_units(seed, units, domain.d, scale)
    return PerceptronParams(activation=act, a=a, omega=omega, b=np.zeros(units))
