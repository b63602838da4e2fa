"""Snapshots between free steps (output.snapshot_mode = "interpolate"): the steps do not depend
on the output times, each snapshot is the straight line between the two step states around it
(exact mass, rho >= 0), and a resume continues from the archived step state, bitwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import paper_s1_toml
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import solvers
from solvers.core.discretization import Discretization
from solvers.io.reading import read_restart
from solvers.model.config import ConfigError
from solvers.timestepping.snapshot_queue import snapshot_mode

ROOT = Path(__file__).resolve().parents[2]
# steps of about 1.4 time units by t = 40, several snapshots per step (the fv grid: interpolated
# snapshots are the grid's output mode; the default method lands its snapshots)
BASE = paper_s1_toml(128, 5.0, t_end=40.0, snapshot_interval=0.5,
                     time_keys='stop_when_stationary = false\nscheme = "fv"',
                     extra='progress = false\n[initial]\nkind = "uniform"\nmodes = [[3, 0.1]]\n')


def _run(**overrides) -> xr.Dataset:
    return solvers.run(BASE, **overrides)


def _without(ds: xr.Dataset, *times: float) -> xr.Dataset:
    return ds.sel(time=[t for t in ds["time"].values if t not in times])


values = arrays(np.float64, 40, elements=st.one_of(st.just(0.0), st.floats(0, 1e3), st.floats(0, 1e-300)))


@settings(max_examples=300, deadline=None)
@given(a=values, b=values, w=st.floats(1e-12, 1.0, exclude_max=True))
def test_interpolant_is_non_negative_and_keeps_the_mass(a, b, w):
    got = Discretization.interpolate(None, a, None, b, w)  # (a grid state's: no self needed)
    assert got.min() >= 0.0
    scale = max(a.sum(), b.sum(), 1e-300)
    assert abs(got.sum() - (a.sum() + w * (b.sum() - a.sum()))) <= 1e-13 * scale


def test_modes_resolve_by_scheme_steps_and_representation():
    cfg = solvers.load_config(BASE)
    assert snapshot_mode(cfg) == "interpolate"
    assert snapshot_mode(solvers.load_config(BASE, time__dt=0.01)) == "land"
    assert snapshot_mode(solvers.load_config(BASE, time__scheme="spectral")) == "land"
    assert snapshot_mode(solvers.load_config(BASE, atoms__representation="dirac")) == "interpolate"
    assert snapshot_mode(solvers.load_config(BASE, output__snapshot_mode="land")) == "land"
    with pytest.raises(ConfigError, match="output.snapshot_mode"):
        solvers.load_config(BASE, output__snapshot_mode="sometimes")


def test_steps_do_not_depend_on_the_snapshots():
    """Dense and sparse output take the same steps; their common records are equal bitwise."""
    dense, sparse = _run(), _run(output__snapshot_interval=10.0)
    assert dense.sizes["time"] == 81 and sparse.sizes["time"] == 5
    assert dense.attrs["n_steps"] == sparse.attrs["n_steps"]
    common = dense.sel(time=sparse["time"].values)
    np.testing.assert_array_equal(common["rho"].values, sparse["rho"].values)
    np.testing.assert_array_equal(np.sort(common["atom_mass"].values, axis=1),  # identities are
                                  np.sort(sparse["atom_mass"].values, axis=1))  # linked apart
    mass = (dense["rho"] * dense["cell_weight"]).sum("theta").values
    assert np.abs(mass - 1.0).max() < 1e-13 and float(dense["rho"].min()) >= 0.0


def _error(run: xr.Dataset, ref: xr.Dataset) -> float:
    """Largest relative max-norm distance of the records of ``run`` from those of ``ref``."""
    scale = np.abs(ref["rho"].values).max(axis=1)
    return float((np.abs(run["rho"].values - ref["rho"].values).max(axis=1) / scale).max())


def test_interpolated_snapshots_are_as_accurate_per_step_as_landed_ones():
    """Against a landed run with 16x smaller steps: free steps of half the size take as many
    steps as landed ones (115-116) and are as accurate; their error falls at about second order
    with the step (measured 9.6e-3, 3.4e-3, 3.8e-4 at cfl 0.4, 0.2, 0.1)."""
    ref = _run(output__snapshot_mode="land", time__cfl=0.025, time__rate_factor=0.025)
    free = {c: _run(time__cfl=c, time__rate_factor=c) for c in (0.4, 0.2, 0.1)}
    landed = _run(output__snapshot_mode="land", time__cfl=0.4, time__rate_factor=0.4)
    assert abs(free[0.2].attrs["n_steps"] - landed.attrs["n_steps"]) <= 5
    assert _error(free[0.2], ref) < 1.5 * _error(landed, ref)
    assert _error(free[0.1], ref) < _error(free[0.4], ref) / 8
    for run in (*free.values(), landed):
        np.testing.assert_allclose(np.sort(run["atom_mass"].values[-1]),
                                   np.sort(ref["atom_mass"].values[-1]), atol=1e-3)


@pytest.mark.parametrize("suffix", [".nc", pytest.param(".zarr", marks=pytest.mark.slow)])
def test_resume_from_an_interpolated_record_takes_the_same_steps(tmp_path, suffix):
    whole = _run()
    path = tmp_path / f"run{suffix}"
    first = solvers.run(BASE, path=path, time__t_end=13.0)
    restart = read_restart(path)
    assert restart is not None and restart.t < 13.0 < restart.t + 2.0  # the step before 13
    assert first.attrs["n_steps"] == restart.step + 1
    more = solvers.resume(path, t_end=40.0)
    np.testing.assert_array_equal(more["time"].values, whole["time"].values)
    np.testing.assert_array_equal(more["rho"].values, whole["rho"].values)
    assert more.attrs["n_steps"] == whole.attrs["n_steps"]
    in_memory = solvers.resume(solvers.run(BASE, time__t_end=13.0), t_end=40.0)
    np.testing.assert_array_equal(in_memory["rho"].values, whole["rho"].values)


def test_resume_from_the_first_step_state(tmp_path):
    """A run that ends inside its first step archives the initial state as the step state."""
    path = tmp_path / "run.nc"
    solvers.run(BASE, path=path, time__t_end=1e-3)
    restart = read_restart(path)
    assert restart is not None and (restart.t, restart.step) == (0.0, 0)
    more = _without(solvers.resume(path, t_end=40.0), 1e-3)
    whole = _run()
    np.testing.assert_array_equal(more["rho"].values, whole["rho"].values)


def test_landed_records_need_no_step_state(tmp_path):
    path = tmp_path / "run.nc"
    solvers.run(BASE, path=path, time__t_end=5.0, output__snapshot_mode="land")
    assert read_restart(path) is None


@pytest.mark.slow
def test_cli_resume_continues_the_steps(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text(BASE)
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def meanfield(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "solvers", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    meanfield("run", str(cfg), "-o", "part.nc", "--no-progress", "--no-check", "--set",
              "time.t_end=13.0")
    found = read_restart(tmp_path / "part.nc")
    t, step = found.t, found.step
    assert f"continues from the step state at t = {t:.6g} (step {step})" in meanfield("info", "part.nc")
    meanfield("run", "--resume", "part.nc", "--no-progress", "--no-check", "--set", "time.t_end=40.0")
    meanfield("run", str(cfg), "-o", "whole.nc", "--no-progress", "--no-check")
    a, b = solvers.open_run(tmp_path / "part.nc"), solvers.open_run(tmp_path / "whole.nc")
    np.testing.assert_array_equal(a["time"].values, b["time"].values)
    np.testing.assert_array_equal(a["rho"].values, b["rho"].values)


@pytest.mark.slow
def test_sphere_resume_from_an_interpolated_record(tmp_path):
    """S^2 (lmax 31, the paper's S^2 descent): the same steps after a resume, bitwise."""
    base = ROOT / "runs" / "s2_descent_relu.toml"
    over = dict(domain__resolution=31, time__t_end=40.0, time__stop_when_stationary=False,
                output__snapshot_interval=0.5, output__progress=False,
                time__scheme="fv")  # the grid (the default adds Dirac atoms, landed snapshots)
    whole = solvers.run(base, **over)
    landed = solvers.run(base, **over, output__snapshot_mode="land")
    assert whole.attrs["n_steps"] < landed.attrs["n_steps"]  # snapshots between the steps
    path = tmp_path / "s2.nc"
    solvers.run(base, path=path, **{**over, "time__t_end": 13.0})
    assert read_restart(path) is not None
    more = solvers.resume(path, t_end=40.0)
    np.testing.assert_array_equal(more["rho"].values, whole["rho"].values)


def test_interrupted_run_resumes_from_its_last_step_state(tmp_path):
    """Ctrl-C (``stop()``) ends on a step state: that record needs no restart state, and the
    resume continues the uninterrupted run's steps."""
    from solvers.io.archive import ArchiveWriter
    from solvers.io.state import grid_arrays, initial_density
    from solvers.timestepping.loop import simulate

    cfg = solvers.load_config(BASE)
    path, calls = tmp_path / "run.nc", iter(range(10**6))
    theta, weight, phi = grid_arrays(cfg)
    with ArchiveWriter(path, cfg, theta, weight, phi=phi) as writer:
        result = simulate(cfg, initial_density(cfg), trackers=[writer],
                          stop=lambda: next(calls) >= 40)
    assert result.reason == "interrupted" and result.n_steps == 40 and result.final.restart is None
    assert read_restart(path) is None
    interrupted_at = result.final.t
    more = _without(solvers.resume(path), interrupted_at)
    np.testing.assert_array_equal(more["rho"].values, _run()["rho"].values)
