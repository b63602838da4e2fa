"""Noisy stationary states and their continuation against closed forms (docs/noise.md).

- branch points of pure attention at ``nu_j = M I_j(beta) / beta`` (S^1) and
  ``nu_l = M i_l(beta) / beta`` (S^2), times ``exp(-beta)`` for the shifted kernel, to 1e-8;
- the linearised PDE's eigenvalues at the uniform state against ``s r_j - nu j(j + d - 2)``;
- the super/subcritical type of the first bifurcation against the third-order coefficient
  (S^1: continuous iff ``I_2/I_1 < 1/2``; S^2: iff ``i_2/i_1 < 1/3``).

The Bessel values come from scipy.special (``iv``, ``spherical_in``), not from the package's
eigenvalue code.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import iv, spherical_in

from solvers.model.config import load_config
from solvers.studies.continuation_run import continue_states
from solvers.studies.stationary import build_problem, uniform_state
from solvers.studies.stationary_linear import linear_operator, stability, stability_basis


def config(manifold: str, resolution: int, beta: float = 2.0, noise: float = 1.0,
           direction: str = "ascent", kernel: str = "exp", mass: float = 1.0, extra: str = ""):
    return load_config(f'[domain]\nmanifold = "{manifold}"\nresolution = {resolution}\n'
                       f'[model]\nbeta = {beta}\ndirection = "{direction}"\nkernel = "{kernel}"\n'
                       f'noise = {noise}\n[initial]\nmass = {mass}\n{extra}')


def closed_form(manifold: str, j: int, beta: float, mass: float, kernel: str) -> float:
    bessel = iv(j, beta) if manifold == "S1" else spherical_in(j, beta)
    return mass * bessel / beta * (np.exp(-beta) if kernel == "exp_shifted" else 1.0)


def branch_points(result) -> np.ndarray:
    return np.array(sorted({r.value for r in result.records if r.kind == "branch_point"}))[::-1]


@pytest.mark.parametrize("manifold, resolution, degrees, kernel, mass, to", [
    ("S1", 64, (1, 2, 3), "exp", 1.0, 0.09),
    ("S1", 64, (1, 2), "exp_shifted", 2.5, 0.04),
    ("S2", 31, (1, 2), "exp", 1.0, 0.12),
])
def test_branch_points_of_pure_attention(manifold, resolution, degrees, kernel, mass, to) -> None:
    nu1 = closed_form(manifold, 1, 2.0, mass, kernel)
    result = continue_states(config(manifold, resolution, kernel=kernel, mass=mass, noise=1.5 * nu1),
                             "model.noise", to, depth=0)
    found = branch_points(result)
    expected = np.array([closed_form(manifold, j, 2.0, mass, kernel) for j in degrees])
    assert found.size == len(degrees)
    np.testing.assert_allclose(found, expected, rtol=1e-8, atol=0)


@pytest.mark.parametrize("manifold, resolution", [("S1", 64), ("S2", 31)])
@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_linear_rates_at_the_uniform_state(manifold, resolution, direction) -> None:
    beta, nu, mass = 3.0, 0.2, 1.7
    problem = build_problem(config(manifold, resolution, beta, nu, direction, mass=mass))
    basis = stability_basis(problem)
    op = linear_operator(problem, uniform_state(problem), basis)
    s, j = (1.0 if direction == "ascent" else -1.0), basis.degree.astype(float)
    if manifold == "S1":  # s M j^2 I_j / beta - nu j^2 (docs/math.md §3.2 plus diffusion)
        rates = s * mass * j**2 * iv(j, beta) / beta - nu * j**2
    else:
        rates = s * mass * j * (j + 1) * spherical_in(basis.degree, beta) / beta - nu * j * (j + 1)
    scale = np.abs(rates).max()
    assert np.abs(op - np.diag(np.diag(op))).max() <= 1e-12 * scale
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(op).real), np.sort(rates),
                               rtol=0, atol=1e-11 * scale)


@pytest.mark.parametrize("manifold, resolution, beta, ratio, threshold", [
    ("S1", 64, 2.0, lambda b: iv(2, b) / iv(1, b), 0.5),
    ("S1", 64, 3.0, lambda b: iv(2, b) / iv(1, b), 0.5),
    ("S2", 31, 1.5, lambda b: spherical_in(2, b) / spherical_in(1, b), 1.0 / 3.0),
    ("S2", 31, 2.0, lambda b: spherical_in(2, b) / spherical_in(1, b), 1.0 / 3.0),
])
def test_type_of_the_first_bifurcation(manifold, resolution, beta, ratio, threshold) -> None:
    """Supercritical (the new branch at nu < nu_1, stable, no fold) iff the Bessel ratio is
    below the threshold (docs/noise.md §2); subcritical: a fold above nu_1, unstable below it."""
    nu1 = closed_form(manifold, 1, beta, 1.0, "exp")
    cfg = config(manifold, resolution, beta, noise=1.3 * nu1)
    result = continue_states(cfg, "model.noise", 0.7 * nu1, depth=1, max_branches=2)
    new = [r for r in result.records if r.branch == 1]
    folds = [r.value for r in new if r.kind == "fold"]
    supercritical = ratio(beta) < threshold
    near = [r for r in new[1:6]]
    if supercritical:
        assert not folds and all(r.value < nu1 for r in near)
        problem = result.problem.at("model.noise", near[-1].value)
        assert stability(problem, near[-1].x).stable
    else:
        assert len(folds) == 1 and folds[0] > nu1 and all(r.value > nu1 for r in near)
        problem = result.problem.at("model.noise", near[0].value)
        assert not stability(problem, near[0].x).stable
