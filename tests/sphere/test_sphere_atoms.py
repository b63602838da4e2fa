"""S^2 atoms by basins: exact masses of narrow bumps at several lmax, a saddle splits one flow
basin into two atoms, sub-cell positions, and no atoms in a smooth density."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.model.params import AtomParams
from solvers.sphere.atoms import detect_atoms
from solvers.sphere.cells import SphereGrid
from solvers.sphere.initial import vmf_density, vmf_pdf


def unit(colat_deg: float, lon_deg: float) -> np.ndarray:
    t, p = np.radians(colat_deg), np.radians(lon_deg)
    return np.array([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)])


def atoms_of(grid: SphereGrid, rho: np.ndarray, beta: float = 5.0, potential=None, **kw):
    points = grid.points(grid.theta, grid.phi).reshape(-1, 3)
    return detect_atoms(points, rho * grid.area, grid.area, beta, AtomParams(**kw),
                        cell=float(max(grid.dtheta.max(), grid.dphi)), potential=potential)


@pytest.mark.parametrize("lmax", [31, 63, 127])
def test_basin_masses_of_narrow_bumps_are_exact(lmax):
    """Three bumps (kappa = 300: tails below 1e-12 beyond 30 degrees) of masses .5 .3 .2: each
    basin holds its bump's mass, whatever the grid (the cell averages are exact moments)."""
    g = SphereGrid(lmax)
    centres = (tuple(unit(40, 20)), tuple(unit(100, 150)), tuple(unit(150, 280)))
    weights = (0.5, 0.3, 0.2)
    rho = vmf_density(g, centres, (300.0,) * 3, weights)
    found = atoms_of(g, rho)
    assert found.count == 3
    np.testing.assert_allclose(found.mass, weights, rtol=0, atol=1e-9)
    assert found.diffuse_mass == pytest.approx(0.0, abs=1e-9)


def test_a_saddle_splits_one_flow_basin():
    """Two bumps 25 degrees apart inside one basin of the flow potential (a single broad hill
    between them) are two atoms, split at the density saddle."""
    g = SphereGrid(63)
    a, b = unit(80, 0), unit(105, 0)
    rho = vmf_density(g, (tuple(a), tuple(b)), (400.0, 400.0), (0.6, 0.4))
    mid = (a + b) / np.linalg.norm(a + b)
    hill = vmf_pdf(g.points(g.theta, g.phi), mid, 2.0).ravel()  # one sink: the midpoint
    found = atoms_of(g, rho, potential=hill)
    assert found.count == 2
    # the split runs along the saddle: each bump's tail beyond it (exp(-400 (1 - cos 12.5 deg))
    # ~ 8e-5 of the peak density there, about 2e-6 of mass) counts for the other atom
    np.testing.assert_allclose(found.mass, [0.6, 0.4], rtol=0, atol=1e-5)


def test_positions_below_the_cell_size():
    """A bump centred anywhere (not on a cell centre) is located to a small fraction of a cell."""
    g = SphereGrid(63)
    cell = float(max(g.dtheta.max(), g.dphi))
    rng = np.random.default_rng(3)
    for _ in range(4):
        e = unit(rng.uniform(30, 150), rng.uniform(0, 360))
        found = atoms_of(g, vmf_density(g, (tuple(e),), (600.0,), (1.0,)))
        error = np.arccos(np.clip(found.position[0] @ e, -1, 1))
        assert found.count == 1 and error < 0.1 * cell


def test_smooth_density_has_no_atoms():
    g = SphereGrid(31)
    rho = vmf_density(g, (tuple(unit(60, 30)),), (2.0,), (1.0,))  # a broad hill: no cluster
    found = atoms_of(g, rho)
    assert found.count == 0 and found.diffuse_mass == pytest.approx(1.0, abs=1e-12)
