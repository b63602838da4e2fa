"""solvers/sphere_spectral.py: the S^2 pseudo-spectral scheme against docs/math.md §1, 3.1 and 3.2."""

import numpy as np
import pytest

from conftest import run_config
from solvers.model.params import ModelParams, PerceptronParams
from solvers.sphere.grid.discretization import SphereDiscretization
from solvers.sphere.cells import SphereGrid
from solvers.sphere.problem import SphereProblem
from solvers.sphere.grid.spectral import SphereSpectral
from solvers.timestepping.simulation import Solver
from spectral import kernel_eigenvalues
from spectral.sphere import SphereBasis

UNITS_A = np.array([[0.8, 0.3, -0.4], [-0.2, 0.9, 0.5], [0.5, -0.5, 0.7], [0.1, 0.2, -0.9]])
UNITS_OMEGA = np.array([0.2, -0.15, 0.1, 0.12])
UNITS_B = np.array([0.1, -0.2, 0.0, 0.3])
NO_PERCEPTRON = PerceptronParams(a=np.zeros((0, 3)))


def _perceptron(activation, scale=1.0, bias=True):
    if activation == "none":
        return NO_PERCEPTRON
    b = UNITS_B if bias else np.zeros(UNITS_OMEGA.size)
    return PerceptronParams(activation, UNITS_A, scale * UNITS_OMEGA, b)


def _model(beta, direction="descent", attention="unnormalized", percep=NO_PERCEPTRON):
    return ModelParams(beta, direction, attention, "exp", percep)


def _scheme(model, lmax=12):
    return SphereSpectral(SphereProblem(model, SphereGrid(lmax, merge_ratio=0.0)))


def _config(model, lmax, dt, t_end):
    return run_config(model, lmax, "S2", scheme="spectral", dt=dt, t_end=t_end)


def _smooth_density(rhs):
    """A smooth, non-symmetric probability density, band-limited to the cutoff (grid)."""
    x = rhs.basis.points
    rho = rhs.project(np.exp(1.5 * x[..., 0] - x[..., 2] + 0.7 * x[..., 1] * x[..., 2]))
    return rho / np.sum(rho * rhs.basis.weights)


# ---------------------------------------------------------------------------- basics
def test_cutoff_projection_and_discretization_wiring():
    model = _model(2.0)
    disc = SphereDiscretization(_config(model, 24, 1e-3, 1e-3))
    rhs = disc.rhs
    assert isinstance(rhs, SphereSpectral) and rhs.cutoff == 16
    assert np.all(disc.grid.merge == 1)
    b = rhs.basis
    rng = np.random.default_rng(0)
    raw = rng.standard_normal(b.shape)
    p = rhs.project(raw)
    c = b.forward(p)
    assert np.max(np.abs(c[b.degrees > 16])) < 1e-14 * np.max(np.abs(c))
    assert np.allclose(rhs.project(p), p, rtol=0, atol=1e-14)
    assert np.sum(p * b.weights) == pytest.approx(np.sum(raw * b.weights), rel=1e-13)


def test_max_rate_is_speed_over_gauss_spacing():
    rhs = _scheme(_model(3.0, percep=_perceptron("relu")))
    rho = _smooth_density(rhs)
    drho, rate = rhs(rho, dt=123.0)  # dt ignored
    u_t, u_p = rhs.velocity(rho)
    assert rate == pytest.approx(np.max(np.hypot(u_t, u_p)) * rhs.basis.nlat / np.pi, rel=1e-14)
    assert np.array_equal(drho, rhs(rho)[0])
    assert np.max(np.abs(rhs.basis.forward(drho)[rhs.basis.degrees > rhs.cutoff])) < 1e-14


# ---------------------------------------------------------------------------- docs/math.md §3.1
@pytest.mark.parametrize("direction", ["ascent", "descent"])
@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_linear_perceptron_density_is_stationary(beta, direction):
    """rho* = 1/(4 pi) - kappa x^T A0 x, kappa = beta / (2 lambda_2) gives g = 0 (docs/math.md §3.1)."""
    percep = _perceptron("linear", scale=0.5, bias=False)
    a = sum(w * np.outer(v, v) for v, w in zip(percep.a, percep.omega))
    a0 = a - np.trace(a) / 3 * np.eye(3)
    lam2 = kernel_eigenvalues(beta, 2, 3)
    assert np.linalg.eigvalsh(a0).max() < 2 * lam2 / (4 * np.pi * beta)  # rho* > 0
    rhs = _scheme(_model(beta, direction, percep=percep))
    x = rhs.basis.points
    rho = 1 / (4 * np.pi) - beta / (2 * lam2) * np.einsum("...i,ij,...j->...", x, a0, x)
    assert rho.min() > 0
    attention = _scheme(_model(beta, direction))  # the attention term alone, at rho*
    scale = np.max(np.abs(attention(rho)[0]))
    assert scale > 1e-2
    drho, _ = rhs(rho)
    assert np.max(np.abs(drho)) <= 1e-12 * scale
    u_t, u_p = rhs.velocity(rho)
    v_t, v_p = attention.velocity(rho)
    assert np.max(np.hypot(u_t, u_p)) <= 1e-12 * np.max(np.hypot(v_t, v_p))


# ---------------------------------------------------------------------------- docs/math.md §3.2
def exact_rate(attention, direction, beta, l):
    """Unnormalised ``s l(l+1) i_l(beta)/beta`` (M = 1), softmax ``s l(l+1) I_{l+1/2}/(beta I_{1/2})``."""
    s = 1.0 if direction == "ascent" else -1.0
    lam = kernel_eigenvalues(beta, np.array([0, l]), 3)
    ratio = lam[1] / lam[0] if attention == "softmax" else lam[1] / (4 * np.pi)
    return s * l * (l + 1) * ratio / beta


def test_growth_rate_reference_values():
    assert exact_rate("unnormalized", "ascent", 5.0, 3) == pytest.approx(9.9780862449501068452, rel=1e-13)
    assert exact_rate("unnormalized", "ascent", 1.0, 1) == pytest.approx(2 / np.e, rel=1e-13)
    # softmax at l = 1: 2 I_{3/2}/(beta I_{1/2}) = 2 (coth(beta) - 1/beta) / beta
    want = 2 * (1 / np.tanh(2.0) - 0.5) / 2.0
    assert exact_rate("softmax", "descent", 2.0, 1) == pytest.approx(-want, rel=1e-13)


def _measured_rate(attention, direction, beta, l, m, r, eps=1e-6, lmax=12, n_steps=100):
    """Rate of coefficient (l, m) from rho0 = 1/(4 pi) + eps Re Y_lm over t = 5/|r| (RK4, fixed dt).

    eps ~ 1e-6: round-off seeds ~1e-17/eps in the mode; the quadratic term feeds (l, m) only
    when Y_lm^2 has an (l, m) part, which odd l or odd m exclude (parity, longitude frequencies).
    """
    t_end = 5.0 / abs(r)  # r T <= 5 (docs/math.md §3.2); RK4 error in the rate ~ (r dt)^4 / 120
    solver_cfg = _config(_model(beta, direction, attention), lmax, t_end / n_steps, t_end)
    b = SphereBasis(lmax)
    i = b.index(l, m)
    c = np.zeros(b.nlm, dtype=complex)
    c[i] = 1.0 if m == 0 else 0.5  # the coefficients of Re Y_lm
    solver = Solver(solver_cfg, 1 / (4 * np.pi) + eps * b.backward(c))
    a0 = abs(b.forward(solver.rho)[i])
    while solver.t < t_end:
        solver.step(t_end)
    return np.log(abs(b.forward(solver.rho)[i]) / a0) / t_end


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("direction", ["ascent", "descent"])
@pytest.mark.parametrize("beta,l,m", [(5.0, 3, 2), (1.0, 1, 1), (2.0, 2, 1)])
def test_spectral_scheme_reproduces_growth_rates(attention, direction, beta, l, m):
    r = exact_rate(attention, direction, beta, l)
    measured = _measured_rate(attention, direction, beta, l, m, r)
    assert measured == pytest.approx(r, rel=1e-6)  # measured: relative errors 5.1e-8 .. 5.5e-8
    # ... which are RK4's: log R(z) = z - z^5/120 + O(z^6), z = r dt = 0.05 (spatial error ~1e-9)
    assert measured == pytest.approx(r * (1 - 0.05**4 / 120), rel=1e-8)


# ---------------------------------------------------------------------------- docs/math.md §1
def test_mass_is_conserved_over_a_short_run():
    model = _model(3.0, "ascent", percep=_perceptron("relu"))
    cfg = _config(model, 16, 2e-3, 0.1)
    rhs = _scheme(model, 16)
    solver = Solver(cfg, _smooth_density(rhs))
    w = solver.disc.cell_weight
    m0 = np.sum(solver.rho * w)
    while solver.t < 0.1:
        solver.step(0.1)
    assert solver.n_steps == 50
    assert abs(np.sum(solver.rho * w) - m0) < 1e-12
    assert np.max(np.abs(solver.rho - rhs.project(solver.rho))) < 1e-12  # stays band-limited


def _energy_rate_error(model, lmax=24, h=1e-2):
    """(central difference of E along rhs) / (s * dissipation) - 1; E is quadratic in rho."""
    rhs = _scheme(model, lmax)
    p = rhs.problem
    rho = _smooth_density(rhs)
    drho, _ = rhs(rho)
    de = (p.energy(rho + h * drho) - p.energy(rho - h * drho)) / (2 * h)
    return de / (p.sign * p.dissipation(rho)) - 1.0


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("activation", ["none", "linear", "gelu"])
def test_energy_identity_for_smooth_potentials(activation, attention):
    """dE/dt = s int grad U . V drho (docs/math.md §1): exact for U of degree <= cutoff (attention,
    linear), to the (super-exponentially small) spectral tail of a GeLU potential."""
    err = _energy_rate_error(_model(2.0, "descent", attention, _perceptron(activation)))
    assert abs(err) < 1e-10


def test_energy_identity_for_relu_to_discretisation_accuracy():
    """ReLU: v is only C^1 (docs/math.md §1); dE/dt differs from s D by grad of v's spectral tail."""
    err = _energy_rate_error(_model(2.0, "ascent", percep=_perceptron("relu")))
    assert 1e-9 < abs(err) < 1e-4
