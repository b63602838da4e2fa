"""The compiled S^2 basin detector equals the numpy reference: the same labels and atom count,
masses and positions to round-off, on bumps, a saddle split, coarse cell-scale atoms, a smooth
density and states of the paper's S^2 run."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.model.params import AtomParams
from solvers.sphere.atoms import detect_atoms
from solvers.sphere.cells import SphereGrid
from solvers.sphere.initial import vmf_density, vmf_pdf

pytest.importorskip("numba")


def unit(colat_deg: float, lon_deg: float) -> np.ndarray:
    t, p = np.radians(colat_deg), np.radians(lon_deg)
    return np.array([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)])


def both(grid: SphereGrid, rho: np.ndarray, potential=None, beta: float = 5.0, **kw):
    points = grid.points(grid.theta, grid.phi).reshape(-1, 3)
    args = (points, rho * grid.area, grid.area, beta, AtomParams(**kw))
    opts = dict(cell=float(max(grid.dtheta.max(), grid.dphi)), potential=potential)
    return detect_atoms(*args, **opts, backend="numba"), detect_atoms(*args, **opts, backend="numpy")


def assert_same(got, ref) -> None:
    assert got.count == ref.count
    np.testing.assert_array_equal(got.labels, ref.labels)
    np.testing.assert_allclose(got.mass, ref.mass, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.core_mass, ref.core_mass, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.position, ref.position, rtol=0, atol=1e-12)
    assert got.diffuse_mass == pytest.approx(ref.diffuse_mass, rel=1e-10, abs=1e-14)


def _bumps(g: SphereGrid, seed: int, kappa: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 6))
    centres = [tuple(c / np.linalg.norm(c)) for c in rng.normal(size=(k, 3))]
    weights = tuple(rng.dirichlet(np.ones(k)) * 0.9)
    return vmf_density(g, tuple(centres), (kappa,) * k, weights) + 0.1 / (4 * np.pi)


@pytest.mark.parametrize("lmax", [15, 31, 63])
@pytest.mark.parametrize("seed", range(4))
# kappa = 5000 (cells about the width of a bump: 12 cases, 100 s) runs in the slow step
@pytest.mark.parametrize("kappa", [30.0, 300.0, pytest.param(5000.0, marks=pytest.mark.slow)])
def test_bumps_on_a_floor(lmax, seed, kappa):
    """Random bumps (wide, narrow, and at the cell scale) on a uniform floor, with the density
    itself and with a smooth potential as the flow."""
    g = SphereGrid(lmax)
    rho = _bumps(g, seed, kappa)
    assert_same(*both(g, rho))
    hill = vmf_pdf(g.points(g.theta, g.phi), unit(60, 30 * seed), 1.5).ravel()
    assert_same(*both(g, rho, potential=hill))


def test_saddle_split_and_parameters():
    g = SphereGrid(63)
    a, b = unit(80, 0), unit(105, 0)
    rho = vmf_density(g, (tuple(a), tuple(b)), (400.0, 400.0), (0.6, 0.4))
    mid = (a + b) / np.linalg.norm(a + b)
    hill = vmf_pdf(g.points(g.theta, g.phi), mid, 2.0).ravel()
    got, ref = both(g, rho, potential=hill)
    assert got.count == 2
    assert_same(got, ref)
    for kw in ({"saddle_ratio": 0.9}, {"min_mass": 0.45}, {"contrast": 50.0}, {"max_radius": 0.05}):
        assert_same(*both(g, rho, potential=hill, **kw))


def test_smooth_density_and_uniform():
    g = SphereGrid(31)
    x = g.points(g.theta, g.phi)[..., 2]
    for rho in (np.full(g.area.shape, 1 / (4 * np.pi)), (1 + 0.3 * x) / (4 * np.pi)):
        got, ref = both(g, rho)
        assert got.count == ref.count == 0
        assert_same(got, ref)


def test_paper_run_states():
    """States of the paper's S^2 descent at lmax 31: the flow potential as in the diagnostics."""
    from solvers.api import load_config
    from solvers.io.state import initial_density
    from solvers.timestepping.simulation import Solver

    cfg = load_config("runs/s2_descent_relu.toml", domain__resolution=31, time__t_end=400.0,
                      time__scheme="fv")  # the grid states the detectors are tested on
    s = Solver(cfg, initial_density(cfg))
    disc = s.disc
    counts = []
    for t in (50.0, 150.0, 400.0):
        while s.t < t:
            s.step(t)
        fields = disc.problem.centre_fields(s.rho)
        got, ref = both(disc.grid, s.rho, potential=disc.flow_potential(fields), beta=1.0)
        assert_same(got, ref)
        counts.append(got.count)
    assert max(counts) >= 3


@pytest.mark.parametrize("light", [0.021, 0.023])
def test_cell_scale_atom_on_a_coarse_grid(light):
    """A light atom in one cell of an lmax 15 grid, below ``contrast M / 4 pi`` (contrast 18),
    is an atom by the cell-scale rule in both detectors (its region: 23 cells)."""
    from solvers.core import atoms as reference

    g = SphereGrid(15)
    rho = vmf_density(g, (tuple(unit(40, 20)),), (300.0,), (1.0 - light,)) + 1e-9
    i, j = 11, 20  # one cell near the equator
    rho[i, j] += light / g.area[i, j]
    seen = []
    original = reference._cell_scale_atom
    try:
        reference._cell_scale_atom = lambda *a: seen.append(original(*a)) or seen[-1]
        got, ref = both(g, rho, contrast=18.0)
    finally:
        reference._cell_scale_atom = original
    assert True in seen and got.count == 2
    assert_same(got, ref)
    assert got.mass.min() == pytest.approx(light, rel=1e-3)


@pytest.mark.parametrize("seed", range(4))
def test_candidates_and_centres_options(seed):
    """``candidates`` all True is the full detection; a mask keeps exactly the atoms whose flow
    basin holds a masked cell, with the same masses; ``centres=False`` keeps labels and masses
    and puts each atom at its peak cell."""
    g = SphereGrid(31)
    rho = _bumps(g, seed, 300.0)
    points = g.points(g.theta, g.phi).reshape(-1, 3)
    args = (points, (rho * g.area).ravel(), g.area, 5.0, AtomParams())
    opts = dict(cell=float(max(g.dtheta.max(), g.dphi)), backend="numba")
    full = detect_atoms(*args, **opts)
    every = detect_atoms(*args, **opts, candidates=np.ones(rho.size, bool))
    assert_same(every, full)
    bare = detect_atoms(*args, **opts, centres=False)
    np.testing.assert_array_equal(bare.labels, full.labels)
    np.testing.assert_array_equal(bare.mass, full.mass)
    flat = rho.ravel()
    for k in range(full.count):
        cells = np.flatnonzero(full.labels == k)
        np.testing.assert_array_equal(bare.position[k], points[cells[np.argmax(flat[cells])]])
    if full.count < 2:
        return
    # mark the heaviest atom's peak only: that atom alone is found, the rest is diffuse
    cells = np.flatnonzero(full.labels == 0)
    mask = np.zeros(rho.size, bool)
    mask[cells[np.argmax(flat[cells])]] = True
    one = detect_atoms(*args, **opts, candidates=mask)
    assert one.count == 1
    assert one.mass[0] == full.mass[0]
    np.testing.assert_array_equal(one.labels == 0, full.labels == 0)
    assert one.diffuse_mass == pytest.approx(full.diffuse_mass + full.mass[1:].sum(), rel=1e-12)
