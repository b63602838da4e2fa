"""The shared Dirac state (:class:`solvers.core.dirac_state.DiracState`): the events after a step
in their order, capture at the class's cadence, identities never reused, the resume counters;
and the cadences of the two manifolds' states (S^1 every 10 steps, S^2 every step)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization
from solvers.core.dirac_state import DiracState
from solvers.core.measure import DiracAtoms, MeasureLayout
from solvers.model.params import RunConfig
from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization


class Toy(DiracState, capture_every=3):
    """Four cells on a line; capture takes all of cell 0's density as a new atom at 0.5."""

    shape, cell_weight, positivity_cfl, default_integrator, citation = (4,), np.ones(4), None, "rk4", ""

    def __init__(self) -> None:
        self.start_dirac_state(RunConfig(), MeasureLayout(self.shape, 1))
        self.calls: list[str] = []

    def rhs(self, state, dt=None):
        return np.zeros_like(state), 0.0

    def lipschitz_bound(self, mass: float) -> float:
        return 1.0

    def diagnostics(self, state, atoms):
        raise NotImplementedError

    @staticmethod
    def between(x_b, x_a, w):
        return x_b + w * (x_a - x_b)

    def total_mass(self, state: np.ndarray) -> float:
        return float(np.sum(self.density(state)) + np.sum(self.atoms(state).mass))

    def starting_state(self, rho0, atoms0, fresh):
        return np.asarray(rho0, float), atoms0 if atoms0 is not None else DiracAtoms.empty(1)

    def settle(self, state):
        self.calls.append("settle")
        return self.density(state).copy(), self.atoms(state), "flow"

    def capture_atoms(self, rho, atoms, flow):
        self.calls.append("capture")
        if rho[0] <= 0.0:
            return rho, atoms
        rho = rho.copy()
        new = DiracAtoms(np.append(atoms.mass, rho[0]), np.append(atoms.position, 0.5),
                         np.append(atoms.ids, self.next_id))
        rho[0] = 0.0
        return rho, new

    def absorb_density(self, rho, atoms, flow):
        self.calls.append("absorb")
        return rho, atoms

    def merge_atoms(self, atoms):
        self.calls.append("merge")
        return atoms


def test_events_run_in_order_and_capture_at_the_cadence():
    toy = Toy()
    state = toy.prepare_state(np.array([0.25, 0.25, 0.25, 0.25]), None, fresh=True)
    assert toy.next_id == 0 and toy.total == 1.0
    toy.calls.clear()
    captured_at = []
    for step in range(1, 10):
        toy.calls.clear()
        state[0] = 0.125  # density flows back into cell 0 every step
        state = toy.after_step(state, step)
        if "capture" in toy.calls:
            captured_at.append(step)
            assert toy.calls == ["settle", "capture", "absorb", "merge"]
        else:
            assert toy.calls == ["settle", "absorb", "merge"]
    assert captured_at == [3, 6, 9]
    atoms = toy.atoms(state)
    assert list(atoms.ids) == [0, 1, 2] and toy.next_id == 3  # each capture a new identity
    assert toy.resume_extras() == (3.0, 1.0)


def test_restore_state_sets_the_counters():
    toy = Toy()
    state = toy.prepare_state(np.zeros(4), DiracAtoms(np.array([1.0]), np.array([0.1]), np.array([7])),
                              fresh=False)
    assert toy.next_id == 8
    toy.restore_state(state, (12.0, 0.5))
    assert toy.next_id == 12 and toy.total == 0.5


def test_capture_every_is_a_positive_class_parameter():
    with pytest.raises(ValueError, match="capture_every"):
        type("Never", (Toy,), {}, capture_every=0)
    assert type("Often", (Toy,), {}, capture_every=1).capture_every == 1
    assert Toy.capture_every == 3


def test_the_manifolds_cadences():
    assert DiracCircleDiscretization.capture_every == 10
    assert DiracSphereDiscretization.capture_every == 1
    assert issubclass(DiracCircleDiscretization, DiracState) and issubclass(DiracSphereDiscretization, DiracState)
