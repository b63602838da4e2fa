"""Basin-boundary refinement of the S^2 Lagrangian particles (``time.basin_refine``).

References: exact masses (each cell's mass, the half-sphere masses of a tilted plane), a flow
whose basins are known in closed form (hemispheres: every point slides to the pole on its side),
a brute-force neighbour scan, and the config rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.api import load_config
from solvers.io.state import initial_density
from solvers.model.config import ConfigError
from solvers.sphere.cells import SphereGrid
from solvers.sphere.measure.lagrangian_discretization import LagrangianSphereDiscretization
from solvers.sphere.measure.lagrangian_refine import boundary_cells, refined_particles, scout_groups, sub_particles
from solvers.timestepping.registry import make_discretization
from solvers.timestepping.loop import simulate

PAPER = "runs/paper_s2_descent_relu_particles.toml"
NORMAL = np.array([0.3, -0.5, 0.81])
NORMAL = NORMAL / np.linalg.norm(NORMAL)  # a plane no Gauss cell face follows ...
OFFSET = 0.2  # ... off the centre (the Gauss grid is antipodally symmetric: any plane through 0 halves it)


def hemisphere_flow(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Every point slides to the pole ``+-NORMAL`` on its side of the plane ``NORMAL . x =
    OFFSET`` (tangential): the basins are the two caps the plane cuts."""
    s = np.sign(x @ NORMAL - OFFSET)[:, None]
    return s * (NORMAL[None, :] - (x @ NORMAL)[:, None] * x)


def smooth_density(grid: SphereGrid) -> np.ndarray:
    th, ph = np.meshgrid(grid.theta, grid.phi, indexing="ij")
    return 1.0 + 0.5 * np.cos(th) + 0.3 * np.sin(th) * np.cos(2 * ph)


def test_every_cell_keeps_its_mass_and_its_pieces_lie_in_it():
    grid = SphereGrid(31)
    rho = smooth_density(grid)
    mark = np.zeros(grid.shape, bool)
    mark[::3, ::2] = True
    mark[0], mark[-1] = True, True  # polar bands too
    x, w, cell = sub_particles(grid, rho, mark, 3)
    exact = (rho * grid.area).ravel()
    np.testing.assert_allclose(np.bincount(cell, w, exact.size), exact, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(grid.fine_cell(x), cell)
    assert np.all(w > 0)
    assert np.bincount(cell, minlength=exact.size)[mark.ravel()].min() == 9
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-15)


def test_a_uniform_cell_splits_into_equal_pieces_and_a_linear_one_follows_its_slope():
    grid = SphereGrid(31)
    mark = np.zeros(grid.shape, bool)
    mark[10, 5] = True
    _, w, cell = sub_particles(grid, np.ones(grid.shape), mark, 4)
    pieces = w[cell == 10 * grid.shape[1] + 5]
    np.testing.assert_allclose(pieces, grid.area[10, 5] / 16, rtol=1e-14)
    rho = 2.0 + 0.01 * np.arange(grid.shape[0])[:, None] + 0.0 * grid.area  # linear in the band index
    _, w, cell = sub_particles(grid, rho, mark, 2)
    pieces = w[cell == 10 * grid.shape[1] + 5].reshape(2, 2)  # (mu piece, phi piece)
    value = rho[10, 5] + 0.01 * np.array([-0.25, 0.25])
    np.testing.assert_allclose(pieces[:, 0], value / value.sum() * rho[10, 5] * grid.area[10, 5] / 2,
                               rtol=1e-13)


def brute_boundary(group: np.ndarray) -> np.ndarray:
    nlat, nphi = group.shape
    def neighbours(j, k):
        out = [(j, (k - 1) % nphi), (j, (k + 1) % nphi)]
        return out + [(i, k) for i in (j - 1, j + 1) if 0 <= i < nlat]
    differs = np.zeros(group.shape, bool)
    for j in range(nlat):
        for k in range(nphi):
            differs[j, k] = group[j, k] >= 0 and any(group[a, b] != group[j, k] for a, b in neighbours(j, k))
    out = differs.copy()
    for j in range(nlat):
        for k in range(nphi):
            if differs[j, k]:
                for a, b in neighbours(j, k):
                    out[a, b] = True
    return out & (group >= 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.integers(3, 9), st.integers(0, 3), st.integers(0, 2**31 - 1))
def test_boundary_cells_match_a_neighbour_scan(nlat, nphi, groups, seed):
    group = np.random.default_rng(seed).integers(-1, groups + 1, size=(nlat, nphi))
    np.testing.assert_array_equal(boundary_cells(group), brute_boundary(group))


def test_scout_finds_the_two_caps():
    grid = SphereGrid(31)
    x, w, _ = sub_particles(grid, np.ones(grid.shape), np.zeros(grid.shape, bool), 1)
    group = scout_groups(x, w, hemisphere_flow, t_end=12.0, dt=0.25, merge_radius=1e-4)
    side = x @ NORMAL > OFFSET
    assert np.unique(group).size == 2
    assert np.all(group[side] == group[side][0]) and np.all(group[~side] == group[~side][0])
    assert group[side][0] != group[~side][0]


def test_scout_stops_once_nothing_moves():
    """Every point converges to its pole at rate 1 (speed ~ e^-t): with ``still = 1e-6`` the
    scout stops near t = 14 instead of running to t = 200, with the same groups."""
    grid = SphereGrid(31)
    x, w, _ = sub_particles(grid, np.ones(grid.shape), np.zeros(grid.shape, bool), 1)
    calls = []

    def counted(y, m):
        calls.append(1)
        return hemisphere_flow(y, m)

    group = scout_groups(x, w, counted, t_end=200.0, dt=0.25, merge_radius=1e-4, still=1e-6)
    assert 4 * 10 / 0.25 < len(calls) < 4 * 30 / 0.25
    np.testing.assert_array_equal(group == group[0], (x @ NORMAL > OFFSET) == (x[0] @ NORMAL > OFFSET))


def test_refinement_divides_the_boundary_error_of_the_basin_masses():
    """Uniform density of mass 1, two caps as basins: the cap ``NORMAL . x > OFFSET`` holds
    exactly ``(1 - OFFSET) / 2``. One particle a cell misplaces the mass of the cells the plane
    cuts; K x K pieces on those cells cut that error by about K (here at least K / 2)."""
    grid = SphereGrid(31)
    rho = np.full(grid.shape, 1.0 / (4 * np.pi))
    errors = {}
    for k in (1, 4, 8):
        x, w = refined_particles(grid, rho, k, hemisphere_flow, t_end=12.0, dt=0.25, merge_radius=1e-4)
        assert w.sum() == pytest.approx(1.0, rel=1e-13)
        errors[k] = abs(w[x @ NORMAL > OFFSET].sum() - (1 - OFFSET) / 2)
    assert errors[1] > 1e-4  # the plain quadrature's error is real
    assert errors[4] < errors[1] / 2 and errors[8] < errors[1] / 4


@pytest.mark.slow  # 25 s
def test_a_refined_run_starts_from_more_particles_and_keeps_mass():
    cfg = load_config(PAPER, domain__resolution=31, time__t_end=40.0, time__basin_refine=2,
                      time__stop_when_stationary=False)
    disc = make_discretization(cfg)
    assert isinstance(disc, LagrangianSphereDiscretization)
    rho0 = initial_density(cfg)
    state = disc.prepare_state(rho0, None, fresh=True)
    n = disc.particles(state).count
    assert n > np.count_nonzero(rho0)
    assert disc.total_mass(state) == pytest.approx(float(np.sum(rho0 * disc.grid.area)), rel=1e-13)
    assert n < 2 * np.count_nonzero(rho0)  # only the boundaries (about a quarter of the cells at t = 40)
    short = load_config(PAPER, domain__resolution=31, time__t_end=10.0, time__basin_refine=2,
                        time__stop_when_stationary=False, output__snapshot_interval=5.0)
    masses = []
    simulate(short, initial_density(short), trackers=[lambda snap: masses.append(snap.diagnostics.mass)])
    assert masses == pytest.approx([1.0] * 3, rel=1e-13)


@pytest.mark.parametrize("path, over", [
    ("runs/demo.toml", {}),  # S1
    (PAPER, {"time__scheme": "fv"}),
    (PAPER, {"time__basin_refine": 0}),
    (PAPER, {"time__basin_refine": 2.0}),
])
def test_config_rules(path, over):
    with pytest.raises(ConfigError, match=r"time\.basin_refine"):
        load_config(path, **{"time__basin_refine": 2, **over})
