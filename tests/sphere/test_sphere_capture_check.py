"""S^2 Dirac capture is checked after every step, its basin detection skipped only where
:func:`solvers.sphere.measure.dirac_events.capture_candidates` (a necessary condition) finds
none."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.api import load_config
from solvers.core.measure import DiracAtoms
from solvers.model.params import AtomParams
from solvers.sphere.measure.dirac_events import capture, capture_candidates
from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization

PARAMS = AtomParams(capture_fraction=0.9)  # min_mass 0.02: a capture needs a core of 0.018


def disc() -> DiracSphereDiscretization:
    text = ('[domain]\nmanifold = "S2"\nresolution = 31\n[model]\nbeta = 5.0\ndirection = "ascent"\n'
            '[atoms]\nrepresentation = "dirac"\n')
    return DiracSphereDiscretization(load_config(text))


def spike(d: DiracSphereDiscretization, mass: float, background: float = 1e-6) -> np.ndarray:
    """A uniform background plus ``mass`` in one fine cell (band 10: unmerged cells)."""
    g = d.grid
    rho = np.full(g.shape, background)
    rho[10, 20] += mass / g.area[10, 20]
    return rho


def captured(d: DiracSphereDiscretization, rho: np.ndarray) -> int:
    empty = DiracAtoms.empty(3)
    potential = d.field.flow_potential(rho, empty.position, empty.mass)
    return capture(rho, empty, potential, d.fv, d.neighbours, PARAMS, 0)[1].count


@pytest.mark.parametrize("mass", [0.0, 0.005, 0.0179, 0.0181, 0.03, 0.5])
def test_capture_candidates_are_necessary(mass):
    """Wherever capture captures, there are candidates; below the core bound there are none."""
    d = disc()
    rho = spike(d, mass)
    may = capture_candidates(rho, d.fv, d.adjacency, PARAMS) is not None
    count = captured(d, rho)
    assert may or count == 0
    assert may == (mass > 0.018)  # the background adds about 5e-8 to a core
    if mass >= 0.03:
        assert count == 1


def test_core_sums_are_the_neighbour_sums():
    """The sparse core sums equal the direct sums over cell_neighbours."""
    d = disc()
    rng = np.random.default_rng(5)
    rho = d.grid.to_fine(rng.uniform(0.0, 1.0, d.grid.n_cells))
    volume = d.fv.cells(rho) * d.fv.maps.area
    start, adjacent = d.neighbours
    direct = np.array([volume[c] + volume[adjacent[start[c]:start[c + 1]]].sum() for c in range(volume.size)])
    np.testing.assert_allclose(volume + d.adjacency @ volume, direct, rtol=1e-13)


def test_after_step_captures_at_once():
    """A concentrated atom is captured on the step it appears, whatever the step's number."""
    d = disc()
    rho = spike(d, 0.3)
    state = d.prepare_state(rho, DiracAtoms.empty(3), fresh=False)
    for step in (3, 7, 11):
        new = d.after_step(state, step)
        assert d.layout.count(new) == 1
        assert d.total_mass(new) == pytest.approx(d.total_mass(state), rel=1e-14)
    quiet = d.prepare_state(spike(d, 0.0, 1.0 / (4 * np.pi)), DiracAtoms.empty(3), fresh=False)
    assert capture_candidates(d.density(quiet), d.fv, d.adjacency, PARAMS) is None
    assert d.layout.count(d.after_step(quiet, 10)) == 0


def _spikes(d: DiracSphereDiscretization, seed: int) -> np.ndarray:
    """A random floor plus spikes of masses on both sides of the capture bound, each split
    between a finite volume and a neighbour (one concentration shared by two basins); the
    fine density holds each finite volume's value on all its fine cells, as a run's does."""
    rng = np.random.default_rng(seed)
    area = d.fv.maps.area
    value = rng.uniform(0.5, 1.5, area.size) * 0.01 / (4 * np.pi)
    start, adjacent = d.neighbours
    for mass in (0.005, 0.017, 0.019, 0.04, 0.2):
        c = int(rng.integers(0, area.size))
        n = int(adjacent[start[c]])
        value[c] += 0.6 * mass / area[c]
        value[n] += 0.4 * mass / area[n]
    return d.grid.to_fine(value / float(value @ area))


@pytest.mark.parametrize("seed", range(6))
def test_candidates_give_the_same_captures(seed):
    """Capture restricted to the basins holding a candidate cell (capture_candidates) returns the
    same density and atoms, to the bit, as capture over every basin, with and without Dirac atoms
    already present."""
    pytest.importorskip("numba")
    from solvers.sphere.measure.dirac_events import capture_candidates

    d = disc()
    rho = _spikes(d, seed)
    rng = np.random.default_rng(100 + seed)
    old = DiracAtoms(np.array([0.05]), rng.normal(size=(1, 3)), np.array([0]))
    old = DiracAtoms(old.mass, old.position / np.linalg.norm(old.position), old.ids)
    for atoms in (DiracAtoms.empty(3), old):
        potential = d.field.flow_potential(rho, atoms.position, atoms.mass)
        hint = capture_candidates(rho, d.fv, d.adjacency, PARAMS)
        assert hint is not None and hint.shape == (rho.size,) and 0 < hint.sum() < rho.size
        full_rho, full = capture(rho, atoms, potential, d.fv, d.neighbours, PARAMS, 1)
        some_rho, some = capture(rho, atoms, potential, d.fv, d.neighbours, PARAMS, 1,
                                 candidates=hint)
        assert full.count > atoms.count  # the test exercises a capture
        np.testing.assert_array_equal(some_rho, full_rho)
        np.testing.assert_array_equal(some.mass, full.mass)
        np.testing.assert_array_equal(some.position, full.position)
        np.testing.assert_array_equal(some.ids, full.ids)
