"""Lemma 5.1 in any dimension (solvers.studies.lemma51_gegenbauer, ``meanfield lemma51 --dim``):
exact recovery of the degree norms where lambda_j is large, the breakdown degree near where the
floor eps max|f| / lambda_j crosses |m_j|, in d = 4, 10, 50."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from solvers.cli.main import main
from solvers.studies import lemma51_gegenbauer as g


@pytest.mark.parametrize("d", [4, 10, 50])
def test_zonal_polynomials_are_orthogonal_with_norm_one_over_n(d):
    s, w = g.nodes(80, d)
    z = g.zonal_polynomials(s, 30, d)
    gram = (z * w) @ z.T
    assert np.abs(gram - np.diag(np.exp(-g.log_harmonic_dimension(d, np.arange(31))))).max() < 1e-14


def test_zonal_mean_of_the_atoms_against_monte_carlo():
    d, beta = 10, 5.0
    w, x = g.make_atoms(d, 5, 0)
    c, s = x[0], 0.3
    u = np.random.default_rng(1).normal(size=(100_000, d))
    u -= np.outer(u @ c, c)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    y = s * c + np.sqrt(1 - s * s) * u
    mc = np.exp(beta * (y @ x.T - 1)) @ w
    assert g.atoms_zonal_mean(np.array([s]), c, w, x, beta, d)[0] == pytest.approx(mc.mean(), rel=1e-2)


@pytest.mark.parametrize("d", [4, 10, 50])
@pytest.mark.parametrize("measure", ["atoms", "vmf"])
def test_exact_recovery_where_lambda_is_large(d, measure):
    r = g.invert_gegenbauer(measure, d, 20.0)
    exact, lam = r["exact_norm"], np.exp(r["log_lambda"])
    assert exact[0] == pytest.approx(1.0, abs=1e-14)  # unit mass: |m_0| = 1
    big = lam / lam[0] > 1e-3
    assert big.sum() >= 5
    assert np.all(r["error"][big] <= 1e-11 * np.maximum(exact[big], 1.0))


@pytest.mark.parametrize("d", [4, 10, 50])
def test_vmf_breakdown_where_the_floor_crosses(d):
    for beta in (5.0, 20.0, 50.0):
        r = g.invert_gegenbauer("vmf", d, beta)
        assert r["lstar_measured"] is not None and r["lstar_predicted"] is not None
        assert abs(r["lstar_measured"] - r["lstar_predicted"]) <= 2
        j = r["lstar_measured"]
        assert r["error"][j] > 0.5 * r["exact_norm"][j]
        assert np.all(r["error"][:j] <= 0.5 * r["exact_norm"][:j])
        assert 0.05 < r["floor_ratio"] < 10


@pytest.mark.parametrize("d", [4, 10, 50])
def test_atoms_breakdown_between_the_two_floors(d):
    """The measured l* of 5 atoms lies between where eps max|f| / lam_j reaches |m_j|
    (pessimistic in high d) and where the round-off bound of the quadrature sums does."""
    for beta in (5.0, 20.0, 50.0):
        r = g.invert_gegenbauer("atoms", d, beta)
        meas, pred, by_sum = r["lstar_measured"], r["lstar_predicted"], r["lstar_sum"]
        assert meas is not None and pred is not None and meas < r["lmax"]
        assert pred - 2 <= meas <= (r["lmax"] if by_sum is None else by_sum + 2)
        if d == 4:
            assert abs(meas - pred) <= 3


def test_vmf_partial_sums_reach_the_l2_norm():
    """P_L -> int rho^2 (normalised measure) = lam_0(2 kappa) / lam_0(kappa)^2 (unscaled)."""
    d, kappa = 10, 3.0
    ds = g.gegenbauer_dataset("vmf", d, [5.0], kappa=kappa)
    log0 = lambda k: g.log_eigenvalues(k, 0, d)[0] + k  # unscaled lam_0
    l2 = np.exp(log0(2 * kappa) - 2 * log0(kappa))
    assert float(ds["partial_sum_exact"][-1]) == pytest.approx(l2, rel=1e-13)
    j = int(ds["lstar_measured"][0])
    assert float(ds["partial_sum_recovered"][0, j - 2]) == pytest.approx(l2, rel=1e-9)


def test_sphere_mean_is_smooth_across_the_switch():
    for d in (3, 9, 49):
        z = np.array([1 - 1e-9, 1 + 1e-9])
        m = g.sphere_mean(z, d)
        assert m[0] == pytest.approx(m[1], rel=1e-8)
        exact = special.hyp0f1(d / 2, 0.25) * np.exp(-1.0)
        assert m[1] == pytest.approx(exact, rel=1e-8)


def test_cli_dim(tmp_path, capsys):
    out = tmp_path / "l.nc"
    assert main(["lemma51", "--dim", "10", "--measure", "atoms", "--beta", "5", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "S^9 (d = 10), Gegenbauer basis" in printed and "FAILED from degree" in printed
    assert out.exists()
    assert main(["lemma51", "--dim", "10", "--measure", "uniform", "-o", str(out)]) == 2
    assert main(["lemma51", "--dim", "3", "--sphere", "S1", "-o", str(out)]) == 2
