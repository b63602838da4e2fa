"""The method plan (:mod:`solvers.model.method`): one resolution of a config, read by every
consumer; the reader writes its values into a new config; the registry is one table."""

from __future__ import annotations

import dataclasses

import pytest

from solvers.model.config import load_config
from solvers.model.method import (
    AUTO_CFL,
    DEFAULT_INTEGRATORS,
    DIRAC_CFL_FLOOR,
    FV_CFL_FLOOR,
    GRID_CFL,
    HANDOVER,
    MethodPlan,
    plan_method,
    resolve,
)
from solvers.model.params import AtomParams, DomainParams, ModelParams, RunConfig, TimeParams
from solvers.model.validate import validate_config
from solvers.model.validators import ConfigError

S2 = '[domain]\nmanifold = "S2"\nresolution = 31\n'


@pytest.mark.parametrize(("text", "scheme", "representation", "integrator", "cfl", "floor", "mode"), [
    ("", HANDOVER, "dirac", "dopri5", AUTO_CFL, FV_CFL_FLOOR, "land"),
    ("[model]\nnoise = 0.01\n", "spectral", "grid", "rk4", GRID_CFL, FV_CFL_FLOOR, "land"),
    ('[time]\nscheme = "fv"\n', "fv", "grid", "ssprk10_2", GRID_CFL, FV_CFL_FLOOR, "interpolate"),
    ('[time]\nscheme = "spectral"\n', "spectral", "grid", "rk4", GRID_CFL, FV_CFL_FLOOR, "land"),
    ('[atoms]\nrepresentation = "dirac"\n', "fv", "dirac", "ssprk10_2", GRID_CFL, DIRAC_CFL_FLOOR,
     "interpolate"),
    ('[time]\nscheme = "lagrangian"\n[atoms]\nrepresentation = "dirac"\n', "lagrangian", "dirac",
     "rk4", GRID_CFL, DIRAC_CFL_FLOOR, "land"),
    (S2, "fv", "dirac", "ssprk10_2", GRID_CFL, DIRAC_CFL_FLOOR, "interpolate"),
    (S2 + '[model]\ndirection = "ascent"\n', "lagrangian", "dirac", "rk4", AUTO_CFL,
     DIRAC_CFL_FLOOR, "land"),
    (S2 + '[model]\nnoise = 0.01\n', "spectral", "grid", "rk4", GRID_CFL, FV_CFL_FLOOR, "land"),
    (S2 + '[time]\nscheme = "fv"\n', "fv", "grid", "ssprk10_2", GRID_CFL, FV_CFL_FLOOR,
     "interpolate"),
    ('[time]\nscheme = "fv"\nintegrator = "bs32"\ncfl = 0.3\ndt = 0.01\n', "fv", "grid", "bs32",
     0.3, FV_CFL_FLOOR, "land"),
])
def test_the_plan_of_each_method(text, scheme, representation, integrator, cfl, floor, mode):
    config = load_config(text)
    plan = plan_method(config)
    assert (plan.scheme, plan.representation, plan.integrator) == (scheme, representation, integrator)
    assert (plan.cfl, plan.cfl_floor, plan.snapshot_mode) == (cfl, floor, mode)
    assert plan.automatic == ("scheme" not in text and "representation" not in text)
    # the reader wrote the plan's values into the config; the plan of either is the same
    assert (config.atoms.representation, config.time.cfl, config.time.cfl_floor) == (
        representation, cfl, floor)
    assert resolve(config) is config
    assert plan_method(resolve(config)) == plan
    from solvers.timestepping.registry import registry_keys

    assert plan.key in registry_keys()


def test_the_plan_is_frozen_and_never_auto():
    plan = plan_method(RunConfig())
    assert isinstance(plan, MethodPlan) and plan.scheme == HANDOVER and "auto" not in plan.key
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.scheme = "fv"  # type: ignore[misc]
    assert set(DEFAULT_INTEGRATORS) == {"fv", "spectral", "lagrangian", HANDOVER}


def test_a_config_is_never_changed_in_place():
    config = RunConfig()
    assert (config.atoms.representation, config.time.cfl, config.time.cfl_floor) == (
        "grid", None, None)
    resolved = resolve(config)
    assert (config.atoms.representation, config.time.cfl, config.time.cfl_floor) == (
        "grid", None, None)
    assert (resolved.atoms.representation, resolved.time.cfl, resolved.time.cfl_floor) == (
        "dirac", AUTO_CFL, FV_CFL_FLOOR)
    assert plan_method(config) == plan_method(resolved)


@pytest.mark.parametrize("manifold", ["S1", "S2"])
def test_a_python_dirac_config_gets_the_floor_of_the_same_toml(manifold):
    """One constant and one rule: a Dirac state's floor is DIRAC_CFL_FLOOR on both manifolds,
    whether the config comes from TOML or from Python through validate_config."""
    domain = DomainParams(manifold=manifold, resolution=64 if manifold == "S1" else 31)
    built = RunConfig(domain=domain, time=TimeParams(scheme="fv"),
                      atoms=AtomParams(representation="dirac"))
    text = (f'[domain]\nmanifold = "{manifold}"\nresolution = {domain.resolution}\n'
            '[time]\nscheme = "fv"\n[atoms]\nrepresentation = "dirac"\n')
    assert plan_method(built).cfl_floor == DIRAC_CFL_FLOOR
    assert validate_config(built).time.cfl_floor == load_config(text).time.cfl_floor \
        == DIRAC_CFL_FLOOR


def test_given_values_are_kept():
    config = RunConfig(time=TimeParams(scheme="fv", cfl=0.2, cfl_floor=1e-4, integrator="rk4"))
    plan = plan_method(config)
    assert (plan.cfl, plan.cfl_floor, plan.integrator) == (0.2, 1e-4, "rk4")


def test_the_discretization_config_has_the_scheme_that_runs():
    s2 = resolve(RunConfig(domain=DomainParams(manifold="S2", resolution=31)))
    plan = plan_method(s2)
    assert s2.time.scheme == "auto" and plan.discretization_config(s2).time.scheme == "fv"
    s1 = RunConfig()  # the hand-over keeps "auto": it runs both of its schemes
    ran = plan_method(s1).discretization_config(s1)
    assert ran.time.scheme == "auto" and ran.atoms.representation == "dirac"
    assert ran.time.cfl == AUTO_CFL


def test_an_unknown_scheme_names_the_parameter():
    with pytest.raises(ConfigError, match="time.scheme"):
        plan_method(RunConfig(time=TimeParams(scheme="spectral+lagrangian")))


def test_the_noise_default_reason():
    plan = plan_method(RunConfig(model=ModelParams(noise=0.01)))
    assert plan.scheme == "spectral" and "heat semigroup" in plan.reason and plan.automatic


def test_the_registry_has_one_entry_per_method_and_the_plans_integrator():
    from solvers.timestepping.registry import make_discretization, registry_keys

    assert {key[1] for key in registry_keys()} == set(DEFAULT_INTEGRATORS)
    s1 = [("", HANDOVER), ('[time]\nscheme = "fv"\n', "fv"), ('[time]\nscheme = "spectral"\n',
          "spectral"), ('[atoms]\nrepresentation = "dirac"\n', "fv"),
          ('[time]\nscheme = "lagrangian"\n[atoms]\nrepresentation = "dirac"\n', "lagrangian")]
    seen = set()
    for text, scheme in s1:
        config = load_config("[domain]\nresolution = 64\n" + text)
        plan = plan_method(config)
        disc = make_discretization(config, plan)
        assert plan.scheme == scheme and disc.default_integrator == plan.integrator
        seen.add(plan.key)
    assert seen == {key for key in registry_keys() if key[0] == "S1"}


def test_an_unknown_registry_key_names_the_parameter():
    from solvers.timestepping.registry import make_discretization

    bad = RunConfig(time=TimeParams(scheme="spectral"), atoms=AtomParams(representation="dirac"))
    with pytest.raises(ConfigError, match="atoms.representation"):
        make_discretization(bad)
