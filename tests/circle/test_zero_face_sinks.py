"""An atom straddling a face whose velocity is exactly 0 is one atom (solvers/circle/atoms.py).

A converged atom spread over two cells sits where its two cells' pulls cancel: the velocity at
the face between them tends to 0 and round-off decides its sign, exactly 0 included. Then both
cells are sinks. Before the fix the detector read them as two atoms one cell apart (the paper
demo at N = 256 with kink faces, t >= 5750: 0.4212 and 0.1606 instead of 0.5818; at N = 1024
a 0.015 half fell below min_mass and was counted diffuse).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers.circle.atoms import detect_atoms, flow_pointer
from solvers.core.backend import numba_available
from solvers.model.params import AtomParams

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["numpy"] + (["numba"] if numba_available() else [])


def straddling_atom(n: int = 64, i: int = 20, face: float = 0.0):
    """Cells i, i+1 holding 0.16 and 0.42, the rest 1e-6 each; the flow converges on face i."""
    theta = 2 * np.pi * np.arange(n) / n
    mass = np.full(n, 1e-6)
    mass[i], mass[i + 1] = 0.16, 0.42
    faces = theta + np.pi / n
    u = -np.sin(faces - faces[i]) * 0.05
    u[i] = face
    return theta, mass, u


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("face", [0.0, -0.0, 1e-18, -1e-18])
def test_atom_on_a_zero_face_is_one_atom(backend, face):
    theta, mass, u = straddling_atom(face=face)
    found = detect_atoms(theta, mass, 5.0, AtomParams(), face_velocity=u, backend=backend)
    assert found.count == 1
    in_atom = found.labels == 0
    assert found.mass[0] == pytest.approx(mass[in_atom].sum(), rel=1e-14)
    assert in_atom[20] and in_atom[21]
    assert found.mass[0] > 0.58


def test_zero_face_pointer_points_to_the_heavier_sink():
    _, mass, u = straddling_atom()
    pointer = flow_pointer(u, mass)
    assert pointer[20] == 21 and pointer[21] == 21
    mass[20] = mass[21]  # equal masses: the lower index is the root
    pointer = flow_pointer(u, mass)
    assert pointer[21] == 20 and pointer[20] == 20
    assert flow_pointer(u)[20] == 20 and flow_pointer(u)[21] == 21  # without masses: unchanged


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
@pytest.mark.parametrize("seed", range(6))
def test_backends_agree_with_zero_faces(seed):
    """Random flows with runs of exact zeros (chains of sinks) and tied masses."""
    rng = np.random.default_rng(seed)
    n = 96
    theta = 2 * np.pi * np.arange(n) / n
    u = rng.normal(size=n) * 0.1
    u[rng.random(n) < 0.35] = 0.0
    mass = rng.choice([0.0, 0.01, 0.02, 0.05], size=n) + rng.random(n) * (seed % 2) * 0.01
    ref = detect_atoms(theta, mass, 5.0, AtomParams(min_mass=0.0), face_velocity=u, backend="numpy")
    got = detect_atoms(theta, mass, 5.0, AtomParams(min_mass=0.0), face_velocity=u, backend="numba")
    assert got.count == ref.count
    np.testing.assert_allclose(got.mass, ref.mass, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(got.labels, ref.labels)


def test_demo_keeps_five_atoms_long_after_it_converged():
    ds = solvers.run(ROOT / "runs" / "demo.toml", domain__resolution=256, time__kink_faces=True,
                     time__t_end=6000.0, time__stop_when_stationary=False,
                     output__snapshot_interval=250.0)
    late = ds.sel(time=slice(2000.0, None))
    assert np.all(late["n_atoms"].values == 5)
    heavy = np.nanmax(late["atom_mass"].values, axis=1)
    assert np.ptp(heavy) < 1e-9
