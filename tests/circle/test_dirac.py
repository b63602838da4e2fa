"""The measure-valued state on S^1 (``[atoms] representation = "dirac"``)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import TWO_ATOMS_S1, toml_config, two_atom_distance
from solvers.api import load_config
from solvers.circle.measure.dirac import CircleMeasureField, wrap_difference
from solvers.circle.measure.dirac_events import absorb, capture, merge
from solvers.circle.measure.dirac_diagnostics import measure_energy
from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization
from solvers.circle.problem import CircleProblem
from solvers.core.measure import DiracAtoms
from solvers.io.state import initial_density
from solvers.model.config import ConfigError
from solvers.model.params import AtomParams
from solvers.timestepping.loop import simulate
from spectral import CircleBasis

TWO_ATOMS = toml_config(TWO_ATOMS_S1, time__dt=0.002, time__integrator="rk4")


@pytest.mark.parametrize("scheme", ["fv", "lagrangian"])
def test_two_atoms_follow_their_ode(scheme):
    """docs/math.md §3.3: ``D' = -2 s m exp(beta cos D) sin D``, midpoint fixed (the fv Dirac state
    and the Lagrangian cells, tests/circle/test_lagrangian.py)."""
    cfg = load_config(TWO_ATOMS, time__scheme=scheme)
    res = simulate(cfg, initial_density(cfg))
    x = np.sort(res.final.diagnostics.dirac_position)
    assert abs((x[1] - x[0]) - two_atom_distance(3.0)) < 1e-10
    assert abs(0.5 * (x[0] + x[1]) - 1.6) < 1e-12


def _problem(n: int = 256, beta: float = 5.0, kernel: str = "exp", direction: str = "descent"
             ) -> CircleProblem:
    cfg = load_config(f'[domain]\nresolution = {n}\n[model]\nbeta = {beta}\nkernel = "{kernel}"\n'
                      f'direction = "{direction}"\n')
    return CircleProblem(cfg.model, CircleBasis(n))


@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
def test_closed_form_atom_matches_spectral_bump(kernel):
    """A narrow bump of mass m (width w) has the velocity field of an atom of mass m, to O(w^2)."""
    p = _problem(1024, 5.0, kernel)
    b, f = p.basis, CircleMeasureField(p)
    m, c, w = 0.3, 2.0, 0.02
    rho = m * np.exp(-0.5 * (wrap_difference(b.theta, c) / w) ** 2) / (np.sqrt(2 * np.pi) * w)
    spectral = p.attention_field(b.forward(rho), "face")
    closed = f.atom_attention(b.faces, np.array([c]), np.array([m]))
    scale = np.abs(closed).max()
    assert np.abs(spectral - closed).max() / scale < 5 * w**2 * 5.0  # beta w^2 order
    pot = f.density_potential_at(b.forward(rho), np.array([0.5]))
    assert pot[0] == pytest.approx(f.atom_potential(np.array([0.5]), np.array([c]), np.array([m]))[0], rel=5.0**2 * w**2)  # K''/K w^2/2


def test_capture_conserves_mass_and_first_moment():
    p = _problem(256, 5.0, direction="ascent")  # attention gathers the spike: it is held in
    b = p.basis
    rho = np.full(b.n, 1e-4)
    rho[100:103] += np.array([2.0, 5.0, 3.0])
    before = rho.sum() * b.h
    moment = (rho[99:104] * b.h) @ b.theta[99:104]
    u = CircleMeasureField(p).face_velocity(b.forward(rho), np.zeros(0), np.zeros(0))
    new, atoms = capture(rho, DiracAtoms.empty(1), u, p, AtomParams(capture_fraction=0.9), 0)
    assert atoms.count == 1 and np.all(new >= 0)
    assert new.sum() * b.h + atoms.mass.sum() == pytest.approx(before, abs=1e-15)
    after = (new[99:104] * b.h) @ b.theta[99:104] + atoms.mass[0] * atoms.position[0]
    assert after == pytest.approx(moment, abs=1e-15)


def test_capture_leaves_a_source_cell_beside_the_sink():
    """A concentration in a sink cell whose left neighbour is a source (both its faces point
    out, as beside a sink born on a ReLU corner): the core is the sink and its neighbour in the
    basin; the source keeps its mass, part of which flows away."""
    p = _problem(64, 5.0)
    b, c = p.basis, 30
    rho = np.full(b.n, 1e-4)
    rho[c - 1 : c + 2] += np.array([3.0, 5.0, 2.0])  # source c - 1 | sink c | c + 1 flows into c
    u = np.where((np.arange(b.n) >= c - 12) & (np.arange(b.n) <= c + 12), -1.0, 1.0)
    u[c - 1] = 0.5  # faces c - 2 (u < 0) and c - 1 (u > 0): cell c - 1 drains both ways
    new, atoms = capture(rho, DiracAtoms.empty(1), u, p, AtomParams(capture_fraction=0.9), 0)
    assert atoms.count == 1
    assert atoms.mass[0] == pytest.approx((rho[c] + rho[c + 1]) * b.h, rel=1e-14)
    assert new[c - 1] == rho[c - 1] and new[c] == 0.0 and new[c + 1] == 0.0
    centre = (rho[c : c + 2] @ b.theta[c : c + 2]) / rho[c : c + 2].sum()
    assert atoms.position[0] == pytest.approx(centre, abs=1e-14)
    assert new.sum() * b.h + atoms.mass.sum() == pytest.approx(rho.sum() * b.h, abs=1e-15)


def test_absorb_and_merge_conserve_mass():
    h = 2 * np.pi / 64
    rho = np.random.default_rng(0).random(64)
    atoms = DiracAtoms(np.array([0.2, 0.1, 0.05]), np.array([1.0, 1.0 + 0.5 * h, 6.28]), np.arange(3))
    u = np.where(np.arange(64) < 16, 1.0, -1.0)  # cell 16 is a sink
    atoms = DiracAtoms(atoms.mass, np.array([16 * h, 16 * h + 0.3 * h, 6.28]), atoms.ids)
    total = rho.sum() * h + atoms.mass.sum()
    new, absorbed = absorb(rho, atoms, u, h)
    assert new[16] == 0.0 and np.all(new >= 0)
    merged = merge(absorbed, h)
    assert merged.count == 2 and merged.ids.tolist() == [0, 2]
    assert new.sum() * h + merged.mass.sum() == pytest.approx(total, abs=1e-14)
    assert merged.position[0] == pytest.approx((0.2 * 16 * h + 0.1 * (16.3 * h)) / 0.3 + 0 * 0, abs=0.02)


def test_dirac_run_conserves_mass_and_positivity():
    """Paper S^1 descent (demo physics), short: capture, absorption and merges keep mass and rho >= 0."""
    cfg = load_config("runs/demo.toml", domain__resolution=128, atoms__representation="dirac",
                      time__t_end=300.0, time__stop_when_stationary=False, output__snapshot_interval=50.0)
    snaps = []
    simulate(cfg, initial_density(cfg), trackers=[snaps.append])
    assert snaps[-1].diagnostics.dirac_mass.size >= 2
    for s in snaps:
        assert abs(s.diagnostics.mass - 1.0) < 1e-13
        assert s.diagnostics.min_rho >= 0.0


def test_energy_includes_atoms():
    cfg = load_config(TWO_ATOMS)
    disc = DiracCircleDiscretization(cfg)
    atoms = DiracAtoms(np.array([0.5, 0.5]), np.array([1.0, 2.2]), np.arange(2))
    e = measure_energy(disc, np.zeros(128), atoms)
    assert e == pytest.approx((0.25 * np.exp(2.0) * 2 + 2 * 0.25 * np.exp(2.0 * np.cos(1.2))) / 4.0, rel=1e-13)


def test_dirac_archive_reads_back_and_resumes(tmp_path):
    from solvers.api import open_run, resume, run

    path = tmp_path / "two.nc"
    ds = run(TWO_ATOMS, path=path)
    assert ds.attrs["representation"] == "dirac"
    assert ds["dirac_mass"].isel(time=-1).values.tolist() == [0.5, 0.5]
    more = resume(path, time__t_end=5.0)
    full = simulate(load_config(TWO_ATOMS, time__t_end=5.0), np.zeros(128))
    got = open_run(path)["dirac_position"].isel(time=-1).values
    assert np.allclose(np.sort(got), np.sort(full.final.diagnostics.dirac_position), atol=1e-12)
    assert float(more["mass"].isel(time=-1)) == pytest.approx(1.0, abs=1e-14)


def test_config_rules():
    with pytest.raises(ConfigError):
        load_config(TWO_ATOMS, atoms__representation="grid")
    with pytest.raises(ConfigError):
        load_config(TWO_ATOMS, model__attention="softmax")
    demo = load_config("runs/demo.toml")  # no scheme named: the default method, measure-valued
    assert demo.time.scheme == "auto" and demo.atoms.representation == "dirac"


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_dissipation_is_the_energy_rate(backend, monkeypatch):
    """``dE/dt = s * dissipation`` (docs/math.md §1) for density plus atoms with the demo's
    perceptron: the directional derivative of the measure's energy along the right-hand side
    against the reported dissipation (the perceptron term was counted twice in it)."""
    monkeypatch.setenv("MEANFIELD_NUMPY", "1" if backend == "numpy" else "0")
    cfg = load_config("runs/demo.toml", domain__resolution=512, atoms__representation="dirac")
    disc = DiracCircleDiscretization(cfg)
    theta = disc.problem.basis.theta
    rho = 0.6 * (1 + 0.3 * np.cos(theta - 1.0)) / (2 * np.pi)
    state = disc.prepare_state(rho, DiracAtoms(np.array([0.2, 0.2]), np.array([1.0, 4.0]), np.arange(2)),
                               fresh=False)
    k = disc.rhs(state)[0]

    def energy(s):
        return measure_energy(disc, disc.density(s), disc.atoms(s))

    step = 1e-4
    rate = (energy(state + step * k) - energy(state - step * k)) / (2 * step)
    d = disc.diagnostics(state, cfg.atoms)
    assert rate == pytest.approx(disc.problem.sign * d.dissipation, rel=2e-3)


def _corner_atom(representation: str) -> float:
    """Descent ReLU at beta = 50, N = 512, to t = 40: the mass of the atom born on the ReLU
    corner at 85.4 degrees (its mass is settled by t = 20-40)."""
    cfg = load_config("runs/paper_s1_descent_relu_beta50.toml", domain__resolution=512,
                      time__t_end=40.0, time__stop_when_stationary=False,
                      atoms__representation=representation, output__progress=False)
    d = simulate(cfg, initial_density(cfg)).final.diagnostics
    near = np.abs(wrap_difference(np.asarray(d.atom_position), np.radians(85.4))) < np.radians(1.0)
    assert np.count_nonzero(near) == 1
    return float(np.asarray(d.atom_mass)[near][0])


def test_corner_atom_matches_the_grid_density():
    """The sink born on a ReLU corner has a source cell beside it when captured: its mass must
    not go into the atom (until round 13 this read .1731 against the grid density's .1910)."""
    assert _corner_atom("dirac") == pytest.approx(_corner_atom("grid"), abs=2e-3)
