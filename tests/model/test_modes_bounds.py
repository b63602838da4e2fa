"""``initial.modes`` on S^1: a mode above the grid's highest one (N // 2) is a config error that
names the entry, N // 2 and the fix; the grid's highest mode itself is accepted."""

from __future__ import annotations

import pytest

from solvers.model.config import ConfigError, load_config


def config(resolution: int, modes: str, manifold: str = "S1"):
    return load_config(f'[domain]\nmanifold = "{manifold}"\nresolution = {resolution}\n'
                       f"[initial]\nmodes = {modes}\n")


@pytest.mark.parametrize("n", [64, 65])
def test_the_grids_highest_mode_is_accepted(n: int) -> None:
    assert config(n, f"[[1, 0.1], [{n // 2}, 0.01]]").initial.modes[1][0] == n // 2


@pytest.mark.parametrize("n, k", [(64, 33), (65, 33), (64, 1000), (16, 9)])
def test_a_mode_above_n_over_2_names_the_entry_the_limit_and_the_fix(n: int, k: int) -> None:
    with pytest.raises(ConfigError) as info:
        config(n, f"[[1, 0.1], [{k}, 0.01]]")
    text = str(info.value)
    assert text.startswith("initial.modes[1]: ")
    assert f"k = {k}" in text and f"N//2 = {n // 2}" in text
    assert f"domain.resolution = {n}" in text
    assert "lower k" in text and f"raise domain.resolution to at least {2 * k}" in text
    config(2 * k, f"[[1, 0.1], [{k}, 0.01]]")  # the fix it names works


def test_the_s2_bound_is_unchanged() -> None:
    assert config(31, "[[31, 2, 0.01]]", "S2").initial.modes[0][:2] == (31, 2)
    with pytest.raises(ConfigError, match=r"^initial\.modes\[0\]: .*lmax = 31"):
        config(31, "[[32, 0, 0.01]]", "S2")
