"""solvers.runner: the one pipeline of solvers.run / resume and meanfield run."""

from __future__ import annotations

import numpy as np
from test_api import CONFIG

import solvers
from solvers import runner
from solvers.io.reading import open_run
from solvers.studies.verdict import VERDICT_ATTRIBUTES


def test_handlers_see_every_snapshot_after_the_writer_and_the_verdict_is_archived(tmp_path):
    cfg = solvers.load_config(CONFIG)
    seen: list[float] = []
    with runner.Runner(cfg, runner.fresh_start(cfg)).open(tmp_path / "run.nc") as run:
        run.add_handler(lambda snap: seen.append(float(snap.t)))
        assert run.handlers[0] is run.writer and len(run.handlers) == 2
        outcome = run.run(check=False)
    assert outcome.result.reason == "t_end" and outcome.verdict is not None
    ds = open_run(tmp_path / "run.nc")
    assert np.array_equal(ds["time"].values, seen)  # the same snapshots as the archive's records
    assert set(VERDICT_ATTRIBUTES) <= set(ds.attrs)


def test_an_interrupted_run_has_no_verdict_and_resumes_from_its_archive(tmp_path):
    cfg = solvers.load_config(CONFIG)
    path = tmp_path / "run.nc"
    calls = iter(range(10**6))
    with runner.Runner(cfg, runner.fresh_start(cfg)).open(path) as run:
        outcome = run.run(stop=lambda: next(calls) >= 5, check=False)
    assert outcome.result.reason == "interrupted" and outcome.verdict is None
    assert not set(VERDICT_ATTRIBUTES) & set(open_run(path).attrs)
    start, text = runner.archived_start(path)
    assert text == cfg.text and start.after == float(open_run(path)["time"][-1])
    assert runner.grid_mismatch(cfg, start.rho, path) is None
    assert "state has shape (3,)" in runner.grid_mismatch(cfg, np.zeros(3), path)
    with runner.Runner(cfg, start).open(path, append=True) as run:
        assert run.run(check=False).result.reason == "t_end"
    assert float(open_run(path)["time"][-1]) == cfg.time.t_end
