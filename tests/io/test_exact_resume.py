"""A run stopped at a record, or killed at any point of a block's write, resumes bitwise.

The resume continues from the exact state the archive keeps in its two alternating slots
(:mod:`solvers.io.resume_slots`): the default method's Lagrangian cells (not rebuilt from the
archived grid density), the fv grid's step state behind an interpolated record, a Dirac
state's atoms and counters. Reference: the same run uninterrupted; every variable must be
equal bitwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import paper_s1_toml

from solvers.io import resume_slots
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run, read_last_state
from solvers.io.state import grid_arrays, initial_state
from solvers.model.config import config_from_text
from solvers.timestepping.loop import simulate

ROOT = Path(__file__).resolve().parents[2]
INITIAL = '[initial]\nkind = "uniform"\nmodes = [[1, 0.05], [3, 0.02]]\n'
# the default method: spectral, then (t = 0.01) Lagrangian cells, with a Dirac atom from t = 12;
# a short stationarity window, so that the stop rule's verdicts depend on the records before a
# resume (the archive keeps its window)
WINDOW = "stationary_window_time = 3.0\n"
DEFAULT = paper_s1_toml(128, 5.0, t_end=16.0, snapshot_interval=0.5, time_keys=WINDOW,
                        extra="progress = false\n" + INITIAL)
FV_DIRAC = paper_s1_toml(128, 5.0, t_end=16.0, snapshot_interval=0.5,
                         time_keys=WINDOW + 'scheme = "fv"',
                         extra='progress = false\n[atoms]\nrepresentation = "dirac"\n' + INITIAL)


def _run(text: str, path: Path, stop_after: float | None = None) -> None:
    """The run of ``text`` into ``path``: whole, or stopped right after its record at
    ``stop_after`` (one snapshot per batch, so the stop comes before the next step; the
    interrupted run's own last snapshot, after an interpolated record, is not archived)."""
    config = config_from_text(text, [])
    theta, weight, _ = grid_arrays(config)
    rho0, atoms0 = initial_state(config)
    seen = []
    with ArchiveWriter(path, config, theta, weight) as writer:
        def track(snap):
            if stop_after is None or not seen or seen[-1] < stop_after:
                writer(snap)
            seen.append(snap.t)

        stop = (lambda: bool(seen) and seen[-1] >= stop_after) if stop_after else None
        result = simulate(config, rho0, atoms0=atoms0, trackers=[track], stop=stop, batch=1)
    assert result.reason == ("interrupted" if stop_after else "t_end")


def _resume(text: str, path: Path) -> str:
    """Resume ``path`` from its exact slot state, to ``time.t_end``; the method then."""
    config = config_from_text(text, [])
    theta, weight, _ = grid_arrays(config)
    t = read_last_state(path)[0]
    exact = resume_slots.exact_start(path, t)
    assert exact is not None, "the archive holds no exact resume state for its last record"
    with ArchiveWriter(path, config, theta, weight, append=True) as writer:
        simulate(config, np.zeros(theta.shape), t0=exact.t, step0=exact.step, dt0=exact.dt,
                 after=t, trackers=[writer], exact=exact)
    return "cells" if exact.state[-1] == 1.0 else "spectral"


def _valid_slot(path: Path) -> np.ndarray:
    """The archive's valid resume slot (:func:`resume_slots.valid_vector`)."""
    vector = resume_slots.valid_vector(open_run(path), read_last_state(path)[0])
    assert vector.size, "no valid resume slot"
    return vector


def _assert_same(a: Path, b: Path) -> None:
    """Every variable of the archives ``a`` and ``b`` equal bitwise (NaN equals NaN), and
    their valid resume slots."""
    da, db = open_run(a).load(), open_run(b).load()
    assert set(da.variables) == set(db.variables)
    for name in set(da.variables) - set(resume_slots.SLOTS):
        x, y = da[name].values, db[name].values
        assert x.shape == y.shape and x.dtype == y.dtype, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f"{name} differs"
    assert np.array_equal(_valid_slot(a), _valid_slot(b), equal_nan=True)


@pytest.mark.parametrize("suffix", [".nc", pytest.param(".zarr", marks=pytest.mark.slow)])
def test_default_method_stopped_in_its_cells_phase_resumes_bitwise(tmp_path, suffix):
    whole, part = tmp_path / f"whole{suffix}", tmp_path / f"part{suffix}"
    _run(DEFAULT, whole)
    _run(DEFAULT, part, stop_after=13.0)
    assert read_last_state(part)[0] == 13.0
    assert open_run(part)["dirac_mass"][-1].notnull().any()  # a Dirac atom when it stopped
    assert (open_run(whole)["stationary_window"] == 1).sum() > 20  # the window spans a resume
    assert _resume(DEFAULT, part) == "cells"  # the Lagrangian cells, restored as they were
    _assert_same(part, whole)


def test_fv_dirac_run_stopped_mid_way_resumes_bitwise(tmp_path):
    whole, part = tmp_path / "whole.nc", tmp_path / "part.nc"
    _run(FV_DIRAC, whole)
    _run(FV_DIRAC, part, stop_after=13.0)
    assert open_run(part)["dirac_mass"][-1].notnull().any()
    _resume(FV_DIRAC, part)
    _assert_same(part, whole)


def test_slot_vector_round_trips_and_rejects_damage():
    from solvers.core.snapshot import RunState

    r = RunState(1.5, 12, 0.01, np.arange(9.0), 3, 1e-7, 0.02, 1.0, (4.0, 1e-14),
                    np.array([0.5, -np.inf, 1.0]))
    tracks = {"atom_birth_time": np.array([0.5, 1.0]), "atom_end_time": np.array([np.nan, 1.5]),
              "atom_parent": np.array([-1, 0], np.int32), "atom_merged_into": np.array([1, -1], np.int32),
              "atom_cell": np.arange(5, dtype=np.int32)}
    v = resume_slots.encode(r, 1.5, tracks)
    found = resume_slots.decode(v)
    assert found["after"] == 1.5 and found["resume"].step == 12 and found["resume"].extras == (4.0, 1e-14)
    assert np.array_equal(found["resume"].state, r.state)
    assert np.array_equal(found["tracks"]["atom_end_time"], tracks["atom_end_time"], equal_nan=True)
    assert np.array_equal(found["atom_cell"], np.arange(5))
    assert np.array_equal(found["resume"].rule, r.rule)
    assert resume_slots.decode(v[:-1]) is None  # cut short: its lengths do not fit
    assert resume_slots.decode(np.full(v.size, np.nan)) is None  # never written


# a `meanfield run` that exits (as if killed) inside block K's write: at its marker (records
# and state written, not yet counted) or at its count (kill_resume.py's hook); every record
# its own block (sync_interval = 0)
def _killed_run(cfg: Path, out: Path, block: int, point: str) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from kill_resume import BETWEEN
    finally:
        sys.path.pop(0)
    env = dict(os.environ, PYTHONPATH=str(ROOT), KILL_AT_BLOCK=str(block), KILL_AT_ATTRIBUTE=point)
    proc = subprocess.run([sys.executable, "-c", BETWEEN, "run", str(cfg), "-o", str(out),
                           "--no-check"], cwd=cfg.parent, env=env, capture_output=True, text=True)
    assert proc.returncode == 137, proc.stderr[-600:]


def _cli(*args: str, cwd: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "solvers", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-600:]


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
@pytest.mark.parametrize("text", [DEFAULT, FV_DIRAC], ids=["default", "fv-dirac"])
@pytest.mark.parametrize("block,point", [(9, "records_written"), (14, "records_complete")])
def test_run_killed_inside_a_block_write_resumes_bitwise(tmp_path, suffix, text, block, point):
    cfg = tmp_path / "run.toml"
    cfg.write_text(text.replace("progress = false\n", "progress = false\nsync_interval = 0\n"))
    whole, killed = tmp_path / f"whole{suffix}", tmp_path / f"killed{suffix}"
    _cli("run", str(cfg), "-o", str(whole), "--no-check", cwd=tmp_path)
    _killed_run(cfg, killed, block, point)
    _cli("run", "--resume", str(killed), "--no-check", cwd=tmp_path)
    _assert_same(killed, whole)
