"""Vacuum cells are set to 0 instead of decaying into subnormal numbers (``FLUSH_FRACTION``).

Subnormal arithmetic is 2-10x slower on x86; an ascent run that gathers all its mass into one
atom leaves vacuum cells whose densities decay geometrically into that range. With the flush the
run takes the same steps, keeps the same atoms to round-off and conserves mass as before.
"""

import numpy as np
from conftest import make_config

import solvers.timestepping.simulation as simulation
from solvers.timestepping.loop import simulate

TINY = np.finfo(float).tiny  # the smallest normal double


def _run(monkeypatch, flush: float):
    monkeypatch.setattr(simulation, "FLUSH_FRACTION", flush)
    n = 96
    cfg = make_config(n=n, beta=5.0, direction="ascent", scheme="fv", t_end=100.0, snapshot_interval=100.0)
    theta = 2 * np.pi * np.arange(n) / n
    return simulate(cfg, (1 + 0.5 * np.cos(theta)) / (2 * np.pi))


def test_vacuum_is_zero_not_subnormal(monkeypatch):
    raw = _run(monkeypatch, 0.0)
    rho_raw = raw.final.rho
    subnormal = (rho_raw > 0) & (rho_raw < TINY)
    assert subnormal.sum() > 10  # without the flush the vacuum is subnormal (the case this guards)

    flushed = _run(monkeypatch, simulation.FLUSH_FRACTION if simulation.FLUSH_FRACTION else 1e-100)
    rho = flushed.final.rho
    assert np.all(rho >= 0.0)
    assert not np.any((rho > 0) & (rho < TINY))
    assert np.all(rho[subnormal] == 0.0)
    assert flushed.n_steps == raw.n_steps
    kept = rho_raw > 1e-90 * rho_raw.max()
    np.testing.assert_allclose(rho[kept], rho_raw[kept], rtol=1e-12)
    assert abs(flushed.final.diagnostics.mass - 1.0) <= 1e-13
    new, old = flushed.final.diagnostics, raw.final.diagnostics
    assert new.n_atoms == old.n_atoms >= 1
    np.testing.assert_allclose(new.atom_mass, old.atom_mass, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(new.atom_position, old.atom_position)
