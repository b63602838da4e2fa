"""``time.cfl_floor``: the fv CFL condition counts only faces whose upwind density exceeds that
fraction of the mean. The outflow limiter keeps the others positive and the mass exact, so a
larger floor takes fewer steps on a run with nearly empty draining regions, with the same atoms."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import paper_s1_toml

import solvers
from solvers.io.state import initial_density
from solvers.model.config import ConfigError
from solvers.timestepping.loop import simulate

# the paper's S^1 descent at beta = 25 (N = 256) to t = 1500, where thin tails drain slowly
BASE = paper_s1_toml(256, 25.0, t_end=1500.0, snapshot_interval=100.0,
                     extra='progress = false\n[initial]\nkind = "uniform"\n')


def _run(floor: float):
    cfg = solvers.load_config(BASE, time__cfl_floor=floor)
    return simulate(cfg, initial_density(cfg))


def test_a_larger_floor_takes_fewer_steps_to_the_same_atoms():
    fine, coarse = _run(1e-6), _run(1e-2)
    a, b = fine.final.diagnostics, coarse.final.diagnostics
    assert coarse.n_steps < 0.6 * fine.n_steps  # (3798 against 1935 steps)
    assert a.n_atoms == b.n_atoms >= 2
    np.testing.assert_allclose(np.sort(b.atom_mass), np.sort(a.atom_mass), atol=1e-3)
    assert abs(b.mass - 1.0) < 1e-13 and b.min_rho >= 0.0


def test_the_default_floor_is_the_one_the_scheme_had():
    """1e-6 of the mean (the default): the runs and tests before the key existed."""
    cfg = solvers.load_config(BASE)
    assert cfg.time.cfl_floor == 1e-6


@pytest.mark.parametrize("bad", [-1e-3, 0.6, "0.01", float("nan")])
def test_bad_floors_are_config_errors(bad):
    with pytest.raises(ConfigError, match="time.cfl_floor"):
        solvers.load_config(BASE, time__cfl_floor=bad)
