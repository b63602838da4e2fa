"""spectral/sphere.py: shtns conventions checked against scipy and quadrature (docs/math.md §2)."""

import subprocess
import sys

import numpy as np
import pytest
from scipy import special

from spectral.eigenvalues import kernel_eigenvalues
from spectral.sphere import SphereBasis


@pytest.fixture(scope="module")
def basis():
    return SphereBasis(12)


def _grid(b):
    return np.meshgrid(b.theta, b.phi, indexing="ij")


def test_grid_and_weights(basis):
    assert basis.shape == (32, 30)  # nphi: even, > 2 lmax, 2^a 3^b 5^c and basis.weights.shape == basis.shape
    assert basis.weights.sum() == pytest.approx(4 * np.pi, rel=1e-14)
    assert np.all(np.diff(basis.theta) > 0) and 0 < basis.theta[0] < basis.theta[-1] < np.pi
    x, w = special.roots_legendre(basis.nlat)  # Gauss nodes: cos(theta) are Legendre roots
    assert np.allclose(np.sort(np.cos(basis.theta)), x, atol=1e-15)
    assert np.allclose(basis.weights.sum(axis=1)[np.argsort(np.cos(basis.theta))], 2 * np.pi * w)
    z = basis.points[..., 2]
    assert np.sum(basis.weights * z ** 2) == pytest.approx(4 * np.pi / 3, rel=1e-14)
    assert np.sum(basis.weights * z ** 40) == pytest.approx(4 * np.pi / 41, rel=1e-13)
    assert np.allclose(np.linalg.norm(basis.points, axis=-1), 1.0)


@pytest.mark.parametrize("nlat", [33, 40])
def test_odd_and_larger_grids_mirror_weights(nlat):
    b = SphereBasis(10, nlat=nlat, nphi=30)
    assert b.weights.sum() == pytest.approx(4 * np.pi, rel=1e-14)
    assert np.allclose(b.weights[:, 0], b.weights[::-1, 0])
    _, w = special.roots_legendre(nlat)
    # scipy's Legendre weights are good to ~3e-13 only (shtns' to ~1e-15, checked in mpmath)
    assert np.allclose(b.weights.sum(axis=1)[::-1], 2 * np.pi * w, rtol=1e-12, atol=0)
    z = b.points[..., 2]
    assert np.sum(b.weights * z ** 2 * nlat) == pytest.approx(4 * np.pi * nlat / 3, rel=1e-14)


def test_layout_helpers(basis):
    assert basis.nlm == (basis.lmax + 1) * (basis.lmax + 2) // 2
    for l, m in [(0, 0), (3, 2), (12, 12), (7, 0)]:
        i = basis.index(l, m)
        assert (basis.degrees[i], basis.orders[i]) == (l, m)
    assert len(set(zip(basis.degrees, basis.orders))) == basis.nlm
    with pytest.raises(ValueError, match="m"):
        basis.index(2, 3)


@pytest.mark.parametrize("lm", [(0, 0), (1, 0), (1, 1), (3, 2), (7, 5), (12, 12)])
def test_forward_is_conj_inner_product_with_scipy_harmonics(basis, lm):
    # c_lm = int conj(Y_lm) f dsigma, orthonormal, Condon-Shortley: Re Y -> 1/2, Im Y -> -i/2
    l, m = lm
    th, ph = _grid(basis)
    y = special.sph_harm_y(l, m, th, ph)
    for part, expected in ((np.real(y), 1.0 if m == 0 else 0.5), (np.imag(y), -0.5j)):
        if m == 0 and expected == -0.5j:
            continue
        c = basis.forward(part)
        target = np.zeros(basis.nlm, complex)
        target[basis.index(l, m)] = expected
        assert np.max(np.abs(c - target)) < 1e-14
        # the same by direct quadrature with the mirrored weights
        assert np.sum(basis.weights * np.conj(y) * part) == pytest.approx(expected, abs=1e-14)


def test_backward_synthesis_and_round_trip(basis):
    rng = np.random.default_rng(3)
    c = rng.normal(size=basis.nlm) + 1j * rng.normal(size=basis.nlm)
    c[basis.orders == 0] = c[basis.orders == 0].real  # real field: c_l0 real
    th, ph = _grid(basis)
    f = np.zeros(basis.shape)
    for i, (l, m) in enumerate(zip(basis.degrees, basis.orders)):
        y = special.sph_harm_y(l, m, th, ph)
        f += np.real(c[i] * y) * (1 if m == 0 else 2)
    assert np.max(np.abs(basis.backward(c) - f)) < 1e-12
    assert np.max(np.abs(basis.forward(f) - c)) < 1e-12
    stacked = basis.forward(np.stack([f, 2 * f]))
    assert stacked.shape == (2, basis.nlm) and np.allclose(stacked[1], 2 * c)
    assert basis.backward(stacked).shape == (2, *basis.shape)


def test_forward_leaves_input_alone(basis):
    f = np.random.default_rng(0).normal(size=basis.shape)
    g = f.copy()
    basis.forward(f)
    basis.forward(np.asfortranarray(f))
    assert np.array_equal(f, g)
    with pytest.raises(ValueError, match="field"):
        basis.forward(np.zeros((3, 4)))


def test_parseval_degree_norms(basis):
    rng = np.random.default_rng(5)
    c = rng.normal(size=basis.nlm) + 1j * rng.normal(size=basis.nlm)
    c[basis.orders == 0] = c[basis.orders == 0].real
    f = basis.backward(c)
    norms = basis.degree_norms(c)
    assert np.sum(basis.weights * f ** 2) == pytest.approx(np.sum(norms ** 2), rel=1e-13)


def test_harmonics_match_shtns_point_synthesis(basis):
    # scipy's Y_lm at arbitrary points (used for exact atom coefficients) vs shtns SH_to_point
    rng = np.random.default_rng(1)
    th, ph = np.arccos(rng.uniform(-1, 1, 4)), rng.uniform(0, 2 * np.pi, 4)
    c = rng.normal(size=basis.nlm) + 1j * rng.normal(size=basis.nlm)
    c[basis.orders == 0] = c[basis.orders == 0].real
    y = basis.harmonics(th, ph)
    ours = np.real(y @ (c * np.where(basis.orders == 0, 1, 2)))
    shtns_values = [basis._sht.SH_to_point(c, np.cos(t), p) for t, p in zip(th, ph)]
    assert np.allclose(ours, shtns_values, atol=1e-12)


@pytest.mark.parametrize("beta", [0.5, 5.0, 20.0])
def test_funk_hecke_apply_diagonal(beta):
    # K * delta_y = exp(beta x.y) has coefficients lambda_l conj(Y_lm(y)) (docs/math.md §2)
    b = SphereBasis(30, nlat=64, nphi=128)
    y_th, y_ph = 1.1, 2.3
    y = np.array([np.sin(y_th) * np.cos(y_ph), np.sin(y_th) * np.sin(y_ph), np.cos(y_th)])
    f = np.exp(beta * (b.points @ y - 1.0))  # scaled by exp(-beta)
    lam = kernel_eigenvalues(beta, np.arange(b.lmax + 1), 3, log=True) - beta
    expected = b.apply_diagonal(np.conj(b.harmonics([y_th], [y_ph])[0]), np.exp(lam))
    # round-off floor of a quadrature: ~ eps int |f| dsigma <= eps 4 pi max|f| (max f = 1 here)
    assert np.max(np.abs(b.forward(f) - expected)) < 4 * np.finfo(float).eps * 4 * np.pi


def test_invalid_sizes_raise_instead_of_exiting():
    with pytest.raises(ValueError, match="nlat"):
        SphereBasis(10, nlat=20)
    with pytest.raises(ValueError, match="nlat"):
        SphereBasis(40, nlat=40)
    with pytest.raises(ValueError, match="nphi"):
        SphereBasis(10, nphi=20)
    with pytest.raises(ValueError, match="lmax"):
        SphereBasis(0)
    b = SphereBasis(3)
    with pytest.raises(ValueError, match="per_degree"):
        b.apply_diagonal(np.zeros(b.nlm), np.ones(3))


def test_shtns_banner_kept_off_stdout():
    code = "from spectral.sphere import SphereBasis; SphereBasis(4).weights; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "ok\n"
