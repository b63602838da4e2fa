"""Exact solutions of docs/math.md §3: the linear-perceptron stationary density (3.1) and the
linear growth rates about the uniform density (3.2), on both schemes."""

import numpy as np
import pytest
from conftest import make_config, perceptron
from scipy import special

from solvers.circle.problem import CircleProblem
from solvers.circle.grid.spectral import spectral
from solvers.timestepping.simulation import Solver
from solvers.timestepping.loop import simulate
from spectral import CircleBasis

# Linear perceptron v(x) = x^T A x with A = sum_j omega_j a_j a_j^T (docs/math.md §3.1)
LIN_A = np.array([[0.8, 0.3], [-0.2, 0.9], [0.5, -0.5]])
LIN_OMEGA = np.array([0.2, -0.15, 0.1])


def _linear_matrix() -> np.ndarray:
    return sum(w * np.outer(a, a) for a, w in zip(LIN_A, LIN_OMEGA))


def exact_linear_density(theta: np.ndarray, beta: float) -> np.ndarray:
    """rho*(t) = 1/(2 pi) - (beta / (4 pi I_2)) (p cos 2t + q sin 2t) (docs/math.md §3.1)."""
    a = _linear_matrix()
    p, q = 0.5 * (a[0, 0] - a[1, 1]), a[0, 1]
    return 1 / (2 * np.pi) - beta / (4 * np.pi * special.iv(2, beta)) * (p * np.cos(2 * theta) + q * np.sin(2 * theta))


def exact_linear_energy(beta: float) -> float:
    """E[rho*] = C M / 2 + (1/4) int v rho*, C = M lambda_0/(beta |S|) + tr A/(2d) (U = C on S^1)."""
    t = 2 * np.pi * np.arange(4096) / 4096
    x = np.stack([np.cos(t), np.sin(t)], axis=1)
    v = np.einsum("ni,ij,nj->n", x, _linear_matrix(), x)
    c = special.iv(0, beta) / beta + np.trace(_linear_matrix()) / 4
    return c / 2 + 0.25 * np.sum(v * exact_linear_density(t, beta)) * 2 * np.pi / 4096


@pytest.mark.parametrize("direction", ["ascent", "descent"])
@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_linear_perceptron_density_is_stationary(beta, direction):
    cfg = make_config(n=64, beta=beta, direction=direction, percep=perceptron("linear", LIN_A, LIN_OMEGA))
    prob = CircleProblem(cfg.model, CircleBasis(64))
    rho = exact_linear_density(prob.basis.theta, beta)
    assert rho.min() > 0
    u = prob.velocity(prob.basis.forward(rho), "center")
    attention_scale = np.max(np.abs(prob.attention_field(prob.basis.forward(np.full(64, 0.1) + rho), "center")))
    assert np.max(np.abs(u)) <= 1e-12 * max(attention_scale, np.exp(beta) / beta)
    drho, _ = spectral(prob)(rho)
    assert np.max(np.abs(drho)) <= 1e-12 * np.exp(beta)


def _relax_perturbation(cfg, beta: float, n: int) -> tuple[list, np.ndarray]:
    """Descent from rho* plus modes 1 and 3 to t_end: the snapshots and the final low modes (0-2)
    of ``rho - rho*``; asserts the energy gap falls to 1e-8 relative, at every snapshot.

    Modes 1 and 3 relax at rates I_1(1) and 9 I_3(1); the modes >= 5 that the nonlinearity feeds
    (linearly, through the mode 2 of rho*) relax super-exponentially slowly (docs/math.md §3.4):
    the gap left at t = 60 is ~4e-9 relative, the same for every scheme."""
    theta = 2 * np.pi * np.arange(n) / n
    rho0 = exact_linear_density(theta, beta) + 0.003 * np.cos(theta - 0.4) + 0.002 * np.sin(3 * theta)
    snaps = []
    simulate(cfg, rho0, trackers=[snaps.append])
    e_star = exact_linear_energy(beta)
    gaps = [s.diagnostics.energy - e_star for s in snaps]
    assert gaps[0] > 1e-5
    assert abs(gaps[-1]) <= 1e-8 * abs(e_star)
    assert all(np.diff(gaps) <= 1e-14)
    return snaps, np.abs(np.fft.rfft(snaps[-1].rho - exact_linear_density(theta, beta))[:3]) / n


@pytest.mark.parametrize("scheme", ["spectral", "fv"])
def test_descent_from_perturbation_reaches_exact_energy(scheme):
    beta, n = 1.0, 128
    cfg = make_config(n=n, beta=beta, percep=perceptron("linear", LIN_A, LIN_OMEGA), scheme=scheme,
                      t_end=60.0, snapshot_interval=10.0)
    _, low = _relax_perturbation(cfg, beta, n)
    assert np.all(low <= 1e-6)


def test_energy_gap_is_a_kernel_norm():
    """E[mu] - E[rho*] = (1/(2 beta)) <K (mu - rho*), mu - rho*> >= 0 (docs/math.md §3.1)."""
    beta, n = 2.0, 128
    cfg = make_config(n=n, beta=beta, percep=perceptron("linear", LIN_A, LIN_OMEGA))
    prob = CircleProblem(cfg.model, CircleBasis(n))
    star = exact_linear_density(prob.basis.theta, beta)
    rng = np.random.default_rng(0)
    for _ in range(5):
        mu = rng.random(n)
        mu /= np.sum(mu) * prob.basis.h
        diff = mu - star
        kdiff = prob.basis.backward(prob.basis.forward(diff) * prob.multipliers("kernel"))
        gap = np.sum(diff * kdiff) * prob.basis.h / (2 * beta)
        assert gap >= 0
        assert prob.energy(mu) - prob.energy(star) == pytest.approx(gap, rel=1e-10, abs=1e-14)


def _measured_rate(scheme, attention, direction, beta, j, dt, t_end, n=64, eps=1e-6, integrator=None):
    # eps: round-off seeds noise ~1e-17/eps in the mode; nonlinear corrections to mode j are O(eps^2)
    cfg = make_config(n=n, beta=beta, direction=direction, attention=attention, scheme=scheme,
                      dt=dt, t_end=t_end, snapshot_interval=t_end, integrator=integrator)
    theta = 2 * np.pi * np.arange(n) / n
    rho0 = (1 + eps * np.cos(j * theta)) / (2 * np.pi)
    solver = Solver(cfg, rho0)
    a0 = abs(np.fft.rfft(solver.rho)[j])
    while solver.t < t_end:
        solver.step(t_end)
    return np.log(abs(np.fft.rfft(solver.rho)[j]) / a0) / t_end


def exact_rate(attention, direction, beta, j):
    """docs/math.md §3.2 on S^1 (M = 1): unnormalised s j^2 I_j / beta, softmax s j^2 I_j / (beta I_0)."""
    s = 1.0 if direction == "ascent" else -1.0
    r = s * j * j * special.iv(j, beta) / beta
    return r / special.iv(0, beta) if attention == "softmax" else r


def test_growth_rate_reference_value():
    assert exact_rate("unnormalized", "ascent", 5.0, 3) == pytest.approx(18.596070304472049097, rel=1e-14)


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("direction", ["ascent", "descent"])
@pytest.mark.parametrize("beta,j", [(5.0, 3), (2.0, 1), (2.0, 2)])
def test_spectral_scheme_reproduces_growth_rates(attention, direction, beta, j):
    r = exact_rate(attention, direction, beta, j)
    t_end = min(1.0, 4.0 / abs(r))
    dt = t_end / 400
    measured = _measured_rate("spectral", attention, direction, beta, j, dt, t_end)
    assert measured == pytest.approx(r, rel=1e-6)


@pytest.mark.parametrize("scheme,integrator,order", [("spectral", None, 4), ("fv", "ssprk3", 3),
                                                    ("fv", "ssprk10_2", 2)])
def test_growth_rate_error_falls_at_the_scheme_order(scheme, integrator, order):
    beta, j, t_end = 5.0, 3, 0.2
    r = exact_rate("unnormalized", "descent", beta, j)
    # the fv scheme has its own (second-order in h) discrete rate: compare dt against dt/8
    dts = [t_end / 10, t_end / 20, t_end / 40, t_end / 320]
    rates = [_measured_rate(scheme, "unnormalized", "descent", beta, j, dt, t_end, n=256,
                            integrator=integrator) for dt in dts]
    errs = np.abs(np.array(rates[:3]) - rates[3])
    observed = np.log2(errs[:-1] / errs[1:])
    assert np.all(np.abs(observed - order) < 0.3), observed
    if scheme == "spectral":
        assert rates[3] == pytest.approx(r, rel=1e-9)


def test_lagrangian_descent_reaches_exact_energy():
    """The moving cells of ``time.scheme = "lagrangian"`` relax a perturbation of rho* (docs/math.md
    §3.1) to its energy as the fv scheme does (same setting as above), with the energy falling at
    every snapshot; their cells stay diffuse (rho* > 0: no atom forms)."""
    from dataclasses import replace

    from solvers.model.params import AtomParams

    beta, n = 1.0, 128
    cfg = make_config(n=n, beta=beta, percep=perceptron("linear", LIN_A, LIN_OMEGA), scheme="lagrangian",
                      t_end=60.0, snapshot_interval=10.0, cfl=0.4, cfl_floor=1e-2)
    snaps, low = _relax_perturbation(replace(cfg, atoms=AtomParams(representation="dirac")), beta, n)
    assert snaps[-1].diagnostics.dirac_mass.size == 0
    # the stationary cells are a piecewise-constant rho*: its low modes are off by O(h^2)
    # (measured 2.0e-5 at N = 128, 8.9e-7 at N = 512; the fv cell averages: below 1e-6)
    assert np.all(low <= 5e-5)
