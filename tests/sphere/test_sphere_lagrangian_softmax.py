"""Softmax-normalised attention (paper eq. 2.9) for the S^2 Lagrangian particles
(:mod:`solvers.sphere.measure.lagrangian`) and the Dirac diagnostics of their snapshots.

A particle moves with ``s (P_x F / f + grad v / 2)``, ``f = c_K sum_j w_j e^{beta x.x_j}`` its own
mass included. On the cell particles of a grid density this is the grid's softmax velocity at the
cell centres to round-off: the Gauss quadrature of the grid integrates the kernel exactly up to its
bandwidth (docs/methods.md §6.5), and lmax 31 is past the bandwidth of beta = 4 (24)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import PAPER_S2_A, PAPER_S2_OMEGA, toml_config
from solvers.api import load_config
from solvers.io.state import initial_density
from solvers.sphere.measure import lagrangian as lg
from solvers.sphere.measure.dirac_diagnostics import measure_fields
from solvers.sphere.grid.discretization import SphereDiscretization
from solvers.sphere.measure.lagrangian_discretization import LagrangianSphereDiscretization
from solvers.sphere.problem import tangent_frame
from solvers.studies.cell_particles import cell_particles
from solvers.timestepping.loop import simulate

SMOOTH = {"domain": {"manifold": "S2", "resolution": 31},
          "model": {"beta": 4.0, "attention": "softmax", "kernel": "exp_shifted"},
          "initial": {"kind": "von_mises", "centers": [[0.3, 0.2, 0.93], [-0.5, 0.8, -0.33]],
                      "kappas": [3.0, 2.0], "weights": [0.6, 0.4]},
          "time": {"t_end": 2.0, "stop_when_stationary": False},
          "output": {"snapshot_interval": 0.5, "progress": False}}
# the first two units of the S^2 paper perceptron
RELU = {"activation": "relu", "a": PAPER_S2_A[:2].tolist(), "omega": PAPER_S2_OMEGA[:2].tolist()}


def _config(rep: str = "dirac", scheme: str = "lagrangian", direction: str = "ascent",
            perceptron: dict | None = RELU, **keys):
    """:data:`SMOOTH` with ``representation = rep``, ``time.scheme``, ``model.direction`` and the
    [perceptron] section (None: none); ``keys`` as :func:`toml_config`'s."""
    return load_config(toml_config(SMOOTH, atoms__representation=rep, time__scheme=scheme,
                                   model__direction=direction, perceptron=perceptron, **keys))


@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_particle_velocity_equals_the_grid_softmax(direction):
    """The cell particles of a von Mises-Fisher mixture: their softmax velocity equals the grid's
    (:meth:`SphereProblem.centre_fields`, ``grad f / (beta f) + grad v / 2`` with ``f`` synthesised
    at the centres) to round-off (measured 6.3e-15 of the largest speed), both pair-sum paths; and
    it is not the unnormalized velocity."""
    cfg = _config(direction=direction)
    grid = SphereDiscretization(_config("grid", "fv", direction))
    rho = initial_density(cfg)
    x, w = cell_particles(cfg)
    g = grid.grid
    has = (rho * g.area).ravel() > 0
    assert has.all()
    fields = grid.problem.centre_fields(rho)
    e_t, e_p = (e.reshape(-1, 3) for e in tangent_frame(g.theta, g.phi))
    want = cfg.model.sign * np.stack([fields["vel_theta"].ravel(), fields["vel_phi"].ravel()], axis=1)
    scale = np.abs(want).max()
    for method in ("series", "direct"):
        v = lg.velocity(x, w, cfg.model, -cfg.model.beta, method=method)  # exp_shifted: log c_K
        got = np.stack([np.sum(v * e_t, axis=1), np.sum(v * e_p, axis=1)], axis=1)
        assert np.abs(got - want).max() < 1e-13 * scale, method
        assert np.abs(np.sum(v * x, axis=1)).max() < 1e-15  # tangent
    unnormalized = lg.velocity(x, w, _config(direction=direction, model__attention="unnormalized").model,
                               -cfg.model.beta)
    assert np.abs(unnormalized - v).max() > 0.1 * scale


def test_snapshot_diagnostics_equal_the_grid():
    """At t = 0 (particles on the cell centres, no atoms) the Lagrangian diagnostics equal the fv
    grid's softmax diagnostics: energy, dissipation ``int grad U . V drho`` (the particles' own
    sums), the largest speed and the transport rate (the Dirac diagnostics' softmax face
    velocities against the grid's compiled ones), to round-off (measured <= 2.7e-15 relative)."""
    cfg = _config()
    rho = initial_density(cfg)
    lag = LagrangianSphereDiscretization(cfg)
    state = lag.prepare_state(rho, None, fresh=True)
    got = lag.diagnostics(state, cfg.atoms)
    grid = SphereDiscretization(_config("grid", "fv"))
    want = grid.diagnostics(rho, cfg.atoms)  # the fine cells, as the particles (no polar averaging)
    for name in ("mass", "energy", "dissipation", "max_support_velocity", "transport_rate"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-12), name


def test_atom_fields_equal_the_particles():
    """Density plus one Dirac atom: the Dirac diagnostics' softmax velocity at the atom (its own
    mass in ``f``, no force from it) and at the cell centres equals the particles' (cells as
    particles plus the atom) to round-off (measured 3e-15 of the largest speed); the dissipation
    weights are ``grad U . V``, not ``|grad U|^2``."""
    cfg = _config()
    lag = LagrangianSphereDiscretization(cfg)
    dirac = lag.eulerian
    rho = dirac.prepare(initial_density(cfg), True)
    atom = np.array([[0.0, 0.6, 0.8]])
    mass = np.array([0.3])
    fields = dirac.problem.centre_fields(rho)
    mf = measure_fields(dirac, rho, atom, mass, fields)
    x, w = lag._centres, (rho * dirac.grid.area).ravel()
    px, pw = np.concatenate([x, atom]), np.concatenate([w, mass])
    v = lg.velocity(px, pw, cfg.model, lag.log_c, method="direct") * cfg.model.sign
    scale = np.abs(v).max()
    assert np.abs(mf["v_atoms"] - v[-1:]).max() < 1e-13 * scale
    e_t, e_p = (e.reshape(-1, 3) for e in tangent_frame(dirac.grid.theta, dirac.grid.phi))
    vel_t, vel_p = (a.ravel() for a in mf["vel"])
    assert np.abs(vel_t - np.sum(v[:-1] * e_t, axis=1)).max() < 1e-12 * scale
    assert np.abs(vel_p - np.sum(v[:-1] * e_p, axis=1)).max() < 1e-12 * scale
    assert np.abs(np.sum(mf["g_atoms"] * mf["v_atoms"]) - np.sum(mf["g_atoms"] ** 2)) > 1e-6


def test_run_conserves_mass_and_pure_attention_energy_rises():
    """A softmax ascent run without perceptron (t = 0.6, lmax 31): mass to round-off, the energy of
    the whole measure rises (``dE/dt = int |grad f|^2 / (beta^2 f) dmu >= 0``) at the rate of the
    recorded dissipation (central differences of the snapshots 0.1 apart: measured 1.0e-3)."""
    cfg = _config(perceptron=None, output__snapshot_interval=0.1, time__t_end=0.6)
    log = []
    res = simulate(cfg, initial_density(cfg), trackers=[lambda snap: log.append(
        (snap.t, snap.diagnostics.mass, snap.diagnostics.energy, snap.diagnostics.dissipation))])
    t, mass, e, diss = (np.array(a) for a in zip(*log))
    assert np.abs(mass - mass[0]).max() < 1e-14 and mass[0] == pytest.approx(1.0, rel=1e-12)
    assert np.all(np.diff(e) > 0) and np.all(diss > 0)
    rate = (e[2:] - e[:-2]) / (t[2:] - t[:-2])
    np.testing.assert_allclose(rate, diss[1:-1], rtol=4e-3)
    assert res.final.t == pytest.approx(0.6)


def test_atoms_conserve_mass_exactly():
    """Two atoms alone (softmax, ascent): the particles' masses never change; they approach."""
    cfg = _config(perceptron=None, initial={"kind": "atoms", "centers": [[1.0, 0.0, 0.0], [0.6, 0.8, 0.0]],
                                            "weights": [0.5, 0.5], "mass": 1.0})
    res = simulate(cfg, initial_density(cfg))
    d = res.final.diagnostics
    np.testing.assert_array_equal(np.sort(d.dirac_mass), [0.5, 0.5])
    x = d.dirac_position
    assert float(x[0] @ x[1]) > 0.6  # closer than at the start (cos = 0.6)
    assert d.mass == 1.0
