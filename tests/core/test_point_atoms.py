"""Closed-form Dirac atoms: sigma', the Jacobian and the energy gradient against finite
differences, the two-atom ODE, and Newton's quadratic convergence to known stationary points."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.point_atoms import DSIGMA, AtomSystem, newton, retract, tangent_bases
from solvers.model.activations import ACTIVATIONS
from solvers.model.params import ModelParams, PerceptronParams

RNG = np.random.default_rng(7)


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_every_activation_has_its_derivative():
    assert set(DSIGMA) == set(ACTIVATIONS)
    s = np.linspace(-3, 3, 601)
    s = s[np.abs(s) > 1e-3]  # ReLU kinks at 0
    for name, act in ACTIVATIONS.items():
        fd = (act.sigma(s + 1e-6) - act.sigma(s - 1e-6)) / 2e-6
        np.testing.assert_allclose(DSIGMA[name](s), fd, atol=1e-6, err_msg=name)


def system(d: int, activation: str = "gelu", sources: int = 5, kernel: str = "exp_shifted"):
    n = 4
    p = PerceptronParams(activation, RNG.normal(size=(3, d)), RNG.normal(size=3), RNG.normal(size=3))
    model = ModelParams(3.0, "descent", "unnormalized", kernel, p)
    y = unit(RNG.normal(size=(sources, d))) if sources else None
    w = np.full(sources, 0.02) if sources else None
    return AtomSystem(model, np.array([0.4, 0.3, 0.2, 0.1]), y, w), unit(RNG.normal(size=(n, d)))


def coords(x, bases, g):
    return np.einsum("nqd,nd->nq", bases, g).ravel()


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("activation", ["gelu", "tanh", "linear"])
def test_jacobian_and_energy_gradient_against_finite_differences(d, activation):
    sysm, x = system(d, activation)
    bases, q = tangent_bases(x), d - 1
    jac = sysm.jacobian(x, bases)
    eps, k = 1e-6, x.shape[0] * q
    fd, egrad = np.zeros((k, k)), np.zeros(k)
    for j in range(k):
        u = np.zeros(k)
        u[j] = eps
        xp, xm = retract(x, bases, u.reshape(-1, q)), retract(x, bases, -u.reshape(-1, q))
        fd[:, j] = (coords(x, bases, sysm.gradient(xp)) - coords(x, bases, sysm.gradient(xm))) / (2 * eps)
        egrad[j] = (sysm.energy(xp) - sysm.energy(xm)) / (2 * eps)
    np.testing.assert_allclose(jac, fd, atol=1e-8 * np.abs(jac).max())
    np.testing.assert_allclose(egrad, np.repeat(sysm.m, q) * coords(x, bases, sysm.gradient(x)),
                               atol=1e-9)
    hessian = np.repeat(sysm.m, q)[:, None] * jac  # the energy Hessian is symmetric
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-12 * np.abs(hessian).max())


def test_two_atoms_follow_their_ode():
    """docs/math.md §3.3: two atoms of mass m at distance D on S^1: D' = -2 s m e^{beta cos D} sin D."""
    beta, m, D = 2.0, 0.5, 1.1
    sysm = AtomSystem(ModelParams(beta, "ascent", "unnormalized", "exp", PerceptronParams()),
                      np.array([m, m]))
    t = np.array([0.3, 0.3 + D])
    x = np.stack([np.cos(t), np.sin(t)], axis=1)
    tau = tangent_bases(x)[:, 0, :]
    speed = np.sum(sysm.gradient(x) * tau, axis=1)  # dt_i/dt for s = +1
    assert speed[1] - speed[0] == pytest.approx(-2 * m * np.exp(beta * np.cos(D)) * np.sin(D), rel=1e-13)


def test_newton_finds_equally_spaced_atoms_quadratically():
    """n equal atoms equally spaced on S^1 are stationary (docs/math.md §3.3); from a perturbed
    start Newton gets there, the residual squaring each step (rotations: the lstsq step)."""
    n, beta = 5, 4.0
    sysm = AtomSystem(ModelParams(beta, "descent", "unnormalized", "exp", PerceptronParams()),
                      np.full(n, 1.0 / n))
    t = 2 * np.pi * np.arange(n) / n + RNG.normal(scale=0.05, size=n)
    result = newton(sysm, np.stack([np.cos(t), np.sin(t)], axis=1), tol=1e-14)
    assert result.converged and result.residuals[-1] <= 1e-14
    gaps = np.diff(np.sort(np.mod(np.arctan2(result.x[:, 1], result.x[:, 0]), 2 * np.pi)))
    np.testing.assert_allclose(gaps, 2 * np.pi / n, atol=1e-12)
    r = np.array(result.residuals)
    tail = r[(r > 1e-12)]
    assert np.all(tail[1:] <= 10.0 * tail[:-1] ** 2 / tail[0])  # quadratic: r_{k+1} <~ C r_k^2


def test_newton_on_the_sphere_with_a_linear_perceptron():
    """Linear activation, v = x^T A x with A = diag(1, 2, 3) (omega_j a_j a_j^T), one atom: its
    stationary points are the eigenvectors of A; Newton from near e_z lands on e_z."""
    p = PerceptronParams("linear", np.eye(3), np.array([1.0, 2.0, 3.0]), np.zeros(3))
    sysm = AtomSystem(ModelParams(1.0, "descent", "unnormalized", "exp", p), np.array([1.0]))
    result = newton(sysm, unit(np.array([[0.1, -0.2, 1.0]])), tol=1e-14)
    assert result.converged and abs(result.x[0, 2]) == pytest.approx(1.0, abs=1e-14)
    # U = x^T A x / 2 + (1/beta) e^{beta x.x_1}: its tangential Hessian at e_z is
    # diag(1, 2) - 3 (the perceptron) minus e (the atom's own mass): a maximum, unstable under descent
    hess = sysm.hess_u_full(result.x, tangent_bases(result.x))[0]
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(hess)), [-2.0 - np.e, -1.0 - np.e], atol=1e-12)


@pytest.mark.parametrize("d", [2, 3])
def test_mass_sensitivity_against_newton_re_solves(d):
    """``|dx_i/dm_j|`` from the implicit function theorem against central differences of
    stationary points re-solved by Newton with ``m_j +- 1e-6`` (fixed sources included)."""
    sysm, _ = system(d, "linear", sources=3)
    for _ in range(20):  # a stationary point (stable or not) of this system
        res = newton(sysm, unit(RNG.normal(size=(4, d))), tol=1e-14)
        if res.converged:
            break
    assert res.converged
    sens = sysm.mass_sensitivity(res.x, tangent_bases(res.x))
    eps = 1e-6
    for j in range(4):
        moved = []
        for sign in (1.0, -1.0):
            m = sysm.m.copy()
            m[j] += sign * eps
            again = newton(AtomSystem(sysm.model, m, sysm.y, sysm.w), res.x, tol=1e-14)
            assert again.converged
            moved.append(again.x)
        fd = np.linalg.norm(moved[0] - moved[1], axis=1) / (2 * eps)
        np.testing.assert_allclose(sens[:, j], fd, rtol=1e-5, atol=1e-7 * sens.max())
    assert np.all(sens[np.arange(4), np.arange(4)] >= 0) and sens.max() > 0
