"""Archives of the earlier layout, with the record dimension named ``time`` on disk (the
current one names it ``t``, :data:`solvers.io.cf.RECORD_DIM`): they open with ``time`` as
before, resume in their own layout (never a file with both names) and plot. The old files are
made in the test from new ones by renaming ``t`` back to ``time`` (no binary fixture)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import solvers
from solvers.cli.main import main
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import read_last_state, read_snapshot
from solvers.io.layout import STATIONARITY_VARIABLES
from test_archive import THETA, WEIGHT, make_config, make_snapshot, write_run

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "runs" / "demo.toml"
GRID = ["--no-check", "--set", 'time.scheme="fv"', "--set", "domain.resolution=96"]
STATIONARY = [f"stationary_{name}" for name in STATIONARITY_VARIABLES]


def netcdf_to_old_layout(new: Path, old: Path, drop: list[str] = ()) -> None:
    """Write ``new`` (current layout) as ``old`` with the record dimension ``time`` and the
    same unlimited dimensions (netCDF-C's in-place rename of a coordinate loses its data);
    ``drop``: variables the old file lacks."""
    with netCDF4.Dataset(new) as nc:
        unlimited = ["time" if d == "t" else d for d, dim in nc.dimensions.items()
                     if dim.isunlimited()]
    ds = xr.load_dataset(new).rename({"t": "time"}).drop_vars(list(drop))
    ds.to_netcdf(old, unlimited_dims=unlimited)


def zarr_to_old_layout(store: Path) -> None:
    """Rename the record dimension and coordinate of a zarr store from ``t`` to ``time`` in
    place (array folder and every array's ``dimension_names``), then consolidate."""
    (store / "t").rename(store / "time")
    for meta in store.glob("*/zarr.json"):
        doc = json.loads(meta.read_text())
        doc["dimension_names"] = ["time" if d == "t" else d for d in doc["dimension_names"]]
        meta.write_text(json.dumps(doc))
    with warnings.catch_warnings():  # consolidated metadata: not yet in the v3 specification
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(store))


def record_dims_on_disk(path: Path) -> set[str]:
    """Which of ``t`` and ``time`` the file or store has as a dimension."""
    if path.suffix == ".zarr":
        names = {d for _, a in zarr.open_group(str(path), mode="r").arrays()
                 for d in a.metadata.dimension_names}
    else:
        with netCDF4.Dataset(path) as nc:
            names = set(nc.dimensions)
    return names & {"t", "time"}


def test_old_netcdf_reads_and_appends_in_its_own_layout(tmp_path):
    new, old = tmp_path / "new.nc", tmp_path / "old.nc"
    write_run(new)
    netcdf_to_old_layout(new, old, drop=STATIONARY)  # and written before the stop criteria
    assert record_dims_on_disk(old) == {"time"}
    ds = solvers.open_run(old)
    np.testing.assert_allclose(ds["time"], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(ds["rho"].sel(time=0.5).values, make_snapshot(0.5).rho)
    assert read_last_state(old)[0] == 1.0 and read_snapshot(old, 0.6)[0] == 0.5
    with ArchiveWriter(old, make_config(t_end=20.0), THETA, WEIGHT, append=True) as writer:
        assert writer.n_records == 3
        writer.write_snapshot(make_snapshot(1.5, n_atoms=2))
    assert record_dims_on_disk(old) == {"time"}  # appended in its own layout
    with netCDF4.Dataset(old) as nc:  # the stop criteria it lacked: added on its "time"
        assert all(nc[name].dimensions == ("time",) for name in STATIONARY)
    ds = solvers.open_run(old)
    np.testing.assert_allclose(ds["time"], [0.0, 0.5, 1.0, 1.5])
    np.testing.assert_array_equal(ds["rho"].values[3], make_snapshot(1.5).rho)
    np.testing.assert_array_equal(ds["n_atoms"].values, [0, 3, 1, 2])


@pytest.mark.parametrize("suffix", [".nc", pytest.param(".zarr", marks=pytest.mark.slow)])
def test_old_run_resumes_and_plots(tmp_path, suffix):
    """``meanfield run --resume`` of an old-layout archive continues it in that layout, and
    ``meanfield plot`` and ``info`` read it."""
    path = tmp_path / f"run{suffix}"
    assert main(["-q", "run", str(DEMO), "-o", str(path), *GRID, "--set", "time.t_end=20"]) == 0
    if suffix == ".zarr":
        zarr_to_old_layout(path)
    else:
        new = path.rename(tmp_path / "new.nc")
        netcdf_to_old_layout(new, path)
    before = solvers.open_run(path)
    assert record_dims_on_disk(path) == {"time"} and before.sizes["time"] == 3
    assert main(["-q", "run", "--resume", str(path), "--set", "time.t_end=40"]) == 0
    assert record_dims_on_disk(path) == {"time"}
    after = solvers.open_run(path)
    np.testing.assert_allclose(after["time"], [0.0, 10.0, 20.0, 30.0, 40.0])
    np.testing.assert_array_equal(after["rho"].values[:3], before["rho"].values)
    assert np.all(np.isfinite(after["mass"].values))
    png = tmp_path / "run.png"
    assert main(["-q", "plot", str(path), "-o", str(png)]) == 0 and png.stat().st_size > 0
    assert main(["info", str(path)]) == 0


def test_new_zarr_store_has_t_and_reads_as_time(tmp_path):
    """A new zarr store names its record dimension ``t``; the readers and a resume keep it."""
    path = tmp_path / "run.zarr"
    write_run(path)
    assert record_dims_on_disk(path) == {"t"}
    with xr.open_zarr(path) as plain:
        assert plain.sizes["t"] == 3 and "time" not in plain.variables
    write_run(path, atoms=(1,), t0=2.0, append=True)
    assert record_dims_on_disk(path) == {"t"}
    ds = solvers.open_run(path)
    np.testing.assert_allclose(ds["time"], [0.0, 0.5, 1.0, 2.0])
    np.testing.assert_array_equal(ds["rho"].sel(time=2.0).values, make_snapshot(2.0).rho)
