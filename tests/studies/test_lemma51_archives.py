"""``lemma51 --archive`` on a run's own snapshot, S^2 as S^1: the snapshot's point masses carry
the density's exact coefficients, and the inversion recovers them."""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers.cli.main import main
from solvers.studies.lemma51 import invert, snapshot_measure

A1, A2 = 0.05, -0.03  # rho0 = 1/(4 pi) + A1 Y_10 + A2 Y_20 (orthonormal Y_lm)
S2_RUN = f"""
[domain]
manifold = "S2"
resolution = 31

[model]
beta = 2.0

[initial]
modes = [[1, 0, {A1}], [2, 0, {A2}]]

[time]
scheme = "spectral"
t_end = 0.05

[output]
snapshot_interval = 0.05
progress = false
"""


@pytest.fixture(scope="module")
def s2_archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("lemma51") / "s2.nc"
    solvers.run(S2_RUN, path=path)
    return path


def test_an_s2_snapshot_carries_the_density_coefficients(s2_archive) -> None:
    measure = snapshot_measure(s2_archive, 0.0)
    assert measure.sphere == "S2" and measure.kind == "snapshot"
    assert measure.angles.shape == (32 * 64, 2) and measure.mass == pytest.approx(1.0, rel=1e-13)
    r = invert(measure, 5.0)
    exact = r["exact_norm"]
    np.testing.assert_allclose(exact[:3], [1 / np.sqrt(4 * np.pi), abs(A1), abs(A2)], rtol=1e-12)
    assert np.all(exact[3:32] < 1e-15)  # Gauss quadrature: exact up to the grid's degree
    good = slice(0, r["lstar_measured"] or 3)
    np.testing.assert_allclose(r["recovered_norm"][:3], exact[:3], rtol=1e-8)
    assert np.all(r["error"][good] <= 100 * r["floor"][good] + 1e-14)


def test_lemma51_command_reads_an_s2_archive(s2_archive, tmp_path, capsys) -> None:
    out = tmp_path / "s2check.nc"
    rc = main(["lemma51", "--archive", str(s2_archive), "--beta", "5", "-o", str(out),
               "--no-plot", "--table", "none"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "S2" in captured.out and out.is_file()
    rc = main(["lemma51", "--archive", str(s2_archive), "--sphere", "S1", "-o", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error: --sphere") and "S2" in err and "\n" not in err
