"""A verdict is "trusted" only when the atoms' resolution was checked: below the coarsest grid
the half-resolution check accepts, the check runs at twice the resolution."""

from types import SimpleNamespace

import numpy as np

from solvers.model.config import load_config
from solvers.studies.verdict import coarse_config, judge

SMALL = """
[domain]
resolution = {n}
[model]
beta = 1.0
direction = "ascent"
kernel = "exp_shifted"
[initial]
kind = "uniform"
modes = [[1, 1e-2]]
[time]
t_end = 1.0
"""


def _snap(masses, positions, t=1.0):
    diag = SimpleNamespace(atom_mass=np.asarray(masses, float),
                           atom_position=np.asarray(positions, float), diffuse_mass=0.0, mass=1.0)
    return SimpleNamespace(t=t, diagnostics=diag)


def test_below_the_coarsest_half_grid_the_check_runs_at_twice_the_resolution():
    config = load_config(SMALL.format(n=96))  # half: 48 cells, below S^1's 64
    seen = []

    def coarse(check, t):
        seen.append(check.domain.resolution)
        return _snap([1.0], [0.5])

    verdict = judge(config, _snap([1.0], [0.5]), "stationary", time_error=1e-8, coarse=coarse,
                    atom_speed=0.0)
    assert seen == [192]
    assert verdict.coarse_resolution == 192 and verdict.trusted
    assert "resolution: atoms at 96 against 192" in "\n".join(verdict.lines())
    assert coarse_config(load_config(SMALL.format(n=128))).domain.resolution == 64  # half, as before


def test_a_verdict_without_a_resolution_check_is_not_trusted():
    config = load_config(SMALL.format(n=96))
    verdict = judge(config, _snap([1.0], [0.5]), "stationary", time_error=1e-8, coarse=None,
                    atom_speed=0.0)
    assert not verdict.trusted
    text = "\n".join(verdict.lines())
    assert "resolution: not checked" in text and "resolution not checked (--no-check)" in text
    assert "accuracy: NOT TRUSTED" in text


def test_no_grid_for_the_check_is_said_and_not_trusted(monkeypatch):
    from solvers.timestepping.manifolds import manifold_of

    config = load_config(SMALL.format(n=96))
    monkeypatch.setattr(type(manifold_of(config)), "max_check_resolution", 96)
    assert coarse_config(config) is None
    verdict = judge(config, _snap([1.0], [0.5]), "stationary", time_error=1e-8,
                    coarse=lambda check, t: _snap([1.0], [0.5]), atom_speed=0.0)
    assert not verdict.trusted
    assert "no grid at half or twice resolution 96" in verdict.warnings[0]


def test_on_the_sphere_the_check_doubles_the_latitudes_below_lmax_63():
    text = SMALL.format(n=31).replace("[domain]", '[domain]\nmanifold = "S2"')
    sphere = load_config(text.replace("modes = [[1, 1e-2]]", "modes = [[1, 0, 1e-2]]"))
    assert coarse_config(sphere).domain.resolution == 63  # half of 31 is below 31


def test_a_run_below_the_coarsest_half_grid_is_checked_at_twice_its_resolution(tmp_path, capsys):
    import solvers
    from solvers.cli.main import main

    cfg = tmp_path / "run.toml"
    cfg.write_text(SMALL.format(n=96).replace("modes = [[1, 1e-2]]", "modes = [[1, 0.3]]")
                   .replace("t_end = 1.0", "t_end = 20.0"))
    out = tmp_path / "run.nc"
    assert main(["run", str(cfg), "-o", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "resolution: atoms at 96 against 192" in printed
    assert solvers.open_run(out).attrs["resolution_check_resolution"] == 192
