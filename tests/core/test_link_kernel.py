"""AtomTracks.link's fast path in one compiled call (continue_identities / continue_angles)
gives the identities and records of the numpy path, on S^1 angles and S^2 vectors, through
births, ends, ties and empty snapshots."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_atom_sequences

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
    for t, mass, position in random_atom_sequences(rng, dim, 15, seed):
        np.testing.assert_array_equal(fast.link(t, mass, position), ref.link(t, mass, position))
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
