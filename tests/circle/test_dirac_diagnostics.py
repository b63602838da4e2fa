"""The compiled snapshot diagnostics of the S^1 Dirac state against the numpy reference.

:func:`solvers.circle.measure.dirac_diagnostics.compiled_diagnostics` (one batched transform pair, one
compiled call for the fields and reductions, one for the basins) must give the values of
:func:`~solvers.circle.measure.dirac_diagnostics.measure_diagnostics` to round-off, for the states a run
meets: before and after capture, atoms past 2 pi mid-step, faces moved onto ReLU corners.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from solvers.api import load_config  # noqa: E402
from solvers.circle.measure.dirac_diagnostics import measure_diagnostics  # noqa: E402
from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization  # noqa: E402
from solvers.core.measure import DiracAtoms  # noqa: E402
from solvers.io.state import initial_state  # noqa: E402
from solvers.timestepping.simulation import Solver  # noqa: E402

SCALARS = ("mass", "min_rho", "max_rho", "energy", "dissipation", "transport_rate",
           "max_support_velocity", "tail_energy", "diffuse_mass")
ARRAYS = ("atom_mass", "atom_position", "atom_core_mass", "dirac_mass", "dirac_position")


def run_states(**overrides) -> tuple[DiracCircleDiscretization, list[np.ndarray]]:
    """A Dirac run of the demo physics at N = 128 and its states at t = 0, 5, 20, 60, 150."""
    cfg = load_config("runs/demo.toml", domain__resolution=128, atoms__representation="dirac",
                      output__progress=False, **overrides)
    rho0, atoms0 = initial_state(cfg)
    s = Solver(cfg, rho0, atoms0=atoms0)
    states = []
    for t in (0.0, 5.0, 20.0, 60.0, 150.0):
        while s.t < t - 1e-12:
            s.step(t)
        states.append(s.rho.copy())
    assert s.disc.compiled is not None and s.disc.layout.count(states[-1]) >= 1
    return s.disc, states


def assert_same(got, want) -> None:
    for name in SCALARS:
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-11, abs=1e-15), name
    assert got.n_atoms == want.n_atoms
    for name in ARRAYS:
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-12, atol=1e-14,
                                   err_msg=name)
    np.testing.assert_array_equal(got.dirac_id, want.dirac_id)


@pytest.mark.parametrize("overrides", [{}, {"time__limiter": "mc", "time__kink_faces": False},
                                       {"model__direction": "ascent", "model__beta": 2.0}])
def test_compiled_diagnostics_match_the_reference(overrides):
    disc, states = run_states(**overrides)
    got = disc.diagnostics_batch(states, disc.config.atoms)
    for g, state in zip(got, states):
        assert_same(g, measure_diagnostics(disc, state, disc.config.atoms))
    assert got[-1].n_atoms >= 1 and got[-1].dirac_mass.size >= 1  # atoms captured by t = 150
    assert abs(got[-1].mass - 1.0) < 1e-13


def test_compiled_diagnostics_of_hand_made_states():
    """Atoms past 2 pi and below 0 (as mid-step), one beside a moved face, an empty cell range."""
    disc, states = run_states()
    b, p = disc.problem.basis, disc.problem
    rho = disc.density(states[1]).copy()
    rho[10:30] = 0.0  # outside the support
    corner = float(p.faces[p.moved_faces[0]])
    atoms = DiracAtoms(np.array([0.05, 0.02, 0.1, 0.03]),
                       np.array([2 * np.pi + 0.01, -0.02, corner + 0.1 * b.h, 3.0]), np.array([4, 7, 9, 11]))
    hand = [disc.layout.pack(rho, atoms), disc.layout.pack(rho, DiracAtoms.empty(1))]
    for g, state in zip(disc.diagnostics_batch(hand, disc.config.atoms), hand):
        assert_same(g, measure_diagnostics(disc, state, disc.config.atoms))
    single = disc.diagnostics(hand[0], disc.config.atoms)
    assert_same(single, measure_diagnostics(disc, hand[0], disc.config.atoms))
