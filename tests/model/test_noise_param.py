"""``[model] noise``: read, validated, the default method with noise, and what noise refuses."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.model.config import ConfigError, load_config
from solvers.model.limits import check_run
from solvers.model.method import plan_method

BASE = "[domain]\nmanifold = \"S1\"\nresolution = 64\n[model]\nbeta = 2.0\n"


def test_noise_defaults_to_zero_and_is_read() -> None:
    assert load_config(BASE).model.noise == 0.0
    assert load_config(BASE + "noise = 0.25\n").model.noise == 0.25
    assert load_config(BASE, ["model.noise=0.5"]).model.noise == 0.5


@pytest.mark.parametrize("value", ["-0.1", "\"a lot\"", "true", "inf", "1e7"])
def test_bad_noise_names_the_key(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^model\.noise: must be a finite number"):
        load_config(BASE + f"noise = {value}\n")


def test_time_stepping_takes_noise_on_the_grid_schemes() -> None:
    for extra in ("", "[time]\nscheme = \"fv\"\n", "[time]\nscheme = \"spectral\"\n"):
        check_run(load_config(BASE + "noise = 0.1\n" + extra))
    config = load_config(BASE + "noise = 0.1\n")
    assert config.atoms.representation == "grid"  # the default with noise: no Dirac atoms
    assert plan_method(config).scheme == "spectral"
    assert "heat semigroup" in plan_method(config).reason
    assert plan_method(load_config(BASE)).scheme == "spectral+lagrangian"  # noise = 0: as before


@pytest.mark.parametrize("extra, key, words", [
    ("attention = \"softmax\"\n", "model.attention", "not the first variation"),
    ("[atoms]\nrepresentation = \"dirac\"\n", "atoms.representation", "carry no diffusion"),
    ("[time]\nscheme = \"lagrangian\"\n[atoms]\nrepresentation = \"dirac\"\n", "time.scheme",
     "carry no diffusion"),
    ("[time]\nscheme = \"fv\"\nkink_faces = true\n", "time.kink_faces", "uniform cells"),
])
def test_noise_refuses_what_cannot_diffuse(extra: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{key.replace('.', '[.]')}: .*{words}"):
        load_config(BASE + "noise = 0.1\n" + extra)


def test_noise_refuses_the_s2_finite_volumes() -> None:
    s2 = "[domain]\nmanifold = \"S2\"\nresolution = 31\n[model]\nnoise = 0.1\n"
    with pytest.raises(ConfigError, match=r"^time\.scheme: .*no exact heat step"):
        load_config(s2 + "[time]\nscheme = \"fv\"\n")
    assert plan_method(load_config(s2)).scheme == "spectral"


@pytest.mark.parametrize("integrator", ["ssprk3", "ssprk3_2"])
def test_noise_refuses_stages_that_go_back_in_time(integrator: str) -> None:
    from solvers.timestepping.simulation import Solver

    config = load_config(BASE + f"noise = 0.1\n[time]\nscheme = \"fv\"\nintegrator = \"{integrator}\"\n")
    with pytest.raises(ConfigError, match=r"^time\.integrator: .*backwards"):
        Solver(config, np.full(64, 1 / (2 * np.pi)))
