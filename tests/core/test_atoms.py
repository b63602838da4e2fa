"""Atom detection (solvers.core.atoms) against exact masses and positions, and identities.

Exact references: masses of prescribed von Mises / von Mises-Fisher bumps (the trapezoid / Gauss
quadrature of a smooth bump is its mass to round-off), exact sub-cell positions of translated
bumps (cell averages integrated exactly), and invariants of identities across a merge.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_atom_sequences
from scipy.special import i0e

from solvers.circle.atoms import detect_atoms, flow_pointer
from solvers.core.atom_tracks import AtomTracks
from solvers.model.params import AtomParams

CENTRES = 0.5 + 2 * np.pi / 3 * np.arange(3)
WEIGHTS = np.array([0.5, 0.3, 0.2])


def von_mises(theta: np.ndarray, centre: float, kappa: float) -> np.ndarray:
    """Unit-mass von Mises density (overflow-safe)."""
    return np.exp(kappa * (np.cos(theta - centre) - 1.0)) / (2 * np.pi * i0e(kappa))


def cell_averages(n: int, density, sub: int = 64) -> np.ndarray:
    """Exact-to-round-off cell averages on cells centred at 2 pi i / n (Gauss-Legendre)."""
    h = 2 * np.pi / n
    x, w = np.polynomial.legendre.leggauss(sub)
    theta = h * np.arange(n)[:, None] + 0.5 * h * x[None, :]
    return (density(theta) * w).sum(axis=1) / 2.0


@pytest.mark.parametrize("n", [64, 256, 1024])
@pytest.mark.parametrize("kappa", [200.0, 3000.0])  # smooth bumps, and bumps in one or two cells
def test_basin_masses_of_bumps_are_exact(n, kappa):
    """Three bumps in the three basins of ``u = -3 sin(3 (theta - 0.5))``: each atom holds its
    bump's mass (tails beyond the basin edge are below exp(-kappa/2))."""
    theta = 2 * np.pi * np.arange(n) / n
    avg = cell_averages(n, lambda t: sum(w * von_mises(t, c, kappa) for w, c in zip(WEIGHTS, CENTRES)))
    faces = theta + np.pi / n
    found = detect_atoms(theta, avg * 2 * np.pi / n, 5.0, AtomParams(),
                         face_velocity=-3 * np.sin(3 * (faces - 0.5)))
    assert found.count == 3
    np.testing.assert_allclose(found.mass, WEIGHTS, atol=1e-10)
    assert abs(found.diffuse_mass) < 1e-10
    if kappa ** -0.5 > 2 * (2 * np.pi / n):  # resolved bumps: sub-cell positions
        np.testing.assert_allclose(found.position, CENTRES, atol=0.01 * 2 * np.pi / n)


def test_smooth_spread_density_has_no_atoms():
    n = 256
    theta = 2 * np.pi * np.arange(n) / n
    rho = (1 + 0.5 * np.cos(2 * theta)) / (2 * np.pi)
    found = detect_atoms(theta, rho * 2 * np.pi / n, 5.0, AtomParams(),
                         face_velocity=-np.sin(2 * (theta + np.pi / n)))
    assert found.count == 0 and np.isclose(found.diffuse_mass, 1.0)


@pytest.mark.parametrize("gap", [0.25, 0.6])
def test_two_atoms_a_saddle_apart_are_two_atoms(gap):
    """Two narrow bumps in ONE flow basin (the flow converges on their midpoint) are split at the
    density saddle between them; each keeps its exact mass."""
    n, kappa = 512, 2000.0
    theta = 2 * np.pi * np.arange(n) / n
    c = np.array([3.0 - gap / 2, 3.0 + gap / 2])
    avg = cell_averages(n, lambda t: 0.7 * von_mises(t, c[0], kappa) + 0.3 * von_mises(t, c[1], kappa))
    faces = theta + np.pi / n
    u = -np.sin(faces - 3.0)
    assert (flow_pointer(u) == np.arange(n)).sum() == 1  # one sink: one basin
    found = detect_atoms(theta, avg * 2 * np.pi / n, 5.0, AtomParams(), face_velocity=u)
    assert found.count == 2
    np.testing.assert_allclose(found.mass, [0.7, 0.3], atol=1e-9)
    chained = detect_atoms(theta, avg * 2 * np.pi / n, 5.0,
                           AtomParams(method="paper", radius=gap * 1.5), face_velocity=u)
    assert chained.count == 1  # the single-linkage convention, by contrast, joins them


@pytest.mark.parametrize("n", [128, 512])
def test_translated_atom_position_is_sub_cell(n):
    """A bump two cells wide moved by fractions of a cell: the detected position follows the
    exact centre to a small fraction of a cell."""
    h = 2 * np.pi / n
    kappa = 1.0 / (2 * h) ** 2
    theta = h * np.arange(n)
    errors = []
    for shift in np.linspace(0.0, 3.0, 25):
        centre = 2.0 + shift * h
        avg = cell_averages(n, lambda t: von_mises(t, centre, kappa))
        found = detect_atoms(theta, avg * h, 5.0, AtomParams(),
                             face_velocity=-np.sin(theta + h / 2 - centre))
        assert found.count == 1
        errors.append(abs(found.position[0] - centre))
    assert max(errors) < 0.02 * h


def test_identities_across_a_merge():
    """Atoms 0 and 1 approach and merge; atom 2 stays. Identities persist, the merge is recorded,
    and the survivor's mass jumps by no more than the mass that merged into it."""
    tracks = AtomTracks(link_radius=0.4, dim=2)
    history = []
    for k, t in enumerate(np.arange(0.0, 10.0)):
        d = max(0.6 - 0.1 * k, 0.0)
        if d > 0.05:
            mass, pos = np.array([0.3, 0.2, 0.5]), np.array([1.0 - d / 2, 1.0 + d / 2, 4.0])
        else:
            mass, pos = np.array([0.5, 0.5]), np.array([1.0, 4.0])
        order = np.random.default_rng(k).permutation(mass.size) if k else np.arange(3)
        history.append(dict(zip(tracks.link(t, mass[order], pos[order]).tolist(), mass[order])))
    assert set(history[0]) == {0, 1, 2} and set(history[-1]) in ({0, 2}, {1, 2})
    survivor = min(history[-1]) if min(history[-1]) in (0, 1) else None
    gone = 1 - survivor
    assert tracks.merged_into[gone] == survivor and np.isfinite(tracks.end_time[gone])
    assert all(h[2] == 0.5 for h in history)  # the far atom keeps its identity
    jump = max(abs(b[survivor] - a[survivor]) for a, b in zip(history, history[1:]))
    assert jump <= history[0][gone] + 1e-12
    assert tracks.parent.tolist() == [-1, -1, -1]


def test_tracks_restore_continues_identities():
    a = AtomTracks(0.3, 2)
    a.link(0.0, np.array([0.4, 0.6]), np.array([1.0, 3.0]))
    b = AtomTracks.restore(0.3, a.mass, np.arctan2(a.unit[:, 1], a.unit[:, 0]), a.birth_time,
                           a.end_time, a.parent, a.merged_into)
    for tr in (a, b):
        np.testing.assert_array_equal(tr.link(1.0, np.array([0.6, 0.4]), np.array([3.05, 1.02])), [1, 0])


class _GreedyOnly(AtomTracks):
    """The general greedy matching, without the fast path for unchanged atoms."""

    def _same_atoms(self, old, unit, mass):
        return None


@pytest.mark.parametrize("seed", range(40))
def test_link_fast_path_equals_greedy_matching(seed):
    """Linking a sequence of snapshots (atoms drifting, some born, some ending, some ties) gives
    the same identities and records with and without the fast path."""
    rng = np.random.default_rng(seed)
    dim = 2 if seed % 2 else 3
    fast, slow = AtomTracks(0.3, dim), _GreedyOnly(0.3, dim)
    for t, mass, position in random_atom_sequences(rng, dim, 12, seed):
        a, b = fast.link(t, mass, position), slow.link(t, mass, position)
        np.testing.assert_array_equal(a, b)
    for name in ("mass", "birth_time", "end_time", "parent", "merged_into"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))


@pytest.mark.parametrize("seed", range(200))
def test_link_fast_path_kernel_equals_numpy_reference(seed):
    """The compiled pairing test agrees with the numpy one (ties, far atoms, near atoms)."""
    pytest.importorskip("numba")
    from solvers.core.atom_tracks import TIE_MARGIN
    from solvers.core.atom_tracks_numba import same_atoms

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    tracks = AtomTracks(0.3, 3)
    old = rng.normal(size=(n, 3))
    tracks.link(0.0, rng.uniform(0.1, 0.3, n).round(1), old)
    new = old + rng.normal(scale=[0.01, 0.1, 0.3][seed % 3], size=old.shape)
    if seed % 4 == 0:
        new[0] = new[-1]  # two new atoms at one place
    unit = new / np.linalg.norm(new, axis=1, keepdims=True)
    mass = rng.uniform(0.1, 0.3, n).round(1 if seed % 2 else 12)
    alive = tracks.alive
    ref = tracks._same_atoms_numpy(alive, unit, mass)
    got = same_atoms(tracks.unit[alive], tracks.mass[alive], unit, mass, 0.3, TIE_MARGIN)
    assert (ref is None) == (got.size == 0)
    if ref is not None:
        np.testing.assert_array_equal(ref, got)
