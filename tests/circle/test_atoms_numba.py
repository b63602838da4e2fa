"""The compiled S^1 basin detector against the numpy reference (same labels; masses, core
masses and positions to round-off) on random and concentrated densities and velocities."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.circle.atoms import detect_atoms
from solvers.core.backend import numba_available
from solvers.model.params import AtomParams

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba not installed")


def _both(cell_mass, velocity, beta, params):
    theta = 2 * np.pi * np.arange(cell_mass.size) / cell_mass.size
    a = detect_atoms(theta, cell_mass, beta, params, face_velocity=velocity, backend="numpy")
    b = detect_atoms(theta, cell_mass, beta, params, face_velocity=velocity, backend="numba")
    return a, b


def _agree(a, b):
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_allclose(b.mass, a.mass, rtol=0, atol=1e-13)
    np.testing.assert_allclose(b.core_mass, a.core_mass, rtol=0, atol=1e-13)
    np.testing.assert_allclose(b.position, a.position, rtol=0, atol=1e-12)
    assert b.diffuse_mass == pytest.approx(a.diffuse_mass, abs=1e-13)


def _bumps(n, centres, widths, weights):
    theta = 2 * np.pi * (np.arange(n) + 0.5) / n
    rho = sum(w * np.exp((np.cos(theta - c) - 1) / s ** 2)
              for c, s, w in zip(centres, widths, weights))
    rho = 0.02 + rho
    return rho / rho.sum()


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([64, 128, 256, 512]), k=st.integers(1, 6),
       seed=st.integers(0, 2 ** 31 - 1), beta=st.sampled_from([1.0, 5.0, 25.0]),
       ratio=st.sampled_from([0.3, 0.5, 0.9]))
def test_compiled_detector_equals_reference(n, k, seed, beta, ratio):
    rng = np.random.default_rng(seed)
    cell_mass = _bumps(n, rng.uniform(0, 2 * np.pi, k), rng.uniform(0.02, 0.5, k),
                       rng.uniform(0.1, 1.0, k))
    theta = 2 * np.pi * (np.arange(n) + 1) / n  # faces: velocity of a potential with k wells
    velocity = -np.sin(k * theta + rng.uniform(0, 2 * np.pi)) + 0.3 * rng.standard_normal(n)
    velocity[rng.random(n) < 0.05] = 0.0  # exact zeros: sinks of their own
    _agree(*_both(cell_mass, velocity, beta, AtomParams(saddle_ratio=ratio)))


@pytest.mark.parametrize("n", [64, 256, 1024])
def test_compiled_detector_on_plateaus_and_cap_ties(n):
    """Equal neighbours (ties broken by index) and cells exactly N/8 from a peak (the cap)."""
    cell_mass = np.full(n, 0.1 / n)
    cell_mass[n // 4: n // 4 + 2] = 0.2  # an atom spread evenly over two cells
    cell_mass[3 * n // 4] = 0.3
    cell_mass /= cell_mass.sum()
    velocity = np.sign(np.sin(2 * np.pi * (np.arange(n) + 1) / n * 2))
    _agree(*_both(cell_mass, velocity, 5.0, AtomParams(max_radius=np.pi / 4)))
