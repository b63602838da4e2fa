"""``time.cfl_floor`` of the S^2 Dirac state (the default method for S^2 descent): 1e-2 of the
mean when not given. Once the atoms hold the mass, the thin density between them no longer
sets the step (the outflow limiter keeps it positive and the mass exact): fewer steps, the
same atoms as at the grid density's floor 1e-6."""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers.io.state import initial_state
from solvers.model.method import DIRAC_CFL_FLOOR, FV_CFL_FLOOR
from solvers.timestepping.loop import simulate

# runs/paper_s2_descent_relu.toml's model (beta = 1, the seed-777 ReLU perceptron) at lmax 31
# to t = 300, where the four atoms have formed and the density between them drains
BASE = """
[domain]
manifold = "S2"
resolution = 31
[model]
beta = 1.0
direction = "descent"
kernel = "exp_shifted"
[perceptron]
activation = "relu"
a = [[-0.5603236705120601, 0.0453159888005312, -0.8270331585994134],
     [-0.8953385535255107, 0.3575716967547427, -0.2655397451433223],
     [0.4791171509290202, 0.151262291683874, -0.8646192658044355]]
omega = [-0.422016341580297, -1.1095875272656244, -0.3624772545416152]
[initial]
kind = "uniform"
modes = [[1, 1, 1e-4], [2, 0, 1e-4], [3, 2, 1e-4]]
[time]
t_end = 300.0
[output]
snapshot_interval = 50.0
progress = false
"""


def _run(**overrides):
    cfg = solvers.load_config(BASE, **overrides)
    rho0, atoms0 = initial_state(cfg)
    return cfg, simulate(cfg, rho0, atoms0=atoms0)


@pytest.mark.parametrize(("extra", "floor"), [
    ({}, DIRAC_CFL_FLOOR),  # the default method: the Dirac state
    ({"time__scheme": "fv", "atoms__representation": "dirac"}, DIRAC_CFL_FLOOR),
    ({"time__scheme": "fv"}, FV_CFL_FLOOR),  # the grid density
    ({"time__cfl_floor": 1e-4}, 1e-4),  # given: kept
])
def test_the_floor_when_not_given(extra, floor):
    assert solvers.load_config(BASE, **extra).time.cfl_floor == floor


def test_the_dirac_floor_takes_fewer_steps_to_the_same_atoms():
    cfg, new = _run()
    assert cfg.atoms.representation == "dirac" and cfg.time.cfl_floor == 1e-2
    _, old = _run(time__scheme="fv", atoms__representation="dirac", time__cfl_floor=1e-6)
    a, b = old.final.diagnostics, new.final.diagnostics
    assert new.n_steps < 0.8 * old.n_steps  # (121 against 220 steps)
    assert a.n_atoms == b.n_atoms >= 3
    # (within 4.5e-6; the four lmax-63 and lmax-127 configs of runs/ within 4.1e-5)
    np.testing.assert_allclose(np.sort(b.atom_mass), np.sort(a.atom_mass), atol=1e-4)
    assert abs(b.mass - 1.0) < 1e-13 and b.min_rho >= 0.0
