"""Snapshots made in batches (solvers.timestepping.snapshot_queue): a run hands its trackers
the same snapshots, writes the same archive and returns the same result as a run that makes
each snapshot as it passes its time (``batch=1``), whatever ends it: t_end, stationarity in
the middle of a batch, max_steps, stop(), or an error in a step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import paper_s1_toml

import solvers
from solvers.io import resume_slots
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run
from solvers.io.state import grid_arrays, initial_density
from solvers.model.params import RunConfig
from solvers.timestepping import simulation
from solvers.timestepping.loop import RunResult, simulate
from solvers.core.snapshot import Tracker
from solvers.timestepping.simulation import Solver

# the fv grid, with steps of about 1.4 time units once clusters form: several (interpolated)
# snapshots per step; the default method (time.scheme = "auto") lands its snapshots and takes
# smaller steps (test_batches_on_other_states runs it)
BASE = paper_s1_toml(128, 5.0, t_end=400.0, snapshot_interval=0.5,
                     time_keys='scheme = "fv"\nstop_when_stationary = true\nstationary_tol = 1e-2\n'
                               "stationary_mass_rate = 1e-4\nstationary_window_time = 5.0",
                     extra='progress = false\n[initial]\nkind = "uniform"\nmodes = [[3, 0.1]]\n')


def _archived(tmp_path: Path, cfg: RunConfig, batch: int, **kw) -> tuple[RunResult, xr.Dataset]:
    path = tmp_path / f"run_{batch}.nc"
    theta, weight, phi = grid_arrays(cfg)
    with ArchiveWriter(path, cfg, theta, weight, phi=phi, overwrite=True) as writer:
        result = simulate(cfg, initial_density(cfg), trackers=[writer], batch=batch, **kw)
    return result, open_run(path).load()


def _assert_same_runs(a: tuple[RunResult, xr.Dataset], b: tuple[RunResult, xr.Dataset]) -> None:
    (ra, da), (rb, db) = a, b
    assert (ra.reason, ra.n_steps, ra.final.t, ra.final.step) == \
        (rb.reason, rb.n_steps, rb.final.t, rb.final.step)
    np.testing.assert_array_equal(ra.final.rho, rb.final.rho)
    assert set(da.data_vars) == set(db.data_vars)
    for name in set(da.data_vars) - set(resume_slots.SLOTS):  # (which slot: the blocks')
        np.testing.assert_array_equal(da[name].values, db[name].values, err_msg=name)
    last = float(da["time"][-1])
    np.testing.assert_array_equal(resume_slots.valid_vector(da, last),
                                  resume_slots.valid_vector(db, last))
    for name in ("restart_time", "restart_step", "restart_dt"):
        assert da["restart_rho"].attrs.get(name) == db["restart_rho"].attrs.get(name)


@pytest.mark.parametrize("overrides", [
    {},  # stationary in the middle of a batch, interpolated snapshots
    {"time__dt": 0.25, "time__t_end": 60.0},  # landed snapshots, to t_end
    {"time__stop_when_stationary": False, "time__t_end": 97.3},  # t_end between two multiples
    {"time__max_steps": 77},
    {"output__spectral": True, "time__t_end": 50.0},
], ids=["stationary", "landed", "t_end", "max_steps", "spectral"])
def test_batches_write_the_archive_of_single_snapshots(tmp_path: Path, overrides) -> None:
    cfg = solvers.load_config(BASE, **overrides)
    single, batched = _archived(tmp_path, cfg, 1), _archived(tmp_path, cfg, 64)
    _assert_same_runs(single, batched)
    if not overrides:
        assert batched[0].reason == "stationary" and batched[0].final.t < 400.0


def test_the_stationary_stop_drops_the_rest_of_the_batch(monkeypatch) -> None:
    """The run ends at the stationary snapshot: the trackers never see the ones queued after
    it, and the result's step count is that snapshot's, though the batched run stepped on."""
    cfg = solvers.load_config(BASE)
    seen: dict[int, list[float]] = {1: [], 64: []}
    taken = dict.fromkeys(seen, 0)
    step = Solver.step

    def counted(self, t_stop):
        taken[batch] += 1
        return step(self, t_stop)

    monkeypatch.setattr(Solver, "step", counted)
    for batch in seen:
        result = simulate(cfg, initial_density(cfg), trackers=[lambda s, b=batch: seen[b].append(s.t)],
                          batch=batch)
        assert result.reason == "stationary" and seen[batch][-1] == result.final.t
        assert result.n_steps == result.final.step
    assert seen[1] == seen[64]
    assert taken[1] == result.n_steps < taken[64]


def test_stop_request_ends_the_run_after_the_queued_snapshots(tmp_path: Path) -> None:
    cfg = solvers.load_config(BASE, time__stop_when_stationary=False)
    runs = []
    for batch in (1, 64):
        calls = iter(range(10_000))
        runs.append(_archived(tmp_path, cfg, batch, stop=lambda: next(calls) >= 120))
    _assert_same_runs(*runs)
    assert runs[0][0].reason == "interrupted"


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_error_in_a_step_comes_after_the_queued_snapshots(monkeypatch, error) -> None:
    """A step that raises: the trackers have seen every snapshot before it, then the error
    propagates (as when each snapshot is made as its time is passed)."""
    cfg = solvers.load_config(BASE, time__stop_when_stationary=False)
    step = Solver.step

    def failing(self, t_stop):
        if self.n_steps == 90:
            raise error("step 91")
        return step(self, t_stop)

    monkeypatch.setattr(Solver, "step", failing)
    seen: dict[int, list[float]] = {1: [], 64: []}
    for batch in seen:
        with pytest.raises(error, match="step 91"):
            simulate(cfg, initial_density(cfg), trackers=[lambda s, b=batch: seen[b].append(s.t)],
                     batch=batch)
    assert len(seen[1]) > 20 and seen[1] == seen[64]


def test_a_blow_up_in_a_queued_snapshot_is_raised_after_the_ones_before_it(monkeypatch) -> None:
    cfg = solvers.load_config(BASE, time__stop_when_stationary=False)
    check = Solver.check_state

    def strict(self, snap):
        if snap.t >= 7.0:
            raise simulation.BlowUpError(f"at t={snap.t}")
        check(self, snap)

    monkeypatch.setattr(Solver, "check_state", strict)
    seen: list[float] = []
    with pytest.raises(simulation.BlowUpError, match="at t=7.0"):
        simulate(cfg, initial_density(cfg), trackers=[seen.append], batch=64)
    assert [s.t for s in seen] == list(np.arange(0.0, 7.0, 0.5))


def test_a_batch_tracker_gets_batches_and_a_plain_one_each_snapshot() -> None:
    cfg = solvers.load_config(BASE, time__stop_when_stationary=False, time__t_end=60.0)

    class Many(Tracker):
        def __init__(self) -> None:
            self.batches: list[list[float]] = []

        def __call__(self, snap) -> None:
            raise AssertionError("track_many is there")

        def track_many(self, snaps) -> None:
            self.batches.append([s.t for s in snaps])

    many, plain = Many(), []
    simulate(cfg, initial_density(cfg), trackers=[many, lambda s: plain.append(s.t)])
    assert sum(many.batches, []) == plain == list(np.arange(0.0, 60.5, 0.5))
    assert max(len(b) for b in many.batches) > 1


S2 = ('[domain]\nmanifold = "S2"\nresolution = 31\n[model]\nbeta = 1.0\ndirection = "descent"\n'
      '[perceptron]\nactivation = "relu"\na = [[0.3, -0.2, 0.9]]\nomega = [1.0]\n'
      '[initial]\nkind = "uniform"\nmodes = [[2, 1, 0.1]]\n'
      '[time]\nt_end = 3.0\n[output]\nsnapshot_interval = 0.1\nprogress = false\n')


@pytest.mark.parametrize("config", [
    (BASE, {"atoms__representation": "dirac", "time__t_end": 60.0,
            "time__stop_when_stationary": False}),
    (BASE, {"time__scheme": "auto", "time__t_end": 60.0,  # spectral, then Lagrangian cells
            "time__stop_when_stationary": False}),
    (S2, {}),
    (S2, {"domain__resolution": 63, "time__t_end": 1.0}),  # compiled stage combinations
    (S2, {"atoms__representation": "dirac", "time__t_end": 1.0}),
], ids=["s1-dirac", "s1-default", "s2", "s2-63", "s2-dirac"])
def test_batches_on_other_states(tmp_path: Path, config) -> None:
    cfg = solvers.load_config(config[0], **config[1])
    _assert_same_runs(_archived(tmp_path, cfg, 1), _archived(tmp_path, cfg, 64))


def test_batched_diagnostics_are_those_of_each_state() -> None:
    """CircleDiscretization.diagnostics_batch: bitwise the diagnostics of each state."""
    cfg = solvers.load_config(BASE, time__stop_when_stationary=False, time__t_end=80.0)
    states: list[np.ndarray] = []
    simulate(cfg, initial_density(cfg), trackers=[lambda s: states.append(s.rho)], batch=1)
    disc = Solver(cfg, initial_density(cfg)).disc
    batch = disc.diagnostics_batch(states[::7], cfg.atoms)
    for state, got in zip(states[::7], batch):
        want = disc.diagnostics(state, cfg.atoms)
        for name in want.__dataclass_fields__:
            a, b = getattr(want, name), getattr(got, name)
            if a is None:
                assert b is None, name
            else:
                np.testing.assert_array_equal(a, b, err_msg=name)
    assert any(d.n_atoms > 1 for d in batch)


def test_queue_rejects_an_empty_batch() -> None:
    cfg = solvers.load_config(BASE)
    with pytest.raises(ValueError, match="batch"):
        simulate(cfg, initial_density(cfg), batch=0)


def test_a_step_past_more_snapshot_times_than_a_batch(tmp_path: Path) -> None:
    """Steps of about a time unit and snapshots every 0.05: a batch of 3 is made inside the
    loop over the snapshot times one step passes."""
    cfg = solvers.load_config(BASE, output__snapshot_interval=0.05, time__t_end=40.0,
                              time__stop_when_stationary=False)
    single, small = _archived(tmp_path, cfg, 1), _archived(tmp_path, cfg, 3)
    _assert_same_runs(single, small)
    assert small[1].sizes["time"] == 801 and small[0].n_steps < 400
