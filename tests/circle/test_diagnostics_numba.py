"""The compiled S^1 snapshot diagnostics equal the numpy reference to round-off."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.circle.grid.discretization import CircleDiscretization, compute_diagnostics
from solvers.api import load_config
from solvers.timestepping.simulation import Solver

pytest.importorskip("numba")

SCALARS = ("mass", "min_rho", "max_rho", "energy", "dissipation", "transport_rate",
           "max_support_velocity", "tail_energy", "diffuse_mass")


def _config(direction: str, kernel: str, resolution: int, activation: str):
    doc = {"domain": {"manifold": "S1", "resolution": resolution},
           "model": {"beta": 5.0, "direction": direction, "kernel": kernel},
           "perceptron": {"activation": activation, "a": [[-0.9967, 0.0806], [-0.6199, -0.7847]],
                          "omega": [0.6325, -0.4697]},
           "initial": {"kind": "uniform", "modes": [[3, 0.2], [5, 0.1]]},
           "time": {"t_end": 40.0, "scheme": "fv"}, "output": {"progress": False}}
    return load_config(doc)


@pytest.mark.parametrize("direction, kernel, resolution, activation", [
    ("descent", "exp_shifted", 512, "relu"), ("ascent", "exp", 128, "gelu"),
    ("descent", "exp", 256, "relu"), ("descent", "exp_shifted", 96, "gelu")])
@pytest.mark.parametrize("t", [0.0, 5.0, 40.0])
def test_compiled_diagnostics_equal_the_reference(monkeypatch, direction, kernel, resolution,
                                                  activation, t):
    cfg = _config(direction, kernel, resolution, activation)
    from solvers.io.state import initial_density

    solver = Solver(cfg, initial_density(cfg))
    while solver.t < t:
        solver.step(t)
    disc: CircleDiscretization = solver.disc
    got = disc.diagnostics(solver.rho, cfg.atoms)
    monkeypatch.setenv("MEANFIELD_NUMPY", "1")
    ref = compute_diagnostics(disc.problem, disc.rhs, solver.rho, cfg.atoms, disc.k_max)
    for name in SCALARS:
        a, b = getattr(got, name), getattr(ref, name)
        assert a == pytest.approx(b, rel=1e-12, abs=1e-14 * max(1.0, abs(ref.energy))), name
    assert got.n_atoms == ref.n_atoms
    np.testing.assert_allclose(got.atom_mass, ref.atom_mass, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.atom_position, ref.atom_position, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got.atom_labels, ref.atom_labels)
