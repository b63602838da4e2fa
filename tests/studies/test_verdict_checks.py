"""The verdict's Richardson time check and its three-level resolution ladder: each must flag
the case it exists for and pass the case it must pass (solvers.studies.verdict)."""

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DEMO_SMALL

from solvers.model.config import load_config
from solvers.studies.verdict import (MASS_TOL, coarse_config, judge, ladder_config,
                                     richardson_factor, time_check_config)

FV_SMALL = ['time.scheme="fv"', "domain.resolution=512"]  # DEMO_SMALL on the fv grid


def fv_config():
    return load_config(DEMO_SMALL, FV_SMALL)


def _snap(masses, positions, t=40.0):
    diag = SimpleNamespace(atom_mass=np.asarray(masses, float), atom_position=np.asarray(positions, float),
                           diffuse_mass=0.0, mass=1.0)
    return SimpleNamespace(t=t, diagnostics=diag)


def _runs(config, levels):
    """A ``coarse`` callable: the atoms of each check run, picked by its config."""
    half, timed, quarter = coarse_config(config), time_check_config(config), ladder_config(config)

    def coarse(check, t):
        for cfg, key in ((timed, "time"), (quarter, "quarter"), (half, "half")):
            if cfg is not None and check == cfg:
                return _snap(*levels[key])
        raise AssertionError(f"unexpected check run at {check.domain.resolution}")
    return coarse


def test_the_time_check_is_the_coarsest_level_with_every_step_bound_halved():
    config = fv_config()
    check = time_check_config(config)
    assert check.domain == ladder_config(config).domain  # the quarter: 128
    assert check.time.rate_factor == config.time.rate_factor / 2
    assert check.time.cfl == pytest.approx(config.time.cfl / 2)
    assert richardson_factor(config) == pytest.approx(4 / 3)  # ssprk10_2: order 2
    # error-controlled steps estimate their own error: no time check
    assert time_check_config(load_config(DEMO_SMALL, ["domain.resolution=512"])) is None


@pytest.mark.parametrize("shift,flagged", [(1e-5, False), (2e-3, True)])
def test_the_time_check_flags_a_large_time_error_and_passes_a_small_one(shift, flagged):
    config = fv_config()
    atoms = ([0.6, 0.4], [0.5, 3.0])
    levels = {"half": atoms, "quarter": atoms, "time": ([0.6 + shift, 0.4 - shift], [0.5, 3.0])}
    verdict = judge(config, _snap(*atoms), "stationary", coarse=_runs(config, levels), atom_speed=0.0)
    assert verdict.time_error == pytest.approx(4 / 3 * shift)
    assert "Richardson estimate" in verdict.time_control
    assert any("time error" in w for w in verdict.warnings) == flagged
    assert verdict.trusted == (not flagged)
    assert verdict.attributes()["time_check_resolution"] == 128


def test_an_atom_count_that_depends_on_the_time_step_is_flagged():
    config = fv_config()
    atoms = ([0.6, 0.4], [0.5, 3.0])
    levels = {"half": atoms, "quarter": atoms, "time": ([1.0], [0.5])}
    verdict = judge(config, _snap(*atoms), "stationary", coarse=_runs(config, levels), atom_speed=0.0)
    assert any("depends on the time step" in w for w in verdict.warnings)


@pytest.mark.parametrize("d1,d2,bar", [
    (2e-4, 1e-4, 2e-4),    # converging: the last difference is the bar
    (2e-4, 3e-3, 1.5e-3),  # a lucky small d1 after a large d2: half of d2 is the bar (flagged)
])
def test_the_ladder_bar_is_the_larger_of_d1_and_half_of_d2(d1, d2, bar):
    config = fv_config()
    fine = ([0.6, 0.4], [0.5, 3.0])
    half = ([0.6 + d1, 0.4 - d1], [0.5, 3.0])
    quarter = ([0.6 + d1 + d2, 0.4 - d1 - d2], [0.5, 3.0])
    levels = {"half": half, "quarter": quarter, "time": quarter}
    verdict = judge(config, _snap(*fine), "stationary", coarse=_runs(config, levels), atom_speed=0.0)
    assert verdict.ladder_resolution == ladder_config(config).domain.resolution == 128
    assert verdict.atom_mass_error == pytest.approx(bar)
    assert any("under-resolved" in w for w in verdict.warnings) == (bar > MASS_TOL)
    assert "against 256 and 128" in "\n".join(verdict.lines())


def test_a_quarter_level_with_another_atom_count_is_not_used():
    config = fv_config()
    atoms = ([0.6, 0.4], [0.5, 3.0])
    levels = {"half": atoms, "quarter": ([1.0], [0.5]), "time": ([1.0], [0.5])}
    verdict = judge(config, _snap(*atoms), "stationary", coarse=_runs(config, levels), atom_speed=0.0)
    assert verdict.trusted and verdict.ladder_mass is None
    assert "1 atoms at 128: that level is not used" in "\n".join(verdict.lines())


@pytest.mark.slow
def test_the_richardson_estimate_bounds_the_time_error_of_a_finer_run(tmp_path):
    """The demo on the fv grid (order-2 SSP steps bound by the CFL and rate conditions) to
    t = 400: its atoms against the same run with every step bound quartered. The estimate
    (made at the check's resolution 128) must bound that distance, and not by orders of
    magnitude."""
    from pathlib import Path

    import solvers

    demo = Path(__file__).resolve().parents[2] / "runs" / "demo.toml"
    kw = dict(time__scheme="fv", domain__resolution=256, time__t_end=400.0,
              time__stop_when_stationary=False)
    ds = solvers.run(demo, path=tmp_path / "run.nc", **kw)
    estimate = float(ds.attrs["time_error_estimate"])
    cfl = solvers.load_config(demo, **kw).time.cfl
    fine = solvers.run(demo, path=tmp_path / "fine.nc", time__cfl=cfl / 4,
                       time__rate_factor=0.25, **kw)
    m, m_fine = ds["atom_mass"].values[-1], fine["atom_mass"].values[-1]
    keep = np.isfinite(m) & np.isfinite(m_fine)
    actual = float(np.max(np.abs(m[keep] - m_fine[keep])))
    assert keep.sum() >= 4
    assert actual <= estimate <= 30 * actual


def test_a_run_stopped_before_stationarity_is_trusted_and_says_its_state(tmp_path):
    """The demo stopped at t = 1000, before its stationary stop (t = 2140): its atoms at that
    time agree across N = 512, 256 and 128, so the accuracy is trusted, and the state says
    they are not yet stationary (printed, and archived apart)."""
    from pathlib import Path

    import solvers

    demo = Path(__file__).resolve().parents[2] / "runs" / "demo.toml"
    ds = solvers.run(demo, path=tmp_path / "early.nc", time__t_end=1000.0)
    assert ds.attrs["verdict_trusted"] == 1 and ds.attrs["verdict_warnings"] == ""
    assert ds.attrs["verdict_stationary"] == 0
    assert ds.attrs["verdict_state"].startswith("state: not yet stationary at t = 1000 (the run "
                                                "ended at t_end)")
    assert ds.attrs["verdict"].startswith("accuracy: trusted")
    assert ds.attrs["verdict"].endswith(ds.attrs["verdict_state"])
