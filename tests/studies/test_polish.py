"""``meanfield polish`` on a real run: Newton to max |grad U| <= 1e-12, energy not raised under
descent, stability reported, and the polished archive readable by the other commands."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import solvers
from solvers.cli.main import main
from solvers.studies.polish import polish_archive

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("polish") / "demo.nc"
    solvers.run(ROOT / "runs" / "demo.toml", path=path, domain__resolution=256)
    return path


def test_demo_polishes_to_a_stable_stationary_measure(demo, tmp_path):
    result, out = polish_archive(demo, tmp_path / "p.nc")
    assert result.converged and result.residuals[-1] <= 1e-12
    assert result.energy_after <= result.energy_before  # descent
    assert result.stable and np.all(result.hess_u > 0) and np.all(result.energy_hessian > 0)
    run = solvers.open_run(demo)
    assert result.m.size == int(run["n_atoms"][-1]) == 5
    # merged remainder: the atoms carry the whole mass; each moved by less than a cell
    assert result.merged and result.m.sum() == pytest.approx(float(run["mass"][-1]), abs=1e-12)
    moved = np.arccos(np.clip(np.sum(result.x * result.x0, axis=1), -1, 1))
    assert np.all(moved < 2 * np.pi / 256)
    ds = solvers.open_run(out)
    assert ds.attrs["polish_converged"] == 1 and ds["dirac_mass"].size == 5


def test_polish_command_and_the_archive_it_writes(demo, tmp_path, capsys):
    out = tmp_path / "q.nc"
    assert main(["polish", str(demo), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "converged" in text and "descent: stable stationary point" in text
    assert main(["info", str(out)]) == 0 and main(["plot", str(out), "-o", str(tmp_path / "q.png")]) == 0


def test_dirac_run_polishes_density_plus_atoms(tmp_path, capsys):
    """A measure-valued S^1 run (the demo at N = 128 with Dirac atoms): the atoms are those of the
    whole measure (basin masses of the archive), already near stationary, polished to 1e-12; the
    polished archive replaces the Dirac record and is read by the other commands. ``run
    --polish`` does the same at the end of a run."""
    path = tmp_path / "dirac.nc"
    code = main(["run", str(ROOT / "runs" / "demo.toml"), "-o", str(path), "--no-progress", "--polish",
                 "--set", "domain.resolution=128", "--set", 'atoms.representation="dirac"'])
    assert code == 0
    text = capsys.readouterr().out
    assert "descent: stable stationary point" in text and "polished:" in text
    run = solvers.open_run(path)
    result, out = polish_archive(path, tmp_path / "again.nc")
    assert result.converged and result.residuals[-1] <= 1e-12
    assert result.energy_after <= result.energy_before and result.stable
    basins = run["atom_mass"].isel(time=-1).values
    assert result.m.size == int(run["n_atoms"][-1]) == 5
    assert np.sort(result.m) == pytest.approx(np.sort(basins[np.isfinite(basins)]), abs=1e-4)
    assert result.m.sum() == pytest.approx(1.0, abs=1e-12)  # merged remainder: the whole mass
    moved = np.arccos(np.clip(np.sum(result.x * result.x0, axis=1), -1, 1))
    assert np.all(moved < 0.5 * 2 * np.pi / 128)  # the Dirac atoms were nearly stationary
    ds = solvers.open_run(out)
    assert ds["dirac_mass"].values == pytest.approx(result.m, abs=0)
    assert (tmp_path / "dirac.polished.nc").is_file()
    assert main(["info", str(out)]) == 0


def test_two_dirac_atoms_on_s2_polish_to_the_antipodal_pair(tmp_path):
    """Two Dirac atoms of mass 1/2 on S^2, repulsive (descent, no perceptron): the exact stationary
    points with fixed masses are the antipodal pairs. Newton lands on one to 1e-12; the energy
    Hessian in the positions has the two rotation zero modes and is otherwise positive, and each
    atom sits at a maximum of its own repulsive potential (``hess_u < 0``): not stable against
    splitting, as reported."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "sphere"))
    from test_sphere_dirac import two_atoms

    path = tmp_path / "two.nc"
    solvers.run(two_atoms(), path=path)
    result, _ = polish_archive(path, tmp_path / "two_p.nc")
    assert result.converged and result.residuals[-1] <= 1e-12
    assert result.m == pytest.approx([0.5, 0.5], abs=1e-14)
    assert float(result.x[0] @ result.x[1]) == pytest.approx(-1.0, abs=1e-12)
    assert result.energy_after < result.energy_before
    eig = np.sort(result.energy_hessian)
    assert np.all(np.abs(eig[:2]) < 1e-10) and np.all(eig[2:] > 1e-3)
    assert np.all(result.hess_u < 0) and not result.stable
    with xr.open_dataset(tmp_path / "two_p.nc") as ds:  # angles as in the run archive
        z = np.clip(ds["dirac_z"].values, -1.0, 1.0)
        np.testing.assert_allclose(ds["dirac_colatitude"].values, np.arccos(z), atol=1e-15)
        lon = np.arctan2(ds["dirac_y"].values, ds["dirac_x"].values) % (2 * np.pi)
        np.testing.assert_allclose(ds["dirac_longitude"].values, lon, atol=1e-15)
        assert ds["dirac_colatitude"].attrs["units"] == "radian"


def test_demo_reports_how_positions_follow_the_masses(demo, tmp_path, capsys):
    """The demo's light atoms in the perceptron-free arc move by radians per unit mass of their
    neighbours (the sensitivity that turns the resolution study's mass errors into position
    errors): the report's matrix against Newton re-solves, and its column in the table."""
    from solvers.core.point_atoms import AtomSystem, newton
    from solvers.model.config import load_config

    result, out = polish_archive(demo, tmp_path / "s.nc")
    model = load_config(str(solvers.open_run(demo).attrs["config_text"])).model
    eps = 1e-6
    for j in range(result.m.size):
        ends = []
        for sign in (1.0, -1.0):
            m = result.m.copy()
            m[j] += sign * eps
            ends.append(newton(AtomSystem(model, m), result.x, tol=1e-14).x)
        fd = np.linalg.norm(ends[0] - ends[1], axis=1) / (2 * eps)
        np.testing.assert_allclose(result.sensitivity[:, j], fd, rtol=1e-4, atol=1e-6)
    assert result.sensitivity.max() > 1.0  # radians per unit mass: the light atoms
    ds = solvers.open_run(out)
    assert ds["dirac_mass_sensitivity"].shape == (5, 5)
    assert main(["polish", str(demo), "-o", str(tmp_path / "t.nc")]) == 0
    assert "max|dx/dm|" in capsys.readouterr().out


def test_the_polished_archive_is_the_polished_measure(demo, tmp_path):
    """``rho`` plus the ``dirac_*`` atoms is the polished measure, of the run's mass (round 9
    kept the unpolished density in ``rho``: with the atoms, mass 2); a new run started from it
    keeps the polished atoms (Dirac) or gets them in their cells (grid); ``lemma51`` reads all
    of it; ``--resume`` and ``solvers.resume`` refuse it with the way to use it."""
    from solvers.io.reading import read_dirac
    from solvers.io.state import initial_state
    from solvers.studies.lemma51_measures import snapshot_measure

    result, out = polish_archive(demo, tmp_path / "p.nc")
    ds = solvers.open_run(out)
    h = 2 * np.pi / 256
    assert result.merged and float(ds["rho"].values.sum()) == 0.0  # atoms only
    assert float(ds["dirac_mass"].sum()) == pytest.approx(1.0, abs=1e-12)
    atoms = read_dirac(out)
    assert atoms.count == 5
    np.testing.assert_allclose(atoms.position, np.mod(np.arctan2(result.x[:, 1], result.x[:, 0]), 2 * np.pi),
                               atol=1e-15)
    text = (ROOT / "runs" / "demo.toml").read_text().replace(
        'kind = "uniform"', f'kind = "archive"\npath = "{out}"')
    for representation in ("dirac", "grid"):
        cfg = solvers.load_config(text, domain__resolution=256, atoms__representation=representation)
        rho, got = initial_state(cfg)
        total = float(rho.sum()) * h + (0.0 if got is None else float(got.mass.sum()))
        assert total == pytest.approx(1.0, abs=1e-12)
        if representation == "dirac":
            np.testing.assert_allclose(got.mass, result.m, rtol=1e-13)
    measure = snapshot_measure(out)
    assert measure.mass == pytest.approx(1.0, abs=1e-12) and measure.weights.size == 256 + 5
    assert main(["run", "--resume", str(out), "--set", "time.t_end=9000"]) == 2  # bad input
    with pytest.raises(ValueError, match="polished stationary measure"):
        solvers.resume(out)
    with pytest.raises(ValueError, match="polished stationary measure"):
        solvers.resume(ds)


def test_plots_read_the_one_record_of_a_polished_archive():
    """``record_values``: a run's ``(time, dirac)`` row, or a polished archive's ``(dirac,)``."""
    import xarray as xr

    from solvers.plots.common import record_values

    run = xr.Dataset({"dirac_mass": (("time", "dirac"), [[0.1, 0.2, np.nan], [0.3, 0.4, 0.5]])})
    polished = xr.Dataset({"dirac_mass": (("dirac",), [0.3, 0.4, 0.5])})
    np.testing.assert_array_equal(record_values(run, "dirac_mass", -1), [0.3, 0.4, 0.5])
    np.testing.assert_array_equal(record_values(polished, "dirac_mass", -1), [0.3, 0.4, 0.5])
