"""Exact W1 on the circle (solvers.studies.wasserstein) against closed forms and linear programming."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from solvers.studies.particles import circle_angles, circle_particles
from solvers.studies.wasserstein import grid_density, particles, w1

TWO_PI = 2 * np.pi


def lp_w1(ta: np.ndarray, wa: np.ndarray, tb: np.ndarray, wb: np.ndarray) -> float:
    """W1 by the transport linear program with geodesic cost (independent of the CDF formula)."""
    diff = np.abs(ta[:, None] - tb[None, :]) % TWO_PI
    cost = np.minimum(diff, TWO_PI - diff)
    na, nb = ta.size, tb.size
    rows = np.kron(np.eye(na), np.ones(nb))
    cols = np.kron(np.ones(na), np.eye(nb))
    res = linprog(cost.ravel(), A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([wa, wb]),
                  bounds=(0, None), method="highs")
    return float(res.fun)


@pytest.mark.parametrize("shift", [0.05, 0.3, -0.2])
def test_two_atoms_shifted(shift):
    theta = np.array([0.1, 2.0])  # 0.1 + (-0.2) wraps across 0
    weights = np.array([0.3, 0.7])
    a, b = particles(theta, weights), particles(theta + shift, weights)
    assert w1(a, b) == pytest.approx(abs(shift), rel=1e-12)
    assert w1(b, a) == pytest.approx(abs(shift), rel=1e-12)


def test_shift_across_zero_uses_the_short_arc():
    a = particles([6.2, 2.0], [0.3, 0.7])
    b = particles([0.1, 2.05], [0.3, 0.7])
    assert w1(a, b) == pytest.approx(0.3 * (TWO_PI - 6.2 + 0.1) + 0.7 * 0.05, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_random_atoms_match_linear_programming(seed):
    rng = np.random.default_rng(seed)
    ta, tb = rng.uniform(0, TWO_PI, 5), rng.uniform(0, TWO_PI, 7)
    wa, wb = rng.uniform(0.1, 1, 5), rng.uniform(0.1, 1, 7)
    wa, wb = 2.0 * wa / wa.sum(), 2.0 * wb / wb.sum()  # mass 2
    assert w1(particles(ta, wa), particles(tb, wb)) == pytest.approx(lp_w1(ta, wa, tb, wb), abs=1e-10)


def test_uniform_grids_are_identical():
    assert w1(grid_density(np.full(64, 1 / TWO_PI)), grid_density(np.full(100, 1 / TWO_PI))) \
        == pytest.approx(0.0, abs=1e-13)
    rho = (1 + 0.5 * np.cos(np.arange(128) * TWO_PI / 128)) / TWO_PI
    assert w1(grid_density(rho), grid_density(rho)) == 0.0


@pytest.mark.parametrize("n", [1, 10, 333])
def test_uniform_against_its_quantiles(n):
    """Sawtooth CDF difference of height M/n: W1 = pi M / (2 n) exactly."""
    rho = np.full(90, 3.0 / TWO_PI)  # mass 3
    x, w = circle_particles(rho, n)
    assert w1(grid_density(rho), particles(circle_angles(x), w)) == pytest.approx(
        3.0 * np.pi / (2 * n), rel=1e-12)


def test_smooth_density_against_its_quantiles():
    rho = np.exp(np.cos(TWO_PI * np.arange(512) / 512 - 1.0)) / TWO_PI
    rho /= rho.sum() * TWO_PI / 512
    for n in (50, 400):
        x, w = circle_particles(rho, n)
        assert w1(grid_density(rho), particles(circle_angles(x), w)) == pytest.approx(
            np.pi / (2 * n), rel=1e-2)


def test_grid_against_grid_matches_sampled_cdf():
    """Two grids of different sizes against the CDF sampled at 2^18 points (benchmark method)."""
    ta, tb = TWO_PI * np.arange(64) / 64, TWO_PI * np.arange(96) / 96
    rho_a = (1 + 0.8 * np.cos(ta)) / TWO_PI
    rho_b = (1 + 0.5 * np.sin(3 * tb)) / TWO_PI
    a, b = grid_density(rho_a), grid_density(rho_b)
    x = (np.arange(1 << 18) + 0.5) * TWO_PI / (1 << 18)
    d = a.cdf(x) - b.cdf(x)
    sampled = np.mean(np.abs(d - np.median(d))) * TWO_PI
    assert w1(a, b) == pytest.approx(sampled, rel=1e-6)


def test_grid_against_single_atom():
    """All mass of a uniform density to one atom at 0: int |x| over the circle = pi^2 / (2 pi) * M."""
    rho = np.full(1000, 1 / TWO_PI)
    expected = 2 * (np.pi**2 / 2) / TWO_PI  # 2 int_0^pi x dx / (2 pi)
    assert w1(grid_density(rho), particles([0.0], [1.0])) == pytest.approx(expected, rel=1e-12)


def test_triangle_inequality_and_rotation():
    rng = np.random.default_rng(7)
    t = [rng.uniform(0, TWO_PI, 9) for _ in range(3)]
    m = [particles(ti) for ti in t]
    assert w1(m[0], m[2]) <= w1(m[0], m[1]) + w1(m[1], m[2]) + 1e-14
    rot = [particles(ti + 1.234) for ti in t[:2]]
    assert w1(rot[0], rot[1]) == pytest.approx(w1(m[0], m[1]), rel=1e-12)


def test_unequal_masses_raise():
    with pytest.raises(ValueError, match="equal masses"):
        w1(particles([0.0], [1.0]), particles([1.0], [2.0]))
    with pytest.raises(ValueError):
        grid_density(np.array([1.0, -1.0]))
