"""The verdict every run carries: its warnings fire exactly when a number cannot be trusted."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import DEMO_SMALL

from solvers.cli.main import main
from solvers.model.config import load_config
from solvers.studies.verdict import compare_atoms, coarse_config, judge



def _snap(masses, positions, t=10.0, diffuse=0.0):
    diag = SimpleNamespace(atom_mass=np.asarray(masses, float), atom_position=np.asarray(positions, float),
                           diffuse_mass=diffuse, mass=1.0)
    return SimpleNamespace(t=t, diagnostics=diag)


def test_compare_atoms_matches_nearest_and_wraps_the_circle():
    fine = _snap([0.6, 0.4], [0.01, 3.0]).diagnostics
    coarse = _snap([0.41, 0.59], [3.02, 2 * np.pi - 0.01]).diagnostics
    count, dm, dx = compare_atoms(fine, coarse)
    assert count == 2 and dm == pytest.approx(0.01) and dx == pytest.approx(0.02)
    assert compare_atoms(fine, _snap([1.0], [0.0]).diagnostics)[1] is None


@pytest.mark.parametrize("coarse_masses,reason,speed,diffuse,expect", [
    ([0.6, 0.4], "stationary", 1e-7, 0.0, []),
    ([1.0], "stationary", 1e-7, 0.0, ["atom count depends on the resolution"]),
    ([0.62, 0.38], "stationary", 1e-7, 0.0, ["under-resolved"]),
    ([0.6, 0.4], "stationary", 3e-3, 0.0, ["still moves"]),
])
def test_warnings_fire_when_a_number_cannot_be_trusted(coarse_masses, reason, speed, diffuse, expect):
    config = load_config(DEMO_SMALL)
    final = _snap([0.6, 0.4], [0.5, 3.0], diffuse=diffuse)
    positions = [0.5, 3.0][:len(coarse_masses)]
    verdict = judge(config, final, reason, time_error=1e-6,
                    coarse=lambda half, t: _snap(coarse_masses, positions), atom_speed=speed)
    assert len(verdict.warnings) == len(expect)
    for text, warning in zip(expect, verdict.warnings):
        assert text in warning
    assert verdict.trusted == (not expect)


@pytest.mark.parametrize("reason,diffuse", [("t_end", 0.0), ("max_steps", 0.2)])
def test_the_state_is_said_apart_from_the_accuracy(reason, diffuse):
    """A run stopped before stationarity, or with much diffuse mass, is still trusted when its
    atoms at the final time are accurate: the state line says the rest."""
    config = load_config(DEMO_SMALL)
    final = _snap([0.6, 0.4], [0.5, 3.0], t=40.0, diffuse=diffuse)
    verdict = judge(config, final, reason, time_error=1e-6,
                    coarse=lambda half, t: _snap([0.6, 0.4], [0.5, 3.0]), atom_speed=1e-2)
    assert verdict.trusted and not verdict.warnings
    assert verdict.stationary is False
    state = verdict.state_lines()
    assert state[0].startswith(f"state: not yet stationary at t = 40 (the run ended at {reason})")
    assert any("in no atom" in n for n in verdict.state_notes) == (diffuse > 0)
    attrs = verdict.attributes()
    assert attrs["verdict_trusted"] == 1 and attrs["verdict_stationary"] == 0
    assert "not yet stationary" in attrs["verdict_state"] and "not yet stationary" in attrs["verdict"]
    stopped = judge(config, final, "stationary", time_error=1e-6,
                    coarse=lambda half, t: _snap([0.6, 0.4], [0.5, 3.0]), atom_speed=1e-7)
    assert stopped.stationary and stopped.state_lines()[0] == "state: stationary at t = 40"


def test_uncontrolled_steps_are_a_warning():
    config = load_config(DEMO_SMALL + "\n", ['time.scheme="fv"'])
    verdict = judge(config, _snap([1.0], [0.0]), "stationary", time_error=None)
    assert any("time error is not estimated" in w for w in verdict.warnings)


def test_coarse_config_keeps_the_kernel_resolved():
    assert coarse_config(load_config(DEMO_SMALL)).domain.resolution == 128
    # 128 cells do not resolve j* = 44 at beta = 25: the check runs at twice the resolution
    assert coarse_config(load_config(DEMO_SMALL, ["model.beta=25"])).domain.resolution == 512


def test_cli_run_archives_the_verdict_and_info_prints_it_first(tmp_path, capsys):
    import solvers

    cfg = tmp_path / "run.toml"
    cfg.write_text(DEMO_SMALL)
    out = tmp_path / "run.nc"
    assert main(["run", str(cfg), "-o", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "accuracy:" in printed and "resolution: atoms at 256 against 128" in printed
    ds = solvers.open_run(out)
    assert ds.attrs["method"] == "spectral+lagrangian"
    history = json.loads(ds.attrs["method_history"])
    assert history[0][1] == "spectral" and history[-1][1] == "lagrangian"
    assert np.isfinite(ds.attrs["resolution_check_atom_mass"])
    assert main(["info", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("accuracy:")


def test_a_trapped_grid_run_is_flagged(tmp_path, capsys):
    """The fv grid holds three atoms of pure-attention ascent in their cells (paper_s1_ascent_attention
    at N = 256): stationary for the stop rule, but the exact velocity of the final measure still
    moves them (three atoms 120 degrees apart attract each other): the verdict says so."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "trap.nc"
    assert main(["run", str(root / "runs" / "paper_s1_ascent_attention.toml"), "-o", str(out),
                 "--no-progress", "--set", 'time.scheme="fv"', "--set", "domain.resolution=256"]) == 0
    import solvers

    ds = solvers.open_run(out)
    assert ds.attrs["verdict_trusted"] == 0
    assert "still moves" in ds.attrs["verdict_warnings"]
    assert ds.attrs["max_atom_speed"] > 1e-4
