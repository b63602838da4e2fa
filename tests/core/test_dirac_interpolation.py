"""Snapshots between free steps for the measure-valued state (``[atoms] representation =
"dirac"``, ``output.snapshot_mode = "auto"``): the steps do not depend on the output times,
an interpolated record keeps the mass and ``rho >= 0``, atoms move along their path (across
theta = 0 on S^1, on the sphere on S^2), and a resume continues from the archived step state
(density and Dirac atoms) bitwise, from NetCDF, from an in-memory Dataset and from the CLI.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import paper_s1_toml
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization
from solvers.core.measure import DiracAtoms, MeasureLayout, interpolate_measure
from solvers.io.reading import read_restart, read_restart_atoms, resume_atoms
from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization

ROOT = Path(__file__).resolve().parents[2]
# the demo's physics at N = 128: atoms captured by t ~ 20, steps of 1-3 time units later on
BASE = paper_s1_toml(128, 5.0, t_end=120.0, snapshot_interval=1.0,
                     time_keys="stop_when_stationary = false",
                     extra='progress = false\n[atoms]\nrepresentation = "dirac"\n')


def _mass(ds) -> np.ndarray:
    dirac = np.nansum(ds["dirac_mass"].values, axis=1)
    return (ds["rho"] * ds["cell_weight"]).sum("theta").values + dirac


def test_steps_do_not_depend_on_the_snapshots():
    """Dense and sparse output take the same steps; their common records are equal bitwise."""
    dense, sparse = solvers.run(BASE), solvers.run(BASE, output__snapshot_interval=20.0)
    assert dense.sizes["time"] == 121 and sparse.sizes["time"] == 7
    assert dense.attrs["n_steps"] == sparse.attrs["n_steps"] < 121  # longer steps than the interval
    common = dense.sel(time=sparse["time"].values)
    np.testing.assert_array_equal(common["rho"].values, sparse["rho"].values)
    np.testing.assert_array_equal(common["dirac_mass"].values, sparse["dirac_mass"].values)
    np.testing.assert_array_equal(common["dirac_position"].values, sparse["dirac_position"].values)
    assert np.abs(_mass(dense) - 1.0).max() < 1e-13 and float(dense["rho"].min()) >= 0.0
    pos = dense["dirac_position"].values
    assert np.nanmin(pos) >= 0.0 and np.nanmax(pos) < 2 * np.pi


def test_interpolated_atoms_agree_with_landed_ones():
    """The demo's stationary atoms (N = 256), free against landed steps: within 5e-5 (measured
    1.2e-5; the resolution error at this N is about 5e-4)."""
    kw = dict(atoms__representation="dirac", domain__resolution=256, output__progress=False)
    free = solvers.run(ROOT / "runs" / "demo.toml", **kw)
    landed = solvers.run(ROOT / "runs" / "demo.toml", **kw, output__snapshot_mode="land")
    assert free.attrs["stop_reason"] == landed.attrs["stop_reason"] == "stationary"
    assert free.attrs["n_steps"] < 0.85 * landed.attrs["n_steps"]
    a, b = free.isel(time=-1), landed.isel(time=-1)
    np.testing.assert_allclose(np.sort(a["atom_mass"].values), np.sort(b["atom_mass"].values), atol=5e-5)


def test_circle_positions_take_the_shorter_arc():
    x_b, x_a = np.array([6.2, 1.0]), np.array([0.05, 1.2])
    got = DiracCircleDiscretization.between(x_b, x_a, 0.5)
    want = np.mod(np.array([6.2 + 0.5 * (0.05 + 2 * np.pi - 6.2), 1.1]), 2 * np.pi)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    assert np.all((got >= 0) & (got < 2 * np.pi))


def test_sphere_positions_stay_on_the_sphere():
    x_b = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    x_a = np.array([[0.0, 1.0, 0.0], [0.0, 0.6, 0.8]])
    got = DiracSphereDiscretization.between(x_b, x_a, 0.5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(got[0], [np.sqrt(0.5), np.sqrt(0.5), 0.0], atol=1e-15)


def _atoms(rng, ids):
    return DiracAtoms(rng.uniform(0.0, 0.3, len(ids)), rng.uniform(0.0, 2 * np.pi, len(ids)),
                      np.asarray(ids, dtype=int))


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), w=st.floats(1e-12, 1.0, exclude_max=True),
       case=st.sampled_from(["same", "captured", "merged", "both"]))
def test_interpolant_keeps_mass_and_signs_through_captures_and_merges(seed, w, case):
    """``(1 - w) M_b + w M_a`` to round-off, every mass and density value >= 0, whether the
    step kept the atoms, captured a new one, merged two, or both."""
    rng = np.random.default_rng(seed)
    layout = MeasureLayout((32,), 1)
    ids_b, ids_a = {"same": ([0, 1, 2], [0, 1, 2]), "captured": ([0, 1], [0, 1, 2]),
                    "merged": ([0, 1, 2], [0, 2]), "both": ([0, 1, 2], [0, 2, 3])}[case]
    rho_b, rho_a = rng.uniform(0, 1, 32) * (rng.uniform(0, 1, 32) > 0.3), rng.uniform(0, 1, 32)
    atoms_b, atoms_a = _atoms(rng, ids_b), _atoms(rng, ids_a)
    got = interpolate_measure(layout, rho_b, atoms_b, layout.pack(rho_a, atoms_a), w,
                              DiracCircleDiscretization.between)
    rho, atoms = layout.density(got), layout.atoms(got)
    total = lambda r, a: r.sum() + a.mass.sum()  # noqa: E731
    scale = total(rho_b, atoms_b) + total(rho_a, atoms_a)  # round-off grows with the totals (about 20)
    assert abs(total(rho, atoms) - ((1 - w) * total(rho_b, atoms_b) + w * total(rho_a, atoms_a))) < 1e-15 * scale
    assert rho.min() >= 0.0 and atoms.mass.min() >= 0.0
    assert set(atoms.ids) == set(ids_a) | set(ids_b)


def test_resume_from_an_interpolated_dirac_record_is_bitwise(tmp_path):
    """The archive keeps the step state's density and atoms; NetCDF and in-memory resumes
    take the uninterrupted run's steps."""
    whole = solvers.run(BASE)
    path = tmp_path / "run.nc"
    first = solvers.run(BASE, path=path, time__t_end=43.0)
    restart = read_restart(path)
    assert restart is not None and restart.t < 43.0  # the last record is interpolated
    behind = read_restart_atoms(path)
    assert behind is not None and behind.count >= 1
    assert first.attrs["n_steps"] == restart.step + 1
    np.testing.assert_array_equal(resume_atoms(path).position, behind.position)
    for more in (solvers.resume(path, t_end=120.0),
                 solvers.resume(solvers.run(BASE, time__t_end=43.0), t_end=120.0)):
        np.testing.assert_array_equal(more["time"].values, whole["time"].values)
        np.testing.assert_array_equal(more["rho"].values, whole["rho"].values)
        np.testing.assert_array_equal(more["dirac_mass"].values, whole["dirac_mass"].values)
        np.testing.assert_array_equal(more["dirac_position"].values, whole["dirac_position"].values)


@pytest.mark.slow
def test_cli_resume_of_a_dirac_run(tmp_path):
    from solvers.cli.main import main

    cfg = tmp_path / "run.toml"
    cfg.write_text(BASE)
    assert main(["-q", "run", str(cfg), "-o", str(tmp_path / "part.nc"), "--set", "time.t_end=43.0"]) == 0
    assert main(["-q", "run", "--resume", str(tmp_path / "part.nc"), "--set", "time.t_end=120.0"]) == 0
    assert main(["-q", "run", str(cfg), "-o", str(tmp_path / "whole.nc")]) == 0
    a, b = solvers.open_run(tmp_path / "part.nc"), solvers.open_run(tmp_path / "whole.nc")
    np.testing.assert_array_equal(a["rho"].values, b["rho"].values)
    np.testing.assert_array_equal(a["dirac_position"].values, b["dirac_position"].values)


@pytest.mark.parametrize("t_stop", [pytest.param(7.5, marks=pytest.mark.slow)])  # S^1 twin: default
def test_sphere_dirac_resume_from_an_interpolated_record(tmp_path, t_stop):
    """S^2 (lmax 31, two atoms over a uniform remainder): same steps after a resume, bitwise."""
    text = ('[domain]\nmanifold = "S2"\nresolution = 31\n[model]\nbeta = 2.0\ndirection = "descent"\n'
            '[initial]\nkind = "atoms"\ncenters = [[0.0, 0.0, 1.0], [0.8, 0.0, 0.6]]\n'
            'weights = [0.3, 0.3]\nmass = 1.0\n[atoms]\nrepresentation = "dirac"\n'
            '[time]\nt_end = 20.0\nstop_when_stationary = false\n[output]\nsnapshot_interval = 0.5\n'
            'progress = false\n')
    whole = solvers.run(text)
    landed = solvers.run(text, output__snapshot_mode="land")
    assert whole.attrs["n_steps"] < landed.attrs["n_steps"]
    path = tmp_path / "s2.nc"
    solvers.run(text, path=path, time__t_end=t_stop)
    assert read_restart(path) is not None and read_restart_atoms(path).count == 2
    more = solvers.resume(path, t_end=20.0)
    np.testing.assert_array_equal(more["rho"].values, whole["rho"].values)
    np.testing.assert_array_equal(more["dirac_x"].values, whole["dirac_x"].values)
    norms = np.sqrt(whole["dirac_x"] ** 2 + whole["dirac_y"] ** 2 + whole["dirac_z"] ** 2).values
    np.testing.assert_allclose(norms[np.isfinite(norms)], 1.0, atol=1e-14)
