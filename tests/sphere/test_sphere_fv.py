"""S^2 finite volumes: exact solutions and invariants of docs/math.md §3 on the sphere."""

import dataclasses

import numpy as np
import pytest
from scipy import special
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from conftest import PAPER_S2_A, PAPER_S2_OMEGA, perceptron, s2_config
from solvers.sphere.grid.fv import SphereFV
from solvers.sphere.cells import SphereGrid
from solvers.sphere.problem import SphereProblem
from solvers.timestepping.simulation import Solver
from solvers.timestepping.loop import simulate
from spectral import kernel_eigenvalues


def relu(a=PAPER_S2_A, omega=PAPER_S2_OMEGA, activation="relu"):
    """The S^2 paper perceptron (or ``activation`` with the units ``a``, ``omega``), no biases."""
    return perceptron(activation, a, omega)


def vmf(grid, centre, kappa, mass=1.0):
    e = np.asarray(centre, float) / np.linalg.norm(centre)
    x = grid.points(grid.theta, grid.phi)
    rho = np.exp(kappa * (x @ e - 1.0))
    return rho * mass / np.sum(rho * grid.area)


# ---------------------------------------------------------------- docs/math.md §3.1 on S^2
LIN_A = np.array([[0.6, 0.2, -0.3], [-0.1, 0.5, 0.4], [0.3, -0.4, 0.2]])
LIN_OMEGA = np.array([0.15, -0.1, 0.12])


def exact_linear_density(grid, beta):
    a = sum(w * np.outer(v, v) for v, w in zip(LIN_A, LIN_OMEGA))
    a0 = a - np.trace(a) / 3 * np.eye(3)
    kappa = beta / (2 * kernel_eigenvalues(beta, 2, 3))
    x = grid.points(grid.theta, grid.phi)
    return 1 / (4 * np.pi) - kappa * np.einsum("...i,ij,...j->...", x, a0, x)


@pytest.mark.parametrize("direction", ["ascent", "descent"])
@pytest.mark.parametrize("beta", [1.0, 3.0])
def test_linear_perceptron_density_is_stationary_on_s2(beta, direction):
    cfg = s2_config(beta=beta, direction=direction, percep=relu(LIN_A, LIN_OMEGA, "linear"))
    grid = SphereGrid(31)
    prob = SphereProblem(cfg.model, grid)
    rho = exact_linear_density(grid, beta)
    assert rho.min() > 0
    f_lm = prob.kernel_coefficients(rho)
    scale = np.exp(beta) / beta  # size of the attention term
    for where in ("theta_faces", "phi_faces"):
        assert np.max(np.abs(prob.velocity(f_lm, where))) <= 1e-12 * scale
    drho, _ = SphereFV(prob)(rho)
    assert np.max(np.abs(drho)) <= 1e-12 * scale


# ---------------------------------------------------------------- docs/math.md §3.2, fv to O(h^2)
def _fv_rate(lmax, l, m, beta, direction, attention):
    cfg = s2_config(lmax=lmax, beta=beta, direction=direction, attention=attention, t_end=0.4, dt=0.005)
    grid = SphereGrid(lmax)
    ylm = np.real(special.sph_harm_y(l, m, grid.theta[:, None], grid.phi[None, :]))
    solver = Solver(cfg, 1 / (4 * np.pi) + 1e-5 * ylm)
    amp = lambda r: abs(grid.basis.forward(r)[grid.basis.index(l, m)])  # noqa: E731
    a0 = amp(solver.rho)
    while solver.t < 0.4:
        solver.step(0.4)
    return np.log(amp(solver.rho) / a0) / 0.4


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("l,m", [(1, 0), (2, 1), (3, 3)])
def test_fv_growth_rates_converge_at_second_order(l, m, attention):
    beta = 1.0
    lam = kernel_eigenvalues(beta, [0, l], 3)
    exact = l * (l + 1) * lam[1] / (4 * np.pi * beta)  # ascent, M = 1
    if attention == "softmax":
        exact = l * (l + 1) * lam[1] / (beta * lam[0])
    errs = [abs(_fv_rate(lmax, l, m, beta, "ascent", attention) / exact - 1) for lmax in (31, 63)]
    assert errs[1] < 2e-3
    assert errs[0] / errs[1] > 2.5  # ~4 for second order


def test_growth_rate_reference_values():
    i3 = kernel_eigenvalues(5.0, 3, 3) / (4 * np.pi)
    assert 12 * i3 / 5 == pytest.approx(9.9780862449501068452, rel=1e-13)
    assert 2 * kernel_eigenvalues(1.0, 1, 3) / (4 * np.pi) == pytest.approx(2 / np.e, rel=1e-14)


# ---------------------------------------------------------------- invariants
@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_mass_positivity_energy_monotone_on_s2(direction):
    cfg = s2_config(beta=1.0, direction=direction, kernel="exp_shifted", percep=relu(), t_end=6.0,
                    snapshot_interval=0.5)
    grid = SphereGrid(31)
    rho0 = 0.7 / (4 * np.pi) + vmf(grid, [0.2, 0.3, 0.9], 2.0, 0.3)
    snaps = []
    simulate(cfg, rho0, trackers=[snaps.append])
    mass = np.array([s.diagnostics.mass for s in snaps])
    energy = np.array([s.diagnostics.energy for s in snaps])
    s = 1.0 if direction == "ascent" else -1.0
    assert np.max(np.abs(mass - 1)) <= 1e-12
    assert min(sn.diagnostics.min_rho for sn in snaps) >= 0.0
    assert np.all(s * np.diff(energy) >= -1e-12 * np.abs(energy[:-1]))
    assert s * (energy[-1] - energy[0]) > 1e-3


def test_rotation_about_the_axis_is_exact():
    lmax = 31
    grid = SphereGrid(lmax)
    shift = grid.shape[1] // 4  # a multiple of every merge factor
    rot = Rotation.from_euler("z", shift * grid.dphi)
    rho0 = vmf(grid, [0.5, 0.1, 0.6], 3.0)
    base = s2_config(beta=2.0, percep=relu(activation="gelu"), t_end=1.0, dt=0.02)
    turned = s2_config(beta=2.0, percep=relu(rot.apply(PAPER_S2_A), activation="gelu"), t_end=1.0, dt=0.02)
    r1 = simulate(base, rho0).final.rho
    r2 = simulate(turned, np.roll(rho0, shift, axis=1)).final.rho
    assert np.max(np.abs(np.roll(r1, shift, axis=1) - r2)) <= 1e-12 * r1.max()
    assert np.max(np.abs(r1 - rho0)) > 1e-3


def test_general_rotation_with_rotated_weights():
    """Rotating the data and the weights rotates the solution (to the grid's accuracy)."""
    grid = SphereGrid(63)
    rot = Rotation.from_rotvec([0.4, -0.7, 0.3])
    centre = np.array([0.1, 0.8, 0.5])
    runs = []
    for r in (Rotation.identity(), rot):
        cfg = s2_config(lmax=63, beta=2.0, kernel="exp_shifted", percep=relu(r.apply(PAPER_S2_A), activation="gelu"),
                        t_end=3.0)
        runs.append(simulate(cfg, vmf(grid, r.apply(centre), 4.0)).final.diagnostics)
    assert runs[0].energy == pytest.approx(runs[1].energy, rel=2e-3)
    assert runs[0].n_atoms == runs[1].n_atoms >= 1
    np.testing.assert_allclose(runs[0].atom_mass, runs[1].atom_mass, atol=5e-3)
    angle = np.arccos(np.clip(np.sum(rot.apply(runs[0].atom_position) * runs[1].atom_position, axis=1), -1, 1))
    assert np.all(angle < 0.05)


@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_atoms_at_pole_and_equator_follow_the_two_atom_ode(direction):
    """D' = -2 s m exp(beta cos D) sin D (docs/math.md §3.3) with one atom at the north pole.

    The atoms are vMF bumps (kappa = 100) a few cells wide; the distance between their centres of
    mass follows the ODE to the grid's accuracy (ascent: 0.008 at lmax 63, 0.0045 at lmax 127).
    """
    lmax, beta, m, t_end = 63, 1.0, 0.5, 0.25
    grid = SphereGrid(lmax)
    north, east = np.array([0, 0, 1.0]), np.array([1.0, 0, 0])
    rho0 = vmf(grid, north, 100.0, m) + vmf(grid, east, 100.0, m)
    cfg = s2_config(lmax=lmax, beta=beta, direction=direction, t_end=t_end)
    rho = simulate(cfg, rho0).final.rho
    x = grid.points(grid.theta, grid.phi)
    w = rho * grid.area
    near_pole = x @ north > x @ east
    c = [np.sum((w * sel)[..., None] * x, axis=(0, 1)) for sel in (near_pole, ~near_pole)]
    d = np.arccos(np.dot(c[0], c[1]) / np.linalg.norm(c[0]) / np.linalg.norm(c[1]))
    s = 1.0 if direction == "ascent" else -1.0
    ode = solve_ivp(lambda t, y: -2 * s * m * np.exp(beta * np.cos(y)) * np.sin(y), (0, t_end), [np.pi / 2],
                    rtol=1e-12, atol=1e-12)
    assert abs(ode.y[0, -1] - np.pi / 2) > 0.2
    assert d == pytest.approx(ode.y[0, -1], abs=0.012)


def test_merged_polar_cells_keep_the_step_from_shrinking():
    """Steps to a fixed time grow like lmax (not lmax^2) thanks to the merged polar cells."""
    steps = []
    for lmax in (31, 63):
        cfg = s2_config(lmax=lmax, beta=1.0, kernel="exp_shifted", percep=relu(), t_end=0.5)
        grid = SphereGrid(lmax)
        steps.append(simulate(cfg, np.full(grid.shape, 1 / (4 * np.pi))).n_steps)
    assert steps[1] / steps[0] < 2.6
    assert dataclasses.is_dataclass(cfg)


@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
def test_kernel_application_against_direct_quadrature(kernel):
    """f = K*rho through the Funk-Hecke eigenvalues equals sum_j K(x_i, x_j) rho_j area_j (the
    grid density read as point masses), to round-off, and the energy is its quadrature."""
    beta, grid = 3.0, SphereGrid(31)
    cfg = s2_config(beta=beta, kernel=kernel)
    prob = SphereProblem(cfg.model, grid)
    rng = np.random.default_rng(3)
    rho = rng.random(grid.shape) ** 3
    x = grid.points(grid.theta, grid.phi).reshape(-1, 3)
    shift = beta if kernel == "exp_shifted" else 0.0
    kmat = np.exp(beta * (x @ x.T) - shift)
    direct = kmat @ (rho * grid.area).ravel()
    f = prob.centre_fields(rho)["f"].ravel()
    np.testing.assert_allclose(f, direct, rtol=1e-12)
    w = (rho * grid.area).ravel()
    assert prob.energy(rho) == pytest.approx(w @ kmat @ w / (2 * beta), rel=1e-12)


def test_spectral_scheme_starts_from_point_values():
    """On S^2 the spectral state is node values: the configured Y_lm amplitude is exact."""
    from solvers.io.state import initial_density
    from solvers.model.config import load_config

    text = ('[domain]\nmanifold = "S2"\nresolution = 31\n[initial]\nkind = "uniform"\n'
            'modes = [[3, 2, 0.01]]\n[time]\nscheme = "{}"\n')
    grid = SphereGrid(31)
    for scheme, tol in (("spectral", 1e-13), ("fv", 2e-2)):
        rho = initial_density(load_config(text.format(scheme)))
        c = grid.basis.forward(rho)[grid.basis.index(3, 2)]
        # Re Y_32 = (Y_32 + conj Y_32)/2 -> coefficient amp/2 at (3, 2)
        assert abs(c) == pytest.approx(0.005, rel=tol)
