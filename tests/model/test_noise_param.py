"""``[model] noise``: read, validated, archived with the config, refused by the time steppers."""

from __future__ import annotations

import pytest

from solvers.model.config import ConfigError, load_config
from solvers.model.limits import check_run

BASE = "[domain]\nmanifold = \"S1\"\nresolution = 64\n[model]\nbeta = 2.0\n"


def test_noise_defaults_to_zero_and_is_read() -> None:
    assert load_config(BASE).model.noise == 0.0
    assert load_config(BASE + "noise = 0.25\n").model.noise == 0.25
    assert load_config(BASE, ["model.noise=0.5"]).model.noise == 0.5


@pytest.mark.parametrize("value", ["-0.1", "\"a lot\"", "true", "inf", "1e7"])
def test_bad_noise_names_the_key(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^model\.noise: must be a finite number"):
        load_config(BASE + f"noise = {value}\n")


def test_time_stepping_refuses_noise_and_names_the_fix() -> None:
    config = load_config(BASE + "noise = 0.1\n")
    with pytest.raises(ConfigError, match=r"model\.noise: time stepping with noise: not yet.*"
                                          r"meanfield continue"):
        check_run(config)
    check_run(load_config(BASE))  # noise = 0: the paper's dynamics run as before
