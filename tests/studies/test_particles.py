"""Particle model (solvers.studies.particles) and the PDE comparison (solvers.studies.compare_particles).

Exact references: the two-atom ODE of docs/math.md §3.3 (dimension independent), mass and unit norms,
the energy's monotonicity (docs/math.md §1), rotation equivariance, the placement's quantiles, and
the PDE at N = 1024 for the paper's S^1 descent setup.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pytest
import xarray as xr
from conftest import PAPER_A, PAPER_OMEGA, make_config, perceptron
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from solvers.cli.compare_particles import add_parser, run_command
from solvers.model.params import InitialParams, ModelParams, PerceptronParams
from solvers.studies.compare_particles import compare
from solvers.studies.particles import (
    ParticleSystem,
    circle_angles,
    circle_particles,
    energy_violation,
    integrate,
    run_particles,
    sphere_particles,
)

TWO_PI = 2 * np.pi


def pair_in_plane(d: int, distance: float, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors at geodesic ``distance`` in a random 2-plane of R^d, and the plane basis."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, 2)))
    angles = np.array([-distance / 2, distance / 2]) + 0.3
    x = np.cos(angles)[:, None] * q[:, 0] + np.sin(angles)[:, None] * q[:, 1]
    return x, q


def two_atom_reference(rhs, d0: float, times: np.ndarray) -> np.ndarray:
    sol = solve_ivp(lambda t, y: rhs(y), (0, times[-1]), [d0], t_eval=times, rtol=1e-12, atol=1e-14)
    return sol.y[0]


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("direction", ["descent", "ascent"])
def test_two_atoms_follow_the_ode(d, direction):
    """docs/math.md §3.3: ``D' = -2 s m exp(beta cos D) sin D``, midpoint fixed, in any dimension."""
    beta, m, d0 = 2.0, 0.4, 1.0
    system = ParticleSystem(ModelParams(beta, direction, "unnormalized", "exp"))
    s = system.model.sign
    x0, _ = pair_in_plane(d, d0)
    times = np.array([0.0, 0.25, 0.5, 1.0])
    run = integrate(system, x0, np.array([m, m]), times, dt=2e-3, energy=False)
    dist = np.arccos(np.clip(np.sum(run.x[:, 0] * run.x[:, 1], axis=1), -1, 1))
    ref = two_atom_reference(lambda y: -2 * s * m * np.exp(beta * np.cos(y)) * np.sin(y), d0, times)
    np.testing.assert_allclose(dist, ref, atol=1e-6, rtol=0)
    mid = run.x[:, 0] + run.x[:, 1]
    mid /= np.linalg.norm(mid, axis=1, keepdims=True)
    np.testing.assert_allclose(mid, np.broadcast_to(mid[0], mid.shape), atol=1e-12)


@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
def test_two_atoms_softmax(kernel):
    """Softmax (eq. 2.9): ``D' = -2 s sin D e^{beta cos D} / (e^beta + e^{beta cos D})``."""
    beta, d0 = 3.0, 2.0
    system = ParticleSystem(ModelParams(beta, "ascent", "softmax", kernel))
    x0, _ = pair_in_plane(3, d0)
    times = np.array([0.0, 0.5, 2.0])
    run = integrate(system, x0, np.array([0.5, 0.5]), times, dt=2e-3, energy=False)
    dist = np.arccos(np.clip(np.sum(run.x[:, 0] * run.x[:, 1], axis=1), -1, 1))
    def rhs(y):
        return -2 * np.sin(y) * np.exp(beta * np.cos(y)) / (np.exp(beta) + np.exp(beta * np.cos(y)))

    np.testing.assert_allclose(dist, two_atom_reference(rhs, d0, times), atol=1e-6, rtol=0)


def test_rk4_is_fourth_order():
    system = ParticleSystem(ModelParams(2.0, "descent", "unnormalized", "exp"))
    x0, _ = pair_in_plane(2, 1.0)
    ref = two_atom_reference(lambda y: -2 * -1 * 0.5 * np.exp(2 * np.cos(y)) * np.sin(y), 1.0,
                             np.array([0.0, 0.5]))[-1]
    errs = []
    for dt in (0.05, 0.025):
        x = integrate(system, x0, np.array([0.5, 0.5]), [0.5], dt=dt, energy=False).x[0]
        errs.append(abs(np.arccos(x[0] @ x[1]) - ref))
    assert np.log2(errs[0] / errs[1]) == pytest.approx(4.0, abs=0.3)


def random_particles(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    w = rng.uniform(0.5, 1.5, n)
    return x / np.linalg.norm(x, axis=1, keepdims=True), w / w.sum()


def relu_model(direction: str, d: int, seed: int = 3) -> ModelParams:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, d))
    return ModelParams(4.0, direction, "unnormalized", "exp_shifted",
                       PerceptronParams("relu", a, rng.normal(size=3), 0.1 * rng.normal(size=3)))


@pytest.mark.parametrize("direction", ["descent", "ascent"])
def test_relu_run_energy_monotone_norms_and_mass(direction):
    system = ParticleSystem(relu_model(direction, 3), chunk_bytes=8 * 100 * 30)  # 4 row blocks
    x0, w = random_particles(100, 3)
    run = integrate(system, x0, w, np.linspace(0, 2, 21))
    assert energy_violation(run.energy, system.model.sign) == 0.0
    assert abs(run.energy[-1] - run.energy[0]) > 1e-3
    np.testing.assert_allclose(np.linalg.norm(run.x, axis=2), 1.0, atol=1e-14, rtol=0)
    assert run.weights.sum() == pytest.approx(1.0, abs=1e-15)


def test_energy_identity():
    """``dE/dt = s sum_i w_i |g(x_i)|^2`` (docs/math.md §1), GeLU perceptron, central difference."""
    rng = np.random.default_rng(5)
    model = ModelParams(3.0, "descent", "unnormalized", "exp",
                        PerceptronParams("gelu", rng.normal(size=(2, 4)), rng.normal(size=2),
                                         np.zeros(2)))
    system = ParticleSystem(model)
    x0, w = random_particles(40, 4)
    h = 1e-3
    run = integrate(system, x0, w, [0.5 - h, 0.5, 0.5 + h], dt=h)
    g = system.field(run.x[1], w)
    rate = -np.sum(w * np.sum(g * g, axis=1))
    assert (run.energy[2] - run.energy[0]) / (2 * h) == pytest.approx(rate, rel=1e-5)  # O(h^2)


def test_chunked_and_threaded_velocity_agree():
    x, w = random_particles(300, 3, seed=2)
    for attention in ("unnormalized", "softmax"):
        model = dataclasses.replace(relu_model("ascent", 3), attention=attention)
        ref = ParticleSystem(model, chunk_bytes=1 << 30).velocity(x, w)
        got = ParticleSystem(model, chunk_bytes=8 * 300 * 7, workers=3).velocity(x, w)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-14 * np.abs(ref).max())


def test_rotation_equivariance_d3():
    model = relu_model("descent", 3)
    q = Rotation.from_rotvec([0.3, -1.1, 0.7]).as_matrix()
    rotated = dataclasses.replace(model, perceptron=dataclasses.replace(
        model.perceptron, a=model.perceptron.a @ q.T))
    x0, w = random_particles(60, 3, seed=4)
    a = integrate(ParticleSystem(model), x0, w, [1.0], energy=False).x[0]
    b = integrate(ParticleSystem(rotated), x0 @ q.T, w, [1.0], energy=False).x[0]
    np.testing.assert_allclose(b, a @ q.T, atol=1e-12, rtol=0)


def test_quantile_and_sample_placement_s1():
    rho = np.full(64, 2.0 / TWO_PI)
    x, w = circle_particles(rho, 8)
    np.testing.assert_allclose(circle_angles(x), TWO_PI * (np.arange(8) + 0.5) / 8, atol=1e-14)
    np.testing.assert_allclose(w, 0.25)
    rho = np.where(np.arange(64) < 32, 1.0, 0.0)  # empty half: no particle there
    xs, _ = circle_particles(rho, 500, "sample", seed=3)
    faces = TWO_PI * (31.5 / 64)
    assert np.all((circle_angles(xs) <= faces) | (circle_angles(xs) >= TWO_PI - np.pi / 64))
    again, _ = circle_particles(rho, 500, "sample", seed=3)
    np.testing.assert_array_equal(xs, again)


@pytest.mark.parametrize("placement", ["quantiles", "sample"])
def test_sphere_placement_moments(placement):
    """Uniform density on S^2: particles have mean ~ 0 and second moment ~ I/3."""
    from solvers.sphere.cells import SphereGrid

    grid = SphereGrid(31)
    x, w = sphere_particles(np.full(grid.shape, 1 / (4 * np.pi)), grid, 4000, placement)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)
    assert w.sum() == pytest.approx(1.0)
    tol = 0.01 if placement == "quantiles" else 0.05
    np.testing.assert_allclose(w @ x, 0.0, atol=tol)
    np.testing.assert_allclose((w[:, None] * x).T @ x, np.eye(3) / 3, atol=tol)


def paper_config(n_cells: int = 1024, t_end: float = 2.0):
    percep = perceptron("relu", PAPER_A, PAPER_OMEGA)
    config = make_config(n_cells, beta=5.0, direction="descent", kernel="exp_shifted",
                         percep=percep, t_end=t_end, cfl=0.4)
    return dataclasses.replace(config, initial=InitialParams(kind="uniform", modes=((1, 0.05),)))


def test_run_particles_from_config():
    run = run_particles(paper_config(256, 1.0), 64, energy=True)
    assert run.times.tolist() == [0.0, 1.0] and run.x.shape == (2, 64, 2)
    assert run.energy[1] < run.energy[0]  # descent


def test_pde_against_particles_w1_decreases():
    """Paper S^1 descent (beta = 5, ReLU, exp_shifted) at t = 2: W1 falls as n = 50, 200, 800."""
    ds = compare(paper_config(), [50, 200, 800], [2.0])
    w1 = ds["w1"].values[:, 0]
    assert w1[0] > w1[1] > w1[2]
    assert ds["w1_rate"].values[0] == pytest.approx(-1.0, abs=0.15)  # quantiles: O(1/n)
    assert np.all(ds["kernel_distance"].values[:, 0] < 1e-2)


def test_command_writes_netcdf(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[domain]\nresolution = 256\n[model]\nbeta = 2.0\n'
                   '[initial]\nmodes = [[2, 0.3]]\n[time]\nt_end = 1.0\n')
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    out = tmp_path / "out.nc"
    args = parser.parse_args(["compare-particles", str(cfg), "--n", "20,40", "--times", "0.25,0.5",
                              "--set", "model.direction=ascent", "-o", str(out)])
    assert run_command(args) == 0
    assert "W1(PDE, particles)" in capsys.readouterr().out
    ds = xr.open_dataset(out)  # the times on the record dimension "t" (CF: no "time")
    assert ds["w1"].dims == ("n", "t") and ds["w1"].shape == (2, 2)
    assert ds["t"].values.tolist() == [0.25, 0.5] and ds["t"].attrs["units"] == "1"
    assert ds["n"].values.tolist() == [20, 40]
    bad = parser.parse_args(["compare-particles", str(cfg), "--n", "0,x"])
    assert run_command(bad) == 2
    assert "error: --n" in capsys.readouterr().err
    short = parser.parse_args(["compare-particles", str(cfg), "--n", "20", "--times", "1",
                               "--set", "time.max_steps=1"])
    assert run_command(short) == 2
    assert "error: time.max_steps" in capsys.readouterr().err


def direct_kernel_form(beta: float, xa: np.ndarray, ma: np.ndarray) -> float:
    """``sum_ab m_a m_b exp(beta x_a.x_b)`` for a signed discrete measure (independent of moments)."""
    return float(ma @ np.exp(beta * (xa @ xa.T)) @ ma)


def test_circle_kernel_distance_against_quadrature():
    from solvers.studies.compare_particles import circle_kernel_distance

    config = make_config(64, beta=3.0)
    t = TWO_PI * np.arange(64) / 64
    rho = (1 + 0.7 * np.cos(2 * t - 0.4)) / TWO_PI
    theta, w = np.array([0.3, 2.0, 4.0]), np.array([0.2, 0.5, 0.3])
    g, gw = np.polynomial.legendre.leggauss(8)  # 8 Gauss points per cell: the density exactly
    pts = (t[:, None] + 0.5 * (TWO_PI / 64) * g[None, :]).ravel()
    mass = (rho[:, None] * 0.5 * (TWO_PI / 64) * gw[None, :]).ravel()
    angles = np.concatenate([pts, theta])
    signed = np.concatenate([mass, -w])
    x = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    expected = np.sqrt(direct_kernel_form(3.0, x, signed))
    assert circle_kernel_distance(config, rho, theta, w) == pytest.approx(expected, rel=1e-9)


def test_sphere_kernel_distance_against_direct_sum():
    from solvers.sphere.cells import SphereGrid
    from solvers.studies.compare_particles import sphere_kernel_distance

    config = dataclasses.replace(make_config(31, beta=1.5), domain=dataclasses.replace(
        make_config().domain, manifold="S2", resolution=31))
    grid = SphereGrid(31)
    pts = grid.basis.points.reshape(-1, 3)
    rho = 1 / (4 * np.pi) + 0.05 * pts[:, 2].reshape(grid.shape)
    x, w = random_particles(7, 3, seed=9)
    signed = np.concatenate([(rho * grid.area).ravel(), -w * (np.sum(rho * grid.area))])
    expected = np.sqrt(direct_kernel_form(1.5, np.vstack([pts, x]), signed))
    got = sphere_kernel_distance(config, rho, x, w * np.sum(rho * grid.area))
    assert got == pytest.approx(expected, rel=1e-9)


def test_s2_comparison_reports_kernel_distance():
    config = dataclasses.replace(make_config(31, beta=1.0, t_end=0.1), domain=dataclasses.replace(
        make_config().domain, manifold="S2", resolution=31))
    config = dataclasses.replace(config, initial=InitialParams(kind="uniform", modes=((1, 0, 0.1),)))
    ds = compare(config, [50, 800], [0.0, 0.1])
    assert np.all(np.isnan(ds["w1"].values))
    kd = ds["kernel_distance"].values
    assert np.all(kd[1] < kd[0])
