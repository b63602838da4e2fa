"""AtomTracks.link's fast path in one compiled call (continue_identities / continue_angles)
gives the identities and records of the numpy path, on S^1 angles and S^2 vectors, through
births, ends, ties and empty snapshots."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.atom_tracks import AtomTracks

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _numba_default(monkeypatch):
    monkeypatch.delenv("MEANFIELD_NUMPY", raising=False)  # the compiled path is under test


def _pair(dim):
    fast, ref = AtomTracks(0.3, dim), AtomTracks(0.3, dim)
    assert fast._kernels is not None
    ref._kernels = None  # the numpy path (as with MEANFIELD_NUMPY=1)
    return fast, ref


@pytest.mark.parametrize("seed", range(60))
def test_compiled_link_equals_the_numpy_path(seed):
    rng = np.random.default_rng(seed)
    dim = 2 if seed % 2 else 3
    fast, ref = _pair(dim)
    n = int(rng.integers(0, 5))
    pos, mass = rng.normal(size=(n, 3)), rng.uniform(0.05, 0.5, n)
    for t in range(15):
        if rng.random() < 0.25:  # an atom appears or ends
            if rng.random() < 0.5 and mass.size:
                keep = rng.random(mass.size) > 0.4
                pos, mass = pos[keep], mass[keep]
            else:
                pos, mass = np.vstack([pos, rng.normal(size=(1, 3))]), np.append(mass, 0.1)
        pos = pos + rng.normal(scale=0.05 if seed % 3 else 0.2, size=pos.shape)
        mass = np.round(mass * rng.uniform(0.9, 1.1, mass.size), 1 if seed % 5 == 0 else 12)
        position = np.arctan2(pos[:, 1], pos[:, 0]) % (2 * np.pi) if dim == 2 else pos
        np.testing.assert_array_equal(fast.link(float(t), mass, position),
                                      ref.link(float(t), mass, position))
        np.testing.assert_allclose(fast.unit, ref.unit, rtol=0, atol=1e-15)
        for name in ("mass", "birth_time", "end_time", "parent", "merged_into"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name))


def test_a_failed_fast_path_writes_nothing():
    """Two new atoms closest to one identity: the kernel declines (and leaves the tracks as
    they were), the greedy matching links them."""
    from solvers.core.atom_tracks_numba import continue_angles

    tracks = AtomTracks(0.3, 2)
    tracks.link(0.0, np.array([0.3, 0.3]), np.array([1.0, 2.0]))
    unit, mass = tracks.unit.copy(), tracks.mass.copy()
    ok, ids = continue_angles(tracks.unit, tracks.mass, np.array([1.0, 1.01]), np.array([0.3, 0.3]),
                              0.3, 1e-12)
    assert not ok and ids.size == 0
    np.testing.assert_array_equal(tracks.unit, unit)
    np.testing.assert_array_equal(tracks.mass, mass)


def test_subclass_changing_the_test_keeps_its_own_path():
    class Greedy(AtomTracks):
        def _same_atoms(self, old, unit, mass):
            return None

    assert Greedy(0.3, 2)._kernels is None
