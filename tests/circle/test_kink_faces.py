"""Faces on the perceptron's corners (``time.kink_faces``, solvers/circle/cells.py).

Checked against independent computations: the corners solve ``a.x + b = 0``; the face velocity
at a moved face is the direct sum over the cells' point masses plus the perceptron's exact value;
the numba kernel equals the numpy reference with non-uniform widths; a run keeps mass to
round-off and ``rho >= 0``; and on the paper demo the moved faces remove the jump of the heavy
atom's mass between N = 256 and N = 288 (docs/methods.md §6.2).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import make_config

import solvers
import solvers.circle.grid.discretization as disc_mod
from solvers.circle.grid.discretization import CircleDiscretization, compute_diagnostics
from solvers.circle.grid.fv import transport
from solvers.circle.cells import MIN_WIDTH, kink_face_layout, perceptron_kinks
from solvers.circle.problem import CircleProblem
from solvers.core.backend import numba_available
from solvers.model.config import ConfigError
from solvers.model.params import AtomParams, PerceptronParams
from spectral import CircleBasis

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "runs" / "demo.toml"
A = np.array([[-0.9967456002240224, 0.0806114658969388], [-0.6198538201675943, -0.784717300448792]])
OMEGA = np.array([0.6324575844117477, -0.4696753890279187])


def relu(b=(0.0, 0.0), activation="relu") -> PerceptronParams:
    return PerceptronParams(activation, A.copy(), OMEGA.copy(), np.asarray(b, dtype=float))


@pytest.mark.parametrize("b", [(0.0, 0.0), (0.3, -0.7), (0.99, 0.0)])
def test_kinks_solve_the_unit_equations(b):
    p = relu(b)
    kinks = perceptron_kinks(p)
    assert kinks.size == 4
    x = np.stack([np.cos(kinks), np.sin(kinks)], axis=1)
    residual = np.min(np.abs(x @ A.T + np.asarray(b)), axis=1)  # each kink zeroes one unit
    assert np.max(residual) < 1e-14
    assert np.all(np.diff(kinks) > 0) and kinks.min() >= 0 and kinks.max() < 2 * np.pi


def test_no_kinks_for_smooth_units_or_large_biases():
    assert perceptron_kinks(relu(activation="gelu")).size == 0
    assert perceptron_kinks(PerceptronParams()).size == 0
    assert perceptron_kinks(relu(b=(1.5, 0.0))).size == 2  # |b| >= |a|: that unit never switches
    assert perceptron_kinks(relu(activation="leaky_relu")).size == 4


@pytest.mark.parametrize("n", [16, 128, 256, 288, 1000])
def test_layout_puts_faces_on_kinks_and_keeps_the_circle(n):
    basis = CircleBasis(n)
    kinks = perceptron_kinks(relu())
    lay = kink_face_layout(basis, kinks)
    width = basis.h / lay.scale
    assert np.sum(width) == pytest.approx(2 * np.pi, abs=1e-12)
    assert width.min() >= MIN_WIDTH * basis.h - 1e-15
    moved = np.mod(lay.faces[lay.moved], 2 * np.pi)
    dist = np.abs((moved[:, None] - kinks[None, :] + np.pi) % (2 * np.pi) - np.pi)
    assert np.all(dist.min(axis=1) < 1e-14)  # every moved face sits on a kink
    untouched = np.setdiff1d(np.arange(n), lay.moved)
    assert np.array_equal(lay.faces[untouched], basis.faces[untouched])
    # consecutive faces bound the cells: width = face_i - face_{i-1}
    assert np.allclose(np.diff(np.append(lay.faces[-1] - 2 * np.pi, lay.faces)), width, atol=1e-13)
    if n >= 128:
        assert lay.moved.size == 4


def direct_face_velocity(cfg, rho, theta):
    """Signed velocity at angles ``theta`` from the cells' point masses (no transform)."""
    basis = CircleBasis(rho.size)
    d = theta[:, None] - basis.theta[None, :]
    beta = cfg.model.beta
    shift = beta if cfg.model.kernel == "exp_shifted" else 0.0
    att = -np.sum(rho * basis.h * np.sin(d) * np.exp(beta * np.cos(d) - shift), axis=1)
    from solvers.model.perceptron import circle_velocity
    return cfg.model.sign * (att + circle_velocity(cfg.model.perceptron, theta))


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
def test_face_velocity_at_moved_faces_is_the_direct_sum(attention):
    n = 128
    cfg = make_config(n, beta=4.0, attention=attention, percep=relu())
    plain = CircleProblem(cfg.model, CircleBasis(n))
    moved = CircleProblem(cfg.model, CircleBasis(n), kink_faces=True)
    theta = plain.basis.theta
    rho = (1.0 + 0.6 * np.cos(theta - 0.3) + 0.2 * np.sin(5 * theta)) / (2 * np.pi)
    idx = moved.moved_faces
    assert idx.size == 4
    u_plain = plain.velocity(plain.basis.forward(rho), "face")
    u_fast = moved.face_velocity(rho) if attention == "unnormalized" else None
    u_ref = moved.velocity(moved.basis.forward(rho), "face")
    keep = np.setdiff1d(np.arange(n), idx)
    assert np.array_equal(u_ref[keep], u_plain[keep])
    if attention == "unnormalized":
        np.testing.assert_allclose(u_ref, u_fast, rtol=0, atol=1e-14)
        direct = direct_face_velocity(cfg, rho, moved.faces[idx])
        np.testing.assert_allclose(u_ref[idx], direct, rtol=0, atol=1e-12)
    assert not np.allclose(u_ref[idx], u_plain[idx])  # the faces did move


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
@pytest.mark.parametrize("limiter", ["mc", "weno5"])
@pytest.mark.parametrize("dt", [None, 1e-3, 0.05])
@pytest.mark.parametrize("n", [16, 64, 257])
def test_numba_transport_with_widths_matches_numpy(limiter, dt, n):
    """Random densities with empty cells, random velocities and cell widths; MUSCL and WENO5."""
    rng = np.random.default_rng(n)
    h = 2 * np.pi / n
    for _ in range(5):
        rho = rng.random(n) ** 2
        rho[rng.random(n) < 0.3] = 0.0
        u = rng.normal(size=n) * 3.0
        scale = 1.0 / rng.uniform(0.3, 1.7, n)
        ref, rate_ref = transport(rho, u, h, limiter, dt, backend="numpy", scale=scale)
        got, rate = transport(rho, u, h, limiter, dt, backend="numba", scale=scale)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.max(np.abs(ref)))
        assert rate == pytest.approx(rate_ref, rel=1e-14)
        assert abs(np.sum(got)) <= 1e-13 * np.sum(np.abs(got))  # telescoping
        if dt is not None:
            assert np.all(rho + dt * got >= -1e-15)  # outflow limited to the content


def test_uniform_scale_is_bitwise_the_old_scheme():
    rng = np.random.default_rng(3)
    n, h = 50, 2 * np.pi / 50
    rho, u = rng.random(n), rng.normal(size=n)
    for backend in ["numpy"] + (["numba"] if numba_available() else []):
        a = transport(rho, u, h, "mc", 0.01, backend=backend)
        b = transport(rho, u, h, "mc", 0.01, backend=backend, scale=np.ones(n))
        assert np.array_equal(a[0], b[0]) and a[1] == b[1]


def test_compiled_diagnostics_use_the_moved_faces(monkeypatch):
    cfg = solvers.load_config(DEMO, domain__resolution=128, time__kink_faces=True)
    disc = CircleDiscretization(cfg)
    theta = disc.problem.basis.theta
    rho = (1.0 + 0.5 * np.cos(3 * theta) + 0.3 * np.sin(theta)) / (2 * np.pi)
    got = disc.diagnostics(rho, AtomParams())
    monkeypatch.setattr(disc_mod, "_compiled", lambda problem, rhs: False)
    ref = compute_diagnostics(disc.problem, disc.rhs, rho, AtomParams(), disc.k_max)
    assert got.transport_rate == pytest.approx(ref.transport_rate, rel=1e-12)
    assert got.energy == pytest.approx(ref.energy, rel=1e-12)


def test_run_conserves_mass_and_positivity():
    ds = solvers.run(DEMO, domain__resolution=128, time__kink_faces=True, time__t_end=300.0,
                     time__stop_when_stationary=False, output__snapshot_interval=50.0)
    mass = ds["mass"].values
    assert np.max(np.abs(mass - mass[0])) < 1e-13
    assert float(ds["min_rho"].min()) >= 0.0


def heavy_atom(n: int, kink_faces: bool) -> float:
    ds = solvers.run(DEMO, domain__resolution=n, time__kink_faces=kink_faces,
                     output__snapshot_interval=50.0)
    return float(np.nanmax(ds["atom_mass"].isel(time=-1).values))


def test_demo_heavy_atom_no_longer_jumps_between_256_and_288():
    """Uniform faces: 0.5913 (N = 256) against 0.5844 (N = 288), the sink at 325 degrees born
    late at N = 256; faces on the corners: both within 0.001 of each other."""
    plain = abs(heavy_atom(256, False) - heavy_atom(288, False))
    moved = abs(heavy_atom(256, True) - heavy_atom(288, True))
    assert plain > 5e-3
    assert moved < 1e-3


@pytest.mark.parametrize("config, override, why", [
    ("s2_descent_relu.toml", {}, "S1 only"),
    ("demo.toml", {"time__scheme": "spectral"}, "time.scheme"),
])
def test_config_errors_name_the_key(config, override, why):
    with pytest.raises(ConfigError, match="time.kink_faces") as err:
        solvers.load_config(ROOT / "runs" / config, time__kink_faces=True, **override)
    assert why in str(err.value)


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
def test_dirac_state_with_kink_faces_compiled_matches_reference():
    """The measure's right-hand side (density on moved faces, atoms) and its face velocity,
    compiled against the numpy reference, and the face velocity at the moved faces against the
    direct sum over the cells' and the atoms' point masses."""
    from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization

    cfg = solvers.load_config(DEMO, domain__resolution=128, time__kink_faces=True,
                              atoms__representation="dirac")
    fast = DiracCircleDiscretization(cfg)
    assert fast.compiled is not None and fast.problem.moved_faces.size == 4
    theta = fast.problem.basis.theta
    rho = (1.0 + 0.5 * np.cos(3 * theta) + 0.3 * np.sin(theta)) / (4 * np.pi)
    x, m = np.array([0.7, 2.0, 5.61]), np.array([0.2, 0.2, 0.1])
    rho_hat = fast.problem.basis.forward(rho)
    u_ref = fast.field.face_velocity(rho_hat, x, m)
    u_fast = fast.compiled.face_velocity(rho_hat, x, m)
    np.testing.assert_allclose(u_fast, u_ref, rtol=0, atol=1e-13 * np.max(np.abs(u_ref)))
    idx = fast.problem.moved_faces
    faces = fast.problem.faces[idx]
    beta = cfg.model.beta
    d = faces[:, None] - x[None, :]
    atoms = -np.sum(m * np.sin(d) * np.exp(beta * (np.cos(d) - 1.0)), axis=1)
    direct = direct_face_velocity(cfg, rho, faces) + cfg.model.sign * atoms
    np.testing.assert_allclose(u_ref[idx], direct, rtol=0, atol=1e-12)
    state = np.concatenate([rho, x, m, np.arange(3.0)])
    ref, rate_ref = fast._rhs(state, 0.05)
    got, rate = fast.rhs(state, 0.05)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.max(np.abs(ref)))
    assert rate == pytest.approx(rate_ref, rel=1e-13)


def test_dirac_run_with_kink_faces_keeps_mass_and_positivity():
    ds = solvers.run(DEMO, domain__resolution=128, time__kink_faces=True, time__t_end=400.0,
                     atoms__representation="dirac", time__stop_when_stationary=False,
                     output__snapshot_interval=50.0)
    mass = ds["mass"].values
    assert np.max(np.abs(mass - mass[0])) < 1e-13
    assert float(ds["min_rho"].min()) >= 0.0
    assert float(ds["dirac_mass"].isel(time=-1).sum()) > 0.5  # atoms were captured
