"""CF-1.8 metadata of the run archive, checked with cf_xarray: cell bounds, geographic
coordinates on S^2, and units/long_name on every variable but the bounds (S^1 and S^2). The
IOOS compliance checker's verdict on every kind of output: test_cf_compliance.py."""

from __future__ import annotations

import cf_xarray  # noqa: F401 (registers the .cf accessor)
import numpy as np
import pytest
import xarray as xr
from conftest import PAPER_S1_WEIGHTS_TOML

import solvers

S1 = f"""
[domain]
manifold = "S1"
resolution = 64
[model]
beta = 2.0
[perceptron]
activation = "relu"
{PAPER_S1_WEIGHTS_TOML}
[time]
t_end = 2.0
[output]
snapshot_interval = 1.0
progress = false
"""
S2 = """
[domain]
manifold = "S2"
resolution = 31
[model]
beta = 1.0
[time]
t_end = 0.2
[output]
snapshot_interval = 0.1
progress = false
"""


@pytest.fixture(scope="module", params=["S1", "S2"])
def archive(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param) / "run.nc"
    solvers.run(S1 if request.param == "S1" else S2, path=path)
    with xr.open_dataset(path) as ds:
        yield request.param, ds.load()


def test_conventions_and_every_variable_described(archive):
    """Every variable has units and a long_name, but the cell bounds, which have no attributes
    (CF 7.1: they inherit their coordinate's)."""
    _, ds = archive
    assert ds.attrs["Conventions"] == "CF-1.8"
    bounds = {"theta_bounds", "phi_bounds"} & set(ds.variables)
    assert bounds == ({"theta_bounds"} if "phi" not in ds.dims else {"theta_bounds", "phi_bounds"})
    for name, var in ds.variables.items():
        if name in bounds:
            assert not set(var.attrs) & {"units", "long_name", "_FillValue"}, name
        else:
            assert var.attrs.get("units") is not None and var.attrs.get("long_name"), name


def test_cf_xarray_finds_bounds_and_coordinates(archive):
    """Bounds are found from the coordinates; S^2 densities carry lat/lon (degrees), the
    angles theta/phi (radians) are no geographic axes; model time is dimensionless, on a
    record dimension named ``t`` (CF takes a dimension named ``time`` for a calendar axis)."""
    manifold, ds = archive
    assert ds.cf.bounds["theta"] == ["theta_bounds"]
    assert "time" not in ds.dims and "time" not in ds.variables and ds["rho"].dims[0] == "t"
    assert ds["t"].attrs["units"] == "1" and not {"axis", "standard_name"} & set(ds["t"].attrs)
    assert "T" not in ds.cf.axes and "time" not in ds.cf.standard_names
    if manifold == "S1":
        assert "axis" not in ds["theta"].attrs
    else:
        assert set(ds.cf.bounds) >= {"theta", "phi"}
        assert ds.cf["latitude"].name == "lat" and ds.cf["longitude"].name == "lon"
        assert {"lat", "lon"} <= set(ds["rho"].coords)


def test_bounds_tile_the_domain_and_match_the_measure(archive):
    """The cell bounds are the faces: they tile the circle / the sphere, and on S^2 each band's
    solid angle (2 pi (cos lower - cos upper)) is the sum of its cells' measures."""
    manifold, ds = archive
    tb = ds["theta_bounds"].values
    np.testing.assert_allclose(tb[1:, 0], tb[:-1, 1], rtol=0, atol=1e-14)
    if manifold == "S1":
        assert tb[-1, 1] - tb[0, 0] == pytest.approx(2 * np.pi, abs=1e-12)
        np.testing.assert_allclose(np.diff(tb, axis=1)[:, 0], ds["cell_weight"].values, atol=1e-14)
    else:
        assert tb[0, 0] == pytest.approx(0.0, abs=1e-7) and tb[-1, 1] == pytest.approx(np.pi, abs=1e-7)
        band = 2 * np.pi * (np.cos(tb[:, 0]) - np.cos(tb[:, 1]))
        np.testing.assert_allclose(band, ds["cell_weight"].sum("phi").values, rtol=1e-12)
        pb = ds["phi_bounds"].values
        assert pb[-1, 1] - pb[0, 0] == pytest.approx(2 * np.pi, abs=1e-12)


# --------------------------------------------------------------------------- other outputs


def _round_trip(ds: xr.Dataset, path) -> xr.Dataset:
    ds.to_netcdf(path)
    with xr.open_dataset(path) as back:
        return back.load()


def _described(ds: xr.Dataset) -> None:
    from solvers.io.cf import check

    assert ds.attrs["Conventions"] == "CF-1.8" and ds.attrs["title"] and ds.attrs["history"]
    assert check(ds) == []


def test_lemma51_report_is_described(tmp_path):
    from solvers.studies.lemma51 import lemma51_dataset
    from solvers.studies.lemma51_measures import make_measure

    ds = _round_trip(lemma51_dataset(make_measure("vmf", "S1", kappa=3.0), [5.0]), tmp_path / "l.nc")
    _described(ds)
    assert ds["beta"].attrs["long_name"].startswith("inverse temperature")


def test_convergence_ladder_is_described(tmp_path):
    from solvers.studies.converge import converge
    from solvers.studies.converge_report import to_dataset

    path = tmp_path / "c.toml"
    path.write_text(S1.replace("t_end = 2.0", "t_end = 0.5"))
    ladders = converge(path, "64,128,256")
    ds = _round_trip(to_dataset(ladders, [lad.table() for lad in ladders]), tmp_path / "c.nc")
    _described(ds)
    assert ds["resolution"].attrs["long_name"].startswith("grid resolution")


def test_sweep_summary_is_described(tmp_path):
    from solvers.io.summary import build_summary
    from solvers.studies import sweep

    params = [sweep.parse_param("model.beta=1,2")]
    points = sweep.sweep_points(params)
    records = {p.name: {"reason": "stationary", "t_final": 5.0, "n_steps": 3, "wall_time": 1.0,
                        "n_atoms": 1, "max_atom_mass": 1.0, "energy": 0.1, "mass": 1.0,
                        "atom_mass": [1.0], "atom_position": [0.0]} for p in points}
    ds = _round_trip(build_summary(params, ["beta"], points, records), tmp_path / "s.nc")
    _described(ds)


def test_check_reports_what_is_missing():
    from solvers.io.cf import check, describe

    ds = xr.Dataset({"a": ("x", np.zeros(2))}, coords={"x": [0, 1]})
    assert set(check(ds)) == {"(Conventions)", "a", "x"}
    assert check(describe(ds, "t")) == []
    assert ds["a"].attrs == {"units": "1", "long_name": "a"}
