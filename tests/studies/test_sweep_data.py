"""``solvers.sweep`` and ``solvers.open_sweep``: a sweep as one Dataset, each slice equal to
the single run of its parameters (run apart with ``solvers.run``), NaN padding where runs have
fewer snapshots or atoms, the CLI's sweep folder opened into the same layout, and
``plot_run`` drawing one run of a sweep as it draws the run's archive."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from matplotlib.image import imread

import solvers
from solvers.model.config import ConfigError
from solvers.plots.run import plot_run

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "runs" / "demo.toml"
BETAS, T_ENDS = [2.0, 5.0], [10.0, 20.0]
COMMON = {"domain__resolution": 128}


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[xr.Dataset, Path]:
    folder = tmp_path_factory.mktemp("sweep") / "sw"
    ds = solvers.sweep(DEMO, model__beta=BETAS, time__t_end=T_ENDS, path=folder, **COMMON)
    return ds, folder


def _one(ds: xr.Dataset) -> xr.Dataset:
    """A sweep slice without the padding: the snapshot times and atom columns it has."""
    ds = ds.dropna("time", how="all", subset=["mass"])
    width = int(np.isfinite(ds["atom_mass"].values).any(axis=0).sum())
    return ds.isel(atom=slice(0, width))


def test_layout(swept):
    ds, _ = swept
    assert ds.sizes["beta"] == 2 and ds.sizes["t_end"] == 2
    assert ds["beta"].attrs["key"] == "model.beta" and ds["t_end"].attrs["key"] == "time.t_end"
    assert ds["rho"].dims == ("beta", "t_end", "time", "theta")
    assert ds["stop_reason"].dims == ("beta", "t_end")
    assert set(ds["stop_reason"].values.ravel()) <= {"t_end", "stationary"}
    assert ds["final_atom_mass"].dims == ("beta", "t_end", "final_atom")
    # the t_end = 10 runs have no snapshot at t = 20: NaN there
    assert np.isnan(ds["rho"].sel(t_end=10.0, time=20.0).values).all()
    assert np.isfinite(ds["rho"].sel(t_end=20.0, time=20.0).values).all()


@pytest.mark.parametrize("beta, t_end", list(itertools.product(BETAS, T_ENDS)))
def test_each_slice_is_the_single_run(swept, beta, t_end):
    ds, _ = swept
    single = solvers.run(DEMO, model__beta=beta, time__t_end=t_end, **COMMON)
    part = _one(ds.sel(beta=beta, t_end=t_end))
    np.testing.assert_array_equal(part["time"].values, single["time"].values)
    for name in ("rho", "step", "mass", "energy", "atom_mass", "atom_position", "dirac_mass",
                 "dirac_position"):
        got, want = part[name].values, single[name].values
        got = got[..., :want.shape[-1]] if name.startswith(("atom", "dirac")) else got
        np.testing.assert_array_equal(got, want, err_msg=name)
    extra = part["dirac_mass"].values[:, single.sizes["dirac"]:]
    assert np.isnan(extra).all()  # padding columns of wider runs
    assert str(part["stop_reason"].values) == single.attrs["stop_reason"]
    last = single["atom_mass"].isel(time=-1).values
    np.testing.assert_allclose(np.sort(last[np.isfinite(last)])[::-1],
                               part["final_atom_mass"].values[:np.isfinite(last).sum()])


def test_open_sweep_reads_back_the_same(swept):
    ds, folder = swept
    assert (folder / "summary.nc").is_file()
    xr.testing.assert_identical(solvers.open_sweep(folder), ds)


def test_plot_run_draws_a_slice_as_the_archive(swept, tmp_path):
    ds, folder = swept
    name = str(ds["name"].sel(beta=5.0, t_end=10.0).values)
    a = plot_run(ds.sel(beta=5.0, t_end=10.0), tmp_path / "slice.png")
    b = plot_run(folder / f"{name}.nc", tmp_path / "archive.png")
    np.testing.assert_array_equal(imread(a), imread(b))
    with pytest.raises(ValueError, match="out_png"):
        plot_run(ds.sel(beta=5.0, t_end=10.0))


@pytest.mark.parametrize("kwargs, match", [
    ({}, "no list to sweep"),
    ({"model__beta": []}, "non-empty list"),
    ({"beta": [1.0, 2.0]}, "name the section"),
    ({"model__beta": [1.0, 1.0]}, "repeated value"),
])
def test_bad_arguments_name_the_fix(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        solvers.sweep(DEMO, **kwargs)


def test_a_missing_config_file_is_named():
    with pytest.raises(ConfigError, match="runs/nothere.toml: no such file"):
        solvers.sweep("runs/nothere.toml", model__beta=[1.0])


def test_open_sweep_of_a_folder_without_summary(tmp_path):
    with pytest.raises(FileNotFoundError, match="summary.nc"):
        solvers.open_sweep(tmp_path)


@pytest.mark.slow
def test_cli_sweep_folder_opens_like_the_python_sweep(tmp_path):
    """``meanfield sweep`` (dask workers, seeded perturbations) and ``solvers.sweep`` (in
    process) give the same values in the same layout."""
    out = tmp_path / "cli"
    code = subprocess.call([sys.executable, "-m", "solvers.cli", "-q", "sweep", str(DEMO),
                            "--param", "model.beta=2.0,5.0", "--param", "initial.seed=0,1",
                            "--set", "time.t_end=20", "--set", "domain.resolution=128",
                            "-o", str(out), "--workers", "1"], cwd=ROOT)
    assert code == 0
    cli = solvers.open_sweep(out)
    py = solvers.sweep(DEMO, model__beta=[2.0, 5.0], initial__seed=[0, 1], time__t_end=20.0,
                       **COMMON)
    assert cli["rho"].dims == py["rho"].dims == ("beta", "seed", "time", "theta")
    for name in ("rho", "atom_mass", "dirac_mass", "final_atom_mass", "stop_reason", "t_final"):
        np.testing.assert_array_equal(cli[name].values, py[name].values, err_msg=name)
