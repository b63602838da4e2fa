"""``time.scheme = "lagrangian"`` on S^2: weighted particles merged into Dirac atoms.

References: the particle model of solvers.studies.particles (an independent implementation of
the same flow), the grid's cell masses, mass and energy; the two-atom ODE of docs/math.md §3.3 is
checked in tests/sphere/test_sphere_dirac.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_sphere_dirac import two_atoms

from solvers.api import load_config, open_run, resume, run
from solvers.io.state import initial_density
from solvers.model.config import ConfigError
from solvers.sphere.measure import lagrangian as lg
from solvers.sphere.measure.lagrangian_discretization import LagrangianSphereDiscretization
from solvers.studies.cell_particles import cell_particles
from solvers.studies.particles import ParticleSystem, integrate
from solvers.timestepping.registry import make_discretization
from solvers.timestepping.loop import simulate

PAPER = "runs/paper_s2_descent_relu_particles.toml"


def test_particles_start_on_the_cells_and_follow_the_particle_model():
    """The state starts as the grid's cell masses at the cell centres (cell particles), and a
    few RK4 steps equal the particle model's (solvers.studies.particles) to round-off growth."""
    cfg = load_config(PAPER, domain__resolution=31, time__t_end=4.0, time__dt=0.5,
                      time__rate_factor=1.0)
    disc = make_discretization(cfg)
    assert isinstance(disc, LagrangianSphereDiscretization)
    state = disc.prepare_state(initial_density(cfg), None, fresh=True)
    x0, w0 = cell_particles(cfg)
    p = disc.particles(state)
    np.testing.assert_array_equal(p.mass, w0)
    np.testing.assert_allclose(p.position, x0, atol=1e-15)
    res = simulate(cfg, initial_density(cfg))
    ref = integrate(ParticleSystem(cfg.model), x0, w0, [4.0], dt=0.5, energy=False).x[0]
    d = res.final.diagnostics
    assert d.mass == pytest.approx(w0.sum(), rel=1e-14)
    # the archived density is the particles' deposit: compare it with the reference's deposit
    ref_rho = lg.deposit(type(p)(w0, ref, np.full(w0.size, -1)), disc.grid.fine_cell, disc.grid.area)
    np.testing.assert_allclose(res.final.rho, ref_rho, rtol=0, atol=1e-12 * ref_rho.max())


def test_velocity_series_equals_pair_sums():
    cfg = load_config(PAPER, domain__resolution=31)
    x0, w0 = cell_particles(cfg)
    a = lg.velocity(x0, w0, cfg.model, -1.0, method="series")
    b = lg.velocity(x0, w0, cfg.model, -1.0, method="direct")
    c = lg.velocity(x0, w0, cfg.model, -1.0, method="series", compiled=False)
    assert np.abs(a - b).max() < 1e-14 and np.abs(c - b).max() < 1e-14
    with pytest.raises(ValueError, match="method"):
        lg.attention_sums(x0, w0, 1.0, -1.0, method="fmm")


@pytest.mark.slow  # 35 s
def test_run_conserves_mass_merges_and_descends(tmp_path):
    """lmax 31, t <= 150: particles merge into Dirac atoms (mass to round-off, the density's
    deposit non-negative), the energy of the whole measure decreases, the archive reads back and
    resumes from its last snapshot."""
    path = tmp_path / "p.nc"
    ds = run(PAPER, path=path, domain__resolution=31, time__t_end=150.0,
             output__snapshot_interval=30.0)
    assert ds.attrs["representation"] == "dirac"
    mass = ds["mass"].values
    assert np.all(np.abs(mass - 1.0) < 1e-13) and float(ds["min_rho"].min()) >= 0.0
    assert np.all(np.diff(ds["energy"].values) < 1e-12)
    heavy = ds["dirac_mass"].isel(time=-1).values
    heavy = np.sort(heavy[np.isfinite(heavy)])[::-1]
    assert heavy.size >= 2 and heavy[0] > 0.5  # the two heavy atoms are Dirac atoms by t = 150
    more = resume(path, time__t_end=170.0)
    assert float(more["time"].isel(time=-1)) == 170.0
    assert abs(float(open_run(path)["mass"].isel(time=-1)) - 1.0) < 1e-13


def test_config_rules():
    lag = two_atoms(scheme="lagrangian")
    with pytest.raises(ConfigError, match="representation"):
        load_config(lag.replace('representation = "dirac"', 'representation = "grid"'))
    with pytest.raises(ConfigError, match="snapshot_mode"):
        load_config(lag, output__snapshot_mode="interpolate")
