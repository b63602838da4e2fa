"""Invariants of docs/math.md §3.3 and the energy identity of docs/math.md §1, on both schemes."""

import numpy as np
import pytest
from conftest import PAPER_A, PAPER_OMEGA, make_config, perceptron
from scipy.integrate import solve_ivp

from solvers.circle.grid.fv import fv
from solvers.circle.problem import CircleProblem
from solvers.circle.grid.spectral import spectral
from solvers.timestepping.loop import simulate
from spectral import CircleBasis


def _run(cfg, rho0):
    snaps = []
    result = simulate(cfg, rho0, trackers=[snaps.append])
    return result, snaps


def _bumps(theta, centers, masses, kappa):
    rho = sum(m * np.exp(kappa * (np.cos(theta - c) - 1)) for c, m in zip(centers, masses))
    h = theta[1] - theta[0]
    return rho * (sum(masses) / (rho.sum() * h))


@pytest.mark.parametrize("direction", ["ascent", "descent"])
@pytest.mark.parametrize("scheme", ["fv", "spectral"])
def test_mass_positivity_and_energy_monotone(scheme, direction):
    n = 256
    # the spectral scheme is only checked while the density is smooth
    cfg = make_config(n=n, beta=5.0, direction=direction, kernel="exp_shifted", percep=perceptron("relu"),
                      scheme=scheme, t_end=8.0 if scheme == "fv" else 2.0, snapshot_interval=0.25)
    theta = 2 * np.pi * np.arange(n) / n
    rho0 = (1 + 0.2 * np.cos(theta) + 0.1 * np.cos(3 * theta - 1)) / (2 * np.pi)
    _, snaps = _run(cfg, rho0)
    mass = np.array([s.diagnostics.mass for s in snaps])
    energy = np.array([s.diagnostics.energy for s in snaps])
    assert np.max(np.abs(mass - 1.0)) <= 1e-12
    s = 1.0 if direction == "ascent" else -1.0
    assert np.all(s * np.diff(energy) >= -1e-12 * np.abs(energy[:-1]))
    assert s * (energy[-1] - energy[0]) > 1e-3
    if scheme == "fv":
        assert min(sn.diagnostics.min_rho for sn in snaps) >= 0.0
        assert snaps[-1].diagnostics.n_atoms >= 1


def _identity_error(attention, activation, n):
    cfg = make_config(n=n, beta=3.0, direction="ascent", attention=attention, percep=perceptron(activation))
    prob = CircleProblem(cfg.model, CircleBasis(n))
    theta = prob.basis.theta
    rho = (1 + 0.3 * np.cos(theta - 0.5) + 0.2 * np.sin(2 * theta)) / (2 * np.pi)
    drho, _ = spectral(prob)(rho)
    eps = 1e-6
    dedt = (prob.energy(rho + eps * drho) - prob.energy(rho - eps * drho)) / (2 * eps)
    if attention == "unnormalized":
        assert prob.dissipation(rho) > 0
    return abs(dedt / prob.dissipation(rho) - 1)


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("activation", ["gelu", "tanh", "linear", "none"])
def test_energy_identity_dE_dt_equals_s_dissipation(attention, activation):
    """dE/dt = s int grad U . V drho (docs/math.md §1), checked on the spectral right-hand side."""
    assert _identity_error(attention, activation, 128) <= 1e-7


@pytest.mark.parametrize("activation", ["relu", "leaky_relu"])
def test_energy_identity_for_c1_potentials_holds_to_discretisation_accuracy(activation):
    """ReLU potentials are only C^1 (docs/math.md §1): the identity holds to grid accuracy."""
    errors = [_identity_error("unnormalized", activation, n) for n in (128, 512, 2048)]
    assert errors[-1] <= 1e-5
    assert errors[0] > errors[1] > errors[2]


@pytest.mark.parametrize("scheme", ["fv", "spectral"])
def test_rotation_equivariance(scheme):
    n, shift = 128, 19
    theta = 2 * np.pi * np.arange(n) / n
    alpha = shift * 2 * np.pi / n
    rot = np.array([[np.cos(alpha), -np.sin(alpha)], [np.sin(alpha), np.cos(alpha)]])
    rho0 = (1 + 0.3 * np.cos(theta - 0.2) + 0.2 * np.sin(2 * theta)) / (2 * np.pi)
    base = make_config(n=n, beta=3.0, kernel="exp_shifted", scheme=scheme, t_end=2.0, snapshot_interval=2.0,
                       dt=0.01, percep=perceptron("gelu", PAPER_A, PAPER_OMEGA, b=[0.1, -0.2]))
    rotated = make_config(n=n, beta=3.0, kernel="exp_shifted", scheme=scheme, t_end=2.0, snapshot_interval=2.0,
                          dt=0.01, percep=perceptron("gelu", PAPER_A @ rot.T, PAPER_OMEGA, b=[0.1, -0.2]))
    r1, _ = _run(base, rho0)
    r2, _ = _run(rotated, np.roll(rho0, shift))
    assert np.max(np.abs(np.roll(r1.final.rho, shift) - r2.final.rho)) <= 1e-12 * r1.final.rho.max()
    assert np.max(np.abs(r1.final.rho - rho0)) > 1e-3  # something happened


@pytest.mark.parametrize("case,keeps", [("attention", True), ("linear", True), ("paired_relu", True),
                                        ("relu", False)])
def test_parity(case, keeps):
    """Antipodal symmetry is kept for attention, linear sigma and paired ReLU (docs/math.md §3.3)."""
    n = 128
    theta = 2 * np.pi * np.arange(n) / n
    rho0 = (1 + 0.3 * np.cos(2 * theta - 0.3) + 0.1 * np.sin(4 * theta)) / (2 * np.pi)
    a = np.array([[0.8, 0.3]])
    percep = {"attention": None, "linear": perceptron("linear", a, [0.5]),
              "paired_relu": perceptron("relu", np.vstack([a, -a]), [0.5, 0.5]),
              "relu": perceptron("relu", a, [0.5])}[case]
    cfg = make_config(n=n, beta=2.0, percep=percep, t_end=3.0, snapshot_interval=3.0)
    result, _ = _run(cfg, rho0)
    rho = result.final.rho
    asym = np.max(np.abs(rho - np.roll(rho, n // 2))) / rho.max()
    assert (asym <= 1e-12) if keeps else (asym > 1e-3)


@pytest.mark.parametrize("integrator,centre_tol", [("ssprk3", 1e-6), ("ssprk10_2", 1e-5)])
@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_two_atoms_follow_the_ode(direction, integrator, centre_tol):
    """Two atoms of mass m at distance D: D' = -2 s m exp(beta cos D) sin D (docs/math.md §3.3).
    The midpoint stays (up to the grid's asymmetry about it, larger with the longer steps of
    the 10-stage scheme)."""
    n, beta, m, d0, t_end = 2048, 1.0, 0.5, 1.2, 0.6
    s = 1.0 if direction == "ascent" else -1.0
    theta = 2 * np.pi * np.arange(n) / n
    mid = 2.0
    rho0 = _bumps(theta, [mid - d0 / 2, mid + d0 / 2], [m, m], kappa=4000.0)
    cfg = make_config(n=n, beta=beta, direction=direction, t_end=t_end, snapshot_interval=t_end,
                      integrator=integrator)
    result, _ = _run(cfg, rho0)
    rho = result.final.rho
    left = (theta > mid - np.pi / 2) & (theta < mid)
    right = (theta >= mid) & (theta < mid + np.pi / 2)
    centres = [np.sum(theta[k] * rho[k]) / np.sum(rho[k]) for k in (left, right)]
    ode = solve_ivp(lambda t, d: -2 * s * m * np.exp(beta * np.cos(d)) * np.sin(d), (0, t_end), [d0],
                    rtol=1e-12, atol=1e-12)
    d_exact = ode.y[0, -1]
    assert abs(d_exact - d0) > 0.1
    assert centres[1] - centres[0] == pytest.approx(d_exact, abs=2e-3)
    assert 0.5 * (centres[0] + centres[1]) == pytest.approx(mid, abs=centre_tol)


@pytest.mark.parametrize("n_atoms", [1, 2, 5])
def test_stationary_configurations_stay_put(n_atoms):
    """A single atom, an antipodal pair and n equal atoms equally spaced are stationary (docs/math.md §3.3).

    Their velocity vanishes at the atoms in both directions; under ascent (where they are stable)
    the fv scheme keeps one-cell atoms exactly in place. Under descent they are unstable, and a
    one-cell box of finite width spreads, as it should.
    """
    n = 500
    theta = 2 * np.pi * np.arange(n) / n
    cells = (np.arange(n_atoms) * n) // n_atoms + 7
    rho0 = np.zeros(n)
    rho0[cells] = n / (2 * np.pi * n_atoms)
    for direction in ("ascent", "descent"):
        cfg = make_config(n=n, beta=2.0, direction=direction, t_end=2.0, snapshot_interval=2.0)
        prob = CircleProblem(cfg.model, CircleBasis(n))
        u = prob.velocity(prob.basis.forward(rho0), "center")
        assert np.max(np.abs(u[cells])) <= 1e-13 * np.max(np.abs(u))
    result, _ = _run(make_config(n=n, beta=2.0, direction="ascent", t_end=2.0, snapshot_interval=2.0), rho0)
    assert np.max(np.abs(result.final.rho - rho0)) <= 1e-12 * rho0.max()
    assert theta[cells].size == n_atoms


def test_outflow_limiter_keeps_positivity_at_any_step():
    n = 64
    cfg = make_config(n=n, beta=4.0, percep=perceptron("relu"))
    prob = CircleProblem(cfg.model, CircleBasis(n))
    rng = np.random.default_rng(1)
    rho = rng.random(n) ** 4
    rho[rng.random(n) < 0.3] = 0.0
    rhs = fv(prob)
    for dt in (1e-3, 0.1, 10.0, 1e4):
        drho, _ = rhs(rho, dt=dt)
        new = rho + dt * drho
        assert new.min() >= -1e-15 * rho.max()
        assert new.sum() == pytest.approx(rho.sum(), rel=1e-13)


def test_one_atom_in_two_cells_counts_once_at_large_beta():
    """At beta = 50 the paper's radius 1/(2 beta) = 0.01 is below a cell (0.0245 at N = 256):
    an atom split over two adjacent cells is still one atom."""
    from solvers.circle.atoms import detect_atoms
    from solvers.model.params import AtomParams

    n = 256
    theta = 2 * np.pi * np.arange(n) / n
    mass = np.zeros(n)
    mass[[40, 41]] = [0.3, 0.2]
    mass[[140]] = 0.5
    found = detect_atoms(theta, mass, 50.0, AtomParams())
    np.testing.assert_allclose(found.mass, [0.5, 0.5])
    assert found.count == 2


@pytest.mark.parametrize("measure,tol", [("transport", 1e-9), ("velocity", 1e-9)])
def test_stationarity_rules_stop_an_exactly_stationary_run(measure, tol):
    """A single one-cell atom under ascent never moves: both rules stop after the window
    (``stationary_window_time = 4``: at t = 4, the fifth snapshot)."""
    n = 128
    rho0 = np.zeros(n)
    rho0[5] = n / (2 * np.pi)
    cfg = make_config(n=n, beta=2.0, direction="ascent", t_end=100.0, snapshot_interval=1.0,
                      stop_when_stationary=True, stationary_tol=tol, stationary_measure=measure,
                      stationary_window_time=4.0)
    result, snaps = _run(cfg, rho0)
    assert result.reason == "stationary", snaps[-1].stationarity
    assert len(snaps) == 5  # the window
