"""Dirac atoms beside faces moved onto the perceptron's corners (``time.kink_faces``).

The cells on each side of a moved face are ``h +- delta`` wide, so their centres are off the
uniform grid and a point near the face can lie in the cell next to ``rint(x / h)``. Capture
(first moment) and absorption (which cell an atom takes) must use the finite volumes as they are.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.api import load_config
from solvers.circle.measure.dirac import CircleMeasureField
from solvers.circle.measure.dirac_events import absorb, capture
from solvers.circle.problem import CircleProblem
from solvers.core.measure import DiracAtoms
from solvers.model.params import AtomParams
from spectral import CircleBasis


def kinked_problem(n: int = 128) -> CircleProblem:
    """The demo's ReLU perceptron (four corners) with a face moved onto each corner."""
    cfg = load_config("runs/demo.toml", domain__resolution=n)
    p = CircleProblem(cfg.model, CircleBasis(n), kink_faces=True)
    assert p.moved_faces.size == 4 and np.abs(p.faces - p.basis.faces).max() > 0.05 * p.basis.h
    return p


def brute_cell(p: CircleProblem, x: float) -> int:
    """The cell ``i`` with ``faces[i-1] <= x < faces[i]`` (mod 2 pi), by scanning every cell."""
    f, two_pi = p.faces, 2 * np.pi
    for i in range(p.basis.n):
        left, width = f[i - 1], np.mod(f[i] - f[i - 1], two_pi)
        if np.mod(x - left, two_pi) < width:
            return i
    raise AssertionError("no cell")


def test_cells_and_centres_follow_the_moved_faces():
    p = kinked_problem()
    h = p.basis.h
    near = p.faces[p.moved_faces][:, None] + h * np.linspace(-0.6, 0.6, 25)[None, :]
    x = np.concatenate([near.ravel(), np.random.default_rng(3).uniform(-1.0, 8.0, 200)])
    got = p.cell_of(x)
    assert got.tolist() == [brute_cell(p, v) for v in x]
    assert np.any(got != p.basis.cell_of(x))  # the uniform rule would be wrong beside a moved face
    left = np.roll(p.faces, 1)
    left[0] -= 2 * np.pi
    np.testing.assert_allclose(p.cell_centres, 0.5 * (left + p.faces), atol=1e-14)
    np.testing.assert_allclose(p.cell_scale, h / (p.faces - left), rtol=1e-12)


def test_compiled_cells_match():
    kd = pytest.importorskip("solvers.circle.measure.kernels_dirac_numba")
    p = kinked_problem()
    faces = np.ascontiguousarray(np.stack([np.zeros(p.basis.n)] * 6 + [p.faces]))
    x = np.mod(p.faces[p.moved_faces][:, None] + p.basis.h * np.linspace(-0.6, 0.6, 41)[None, :],
               2 * np.pi).ravel()
    assert [kd.cell_of(v, faces) for v in x] == p.cell_of(x).tolist()
    assert kd.cells_of(x, faces).tolist() == p.cell_of(x).tolist()


def test_capture_beside_a_moved_face_conserves_the_first_moment():
    """A spike on both sides of a corner face: the atom sits at the core's true centre of mass.
    The corner is a sink of the flow (:func:`forms_atom`); the spike's left face leaks."""
    p = kinked_problem()
    b, j = p.basis, int(p.moved_faces[0])
    rho = np.full(b.n, 1e-4)
    rho[j - 1 : j + 2] += np.array([2.0, 5.0, 3.0])  # cells j - 1, j | moved face j | j + 1
    before, moment = rho.sum() * b.h, (rho * b.h) @ p.cell_centres
    u = CircleMeasureField(p).face_velocity(b.forward(rho), np.zeros(0), np.zeros(0))
    new, atoms = capture(rho, DiracAtoms.empty(1), u, p, AtomParams(capture_fraction=0.9), 0)
    assert atoms.count == 1 and np.all(new >= 0)
    assert new.sum() * b.h + atoms.mass.sum() == pytest.approx(before, abs=1e-14)
    after = (new * b.h) @ p.cell_centres + atoms.mass[0] * atoms.position[0]
    assert after == pytest.approx(moment, abs=1e-13)
    # the uniform centres would put it off by more than the tolerance above
    uniform = (rho[j - 1 : j + 2] * b.h) @ b.theta[j - 1 : j + 2] / (rho[j - 1 : j + 2].sum() * b.h)
    assert abs(uniform - atoms.position[0]) > 1e-3 * b.h


def test_absorb_takes_the_cell_the_atom_is_in():
    """An atom just past a moved face lies in the next cell: that cell's density is absorbed."""
    p = kinked_problem()
    b, j = p.basis, int(p.moved_faces[0])
    shift = p.faces[j] - b.faces[j]
    x = p.faces[j] - 0.5 * shift  # between the uniform face and the moved one
    cell = int(p.cell_of(np.array([x]))[0])
    assert cell != int(b.cell_of(np.array([x]))[0])
    rho = np.random.default_rng(1).uniform(0.5, 1.0, b.n)
    u = np.where(np.arange(b.n) < cell, 1.0, -1.0)  # cell `cell` is a sink
    atoms = DiracAtoms(np.array([0.1]), np.array([x]), np.arange(1))
    new, got = absorb(rho, atoms, u, b.h, p.cell_of(atoms.position))
    assert new[cell] == 0.0 and np.count_nonzero(new != rho) == 1
    assert got.mass[0] == pytest.approx(0.1 + rho[cell] * b.h, rel=1e-15)
    assert new.sum() * b.h + got.mass.sum() == pytest.approx(rho.sum() * b.h + 0.1, rel=1e-15)
