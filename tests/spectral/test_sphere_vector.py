"""spectral/sphere_vector.py: shtns vector transforms against closed forms and quadrature identities."""

import numpy as np
import pytest
from scipy import special

from spectral.sphere import SphereBasis
from spectral.sphere_vector import (
    divergence,
    gradient,
    helmholtz,
    laplacian_eigenvalues,
)


@pytest.fixture(scope="module")
def basis():
    return SphereBasis(12)  # grid (32, 30)


def _angles(b):
    return np.meshgrid(b.theta, b.phi, indexing="ij")


def _tangent_frame(b):
    th, ph = _angles(b)
    e_t = np.stack([np.cos(th) * np.cos(ph), np.cos(th) * np.sin(ph), -np.sin(th)], axis=-1)
    e_p = np.stack([-np.sin(ph), np.cos(ph), 0 * th], axis=-1)
    return e_t, e_p


def _unit(b, l, m):
    c = np.zeros(b.nlm, dtype=complex)
    c[b.index(l, m)] = 1.0
    return c


def _random_coeffs(b, lmax, seed):
    """Coefficients of a real random field of degree <= lmax (m = 0 entries real)."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(b.nlm) + 1j * rng.standard_normal(b.nlm)
    c[b.orders == 0] = c[b.orders == 0].real
    c[b.degrees > lmax] = 0.0
    return c


def test_gradient_of_y10_and_y11(basis):
    th, ph = _angles(basis)
    # Y_10 = sqrt(3/4pi) cos(theta): grad = -sqrt(3/4pi) sin(theta) e_theta (southward component < 0)
    vt, vp = gradient(basis, _unit(basis, 1, 0))
    assert np.max(np.abs(vt + np.sqrt(3 / (4 * np.pi)) * np.sin(th))) < 1e-14
    assert np.max(np.abs(vp)) < 1e-14
    # coefficient 1 at (1,1) is the field 2 Re Y_11 = -sqrt(3/2pi) sin(theta) cos(phi) (CS phase)
    k = -np.sqrt(3 / (2 * np.pi))
    vt, vp = gradient(basis, _unit(basis, 1, 1))
    assert np.max(np.abs(vt - k * np.cos(th) * np.cos(ph))) < 1e-14
    assert np.max(np.abs(vp + k * np.sin(ph))) < 1e-14  # (1/sin) d_phi: eastward, -k sin(phi)


@pytest.mark.parametrize("lm", [(2, 1), (5, 3), (7, 0), (12, 12)])
def test_gradient_against_scipy_legendre(basis, lm):
    """grad(2 Re Y_lm) from scipy's normalised Legendre functions and their theta-derivative."""
    l, m = lm
    p, dp = special.sph_legendre_p(l, m, basis.theta, diff_n=1)  # Ybar_lm(theta), d/dtheta
    th, ph = _angles(basis)
    fac = 1.0 if m == 0 else 2.0
    want_t = fac * dp[:, None] * np.cos(m * ph)
    want_p = -fac * m * p[:, None] * np.sin(m * ph) / np.sin(th)
    vt, vp = gradient(basis, _unit(basis, l, m))
    assert np.max(np.abs(vt - want_t)) < 1e-12
    assert np.max(np.abs(vp - want_p)) < 1e-12


def test_divergence_of_closed_form_fields(basis):
    x = basis.points
    z = x[..., 2]
    e_t, e_p = _tangent_frame(basis)
    a = np.array([0.3, -1.2, 0.7])
    proj = a - np.sum(x * a, axis=-1, keepdims=True) * x  # P_x a = grad(a.x)
    ax = np.sum(x * a, axis=-1)
    cases = [
        (proj, -2.0 * ax),  # div grad(a.x) = -2 a.x (degree 1)
        (z[..., None] * proj, a[2] - 3.0 * z * ax),  # grad z . grad(a.x) + z Lap(a.x)
        (np.sin(_angles(basis)[0])[..., None] * e_p, 0 * z),  # solid rotation about e_z
    ]
    for field, want in cases:
        vt, vp = np.sum(field * e_t, axis=-1), np.sum(field * e_p, axis=-1)
        got = basis.backward(divergence(basis, vt, vp))
        assert np.max(np.abs(got - want)) < 1e-13


def test_divergence_of_gradient_is_minus_l_l_plus_one(basis):
    c = _random_coeffs(basis, basis.lmax, 0)
    c[0] = 0.0  # S_00 has no gradient
    d = divergence(basis, *gradient(basis, c))
    assert np.max(np.abs(d - laplacian_eigenvalues(basis) * c)) < 1e-12 * np.max(np.abs(d))
    s, t = helmholtz(basis, *gradient(basis, c))
    assert np.max(np.abs(s - c)) < 1e-13 and np.max(np.abs(t)) < 1e-13


def test_integral_of_divergence_vanishes(basis):
    rng = np.random.default_rng(1)
    vt, vp = rng.standard_normal((2, *basis.shape))  # not band-limited at all
    d = divergence(basis, vt, vp)
    assert d[basis.index(0, 0)] == 0.0
    assert abs(np.sum(basis.weights * basis.backward(d))) < 1e-13 * np.sum(np.abs(d))


def test_divergence_is_discrete_integration_by_parts(basis):
    """sum w g div(F) = -sum w F . grad g for every g of degree <= lmax and ANY grid field F:
    the vector analysis is a quadrature (the basis of the discrete energy identity)."""
    rng = np.random.default_rng(2)
    vt, vp = rng.standard_normal((2, *basis.shape))
    g_lm = _random_coeffs(basis, basis.lmax, 3)
    gt, gp = gradient(basis, g_lm)
    lhs = np.sum(basis.weights * basis.backward(g_lm) * basis.backward(divergence(basis, vt, vp)))
    rhs = -np.sum(basis.weights * (vt * gt + vp * gp))
    assert lhs == pytest.approx(rhs, rel=1e-12)


def _flux_divergence_error(b, c, seed):
    """Max error over degrees <= c of the Gauss analysis of div(rho grad f), rho, f of degree c.

    Reference: div(rho grad f) = grad rho . grad f + rho Lap f, synthesised on a grid fine
    enough (lmax = 2c) that the analysis of this degree-2c field is exact.
    """
    rho_lm, f_lm = _random_coeffs(b, c, seed), _random_coeffs(b, c, seed + 1)
    rho = b.backward(rho_lm)
    got = divergence(b, *(rho * g for g in gradient(b, f_lm)))
    fine = SphereBasis(2 * c)
    lift = np.zeros((fine.nlm, b.nlm))  # coefficient map b -> fine by (l, m)
    lift[[fine.index(l, m) for l, m in zip(b.degrees, b.orders)], np.arange(b.nlm)] = 1.0
    rf, ff = lift @ rho_lm, lift @ f_lm
    (rt, rp), (ft, fp) = gradient(fine, rf), gradient(fine, ff)
    exact = fine.forward(rt * ft + rp * fp + fine.backward(rf) * fine.backward(laplacian_eigenvalues(fine) * ff))
    keep = b.degrees <= c
    err = np.abs(got[keep] - (lift.T @ exact)[keep])
    return np.max(err) / np.max(np.abs(exact)), b.degrees[keep][np.argmax(err)]


def test_two_thirds_rule_is_exact_and_sharp():
    """Default Gauss grid for lmax = 47: (nlat, nphi) = (48, 96), cutoff c = 2 lmax // 3 = 31.
    Output degrees <= c of div(rho grad f) are exact for rho, f of degree <= c (3c = 93 <= 2 nlat - 1),
    and not for degree c + 1 (3(c + 1) = 96 > 95): the claim of solvers/sphere_spectral.py."""
    b = SphereBasis(47)
    c = (2 * b.lmax) // 3
    assert (b.nlat, b.nphi, c) == (48, 96, 31)
    err, _ = _flux_divergence_error(b, c, 10)
    assert err < 1e-13
    err, where = _flux_divergence_error(b, c + 1, 10)
    assert err > 1e-6 and where == c + 1
