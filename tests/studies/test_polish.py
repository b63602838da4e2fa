"""``meanfield polish`` on a real run: Newton to max |grad U| <= 1e-12, energy not raised under
descent, stability reported, and the polished archive readable by the other commands."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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
