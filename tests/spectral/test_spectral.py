"""spectral/: Funk-Hecke eigenvalues (Lemma 5.1, docs/math.md §2) and the circle basis."""

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, special

from spectral import CircleBasis, kernel_bandwidth, kernel_eigenvalues


def _exact_log_lambda(beta: float, j: int, d: int) -> mp.mpf:
    with mp.workdps(50):
        nu = mp.mpf(j) + mp.mpf(d) / 2 - 1
        lam = (2 * mp.pi) ** (mp.mpf(d) / 2) * mp.mpf(beta) ** (1 - mp.mpf(d) / 2) * mp.besseli(nu, beta)
        return mp.log(lam)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("beta", [1e-3, 0.1, 1.0, 5.0, 50.0, 200.0, 1e4])
def test_eigenvalues_against_50_digit_bessel(beta, d):
    degrees = np.array([0, 1, 2, 7, 30, 120, 700, 2000, 4096])
    log_lam = kernel_eigenvalues(beta, degrees, d, log=True)
    lam = kernel_eigenvalues(beta, degrees, d)
    for j, ll, l in zip(degrees, log_lam, lam):
        exact = _exact_log_lambda(beta, int(j), d)
        # log form: absolute error ~ eps |log lambda| (the exponent itself is rounded)
        assert abs(float(ll - exact)) <= 1e-12 * max(1.0, float(abs(exact)))
        if 1e-300 < l < 1e300:  # representable: relative error of lambda itself
            assert abs(float(mp.mpf(l) / mp.exp(exact) - 1)) <= 1e-12


def test_no_overflow_at_large_beta():
    log_lam = kernel_eigenvalues(1e4, np.arange(4097), 2, log=True)
    assert np.all(np.isfinite(log_lam))
    assert np.all(np.diff(log_lam) < 0)  # decreasing in the degree
    assert np.all(kernel_eigenvalues(5.0, np.arange(4097), 3) >= 0)


@pytest.mark.parametrize("beta", [0.5, 5.0, 20.0])
def test_circle_eigenvalues_against_quadrature(beta):
    # int_0^{2pi} exp(beta cos t) cos(j t) dt = lambda_j (trapezoid is spectral here)
    t = 2 * np.pi * np.arange(512) / 512
    for j in range(12):
        quad = np.sum(np.exp(beta * np.cos(t)) * np.cos(j * t)) * 2 * np.pi / 512
        assert quad == pytest.approx(kernel_eigenvalues(beta, j, 2), rel=1e-13)


@pytest.mark.parametrize("beta", [0.5, 5.0, 20.0])
def test_sphere_eigenvalues_funk_hecke_quadrature(beta):
    # Funk-Hecke on S^2: lambda_l = 2 pi int_{-1}^{1} exp(beta t) P_l(t) dt
    # (the integral cancels: its accuracy is eps * lambda_0, not eps * lambda_l)
    x, w = special.roots_legendre(80)
    lam = kernel_eigenvalues(beta, np.arange(10), 3)
    for ell in range(10):
        quad = 2 * np.pi * np.sum(w * np.exp(beta * x) * special.eval_legendre(ell, x))
        assert abs(quad - lam[ell]) <= 3e-13 * lam[0]


def test_sphere_closed_forms():
    beta = 3.7
    lam0, lam1 = kernel_eigenvalues(beta, [0, 1], 3)
    assert lam0 == pytest.approx(4 * np.pi * np.sinh(beta) / beta, rel=1e-14)
    i1 = (beta * np.cosh(beta) - np.sinh(beta)) / beta**2
    assert lam1 == pytest.approx(4 * np.pi * i1, rel=1e-14)


def test_bandwidth_table_of_math_md():
    betas = [0.01, 0.1, 1, 5, 10, 50, 200]
    assert [kernel_bandwidth(b, 2) for b in betas] == [6, 9, 15, 25, 32, 64, 124]
    assert [kernel_bandwidth(b, 3) for b in betas] == [6, 9, 15, 24, 32, 64, 123]


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf])
def test_eigenvalues_reject_bad_beta(bad):
    with pytest.raises(ValueError, match="beta"):
        kernel_eigenvalues(bad, [0], 2)


def test_circle_basis_round_trip_and_derivative():
    b = CircleBasis(64)
    rho = np.exp(np.cos(b.theta)) + np.sin(3 * b.theta)
    assert np.allclose(b.backward(b.forward(rho)), rho, atol=1e-14)
    d = b.backward(b.derivative(b.forward(rho)))
    assert np.allclose(d, -np.sin(b.theta) * np.exp(np.cos(b.theta)) + 3 * np.cos(3 * b.theta), atol=1e-12)
    assert 2 * np.pi * b.forward(rho)[0].real == pytest.approx(np.sum(rho * b.cell_weight))


def test_circle_basis_evaluation_at_faces_and_points():
    b = CircleBasis(128)
    f = lambda t: np.exp(2 * np.cos(t - 0.3))  # noqa: E731
    rho_hat = b.forward(f(b.theta))
    assert np.allclose(b.backward(b.shift(rho_hat, 0.5 * b.h)), f(b.faces), atol=1e-13)
    pts = np.array([0.1234, 2.5, 6.1])
    assert np.allclose(b.evaluate(rho_hat, pts), f(pts), atol=1e-13)


@pytest.mark.parametrize("beta", [1.0, 5.0])
def test_kernel_application_by_fft_against_direct_quadrature(beta):
    b = CircleBasis(128)
    kappa, c = 4.0, 1.1
    rho = np.exp(kappa * np.cos(b.theta - c)) / (2 * np.pi * special.i0(kappa))
    lam = kernel_eigenvalues(beta, b.wavenumbers, 2)
    f = b.backward(b.apply_diagonal(b.forward(rho), lam))
    for i in [0, 17, 64, 100]:
        direct, _ = integrate.quad(lambda s: np.exp(beta * np.cos(b.theta[i] - s) + kappa * np.cos(s - c))
                                   / (2 * np.pi * special.i0(kappa)), 0, 2 * np.pi, epsabs=0, epsrel=1e-13,
                                   limit=200)
        assert f[i] == pytest.approx(direct, rel=1e-12)


def test_cell_of_an_angle():
    """``CircleBasis.cell_of``: the cell ``[theta_i - h/2, theta_i + h/2)`` of any real angle."""
    b = CircleBasis(128)
    x = np.array([-0.001, 0.0, 2 * np.pi - 1e-9, 3.0, 3.0 + 2 * np.pi, b.theta[5] + 0.49 * b.h])
    np.testing.assert_array_equal(b.cell_of(x), [0, 0, 0, 61, 61, 5])
    rng = np.random.default_rng(0)
    y = rng.uniform(-20.0, 20.0, 1000)
    centre = b.theta[b.cell_of(y)]
    assert np.all(np.abs(np.angle(np.exp(1j * (y - centre)))) <= 0.5 * b.h + 1e-12)
