"""``meanfield converge`` is honest about what its orders mean: ReLU ladders are algebraic,
orders are flagged, atom masses are compared run to run (detector effects flagged), and the
smooth GeLU ladders keep their design orders (2 for fv, exponential for spectral)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest
import xarray as xr
from conftest import ladder_s1_toml

from solvers.cli import converge as cli_converge
from solvers.studies import converge as cv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def config(tmp_path, activation):
    path = tmp_path / f"{activation}.toml"
    path.write_text(ladder_s1_toml(activation))
    return path


def test_relu_ladder_is_algebraic_and_flagged(tmp_path, capsys):
    out = tmp_path / "relu"
    args = argparse.ArgumentParser()
    cli_converge.add_parser(args.add_subparsers())
    parsed = args.parse_args(["converge", str(config(tmp_path, "relu")), "--resolutions",
                              "80,160,320,640", "-o", str(out)])
    assert parsed.func(parsed) == 0
    text = capsys.readouterr().out
    assert "design order algebraic <= 2 (relu: C^1 potential" in text and "exponential" not in text
    ds = xr.load_dataset(out.with_suffix(".nc"))
    assert ds.attrs["space_design_order"].startswith("algebraic <= 2")
    change = ds["space_atom_mass_change"].values
    assert np.all(ds["space_n_atoms"].values == 1) and np.all(change[:-1] > 0)
    # basin masses move with the density (2e-4 .. 5e-3, W1 ~ 1e-4 .. 2e-3): no detector effect
    # (the old density-threshold detector moved them by 4e-3 .. 1.6e-2 here and got D flags)
    assert list(ds["space_atom_mass_change_detector"].values[:3]) == ["", "", ""]
    # its successive orders (-2.0, 1.0) are erratic and pre-asymptotic: flagged, no Richardson
    assert "P" in ds["space_atom_mass_change_order_flag"].values[1]
    assert "E" in ds["space_atom_mass_change_order_flag"].values[2]
    assert np.isnan(ds["space_atom_mass_limit"].values).all()
    assert "Richardson" in text and "E erratic" in text


def test_gelu_ladders_keep_their_design_orders(tmp_path):
    path = config(tmp_path, "gelu")
    (space,) = cv.converge(path, "80,160,320,640")
    t = space.table()
    assert space.design.label() == "2" and space.design.attr() == 2
    assert list(t["successive_order_flag"]) == ["", "", "", ""]
    # W1 successive orders 1.98, 2.00: the finest run's error ~ d / (2^2 - 1)
    assert t["distance_finest_error"] == pytest.approx(t["successive"][-2] / 3, rel=0.05)
    assert np.isfinite(t["energy_limit"]) and t["energy_finest_error"] < t["energy_change"][-2]
    (spectral,) = cv.converge(path, "80,120,180", overrides=[
        "time.scheme=\"spectral\"", "time.dt=0.004"])
    assert spectral.design.label() == "exponential" and spectral.design_order is None


def test_a_concentrated_gelu_ladder_is_not_exponential(tmp_path):
    path = config(tmp_path, "gelu")
    (ladder,) = cv.converge(path, "80,120,180", t_end=30.0, overrides=[
        "time.scheme=\"spectral\"", "time.dt=0.01"])
    assert ladder.runs[-1].diagnostics.n_atoms >= 1 or \
        ladder.runs[-1].diagnostics.tail_energy > 1e-3
    assert ladder.design.kind == "algebraic" and "concentrated" in ladder.design.label()
