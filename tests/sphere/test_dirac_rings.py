"""The ring-by-ring sums of the S^2 Dirac fields (solvers/sphere/measure/kernels_dirac_numba.py) against
direct sums over the points, and their Bessel functions against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ive

from solvers.api import load_config
from solvers.sphere.measure.kernels_dirac_numba import (
    bessel_terms,
    ring_along_spectrum,
    ring_point_sums,
    scaled_bessel,
)
from solvers.sphere.measure.dirac import SphereMeasureField, normalise
from solvers.sphere.cells import SphereGrid
from solvers.sphere.problem import tangent_frame
from solvers.timestepping.registry import make_discretization

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("beta", [0.1, 1.0, 5.0, 25.0, 50.0, 200.0, 2000.0])
def test_scaled_bessel_matches_scipy(beta):
    """``I_n(a) e^{-a}`` for n <= N over a in [0, beta] (0, the series branch and its edge
    included) within 1e-14 of the sum ``sum_n I_n(a) e^{-a} = 1``, and the terms past N are below
    1e-18 for every a <= beta."""
    n_terms = bessel_terms(beta)
    out = np.empty(n_terms + 2)
    for a in np.concatenate([[0.0, 1e-12, 9.9e-9, 1.01e-8], np.linspace(1e-6, beta, 41)]):
        scaled_bessel(a, n_terms + 1, out)
        assert np.max(np.abs(out - ive(np.arange(n_terms + 2), a))) < 1e-14
        assert ive(n_terms + 1, a) < 1e-18


def _ring_points(theta, phi0, nphi):
    phi = phi0 + 2 * np.pi * np.arange(nphi) / nphi
    g = SphereGrid(3)  # only its points(): any grid's
    return g.points(theta, phi).reshape(-1, 3), [e.reshape(-1, 3) for e in tangent_frame(theta, phi)]


def _atoms(n):
    x = normalise(RNG.normal(size=(n, 3)))
    x[0] = [0.0, 0.0, 1.0]  # a pole: sin(theta_i) = 0
    return x, RNG.uniform(0.1, 1.0, n)


@pytest.mark.parametrize("beta,nphi", [(1.0, 64), (5.0, 16), (200.0, 16), (50.0, 128)])
@pytest.mark.parametrize("kind", [0, 1, 2])
def test_ring_spectrum_is_the_direct_sum(beta, nphi, kind):
    """Along e_theta, along e_phi and the potential on rings (poles, an offset first longitude)
    against the direct sum, to 1e-13 of its scale; nphi = 16 at beta = 5 and 200 needs more
    terms than the half spectrum holds (folding)."""
    theta = np.concatenate([[0.0, np.pi], RNG.uniform(0, np.pi, 5)])
    phi0 = 0.37
    x, m = _atoms(5)
    log_c = -beta
    out = np.zeros((theta.size, nphi // 2 + 1), dtype=complex)
    ring_along_spectrum(theta, phi0, x, m, beta, log_c, bessel_terms(beta), kind, 1.0, out)
    got = np.fft.irfft(out, n=nphi, axis=1).ravel() * nphi
    p, (e_t, e_p) = _ring_points(theta, phi0, nphi)
    w = np.exp(beta * (p @ x.T) + log_c) * m
    factor = {0: e_t @ x.T, 1: e_p @ x.T, 2: np.ones_like(w)}[kind]
    direct = np.sum(w * factor, axis=1)
    assert np.max(np.abs(got - direct)) <= 1e-13 * np.abs(w).sum(axis=1).max()


@pytest.mark.parametrize("beta,nphi", [(1.0, 64), (5.0, 16), (200.0, 16)])
def test_ring_point_sums_are_the_direct_sums(beta, nphi):
    """Potential and its moment ``sum w e^{beta x.y} y`` at points (a pole among them) over cells on
    rings with an empty ring, against the direct sums, to 1e-13 of their scale."""
    theta = np.sort(RNG.uniform(0, np.pi, 6))
    w = RNG.uniform(0, 1, (theta.size, nphi))
    w[2] = 0.0
    w[4, ::3] = 0.0
    phi0 = 0.0
    x, _ = _atoms(4)
    y, _ = _ring_points(theta, phi0, nphi)
    pot, grad = ring_point_sums(np.fft.rfft(w, axis=1), theta, phi0, nphi, x, beta, -beta, bessel_terms(beta))
    k = np.exp(beta * (x @ y.T) - beta) * w.ravel()
    scale = k.sum(axis=1).max()
    assert np.max(np.abs(pot - k.sum(axis=1))) <= 1e-13 * scale
    assert np.max(np.abs(grad - k @ y)) <= 1e-13 * scale


@pytest.mark.parametrize("kernel,beta", [("exp_shifted", 1.0), ("exp", 3.0), ("exp_shifted", 40.0)])
def test_field_backends_agree(kernel, beta):
    """Every field of the measure that the numba backend sums ring by ring (faces, centres,
    potential, the density at the atoms) against the numpy backend's direct sums. The numba
    field runs first: its atoms' spectra must not stay in the problem's synthesis buffer (at
    beta = 40, lmax 31, they reach the Nyquist column, which no order of the density writes)."""
    cfg = load_config("runs/paper_s2_descent_relu.toml", domain__resolution=31,
                      atoms__representation="dirac", model__kernel=kernel, model__beta=beta)
    problem = make_discretization(cfg).problem
    fields = {b: SphereMeasureField(problem, backend=b) for b in ("numba", "numpy")}
    x, m = _atoms(6)
    g = problem.grid
    rho = (1.0 + 0.5 * g.points(g.theta, g.phi)[..., 0]) / (4 * np.pi)
    rho[3] = 0.0
    f_lm = problem.kernel_coefficients(rho)

    def close(a, b):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and np.max(np.abs(a - b)) <= 1e-12 * max(np.abs(b).max(), 1e-300)

    results = {}
    for name, f in fields.items():
        results[name] = (f.face_attention(x, m), f.face_velocities(f_lm, x, m), f.centre_attention(x, m),
                         f.flow_potential(rho, x, m), f.atom_gradient(rho, x, m),
                         f.density_potential_at(rho, x), f.atom_gradient(rho, x, m, f_lm))
    # beta 1 and 3 at lmax 31: the numba field sums the atoms through the kernel's expansion
    # (the faces, and the density's gradient at the atoms from f_lm; the atom at the pole by cells)
    assert fields["numba"].spectral == (beta < 40.0) and not fields["numpy"].spectral
    for a, b in zip(results["numba"], results["numpy"]):
        if isinstance(a, tuple):
            for u, v in zip(a, b):
                close(u, v)
        else:
            close(a, b)
