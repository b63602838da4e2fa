"""solvers.run / resume / open_run / load_config against the CLI's archive and invariants."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import PAPER_S1_WEIGHTS_TOML

import solvers

CONFIG = f"""
[domain]
manifold = "S1"
resolution = 64
[model]
beta = 2.0
direction = "descent"
kernel = "exp_shifted"
[perceptron]
activation = "relu"
{PAPER_S1_WEIGHTS_TOML}
[initial]
kind = "uniform"
[time]
t_end = 4.0
stop_when_stationary = false
[output]
snapshot_interval = 1.0
progress = false
"""


def test_public_surface():
    assert set(solvers.__all__) >= {"run", "resume", "open_run", "load_config", "simulate"}
    assert isinstance(solvers.__version__, str) and solvers.__version__
    with pytest.raises(AttributeError):
        solvers.no_such_thing  # noqa: B018


def test_run_in_memory_equals_written_archive(tmp_path):
    ds = solvers.run(CONFIG)
    path = tmp_path / "run.nc"
    written = solvers.run(CONFIG, path=path)
    assert path.is_file()
    on_disk = solvers.open_run(path)
    assert set(ds.data_vars) == set(on_disk.data_vars) and ds.sizes == on_disk.sizes
    np.testing.assert_array_equal(ds["rho"].values, on_disk["rho"].values)  # deterministic
    np.testing.assert_array_equal(written["time"].values, np.arange(5.0))
    assert ds.attrs["stop_reason"] == "t_end"
    assert np.all(np.abs(ds["mass"].values - 1.0) < 1e-12)


def test_overrides_as_keywords_and_dicts():
    a = solvers.load_config(CONFIG, model__beta=3.5, **{"time.t_end": 2.0})
    assert a.model.beta == 3.5 and a.time.t_end == 2.0
    assert solvers.load_config(a).model.beta == 3.5  # a RunConfig re-reads its text
    with pytest.raises(solvers.ConfigError, match="section"):
        solvers.load_config(CONFIG, beta=3.0)
    doc = {"domain": {"manifold": "S1", "resolution": 32}, "model": {"beta": 1.0}}
    assert solvers.load_config(doc).domain.resolution == 32


def test_resume_dataset_equals_one_long_run():
    """Stopping at t = 2 and resuming to t = 4 gives the uninterrupted run's snapshots, bitwise
    (the archive keeps the step the controller proposes next); the fv grid here, the default
    method in tests/io/test_exact_resume.py."""
    whole = solvers.run(CONFIG, time__scheme="fv")
    first = solvers.run(CONFIG, time__t_end=2.0, time__scheme="fv")
    more = solvers.resume(first, t_end=4.0)
    np.testing.assert_array_equal(more["time"].values, whole["time"].values)
    np.testing.assert_array_equal(more["rho"].values, whole["rho"].values)


def test_resume_continues_the_bookkeeping(tmp_path):
    """A resume of the default method continues the time-error estimate, the rejected steps and the method history, from a file
    and from a Dataset alike; the Dataset's verdict is the whole run's, as the file's."""
    path = tmp_path / "run.nc"
    first = solvers.run(CONFIG, path=path, time__t_end=2.0)
    on_disk = solvers.resume(path, t_end=4.0)
    in_memory = solvers.resume(first, t_end=4.0)
    for ds in (on_disk, in_memory):
        errors = ds["time_error_estimate"].values
        assert np.all(np.diff(errors) >= 0) and errors[2] == first["time_error_estimate"].values[-1]
        assert np.all(np.diff(ds["steps_rejected"].values) >= 0)
        assert ds.attrs["time_error_estimate"] == errors[-1] > errors[2]
        history = json.loads(ds.attrs["method_history"])
        assert history[:-1] == json.loads(first.attrs["method_history"])
        assert history[-1][0] == 2.0 and history[-1][2].startswith("resumed")
        assert "from t = 2:" in ds.attrs["verdict"]
    for key in ("verdict", "method_history", "time_error_estimate"):
        assert in_memory.attrs[key] == on_disk.attrs[key], key


def test_resume_path_appends(tmp_path):
    path = tmp_path / "run.nc"
    solvers.run(CONFIG, path=path, time__t_end=2.0)
    more = solvers.resume(path, t_end=3.0)
    assert float(more["time"][-1]) == 3.0
    assert solvers.open_run(path).sizes["time"] == more.sizes["time"] == 4


def test_resume_refuses_physics_changes():
    first = solvers.run(CONFIG, time__t_end=1.0)
    with pytest.raises(solvers.ConfigError, match="model.beta"):
        solvers.resume(first, t_end=2.0, model__beta=9.0)
    with pytest.raises(solvers.ConfigError, match="t_end"):
        solvers.resume(first, t_end=0.5)


def test_run_result_repr_is_short():
    cfg = solvers.load_config(CONFIG, time__t_end=1.0)
    result = solvers.simulate(cfg, solvers.initial_density(cfg))
    text = repr(result)
    assert text.startswith("RunResult(reason='t_end'") and len(text) < 300
