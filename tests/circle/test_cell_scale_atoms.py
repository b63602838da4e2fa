"""Atoms at the cell scale (solvers.core.atoms._cell_scale_atom): a light atom concentrated in
two cells of a coarse grid is an atom although its peak is below ``contrast * M / |S|``; a
uniform density (any basins) and a smooth bump spread over many cells are not. Both S^1
backends, and S^2."""

from __future__ import annotations

import numpy as np
import pytest

import solvers.circle.atoms as circle_atoms
import solvers.core.atoms as core_atoms
from solvers.circle.atoms import detect_atoms
from solvers.core.backend import numba_available
from solvers.model.params import AtomParams

BACKENDS = ["numpy"] + (["numba"] if numba_available() else [])


def _detect(cell_mass, velocity, backend):
    theta = 2 * np.pi * np.arange(cell_mass.size) / cell_mass.size
    return detect_atoms(theta, cell_mass, 5.0, AtomParams(), face_velocity=velocity, backend=backend)


def _sinks(n, cells):
    """Face velocities (right faces) draining every cell into the nearest of ``cells``."""
    i = np.arange(n)
    d = (np.asarray(cells)[None, :] - i[:, None] + n / 2) % n - n / 2  # signed distance to each sink
    to = d[np.arange(n), np.argmin(np.abs(d), axis=1)]
    u = np.sign(to).astype(float)  # cell i moves right (+) or left (-)
    face = np.where(u > 0, 1.0, 0.0) + np.where(np.roll(u, -1) < 0, -1.0, 0.0)
    return np.where(face != 0.0, face, 0.0) * 1e-3


def _coarse_state(n=128):
    """The N = 128 Dirac demo's end state in miniature: a heavy atom, a light one of 0.042 in
    two cells (peak density 0.71 < 5 / (2 pi) = 0.80), and a thin background."""
    cell_mass = np.full(n, 1e-6)
    cell_mass[40] = 0.9
    cell_mass[100], cell_mass[101] = 0.0346, 0.0075
    cell_mass /= cell_mass.sum()
    return cell_mass, _sinks(n, [40, 100])


@pytest.mark.parametrize("backend", BACKENDS)
def test_light_atom_in_two_cells_is_an_atom(backend):
    cell_mass, u = _coarse_state()
    h = 2 * np.pi / cell_mass.size
    assert cell_mass[100] / h < 5.0 / (2 * np.pi)  # below the global contrast
    found = _detect(cell_mass, u, backend)
    assert found.count == 2
    light = np.argmin(found.mass)
    assert found.mass[light] == pytest.approx((0.0346 + 0.0075) / (0.9 + 0.0421 + 126e-6), abs=1e-4)
    assert found.diffuse_mass == pytest.approx(1.0 - found.mass.sum(), abs=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_the_rule_the_light_atom_is_diffuse(backend, monkeypatch):
    monkeypatch.setattr(core_atoms, "CONCENTRATED", 1.5)  # never met
    monkeypatch.setattr(circle_atoms, "CONCENTRATED", 1.5)
    cell_mass, u = _coarse_state()
    assert _detect(cell_mass, u, backend).count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_uniform_density_in_small_basins_has_no_atoms(backend):
    n = 32
    u = _sinks(n, np.arange(0, n, 3))  # basins of three cells: all their mass near the sink
    found = _detect(np.full(n, 1.0 / n), u, backend)
    assert found.count == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_smooth_bump_is_not_an_atom_at_the_cell_scale(backend):
    n = 128
    theta = 2 * np.pi * np.arange(n) / n
    bump = np.exp((np.cos(theta - theta[64]) - 1) / 0.15 ** 2)  # width ~ 4 cells
    cell_mass = 1e-4 + bump
    cell_mass = 0.3 * cell_mass / cell_mass.sum()
    cell_mass[10] += 0.7  # the heavy atom elsewhere
    assert cell_mass[64] / (2 * np.pi / n) < 5.0 / (2 * np.pi) * cell_mass.sum()
    found = _detect(cell_mass, _sinks(n, [10, 64]), backend)
    assert found.count == 1


def test_sphere_light_atom_in_a_few_cells():
    """S^2 (lmax 15 Gauss grid): a light atom in two neighbouring cells, its peak density at
    0.6 of the global contrast, is an atom; spread evenly over its basin it is not."""
    from solvers.sphere.atoms import detect_atoms as sphere_detect
    from solvers.sphere.cells import SphereGrid

    g = SphereGrid(15)
    pts = g.points(g.theta, g.phi).reshape(-1, 3)
    area = g.area
    j, k = g.shape[0] // 2, 5
    floor = 5.0 / (4 * np.pi)
    light = (0.6 * floor * area[j, k], 0.4 * floor * area[j, k + 1])
    north = np.array([0.0, 0.0, 1.0])
    cell_mass = np.full(g.shape, 1e-9)
    cell_mass.flat[np.argmax(pts @ north)] = 1.0 - sum(light)
    cell_mass[j, k], cell_mass[j, k + 1] = light
    centre = pts[j * g.shape[1] + k]
    potential = np.maximum(pts @ centre, pts @ north)  # s U with two wells: two basins
    params = AtomParams(min_mass=0.5 * sum(light))
    kw = {"cell": float(np.sqrt(area.max())), "potential": potential}
    found = sphere_detect(pts, cell_mass, area, 5.0, params, **kw)
    assert found.count == 2
    assert np.min(found.mass) == pytest.approx(sum(light), rel=1e-3)
    basin = (pts @ centre > pts @ north).reshape(g.shape)
    spread = np.where(basin, sum(light) * area / area[basin].sum(), cell_mass)
    assert sphere_detect(pts, spread, area, 5.0, params, **kw).count == 1
