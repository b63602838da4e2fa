"""The measure-valued state on S^2 (``[atoms] representation = "dirac"``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from solvers.api import load_config
from solvers.core.measure import DiracAtoms
from solvers.io.state import initial_density
from solvers.model.config import ConfigError
from solvers.model.params import AtomParams
from solvers.sphere.measure.dirac import SphereMeasureField, locate, normalise
from solvers.sphere.measure.dirac_events import absorb, capture, merge
from solvers.sphere.measure.dirac_diagnostics import measure_energy
from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization
from solvers.sphere.problem import tangent_frame
from solvers.timestepping.loop import simulate

A0, B0 = normalise([1.0, 0.2, 0.3])[0], normalise([0.1, 1.0, -0.4])[0]


def two_atoms(kernel: str = "exp", direction: str = "descent", extra: str = "",
              scheme: str = "fv") -> str:
    return f"""
[domain]
manifold = "S2"
resolution = 31
[model]
beta = 2.0
direction = "{direction}"
kernel = "{kernel}"
[initial]
kind = "atoms"
centers = [[1.0, 0.2, 0.3], [0.1, 1.0, -0.4]]
weights = [0.5, 0.5]
[atoms]
representation = "dirac"
[time]
scheme = "{scheme}"
t_end = 1.0
dt = 0.002
integrator = "rk4"
[output]
snapshot_interval = 0.5
{extra}"""


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b))


@pytest.mark.parametrize("kernel,direction,scheme", [
    ("exp", "descent", "fv"), ("exp_shifted", "ascent", "fv"), ("exp_shifted", "descent", "fv"),
    ("exp", "descent", "lagrangian"), ("exp_shifted", "ascent", "lagrangian")])
def test_two_atoms_follow_their_ode(kernel, direction, scheme):
    """docs/math.md §3.3: ``D' = -2 s m c_K e^{beta cos D} sin D``; the midpoint stays put (the
    fv Dirac state and the Lagrangian particles, solvers/sphere/measure/lagrangian.py)."""
    cfg = load_config(two_atoms(kernel, direction, scheme=scheme))
    res = simulate(cfg, initial_density(cfg))
    x = res.final.diagnostics.dirac_position
    s, c = cfg.model.sign, np.exp(-2.0) if kernel == "exp_shifted" else 1.0
    exact = solve_ivp(lambda t, y: [-2 * s * 0.5 * c * np.exp(2.0 * np.cos(y[0])) * np.sin(y[0])],
                      (0, 1.0), [_angle(A0, B0)], rtol=1e-13, atol=1e-14, method="DOP853").y[0, -1]
    assert abs(_angle(A0, B0) - exact) > 0.05  # the atoms did move
    assert abs(_angle(x[0], x[1]) - exact) < 1e-10
    assert np.allclose(normalise(x[0] + x[1])[0], normalise(A0 + B0)[0], atol=1e-12)
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-15)
    assert res.final.diagnostics.mass == pytest.approx(1.0, abs=1e-15)


def _disc(kernel: str = "exp", lmax: int = 31, beta: float = 2.0, direction: str = "ascent",
          extra: str = "") -> DiracSphereDiscretization:
    text = (f'[domain]\nmanifold = "S2"\nresolution = {lmax}\n[model]\nbeta = {beta}\n'
            f'kernel = "{kernel}"\ndirection = "{direction}"\n[atoms]\nrepresentation = "dirac"\n{extra}')
    return DiracSphereDiscretization(load_config(text))


def _smooth(disc: DiracSphereDiscretization) -> np.ndarray:
    g = disc.grid
    x = g.points(g.theta, g.phi)
    return (1.0 + 0.5 * x[..., 0] * x[..., 2] + 0.3 * x[..., 1] + 0.2 * x[..., 2] ** 3) / (4 * np.pi)


@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
def test_density_part_at_points_is_the_spectral_field(kernel):
    """The density's field off the grid (cells as point masses) equals the spectral field at the
    faces and the centres, on a smooth density (docs/math.md §2: the kernel past L is < 1e-17)."""
    disc = _disc(kernel)
    p, f, g = disc.problem, disc.field, disc.grid
    rho = _smooth(disc)
    f_lm = p.kernel_coefficients(rho, backend="numpy")
    u_t = p.velocity(f_lm, "theta_faces", backend="numpy")  # ascent, no perceptron: grad f / beta
    u_p = p.velocity(f_lm, "phi_faces", backend="numpy")
    pts_t = g.points(g.theta_faces, g.phi).reshape(-1, 3)
    pts_p = g.points(g.theta, g.phi_faces).reshape(-1, 3)
    e_t = tangent_frame(g.theta_faces, g.phi)[0].reshape(-1, 3)
    e_p = tangent_frame(g.theta, g.phi_faces)[1].reshape(-1, 3)
    q_t = np.sum(f.density_gradient_at(rho, pts_t) * e_t, axis=1).reshape(u_t.shape)
    q_p = np.sum(f.density_gradient_at(rho, pts_p) * e_p, axis=1).reshape(u_p.shape)
    scale = max(np.abs(u_t).max(), np.abs(u_p).max())
    assert scale > 1e-3 * np.exp(2.0 + f.log_c)
    assert np.abs(q_t - u_t).max() < 1e-12 * scale
    assert np.abs(q_p - u_p).max() < 1e-12 * scale
    fc = p.centre_fields(rho)["f"]
    assert np.allclose(f.density_potential_at(rho, f.centres).reshape(fc.shape), fc, rtol=1e-12, atol=0)


@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
def test_closed_form_atom_is_the_spectral_field_of_its_cell(kernel):
    """An atom at a cell centre has the spectral face velocities of its mass spread on that cell
    (the analysis of a grid density is that of its cell point masses, docs/methods.md §6.5)."""
    disc = _disc(kernel)
    p, f, g = disc.problem, disc.field, disc.grid
    j, k, m = 9, 17, 0.3
    rho = np.zeros(g.shape)
    rho[j, k] = m / g.area[j, k]
    f_lm = p.kernel_coefficients(rho, backend="numpy")
    u_t, u_p = p.velocity(f_lm, "theta_faces", "numpy"), p.velocity(f_lm, "phi_faces", "numpy")
    x = g.points(g.theta[j:j + 1], g.phi[k:k + 1]).reshape(1, 3)
    a_t, a_p = f.face_attention(x, np.array([m]))
    scale = np.abs(a_t).max()
    assert np.abs(a_t - u_t).max() < 1e-12 * scale and np.abs(a_p - u_p).max() < 1e-12 * scale
    fc = p.centre_fields(rho)["f"]
    assert np.allclose(f.atom_potential(f.centres, x, np.array([m])).reshape(fc.shape), fc, rtol=1e-12)


def test_capture_conserves_mass_and_positivity():
    """A bump over three cells and a ring on the polar band (merged cells: a cap at the pole)
    become two Dirac atoms; mass conserved to round-off, rho >= 0, merged cells stay constant."""
    disc = _disc("exp", 31, 5.0)
    g, fv = disc.grid, disc.fv
    rho = np.full(g.shape, 1e-5)
    rho[10, 20:22] += np.array([3.0, 1.0]) / g.area[10, 20]
    rho[11, 20] += 0.5 / g.area[11, 20]
    rho[0, :] += 0.2 / g.area[0].sum()
    before = float(np.sum(rho * g.area))
    empty = DiracAtoms.empty(3)
    potential = disc.field.flow_potential(rho, empty.position, empty.mass)
    new, atoms = capture(rho, empty, potential, fv, disc.neighbours, AtomParams(capture_fraction=0.9), 7)
    assert atoms.count == 2 and atoms.ids.tolist() == [7, 8] and np.all(new >= 0)
    assert float(np.sum(new * g.area)) + atoms.mass.sum() == pytest.approx(before, rel=1e-15)
    bump, cap = np.argmax(atoms.mass), np.argmin(atoms.mass)
    assert atoms.mass[bump] == pytest.approx(4.5, abs=1e-4) and atoms.mass[cap] == pytest.approx(0.2, abs=1e-4)
    centre = normalise(np.array([3.0, 1.0, 0.5]) @ g.points(g.theta, g.phi)[[10, 10, 11], [20, 21, 20]])[0]
    assert np.linalg.norm(atoms.position[bump] - centre) < 1e-5
    assert atoms.position[cap][2] > 1 - 1e-9  # the cap's centre of mass: the pole
    assert np.array_equal(new, g.to_fine(fv.cells(new)))  # merged cells still hold one value
    _, same = capture(new, atoms, disc.field.flow_potential(new, atoms.position, atoms.mass), fv,
                      disc.neighbours, AtomParams(capture_fraction=0.9), 9)
    assert same.count == 2  # basins holding a Dirac atom are not captured twice


@pytest.mark.parametrize("where", [(12, 5), (0, 3)])  # an ordinary cell and a merged polar one
def test_absorb_and_merge_conserve_mass(where):
    """Ascent: a heavy atom attracts its cell's density (all faces point in) and absorbs it."""
    disc = _disc("exp", 31, 2.0, "ascent")
    g, fv, f = disc.grid, disc.fv, disc.field
    rho = np.random.default_rng(0).random(g.shape) / (4 * np.pi)
    rho = g.to_fine(fv.cells(rho))
    j, k = where
    x = g.points(g.theta[j:j + 1], g.phi[k:k + 1]).reshape(1, 3)
    atoms = DiracAtoms(np.array([2.0]), x, np.array([0]))
    total = float(np.sum(rho * g.area)) + 2.0
    u_t, u_p = f.face_velocities(disc.problem.kernel_coefficients(rho), x, atoms.mass)
    new, absorbed = absorb(rho, atoms, u_t, u_p, fv)
    _, cell = locate(fv, x)
    assert np.all(new[fv.maps.cell_id == cell[0]] == 0.0) and np.all(new >= 0)
    assert absorbed.mass[0] > 2.0
    assert float(np.sum(new * g.area)) + absorbed.mass.sum() == pytest.approx(total, abs=1e-14)
    near = normalise(x[0] + 0.3 * disc.width * np.cross(x[0], [0.0, 0.0, 1.0] if j else [1.0, 0, 0]))
    three = DiracAtoms(np.array([0.2, 0.1, 0.05]), np.concatenate([x, near, -x]), np.array([0, 1, 2]))
    merged = merge(three, disc.width)
    assert merged.count == 2 and merged.ids.tolist() == [0, 2]
    assert merged.mass.sum() == pytest.approx(0.35, abs=1e-16)
    assert np.allclose(merged.position[0], normalise(0.2 * x[0] + 0.1 * near[0])[0], atol=1e-15)


def test_rate_counts_the_atoms():
    cfg = load_config(two_atoms())
    disc = DiracSphereDiscretization(cfg)
    state = disc.prepare_state(initial_density(cfg), None, fresh=True)
    d, rate = disc.rhs(state)
    v = d[disc.layout.grid_size:].reshape(-1)[:6].reshape(2, 3)
    _, cells = locate(disc.fv, disc.atoms(state).position)
    widths = np.minimum(disc.fv.dtheta[disc.fv.maps.band[cells]], disc.fv.maps.zonal_width[cells])
    assert rate == pytest.approx(float(np.max(np.linalg.norm(v, axis=1) / widths)), rel=1e-14)
    assert np.allclose(np.sum(v * disc.atoms(state).position, axis=1), 0.0, atol=1e-15)  # tangent


def test_energy_includes_atoms():
    cfg = load_config(two_atoms())
    disc = DiracSphereDiscretization(cfg)
    atoms = DiracAtoms(np.array([0.5, 0.5]), np.stack([A0, B0]), np.arange(2))
    e = measure_energy(disc, np.zeros(disc.shape), atoms)
    assert e == pytest.approx((2 * 0.25 * np.exp(2.0) + 2 * 0.25 * np.exp(2.0 * A0 @ B0)) / 4.0, rel=1e-13)


def test_dirac_run_conserves_mass_and_positivity():
    """Paper S^2 descent (ReLU, lmax 31), short: capture, absorption and merges keep the mass to
    round-off and rho >= 0; the energy of the whole measure decreases."""
    cfg = load_config("runs/paper_s2_descent_relu.toml", domain__resolution=31,
                      atoms__representation="dirac", time__t_end=60.0,
                      time__stop_when_stationary=False, output__snapshot_interval=10.0)
    snaps = []
    simulate(cfg, initial_density(cfg), trackers=[snaps.append])
    d = snaps[-1].diagnostics
    assert d.dirac_mass.size >= 2 and d.dirac_position.shape == (d.dirac_mass.size, 3)
    for s in snaps:
        assert abs(s.diagnostics.mass - 1.0) < 1e-13
        assert s.diagnostics.min_rho >= 0.0
    energy = [s.diagnostics.energy for s in snaps]
    assert np.all(np.diff(energy) < 1e-9)
    assert d.n_atoms >= d.dirac_mass.size and np.all(np.diff(d.atom_mass) <= 0)


@pytest.mark.slow
def test_dirac_archive_reads_back_and_resumes(tmp_path):
    from solvers.api import open_run, resume, run

    path = tmp_path / "two.nc"
    ds = run(two_atoms(), path=path)
    assert ds.attrs["representation"] == "dirac"
    assert {"dirac_x", "dirac_y", "dirac_z"} <= set(ds.data_vars) and "dirac_position" not in ds
    assert ds["dirac_mass"].isel(time=-1).values.tolist() == [0.5, 0.5]
    more = resume(path, time__t_end=2.0)
    full = simulate(load_config(two_atoms(), time__t_end=2.0), np.zeros(disc_shape()))
    last = open_run(path).isel(time=-1)
    got = np.stack([last[f"dirac_{c}"].values for c in "xyz"], axis=1)
    assert np.allclose(got, full.final.diagnostics.dirac_position, atol=1e-12, rtol=0)
    assert float(more["time"].isel(time=-1)) == 2.0
    assert float(more["mass"].isel(time=-1)) == pytest.approx(1.0, abs=1e-14)


def disc_shape() -> tuple[int, int]:
    from solvers.sphere.cells import SphereGrid

    return SphereGrid(31).shape


def test_config_rules():
    cfg = load_config(two_atoms())
    assert np.allclose(np.linalg.norm(np.asarray(cfg.initial.centers), axis=1), 1.0)
    with pytest.raises(ConfigError, match="fv"):
        load_config(two_atoms(), time__scheme="spectral")
    with pytest.raises(ConfigError, match="unnormalized"):
        load_config(two_atoms().replace('kernel = "exp"', 'kernel = "exp"\nattention = "softmax"'))
    with pytest.raises(ConfigError, match="representation"):
        load_config(two_atoms().replace('representation = "dirac"', 'representation = "grid"'))


def test_backends_agree():
    """The compiled sums (:mod:`solvers.sphere.measure.kernels_dirac_numba`) against the numpy reference."""
    disc = _disc("exp_shifted", 31, 3.0)
    fields = {b: SphereMeasureField(disc.problem, backend=b) for b in ("numba", "numpy")}
    x = normalise(np.random.default_rng(1).normal(size=(4, 3)))
    m = np.array([0.4, 0.3, 0.2, 0.1])
    rho = _smooth(disc)
    rho[3:7] = 0.0  # empty cells are skipped by the compiled sum
    (t1, p1), (t2, p2) = (f.face_attention(x, m) for f in fields.values())
    assert np.allclose(t1, t2, rtol=1e-13, atol=1e-16) and np.allclose(p1, p2, rtol=1e-13, atol=1e-16)
    a, b = (f.atom_gradient(rho, x, m) for f in fields.values())
    assert np.allclose(a, b, rtol=1e-13, atol=1e-16)
    a, b = (f.density_potential_at(rho, x) for f in fields.values())
    assert np.allclose(a, b, rtol=1e-13, atol=0)


def test_figure_marks_the_dirac_atoms(tmp_path):
    from solvers.api import run
    from solvers.plots.sphere import dirac_at, sphere_run_figure

    ds = run(two_atoms(), path=tmp_path / "two.nc")
    mass, xyz = dirac_at(ds, -1)
    assert mass.tolist() == [0.5, 0.5] and xyz.shape == (2, 3)
    _, panels = sphere_run_figure(ds)
    assert [ln.get_gid() for ln in panels["map"].lines].count("dirac-atoms") == 1


def test_dissipation_is_the_energy_rate():
    """``dE/dt = s * dissipation`` for density plus atoms with the paper's perceptron: the
    directional derivative of the measure's energy along the right-hand side (lmax 31: 8.5e-4
    relative, lmax 63: 2.2e-4) against the reported dissipation."""
    cfg = load_config("runs/paper_s2_descent_relu.toml", domain__resolution=31, atoms__representation="dirac")
    disc = DiracSphereDiscretization(cfg)
    g = disc.grid
    x = g.points(g.theta, g.phi)
    rho = 0.6 * (1 + 0.3 * x[..., 0] * x[..., 2]) / (4 * np.pi)
    atoms = DiracAtoms(np.array([0.2, 0.2]), np.stack([A0, B0]), np.arange(2))
    state = disc.prepare_state(rho, atoms, fresh=False)
    k = disc.rhs(state)[0]

    def energy(s):
        return measure_energy(disc, disc.density(s), disc.atoms(s))

    rate = (energy(state + 1e-4 * k) - energy(state - 1e-4 * k)) / 2e-4
    d = disc.diagnostics(state, cfg.atoms)
    assert rate == pytest.approx(disc.problem.sign * d.dissipation, rel=2e-3)


@pytest.mark.parametrize("lmax", [31, 63])
def test_atom_widths_from_the_band_equal_the_located_cells(lmax):
    """The step's atom rate uses the width of the atom's finite volume from its band alone
    (``atom_widths``): the same as ``cell_width`` of the located cell, poles included."""
    from pathlib import Path

    from solvers.sphere.measure.dirac import atom_widths, band_widths, cell_width, locate
    from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization

    runs = Path(__file__).resolve().parents[2] / "runs"
    cfg = load_config(runs / "paper_s2_descent_relu.toml", domain__resolution=lmax,
                      atoms__representation="dirac")
    d = DiracSphereDiscretization(cfg)
    x = np.random.default_rng(lmax).normal(size=(5000, 3))
    x[:4] = [[0, 0, 1], [0, 0, -1], [1, 0, 0], [0, 1e-9, 1]]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_array_equal(atom_widths(*band_widths(d.fv), x), cell_width(d.fv, locate(d.fv, x)[1]))
