"""The stop rule waits for the atoms (solvers.timestepping.simulation.StopRule)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from solvers.core.snapshot import Diagnostics, Snapshot
from solvers.model.config import ConfigError, load_config
from solvers.model.params import RunConfig, TimeParams
from solvers.timestepping.simulation import StopRule


def snapshot(t: float, masses: list[float], transport: float = 1e-9) -> Snapshot:
    mass = np.array(masses)
    d = Diagnostics(mass=1.0, min_rho=0.0, max_rho=1.0, energy=0.0, dissipation=0.0,
                    transport_rate=transport, max_support_velocity=0.0, tail_energy=0.0,
                    n_atoms=mass.size, atom_mass=mass, atom_position=np.linspace(0.5, 5.0, mass.size),
                    atom_core_mass=mass, diffuse_mass=1.0 - mass.sum())
    return Snapshot(t, 0, 0.1, np.zeros(8), d)


def config(interval_window: float = 100.0) -> RunConfig:
    return replace(RunConfig(), time=TimeParams(stationary_tol=1e-5, stationary_window_time=interval_window,
                                                stationary_mass_rate=1e-6))


@pytest.mark.parametrize("interval", [5.0, 10.0, 50.0])
def test_does_not_fire_while_an_atom_fills(interval):
    """Transport under tolerance and a constant atom count, but the last atom gains 5e-6 per unit
    time (the demo's fifth atom when the old rule fired): never stationary; once it stops filling
    the rule fires after one window, whatever the snapshot interval."""
    rule = StopRule(config(), np.pi / 8)
    fired = None
    for t in np.arange(0.0, 1000.0 + interval / 2, interval):
        filling = 0.038 + 5e-6 * min(t, 500.0)
        held = rule(snapshot(t, [0.3, 0.6, filling])).held
        if held and fired is None:
            fired = t
        assert not (held and t <= 500.0)
    assert fired is not None and 600.0 <= fired <= 600.0 + interval


def test_does_not_fire_when_atoms_change_or_transport_is_large():
    rule = StopRule(config(), np.pi / 8)
    for t in np.arange(0.0, 220.0, 10.0):  # the last window, [110, 210], holds the change at 150
        st = rule(snapshot(t, [0.3, 0.6] if t < 150 else [0.3, 0.3, 0.3]))
    assert st.window and st.transport and not st.atoms and not st.held
    rule = StopRule(config(), np.pi / 8)
    for t in np.arange(0.0, 300.0, 10.0):
        st = rule(snapshot(t, [0.3, 0.6], transport=1e-3))
    assert st.atoms and st.masses and not st.transport and not st.held


def test_old_window_key_names_its_replacement():
    with pytest.raises(ConfigError, match="stationary_window_time"):
        load_config("[time]\nstationary_window = 5\n")
