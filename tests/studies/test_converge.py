"""``meanfield converge``: refinement ladders, distances, observed orders, output, bad input.

Orders are measured on a smooth short run (docs/math.md §3.4: W1 and kernel norms, not the sup
norm): the GeLU perceptron with beta = 5 (shifted kernel), a perturbed uniform start, T = 2,
long before concentration.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest
from conftest import ladder_s1_toml

from solvers.cli import converge as cli_converge
from solvers.io.state import initial_density
from solvers.model.config import ConfigError, load_config
from solvers.sphere.cells import SphereGrid
from solvers.studies import converge as cv

S1_TOML = ladder_s1_toml("gelu")

S2_TOML = """
[domain]
manifold = "S2"
resolution = 31
[model]
beta = 3.0
direction = "descent"
[initial]
kind = "uniform"
modes = [[1, 0, 0.05], [2, 1, 0.04], [3, 2, 0.03]]
[time]
t_end = 0.5
scheme = "fv"
"""

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture
def s1_config(tmp_path):
    path = tmp_path / "s1.toml"
    path.write_text(S1_TOML)
    return path


def only(ladders, name):
    (ladder,) = [lad for lad in ladders if lad.name == name]
    return ladder, ladder.table()


# --------------------------------------------------------------------------- S^1 orders


def test_fv_space_ladder_is_second_order(s1_config):
    ladder, t = only(cv.converge(s1_config, "80,160,320,640"), "space")
    assert ladder.ratio == 2 and ladder.design_order == 2
    assert np.isnan(t["distance"][-1]) and np.all(t["distance"][:-1] > 0)
    assert t["order"][1] == pytest.approx(2.0, abs=0.3)  # the last pair is biased (module doc)
    assert t["successive_order"][1:3] == pytest.approx([2.0, 2.0], abs=0.3)
    assert t["energy_order"][1:3] == pytest.approx([2.0, 2.0], abs=0.4)
    assert np.all(t["n_atoms"] == 0) and np.all(np.isnan(t["atom_mass_error"]))


def test_fv_time_ladder_is_third_order(s1_config):
    # SSP-RK3 with the linear (unlimited) reconstruction. With the default MC limiter the
    # observed temporal order drops to ~2.4-2.8 here: the limiter is not smooth in the state.
    ladder, t = only(cv.converge(s1_config, dts="0.02,0.01,0.005,0.0025",
                                 overrides=["time.limiter=\"none\"",
                                            "time.integrator=\"ssprk3\""]), "time")
    assert ladder.design_order == 3 and ladder.runs[-1].config.domain.resolution == 128
    assert t["order"][1:3] == pytest.approx([3.0, 3.0], abs=0.3)
    assert t["successive_order"][1:3] == pytest.approx([3.0, 3.0], abs=0.3)


def test_fv_time_ladder_of_the_default_integrator_is_second_order(s1_config):
    """The fv default, SSP-RK(10,2), is second order in time (its steps are 9x longer)."""
    ladder, t = only(cv.converge(s1_config, dts="0.08,0.04,0.02,0.01",
                                 overrides=["time.limiter=\"none\""]), "time")
    assert ladder.design_order == 2
    assert t["order"][1] == pytest.approx(2.0, abs=0.3)  # the last pair is biased (module doc)
    assert t["successive_order"][1:3] == pytest.approx([2.0, 2.0], abs=0.1)


def test_spectral_time_ladder_is_fourth_order(s1_config):
    ladder, t = only(cv.converge(s1_config, dts="0.04,0.02,0.01,0.005",
                                 overrides=["time.scheme=\"spectral\""]), "time")
    assert ladder.design_order == 4
    assert t["order"][1:3] == pytest.approx([4.0, 4.0], abs=0.3)
    assert t["energy_order"][1] == pytest.approx(4.0, abs=0.3)
    assert t["distance"][-2] > 1e-12  # the time error dominates the round-off


def test_spectral_space_ladder_is_faster_than_any_power(s1_config):
    ladder, t = only(cv.converge(s1_config, "80,120,180", overrides=[
        "time.scheme=\"spectral\"", "time.dt=0.004"]), "space")
    assert ladder.design_order is None and ladder.ratio == pytest.approx(1.5)
    assert t["successive_order"][1] > 6.0  # fv: 2


# --------------------------------------------------------------------------- S^1 W1


def test_spectral_cdf_is_exact_for_a_trigonometric_polynomial():
    n, samples = 32, 256
    x = 2 * np.pi * np.arange(samples) / samples
    rho = (1 + 0.5 * np.cos(2 * np.pi * np.arange(n) / n - 1) + 0.3 * np.cos(3 * 2 * np.pi * np.arange(n) / n))
    exact = x + 0.5 * (np.sin(x - 1) + np.sin(1)) + 0.1 * np.sin(3 * x)
    assert cv.s1_cdf(rho, "spectral", samples) == pytest.approx(exact, abs=1e-13)


def test_w1_of_grids_that_are_not_nested():
    def points(n):
        t = 2 * np.pi * np.arange(n) / n
        return (1 + 0.5 * np.cos(t - 1) + 0.3 * np.cos(3 * t)) / (2 * np.pi)

    assert cv.w1_s1(points(64), points(96), "spectral") < 1e-15  # the same band-limited density
    n = 256
    a, b = np.zeros(n), np.zeros(n)
    a[10], b[14] = n / (2 * np.pi), n / (2 * np.pi)  # unit atoms, 4 cells apart
    assert cv.w1_s1(a, b, "fv") == pytest.approx(4 * 2 * np.pi / n, rel=1e-3)
    assert 0 < cv.w1_s1(points(80), points(120), "fv") < 1e-3  # piecewise-constant: O(h^2)


# --------------------------------------------------------------------------- S^2


def test_s2_fv_space_ladder(tmp_path):
    path = tmp_path / "s2.toml"
    path.write_text(S2_TOML)
    ladder, t = only(cv.converge(path, "31,63,127"), "space")
    assert ladder.ratio == 2.0 and ladder.metric() == "kernel_norm"  # factor of lmax + 1
    assert t["distance"][0] > t["distance"][1] > 0
    assert t["successive_order"][1] == pytest.approx(2.0, abs=0.3)
    assert t["energy_order"][1] == pytest.approx(2.0, abs=0.5)


def sphere_density(lmax, modes):
    cfg = load_config(S2_TOML, [f"domain.resolution={lmax}", f"initial.modes={modes}"])
    return initial_density(cfg)


def test_kernel_norm_zero_for_identical_and_positive_otherwise():
    a = sphere_density(31, "[[1, 0, 0.05], [2, 1, 0.04]]")
    b = sphere_density(31, "[[1, 0, 0.05], [2, 1, 0.03]]")
    assert cv.kernel_distance_s2(a, 31, a, 31, 3.0) == 0.0
    assert cv.kernel_distance_s2(a, 31, b, 31, 3.0) > 1e-4
    c = sphere_density(63, "[[1, 0, 0.05], [2, 1, 0.04]]")  # the same density, another grid
    assert cv.kernel_distance_s2(a, 31, c, 63, 3.0) < 1e-2 * cv.kernel_distance_s2(a, 31, b, 31, 3.0)


@pytest.mark.parametrize("log_shift", [0.0, -2.0])
def test_kernel_norm_equals_direct_double_sum(log_shift):
    """``||mu - nu||_K^2 = sum_pq K(x_p, x_q) s_p s_q`` for grid measures (docs/math.md §2)."""
    beta, rng = 2.0, np.random.default_rng(0)
    grids = [SphereGrid(31), SphereGrid(35)]
    rho = [1.0 + rng.random(g.shape) for g in grids]
    rho = [r / np.sum(r * g.area) for r, g in zip(rho, grids)]
    x = np.concatenate([g.basis.points.reshape(-1, 3) for g in grids])
    s = np.concatenate([(rho[0] * grids[0].area).ravel(), -(rho[1] * grids[1].area).ravel()])
    direct = s @ (np.exp(beta * (x @ x.T) + log_shift) @ s)
    moments = cv.kernel_distance_s2(rho[0], 31, rho[1], 35, beta, log_shift) ** 2
    assert moments == pytest.approx(direct, rel=1e-12)


# --------------------------------------------------------------------------- pieces


def test_observed_orders_of_a_power_law():
    e = [3.0 * 2.0 ** (-2 * k) for k in range(4)] + [np.nan]
    assert cv.observed_orders(e, 2.0)[1:4] == pytest.approx([2, 2, 2])
    assert np.isnan(cv.observed_orders(e, 2.0)[[0, 4]]).all()


def test_match_atoms_by_position():
    ref_m, ref_p = np.array([0.6, 0.4]), np.array([0.01, 3.0])
    m, err = cv.match_atoms(ref_m, ref_p, np.array([0.35, 0.62]), np.array([3.02, 2 * np.pi - 0.01]), 0.1)
    assert m == pytest.approx([0.62, 0.35]) and err == pytest.approx(0.05)
    m, err = cv.match_atoms(ref_m, ref_p, np.array([0.9]), np.array([1.5]), 0.1)
    assert m == pytest.approx([0, 0]) and err == pytest.approx(0.9)
    e = np.eye(3)
    m, err = cv.match_atoms(np.array([1.0]), e[:1], np.array([0.7, 0.3]), e[[2, 0]], 0.1)
    assert m == pytest.approx([0.3]) and err == pytest.approx(0.7)
    assert np.isnan(cv.match_atoms(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), 0.1)[1])


# --------------------------------------------------------------------------- command


def parse(argv):
    parser = argparse.ArgumentParser(prog="meanfield")
    cli_converge.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_command_writes_table_netcdf_and_png(s1_config, tmp_path, capsys):
    import xarray as xr

    out = tmp_path / "conv"
    args = parse(["converge", str(s1_config), "--resolutions", "80,160,320", "--dts",
                  "0.01,0.005,0.0025", "--t", "0.5", "--set", "model.beta=4", "-o", str(out)])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "space ladder" in text and "time ladder" in text and "W1" in text
    ds = xr.open_dataset(out.with_suffix(".nc"))
    assert list(ds["resolution"].values) == [80, 160, 320] and ds.sizes["dt"] == 3
    assert ds["space_distance"].dims == ("resolution",) and ds["time_order"].dims == ("dt",)
    assert np.isnan(ds["space_distance"].values[-1]) and ds.attrs["time_design_order"] == 2
    assert "model.beta=4" in ds.attrs["space_config_text"]
    ds.close()
    assert out.with_suffix(".png").stat().st_size > 1000


@pytest.mark.parametrize("kwargs, option, words", [
    ({"resolutions": "64,128,200"}, "--resolutions", "constant factor"),
    ({"resolutions": "96,96,96"}, "--resolutions", "constant factor"),
    ({"resolutions": "96,192"}, "--resolutions", "at least 3"),
    ({"resolutions": "96,abc,384"}, "--resolutions", "comma-separated"),
    ({"resolutions": "-96,192,384"}, "--resolutions", "positive"),
    ({"resolutions": "24,48,96"}, "--resolutions", "use resolution >="),
    ({"dts": "0.3,0.15,0.075"}, "--dts", "whole number"),
    ({"dts": "0.1,0.04,0.02"}, "--dts", "constant factor"),
    ({"resolutions": "96,192,384", "t_end": -1.0}, "--t", "positive"),
    ({}, "--resolutions", "--dts"),
])
def test_bad_input_is_one_line_naming_the_option(s1_config, kwargs, option, words):
    with pytest.raises(ValueError) as err:
        cv.converge(s1_config, **kwargs)
    message = str(err.value)
    assert isinstance(err.value, ConfigError) and "\n" not in message
    assert message.startswith(option + ":") and words in message
