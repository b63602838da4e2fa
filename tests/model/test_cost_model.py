"""The cost estimate counts the steps the step-size rule really takes (measured here on one
S^1 and one S^2 run), times a step once per machine and key (cached), and counts the verdict's
companion runs against the cores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import solvers.model.cost as cost
from solvers.io.state import initial_state
from solvers.model.config import load_config
from solvers.model.step_count import expected_steps, span_steps, stop_time
from solvers.studies import step_timing
from solvers.timestepping.loop import simulate

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "runs"
# the long S^1 fv run of issue 51: 4556 steps (estimated 1.39e6 and refused before)
LONG_FV = ["time.scheme=\"fv\"", "domain.resolution=2048", "time.t_end=20000",
           "time.stop_when_stationary=false"]


def measured_steps(name: str, sets: list[str]) -> tuple[int, float]:
    """``(steps, estimated steps)`` of ``runs/name.toml`` with ``sets``, run here."""
    config = load_config(RUNS / f"{name}.toml", sets)
    rho0, atoms0 = initial_state(config)
    result = simulate(config, rho0, atoms0=atoms0)
    assert result.reason == "t_end"
    return result.final.step, expected_steps(config)


@pytest.mark.parametrize("name, sets", [
    ("demo", ["domain.resolution=256", "time.t_end=600"]),  # S^1 default: 507 steps
    ("s2_descent_relu", ["domain.resolution=31", "time.t_end=500"]),  # S^2 fv Dirac: 144
], ids=["S1 spectral+lagrangian", "S2 fv dirac"])
def test_the_estimated_steps_are_within_3x_of_a_measured_count(name: str, sets: list[str]) -> None:
    steps, estimate = measured_steps(name, sets)
    assert steps / 3 <= estimate <= 3 * steps, (steps, estimate)


def test_the_long_fv_run_of_issue_51_is_counted_and_not_refused() -> None:
    """4556 real steps (75 s then, 5 s now on the 2-core machine): the estimate is within 3x
    and far below the budget."""
    config = load_config(RUNS / "paper_s1_descent.toml", LONG_FV)
    assert 4556 / 3 <= expected_steps(config) <= 3 * 4556
    assert cost.check_cost(config).total_s < 600


def test_fixed_steps_snapshots_and_a_resume_count_what_is_left() -> None:
    fixed = load_config(RUNS / "demo.toml", ["time.dt=0.5", "time.stop_when_stationary=false"])
    assert expected_steps(fixed) == pytest.approx(10_000)
    assert expected_steps(fixed, t0=2500.0) == pytest.approx(5_000)
    assert span_steps(100.0, 3.0, 10.0) == 10 * 4  # each snapshot time ends a step
    config = load_config(RUNS / "paper_s1_descent.toml", LONG_FV)
    first = load_config(RUNS / "paper_s1_descent.toml", [*LONG_FV, "time.t_end=10000"])
    late = expected_steps(config, t0=10000.0)  # past the CFL-bound start: rate-bound steps
    assert late == 1000 * 2  # ceil(10 / 9) per snapshot interval
    assert expected_steps(config) == pytest.approx(expected_steps(first) + late)
    assert expected_steps(first) > late  # the start, 0.3 N steps at the CFL bound


def test_an_s2_run_that_stops_as_stationary_counts_to_its_expected_stop() -> None:
    config = load_config(RUNS / "paper_s2_ascent_relu.toml")
    assert stop_time(config) < config.time.t_end / 5  # stops near t = 120-165 (docstring)
    never = load_config(RUNS / "paper_s2_ascent_relu.toml", ["time.stop_when_stationary=false"])
    assert stop_time(never) == never.time.t_end
    assert expected_steps(never) > 5 * expected_steps(config)


def test_the_step_timing_is_written_once_and_reused(tmp_path: Path, monkeypatch) -> None:
    config = load_config(RUNS / "demo.toml", ["domain.resolution=128", "time.t_end=50"])
    path = tmp_path / "cache" / "step_timing.json"
    first = step_timing.ensure_step_timing(config, path)
    assert first is not None and 0 < first < 0.1
    assert json.loads(path.read_text()) == {cost.step_key(config): first}
    written = path.stat().st_mtime_ns

    def no_probe(*args, **kwargs):
        raise AssertionError("timed again")

    monkeypatch.setattr(step_timing, "time_step", no_probe)
    assert step_timing.ensure_step_timing(config, path) == first
    assert path.stat().st_mtime_ns == written
    assert cost.step_seconds(config, path) == (first * cost.STEP_FACTOR["S1", "spectral+lagrangian"],
                                               True)
    other = load_config(RUNS / "demo.toml", ["domain.resolution=64"])
    assert cost.step_seconds(other, path) == (cost.fallback_step_seconds(other), False)


def test_a_huge_grid_is_not_timed(tmp_path: Path) -> None:
    """The constants put its step above a second: no probe (its grid is never built)."""
    config = load_config(RUNS / "s2_descent_relu.toml", ["domain.resolution=1023"])
    path = tmp_path / "step_timing.json"
    assert step_timing.ensure_step_timing(config, path) is None
    assert not path.exists()


def test_the_companions_count_against_the_cores(monkeypatch) -> None:
    """The verdict's check runs (solvers.studies.verdict_runs.check_runs, as the companions
    start them): the resolution check, the time check (S^2 fv: the quarter with halved step
    bounds) and the ladder's quarter; beside the main run on two cores, after
    it on one."""
    from solvers.model.step_count import expected_steps
    from solvers.studies.verdict_runs import check_runs

    fv = load_config(RUNS / "s2_descent_relu.toml")
    checks = check_runs(fv)
    assert [c.domain.resolution for c in checks] == [63, 31, 31]
    timed, quarter = checks[1], checks[2]
    assert timed.time.rate_factor == quarter.time.rate_factor / 2
    # halved bounds: more steps, at most twice (steps also end on each snapshot time)
    assert 1.3 * expected_steps(quarter) < expected_steps(timed) <= 2 * expected_steps(quarter)
    assert [c.domain.resolution for c in check_runs(load_config(RUNS / "demo.toml"))] == [256, 128]
    fv = load_config(RUNS / "s2_descent_relu.toml")
    for cores in (1, 2):
        monkeypatch.setattr(cost, "usable_cores", lambda cores=cores: cores)
        est = cost.estimate_cost(fv, checks)
        alone = cost.estimate_cost(fv)
        assert len(est.checks_s) == 3 and alone.checks_s == ()
        busy = est.main_s + sum(est.checks_s) if cores == 1 else \
            max(est.main_s, *est.checks_s, (est.main_s + sum(est.checks_s)) / 2)
        assert est.total_s == pytest.approx(cost.START_S + busy)
        assert alone.total_s == pytest.approx(cost.START_S + alone.main_s)


def test_a_timing_far_above_the_constants_is_not_kept(tmp_path: Path, monkeypatch) -> None:
    """A probe that met a compilation (seconds for a millisecond step) leaves the constants."""
    config = load_config(RUNS / "demo.toml", ["domain.resolution=128", "time.t_end=50"])
    path = tmp_path / "step_timing.json"
    slow = (cost.PROBE_MAX_RATIO + 1) * cost.fallback_step_seconds(config)
    monkeypatch.setattr(step_timing, "time_step", lambda *args, **kwargs: slow)
    assert step_timing.ensure_step_timing(config, path) is None
    assert not path.exists()
    assert cost.step_seconds(config, path) == (cost.fallback_step_seconds(config), False)


def test_a_cached_timing_far_above_the_constants_is_not_used(tmp_path: Path) -> None:
    """A cache written by a probe that met a compilation is timed again, not believed."""
    config = load_config(RUNS / "demo.toml", ["domain.resolution=128", "time.t_end=50"])
    path = tmp_path / "step_timing.json"
    step_timing.write_timing(path, cost.step_key(config),
                             (cost.PROBE_MAX_RATIO + 1) * cost.fallback_step_seconds(config))
    assert cost.cached_step_seconds(config, path) is None
    fresh = step_timing.ensure_step_timing(config, path)
    assert fresh is not None and cost.cached_step_seconds(config, path) == fresh


def test_the_timing_cache_follows_no_link(tmp_path: Path) -> None:
    """A link at the cache's path is not written through: the timing is used, not kept."""
    config = load_config(RUNS / "demo.toml", ["domain.resolution=128", "time.t_end=50"])
    victim = tmp_path / "victim.txt"
    victim.write_text("a user's file\n")
    path = tmp_path / "step_timing.json"
    path.symlink_to(victim)
    assert step_timing.ensure_step_timing(config, path) is not None
    assert victim.read_text() == "a user's file\n" and path.is_symlink()
