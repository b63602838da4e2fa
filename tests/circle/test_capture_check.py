"""S^1 capture runs its basin detection only where :func:`solvers.circle.measure.dirac_events.may_capture`
(a necessary condition: a sink cell or sink corner, in no Dirac atom's cell, with enough mass
within two cells) allows a capture; the check never skips one that the detection would make."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import solvers.circle.measure.dirac_events as dc
from solvers.api import load_config
from solvers.circle.measure.dirac import CircleMeasureField
from solvers.circle.problem import CircleProblem
from solvers.core.measure import DiracAtoms
from solvers.model.params import AtomParams
from spectral import CircleBasis

BETA50 = "runs/paper_s1_descent_relu_beta50.toml"
N = 128
PARAMS = AtomParams(capture_fraction=0.9)  # min_mass 0.02: a capture needs a core of 0.018
TWO_PI = 2.0 * np.pi


def problem(direction: str) -> CircleProblem:
    """The paper's S^1 ReLU perceptron (descent: a sink corner at 85.4 degrees) at beta = 5."""
    cfg = load_config(BETA50, model__direction=direction, model__beta=5.0, domain__resolution=N)
    return CircleProblem(cfg.model, CircleBasis(N))


def random_measure(seed: int) -> tuple[np.ndarray, DiracAtoms]:
    """A thin background, a few spikes of random mass and width, and 0-2 Dirac atoms."""
    rng = np.random.default_rng(seed)
    rho = np.full(N, 10.0 ** rng.uniform(-6, -2))
    for _ in range(rng.integers(1, 4)):
        c, w = rng.integers(N), rng.integers(1, 4)
        rho[(c + np.arange(w)) % N] += rng.uniform(0.0, 0.1) / (w * TWO_PI / N)
    k = int(rng.integers(0, 3))
    atoms = DiracAtoms(rng.uniform(0.05, 0.3, k), rng.uniform(0.0, TWO_PI, k), np.arange(k))
    return rho, atoms


def full_capture(rho, atoms, u, p):
    """:func:`capture` with the check switched off: the basin detection on every call."""
    saved = dc.may_capture
    dc.may_capture = lambda *args, **kw: True
    try:
        return dc.capture(rho, atoms, u, p, PARAMS, 100)
    finally:
        dc.may_capture = saved


@pytest.mark.parametrize("direction", ["descent", "ascent"])
def test_the_check_never_skips_a_capture(direction):
    """Over random measures: wherever the full detection captures, the check (both backends)
    allows it; with the check on, capture gives bitwise what the full detection gives."""
    p = problem(direction)
    field = CircleMeasureField(p)
    made = skipped = 0
    for seed in range(300):
        rho, atoms = random_measure(seed)
        u = field.face_velocity(p.basis.forward(rho), atoms.position, atoms.mass)
        cells = p.cell_of(atoms.position)
        may = {b: dc.may_capture(rho, cells, u, p, PARAMS, backend=b) for b in ("numba", "numpy")}
        assert may["numba"] == may["numpy"]
        full_rho, full_atoms = full_capture(rho, atoms, u, p)
        new_rho, new_atoms = dc.capture(rho, atoms, u, p, PARAMS, 100)
        captured = full_atoms.count > atoms.count
        assert may["numpy"] or not captured
        np.testing.assert_array_equal(new_rho, full_rho)
        np.testing.assert_array_equal(new_atoms.position, full_atoms.position)
        made += captured
        skipped += not may["numpy"]
    assert made >= 12 and skipped >= 100  # the sample has both (descent: 17 and 247)


@settings(max_examples=60, deadline=None)
@given(seed=hst.integers(0, 10**6), mass=hst.floats(0.0, 0.05))
def test_the_check_is_the_windowed_sink_mass(seed, mass):
    """A spike of ``mass`` in three cells around a sink cell of a made-up face velocity that no
    Dirac atom holds: the check holds exactly when the spike reaches ``0.9 * min_mass``."""
    p = problem("ascent")
    rng = np.random.default_rng(seed)
    c = int(rng.integers(N))
    u = np.where((np.arange(N) - c) % N < N // 2, -1.0, 1.0)  # faces c .. c + N/2 - 1 point left
    u[(c - 1) % N] = 1.0  # cell c is the sink: its left face points right, its right face left
    rho = np.zeros(N)
    rho[(c + np.arange(-1, 2)) % N] = mass / 3 / p.basis.h
    far = DiracAtoms(np.array([0.3]), np.array([p.basis.theta[(c + N // 2) % N]]), np.array([0]))
    cells = p.cell_of(far.position)
    for backend in ("numba", "numpy"):
        allowed = dc.may_capture(rho, cells, u, p, PARAMS, backend=backend)
        corner_cells = p.sink_corner_cells  # ascent: the corner at 321.7 degrees is a sink too
        near_corner = np.any(np.abs((corner_cells - c + N // 2) % N - N // 2) <= 3)
        if not near_corner:
            assert allowed == (mass >= (1 - dc.SUM_SLACK) * 0.9 * PARAMS.min_mass)
    held = DiracAtoms(np.array([0.3]), np.array([p.basis.theta[c]]), np.array([0]))
    assert not dc.may_capture(rho, p.cell_of(held.position), u, p, PARAMS) or \
        np.any(np.abs((p.sink_corner_cells - c + N // 2) % N - N // 2) <= 3)
