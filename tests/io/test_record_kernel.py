"""A record's atom columns, cells and mass budget in one compiled call (record_atoms) equal the
numpy path (cell_identities, mass_budget, the columns by identity) bitwise, on S^1 and S^2,
through atoms born and ending, records without labels and no previous record; a block's
NaN-padded tables equal the row-by-row fill."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.atom_tracks import AtomTracks
from solvers.core.snapshot import Diagnostics, Snapshot, Stationarity
from solvers.io.layout import _Grid
from solvers.io.records import RecordBuffer, _padded

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _numba_default(monkeypatch):
    monkeypatch.delenv("MEANFIELD_NUMPY", raising=False)  # the compiled path is under test


def _snapshot(t, rng, shape, n_atoms, s2, labels=True):
    cells = int(np.prod(shape))
    mass = rng.uniform(0.05, 0.3, n_atoms)
    if s2:
        position = rng.normal(size=(n_atoms, 3))
        position /= np.linalg.norm(position, axis=1, keepdims=True)
    else:
        position = np.sort(rng.uniform(0, 2 * np.pi, n_atoms))
    d = Diagnostics(mass=1.0, min_rho=0.0, max_rho=2.0, energy=0.1, dissipation=0.2,
                    transport_rate=0.3, max_support_velocity=0.4, tail_energy=0.0,
                    n_atoms=n_atoms, atom_mass=mass, atom_position=position,
                    atom_core_mass=0.9 * mass, diffuse_mass=1.0 - mass.sum(),
                    atom_labels=rng.integers(-1, n_atoms, cells) if labels else None)
    return Snapshot(t, int(t), 0.1, rng.random(shape), d, Stationarity(True, False, True, False))


def _buffers(s2, shape):
    weight = np.full(shape, 4 * np.pi / np.prod(shape) if s2 else 2 * np.pi / shape[0])
    grid = _Grid(np.linspace(0.1, 3.0, shape[0]), weight, np.linspace(0, 6, shape[1]) if s2 else None)
    fast = RecordBuffer(grid, False, AtomTracks(0.3, 3 if s2 else 2))
    ref = RecordBuffer(grid, False, AtomTracks(0.3, 3 if s2 else 2))
    assert fast._record_atoms is not None
    ref._record_atoms = None  # the numpy path (as with MEANFIELD_NUMPY=1)
    return fast, ref


@pytest.mark.parametrize("s2", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_compiled_records_equal_the_numpy_path(s2, seed):
    rng = np.random.default_rng(seed)
    shape = (6, 8) if s2 else (40,)
    fast, ref = _buffers(s2, shape)
    n = int(rng.integers(0, 4))
    for t in range(12):
        n = max(0, n + int(rng.choice([-1, 0, 0, 0, 1])))  # atoms born and ending
        snap = _snapshot(float(t), np.random.default_rng(1000 * seed + t), shape, n, s2,
                         labels=rng.random() > 0.15)
        fast.add(snap, snap.rho)
        ref.add(snap, snap.rho)
    for a, b in zip(fast._rows, ref._rows):
        assert a.keys() == b.keys() and a["atoms"].keys() == b["atoms"].keys()
        for name in a["atoms"]:
            np.testing.assert_array_equal(a["atoms"][name], b["atoms"][name])
    (block_a, width_a), (block_b, width_b) = fast.block(2), ref.block(2)
    assert width_a == width_b and block_a.keys() == block_b.keys()
    for name in block_a:
        np.testing.assert_array_equal(block_a[name], block_b[name])
    for name, value in ref.track_arrays().items():
        np.testing.assert_array_equal(fast.track_arrays()[name], value)


@pytest.mark.parametrize("sizes", [[3, 3, 3], [0, 2, 2, 5], [0, 0], [4], [1, 0, 3]])
def test_padded_equals_the_row_by_row_fill(sizes):
    rng = np.random.default_rng(len(sizes))
    rows = [rng.random(k) for k in sizes]
    want = np.full((len(rows), 6), np.nan)
    for i, r in enumerate(rows):
        want[i, :r.size] = r
    np.testing.assert_array_equal(_padded(rows, 6), want)
