"""The ladder distances of measure-valued states: the Dirac atoms are part of the measure.

Before round 10 ``meanfield converge`` on a Dirac config compared the diffuse remainders only
(the demo's space ladder at T = 30 read W1 = 9.7e-3 at N = 128 and 8.0e-2 at N = 256).
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.sphere.cells import SphereGrid
from solvers.studies.distances import kernel_distance_s2, w1_s1

N = 64
H = 2 * np.pi / N


def test_w1_of_two_atoms_is_their_distance():
    empty = np.zeros(N)
    for x, d in ((1.0, 0.01), (6.25, 0.1), (3.0, 1e-3)):
        got = w1_s1(empty, empty, "fv", (np.array([1.0]), np.array([x])), (np.array([1.0]), np.array([x + d])))
        assert got == pytest.approx(d, abs=2e-6)


def test_w1_of_an_atom_and_the_same_mass_at_a_cell_centre():
    """A cell holding mass m, read as fv (piecewise linear CDF through the face values), against
    an atom m at its centre: the same distance as the grid to the grid's own atom-free copy."""
    rho = np.full(N, 0.5 / (2 * np.pi))
    cell = 17
    with_cell = rho.copy()
    with_cell[cell] += 0.5 / H
    atoms = (np.array([0.5]), np.array([cell * H]))
    d_atom = w1_s1(with_cell, rho, "fv", None, atoms)
    # the fv CDF spreads the cell's mass over the half cells beside its centre: W1 = m h / 4
    assert d_atom == pytest.approx(0.5 * H / 4, rel=1e-3)
    assert w1_s1(rho, rho, "fv", atoms, atoms) < 1e-15


def test_w1_is_symmetric_and_sees_the_atom_masses():
    rng = np.random.default_rng(3)
    rho_a, rho_b = rng.uniform(0, 0.1, N), rng.uniform(0, 0.1, N)
    ma = 1.0 - rho_a.sum() * H
    a = (np.array([0.6 * ma, 0.4 * ma]), np.array([0.3, 4.0]))
    mb = 1.0 - rho_b.sum() * H
    b = (np.array([mb]), np.array([2.0]))
    assert w1_s1(rho_a, rho_b, "fv", a, b) == pytest.approx(w1_s1(rho_b, rho_a, "fv", b, a), rel=1e-12)
    assert w1_s1(rho_a, rho_b, "fv", a, b) > 0.1 * ma  # an atom moved by more than a radian


def test_s2_kernel_distance_of_an_atom_at_a_cell_centre_and_that_cell():
    """The Gauss analysis of a grid density gives the exact moments of its cells as point
    masses at the centres: an atom at a centre and the same mass in that cell are one measure."""
    lmax = 15
    g = SphereGrid(lmax)
    j, k = 5, 9
    rho = np.zeros(g.shape)
    rho[j, k] = 1.0 / g.area[j, k]
    x = g.points(g.theta[j:j + 1], g.phi[k:k + 1]).reshape(1, 3)
    atom = (np.array([1.0]), x)
    zero = np.zeros(g.shape)
    assert kernel_distance_s2(rho, lmax, zero, lmax, 2.0, -2.0, None, atom) < 1e-12
    moved = (np.array([1.0]), g.points(g.theta[j + 1:j + 2], g.phi[k:k + 1]).reshape(1, 3))
    assert kernel_distance_s2(rho, lmax, zero, lmax, 2.0, -2.0, None, moved) > 1e-3


def test_converge_space_ladder_of_a_dirac_run_compares_the_measures():
    """The demo's Dirac space ladder at T = 30: its W1 errors are those of the whole measures,
    below the grid ladder's (measured 1.1e-3 / 1.2e-3 against 9.4e-3 / 5.3e-3)."""
    from pathlib import Path

    from solvers.studies.converge import converge

    demo = Path(__file__).resolve().parents[2] / "runs" / "demo.toml"
    (space,) = converge(demo, resolutions="128,256,512", overrides=['atoms.representation="dirac"'],
                        t_end=30.0)
    w1 = space.table()["distance"][:-1]
    assert np.all(w1 < 3e-3)
