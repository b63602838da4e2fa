"""The point sums of the kernel's expansion (solvers/sphere/point_spectra.py): the compiled
Legendre recurrence against scipy's, point masses' coefficients against the closed-form
potential, and gradients at points against the cell sums (docs/methods.md §6.5)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import special

from solvers.api import load_config
from solvers.sphere.kernels_points_numba import point_coefficients
from solvers.sphere.measure.dirac import SphereMeasureField, normalise
from solvers.timestepping.registry import make_discretization

RNG = np.random.default_rng(11)


def _problem(beta: float, lmax: int = 31):
    cfg = load_config("runs/paper_s2_descent_relu.toml", domain__resolution=lmax,
                      atoms__representation="dirac", model__beta=beta)
    return make_discretization(cfg).problem


def test_recurrence_is_scipys_legendre() -> None:
    """One unit mass at (theta, 0) with all eigenvalues 1: the coefficients are Ybar_lm(theta),
    to 1e-14 of scipy's sph_legendre_p (Condon-Shortley phase included), m-major, l = m..L."""
    L = 20
    l, m = np.array([(l, m) for m in range(L + 1) for l in range(m, L + 1)]).T
    for theta in (1e-3, 0.4, 1.3, np.pi / 2, 2.9, np.pi - 1e-4):
        got = point_coefficients(np.array([theta]), np.zeros(1), np.ones(1), L, np.ones(l.size))
        want = special.sph_legendre_p(l, m, theta)
        assert np.max(np.abs(got.real - want)) < 1e-14 and np.all(got.imag == 0.0)


@pytest.mark.parametrize("beta", [0.5, 1.0, 4.0])
def test_point_masses_give_the_closed_form_potential(beta: float) -> None:
    """Synthesised at the cell centres, the coefficients of point masses are
    sum_i m_i c_K e^{beta x.x_i} to 1e-13 of its size (the expansion is cut below 1e-17)."""
    problem = _problem(beta)
    ps = problem.point_spectra
    assert ps.exact and ps.backend == "numba"
    x, m = normalise(RNG.normal(size=(5, 3))), RNG.uniform(0.1, 1.0, 5)
    for spectra in (ps, replace(ps, backend="numpy")):
        c = np.zeros(problem.grid.basis.nlm, dtype=complex)
        c[ps.sel] = spectra.coefficients(x, m)
        field = SphereMeasureField(problem, backend="numpy")
        want = field.atom_potential(field.centres, x, m).reshape(problem.grid.shape)
        assert np.max(np.abs(problem.centre_values(c) - want)) < 1e-13 * np.abs(want).max()


def test_gradient_at_points_is_the_cell_sum() -> None:
    """The density's (1/beta) grad K*rho at points off the poles from f_lm, compiled and scipy,
    against the point-mass sums over the cells; points nearer a pole than sin theta = 1e-6 are
    flagged (0 there) for the caller's cell sums."""
    problem = _problem(1.0)
    ps = problem.point_spectra
    g = problem.grid
    rho = RNG.random(g.shape) ** 4
    f_lm = problem.kernel_coefficients(rho)
    y = normalise(np.vstack([RNG.normal(size=(6, 3)), [[1e-7, 0.0, 1.0]], [[0.0, 0.0, -1.0]]]))
    want = SphereMeasureField(problem, backend="numpy").density_gradient_at(rho, y)
    for spectra in (ps, replace(ps, backend="numpy")):
        grad, ok = spectra.gradient(f_lm[ps.sel], y)
        assert ok.tolist() == [True] * 6 + [False, False]
        assert np.all(grad[~ok] == 0.0)
        scale = np.abs(want).max()
        assert np.max(np.abs(grad[ok] / problem.model.beta - want[ok])) < 1e-13 * scale


def test_an_expansion_cut_above_round_off_keeps_the_closed_forms() -> None:
    """beta = 40 at lmax 31: the kernel's eigenvalues past lmax are not negligible, so the
    atoms' fields stay in closed form."""
    problem = _problem(40.0)
    assert not problem.point_spectra.exact
    assert not SphereMeasureField(problem).spectral
