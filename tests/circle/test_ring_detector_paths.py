"""The compiled S^1 detector's shortcuts change nothing: the core iterations over the run of
cells near the centre (cells in angular order) give bitwise the sums of the scan over all of an
atom's cells; the kernel's order by angle is numpy's, and where it is not sure (atoms, or an
atom and the cut at 0, closer than SURE) numpy's order decides; the diagnostics run it fused
with the reductions."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.circle.atoms import _sorted, detect_atoms, ring_atoms, ring_detector
from solvers.model.params import AtomParams

pytest.importorskip("numba")


def _state(n, rng, k, negative=False):
    theta = 2 * np.pi * (np.arange(n) + 0.5) / n
    centres, widths = rng.uniform(0, 2 * np.pi, k), rng.uniform(0.01, 0.5, k)
    rho = 0.02 + sum(w * np.exp((np.cos(theta - c) - 1) / s ** 2)
                     for c, s, w in zip(centres, widths, rng.uniform(0.1, 1.0, k)))
    cell_mass = rho / rho.sum() - (0.3 / n if negative else 0.0)
    faces = 2 * np.pi * (np.arange(n) + 1) / n
    velocity = -np.sin(k * faces + rng.uniform(0, 2 * np.pi)) + 0.3 * rng.standard_normal(n)
    velocity[rng.random(n) < 0.05] = 0.0
    return cell_mass, velocity


def _run(detector, cell_mass, velocity, ordered):
    from solvers.circle.atoms_numba import detect_ring

    args = list(detector.arguments())
    args[6] = ordered
    return detect_ring(velocity, cell_mass, *args)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("core_radius", [None, 0.05, 0.6, 2.0, 4.0])
def test_core_over_the_run_of_near_cells_is_the_scan(seed, core_radius):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([16, 64, 256, 512]))
    cell_mass, velocity = _state(n, rng, int(rng.integers(1, 7)), negative=seed % 4 == 0)
    theta = 2 * np.pi * np.arange(n) / n
    detector = ring_detector(theta, 5.0, AtomParams(core_radius=core_radius))
    fast, scan = _run(detector, cell_mass, velocity, True), _run(detector, cell_mass, velocity, False)
    assert fast[0] and scan[0] and fast[4] == scan[4]
    np.testing.assert_array_equal(fast[1], scan[1])
    np.testing.assert_array_equal(fast[2], scan[2])  # bitwise
    assert fast[3] == scan[3]


def test_unordered_cells_use_the_scan():
    theta = 2 * np.pi * np.arange(64) / 64
    shuffled = theta[np.random.default_rng(0).permutation(64)]
    assert ring_detector(theta, 5.0, AtomParams()).arguments()[6] is True
    assert ring_detector(shuffled, 5.0, AtomParams()).arguments()[6] is False


def _one_atom_at(n, cell):
    """A single concentrated atom centred on ``cell`` (its position is the cell's angle)."""
    cell_mass = np.full(n, 0.1 / n)
    cell_mass[[cell - 1, cell, (cell + 1) % n]] += [0.1, 0.3, 0.1]
    cell_mass /= cell_mass.sum()
    i = np.arange(n)
    to = ((cell - i + n / 2) % n) - n / 2  # signed distance to the sink
    return cell_mass, np.where(to > 0, 1.0, 0.0) + np.where(np.roll(to, -1) < 0, -1.0, 0.0)


def test_an_atom_at_the_cut_is_not_sure_and_numpy_orders_it():
    """An atom centred at angle 0 (within SURE of the cut) next to another: the kernel flags
    the order as not sure, and the result is numpy's order of numpy's positions."""
    n = 128
    a, u = _one_atom_at(n, 0)
    b, v = _one_atom_at(n, 40)
    cell_mass, velocity = (a + b) / 2, np.where(np.arange(n) < 20, u, v)
    velocity[-20:] = u[-20:]
    theta = 2 * np.pi * np.arange(n) / n
    detector = ring_detector(theta, 5.0, AtomParams())
    from solvers.circle.atoms_numba import detect_ring

    ok, labels, table, diffuse, sure = detect_ring(velocity, cell_mass, *detector.arguments())
    assert ok and table.shape[1] == 2 and not sure
    got = ring_atoms((ok, labels, table, diffuse, sure))
    want = _sorted(table[0], table[1], table[2], table[3], diffuse, labels)
    np.testing.assert_array_equal(got.position, want.position)
    np.testing.assert_array_equal(got.labels, want.labels)
    ref = detect_atoms(theta, cell_mass, 5.0, AtomParams(), face_velocity=velocity, backend="numpy")
    np.testing.assert_array_equal(got.labels, ref.labels)
    np.testing.assert_allclose(got.mass, ref.mass, rtol=0, atol=1e-13)


def test_sure_order_is_numpys():
    """Positions from numpy's arctan2 of the kernel-sorted atoms are sorted (sure orders)."""
    rng = np.random.default_rng(5)
    theta = 2 * np.pi * np.arange(256) / 256
    detector = ring_detector(theta, 5.0, AtomParams())
    for _ in range(50):
        found = detector(*_state(256, rng, int(rng.integers(2, 7))))
        assert np.all(np.diff(found.position) > 0)
        assert np.all(found.labels < found.count)
