"""The exact energy and grid masses of the S^1 Lagrangian measure (cells plus Dirac atoms)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.circle.measure import lagrangian as lg
from solvers.circle.measure.cell_energy import corners, energy
from solvers.model.params import ModelParams, PerceptronParams

RELU = PerceptronParams("relu", np.array([[-0.9967456002240224, 0.0806114658969388],
                                          [-0.6198538201675943, -0.784717300448792]]),
                        np.array([0.6324575844117477, -0.4696753890279187]), np.array([0.0, 0.3]))


def _state(rng: np.random.Generator, n: int, x0: float, atoms: int) -> lg.LagrangianState:
    L = rng.uniform(0.2, 1.0, n)
    X = x0 + np.concatenate([[0.0], np.cumsum(L[:-1])]) * (2 * np.pi / L.sum())
    A = np.zeros(n)
    A[rng.choice(n, atoms, replace=False)] = rng.uniform(0.05, 0.2, atoms)
    return lg.LagrangianState(X, rng.uniform(0.0, 1.0, n) / n, A, np.where(A > 0, np.arange(n), -1))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), x0=st.floats(0.0, 2 * np.pi, exclude_max=True),
       n_cells=st.sampled_from([16, 64, 128]))
def test_grid_masses_hold_the_cells_mass_wherever_the_first_point_lies(seed, x0, n_cells):
    """Every uniform cell's mass is the cells' exact share; the total is kept, also with X_0 in
    the last half cell below 2 pi (where three unrolled turns lost mass)."""
    state = _state(np.random.default_rng(seed), 40, x0, 0)
    masses = lg.cell_masses(state, n_cells)
    assert np.all(masses >= -1e-15)
    assert masses.sum() == pytest.approx(state.m.sum(), abs=1e-14)


def test_grid_masses_near_two_pi():
    state = _state(np.random.default_rng(1), 50, 2 * np.pi - 1e-3, 0)
    assert lg.cell_masses(state, 128).sum() == pytest.approx(state.m.sum(), abs=1e-14)


def _quadrature_energy(state: lg.LagrangianState, model: ModelParams, nodes: int = 24) -> float:
    """Independent value: Gauss-Legendre nodes in every cell (the perceptron's corners split no
    cell here: the corners are moved onto cell ends) and the kernel summed directly."""
    g, w = np.polynomial.legendre.leggauss(nodes)
    L = state.lengths()
    x = (state.X[:, None] + 0.5 * L[:, None] * (g[None, :] + 1)).ravel()
    mass = ((state.m / L)[:, None] * 0.5 * L[:, None] * w[None, :]).ravel()
    x, mass = np.concatenate([x, state.X]), np.concatenate([mass, state.A])
    K = np.exp(model.beta * np.cos(x[:, None] - x[None, :]))
    from solvers.model import perceptron

    v = perceptron.circle_potential(model.perceptron, np.mod(x, 2 * np.pi))
    return float(mass @ K @ mass / (2 * model.beta) + 0.5 * mass @ v)


@pytest.mark.parametrize("beta", [1.0, 5.0])
def test_energy_matches_direct_quadrature(beta):
    model = ModelParams(beta=beta, direction="descent", kernel="exp", perceptron=RELU)
    rng = np.random.default_rng(7)
    state = _state(rng, 30, 0.4, 3)
    # put every corner on a cell end, so that the reference's per-cell quadrature is exact too
    X = np.sort(np.concatenate([state.X, np.mod(corners(model) - 0.4, 2 * np.pi) + 0.4]))
    n = X.size
    cells = lg.LagrangianState(X, np.full(n, 1.0 / n), np.zeros(n), np.full(n, -1))
    cells = lg.LagrangianState(X, cells.m, np.where(np.arange(n) % 7 == 0, 0.1, 0.0),
                               np.where(np.arange(n) % 7 == 0, np.arange(n), -1))
    assert energy(cells, model) == pytest.approx(_quadrature_energy(cells, model), rel=1e-12)


def test_corners_are_where_a_unit_switches():
    model = ModelParams(beta=1.0, perceptron=RELU)
    c = corners(model)
    assert c.size == 4
    x = np.stack([np.cos(c), np.sin(c)], axis=1)
    s = x @ RELU.a.T + RELU.b
    assert np.all(np.min(np.abs(s), axis=1) < 1e-12)
