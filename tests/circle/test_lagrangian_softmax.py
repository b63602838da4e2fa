"""Softmax-normalised attention (paper eq. 2.9) in the S^1 Lagrangian scheme (moving cells plus
Dirac atoms, :mod:`solvers.circle.measure.lagrangian_fields`) and in the Dirac diagnostics of its snapshots.

The attention velocity is ``f' / (beta f)``, ``f = K*mu`` of cells and atoms. References: direct
sums (Gauss-Legendre per cell, which scipy's adaptive quadrature confirms; closed forms per atom),
the grid's spectral softmax (:class:`solvers.circle.problem.CircleProblem`), a grid run, and the
two-atom ODE derived below."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp

from conftest import PAPER_S1_PERCEPTRON, TWO_ATOMS_S1, toml_config
from solvers.api import load_config
from solvers.circle.measure import lagrangian as lg
from solvers.circle.measure import lagrangian_fields as lf
from solvers.circle.grid.discretization import CircleDiscretization
from solvers.circle.measure.lagrangian_discretization import LagrangianCircleDiscretization
from solvers.circle.problem import CircleProblem
from solvers.io.state import initial_density
from solvers.model.config import ConfigError
from solvers.timestepping.loop import simulate
from spectral import CircleBasis

TWO_PI = 2 * np.pi

SMOOTH = {"domain": {"manifold": "S1"},
          "model": {"beta": 5.0, "attention": "softmax", "direction": "ascent", "kernel": "exp_shifted"},
          "perceptron": PAPER_S1_PERCEPTRON,
          "initial": {"kind": "von_mises", "centers": [1.0, 4.0], "kappas": [2.0, 1.0], "weights": [0.6, 0.4]},
          "time": {"t_end": 1.0, "stop_when_stationary": False},
          "output": {"snapshot_interval": 0.5, "progress": False}}


def _smooth(n: int, rep: str, scheme: str, **keys) -> str:
    """A von Mises mixture at ``n`` cells, ``representation = rep``, ``time.scheme``; ``keys``
    as :func:`toml_config`'s."""
    return toml_config(SMOOTH, domain__resolution=n, atoms__representation=rep, time__scheme=scheme, **keys)


def _two_atoms(beta: float, kernel: str, direction: str) -> str:
    """tests/conftest.py's two atoms with softmax attention, Lagrangian, rk4 (dt = 0.01) to t = 4."""
    return toml_config(TWO_ATOMS_S1, model={"beta": beta, "attention": "softmax", "direction": direction,
                                            "kernel": kernel},
                       time={"scheme": "lagrangian", "t_end": 4.0, "dt": 0.01, "integrator": "rk4",
                             "stop_when_stationary": False},
                       output={"snapshot_interval": 0.5, "progress": False})


def _model(beta: float, kernel: str = "exp"):
    return load_config(f'[model]\nbeta = {beta}\nkernel = "{kernel}"\nattention = "softmax"\n').model


def _state(n: int = 48, seed: int = 0) -> lg.LagrangianState:
    """Uneven points, random cell masses, two atoms."""
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0.0, TWO_PI, n))
    A, ids = np.zeros(n), np.full(n, -1)
    A[[5, n * 5 // 8]], ids[[5, n * 5 // 8]] = [0.2, 0.1], [0, 1]
    return lg.LagrangianState(X, rng.uniform(0.0, 0.02, n), A, ids)


@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
@pytest.mark.parametrize("beta", [1.0, 5.0, 25.0])
def test_potential_compiled_numpy_and_direct_sums(kernel, beta):
    """``f = K*mu`` at any points: compiled and numpy agree to round-off (measured <= 7.5e-16
    relative), and both equal the direct sums (24 Gauss-Legendre nodes per cell; measured <=
    3.1e-15 relative). The fused compiled pass gives the same ``(1/beta) f'`` as before."""
    model = _model(beta, kernel)
    st, w = _state(), lg.gradient_weights(model)
    pts = np.linspace(-1.0, 7.0, 41)
    g1, f1 = lf.attention_fields(st, w, beta, pts, compiled=True)
    g0, f0 = lf.attention_fields(st, w, beta, pts, compiled=False)
    exact = lf.potential_reference(st, model, pts, nodes=24)
    scale = np.abs(exact).max()
    assert np.abs(f1 - f0).max() < 5e-15 * scale
    assert np.abs(f1 - exact).max() < 2e-14 * scale and np.abs(f0 - exact).max() < 2e-14 * scale
    grad = lg.attention_gradient_reference(st, model, pts)
    assert np.abs(g1 - grad).max() < 1e-12 * np.abs(grad).max()
    np.testing.assert_allclose(g1, lg.attention_gradient(st, w, pts), rtol=0, atol=1e-15 * np.abs(grad).max())
    np.testing.assert_array_equal(lf.potential(st, w, beta, pts, compiled=False), f0)


def test_direct_sums_against_adaptive_quadrature_and_atoms():
    """The reference itself: per cell ``int c K(p, y) dy`` by scipy's adaptive quadrature, per atom
    ``A K(p, x)`` written out (beta = 25, exp kernel: sharp enough for the rule to matter)."""
    model = _model(25.0)
    st = _state(12, seed=3)
    pts = np.array([0.3, 2.0, 4.5])
    L, K = st.lengths(), (lambda p, y: np.exp(25.0 * np.cos(p - y)))
    for p in pts:
        cells = sum(st.m[k] / L[k] * quad(lambda y: K(p, y), st.X[k], st.X[k] + L[k], epsabs=0, epsrel=2e-14,
                                          limit=200)[0] for k in range(st.n))
        atoms = sum(st.A[k] * K(p, st.X[k]) for k in range(st.n))
        got = lf.potential_reference(st, model, np.array([p]), nodes=24)[0]
        assert got == pytest.approx(cells + atoms, rel=1e-13)


@pytest.mark.parametrize("beta", [25.0, 60.0, 200.0])
def test_softmax_far_from_the_mass(beta):
    """Far from all the mass ``f`` is far below the spectral sums' round-off (``e^{-2 beta}``
    relative at the antipode): there :func:`softmax_attention` takes the direct sums, so
    ``f'/(beta f)`` stays accurate and within ``|f'| <= beta f``."""
    model = _model(beta, "exp_shifted")
    n = 200
    X = np.linspace(0.0, TWO_PI, n, endpoint=False) + 0.01
    A, ids = np.zeros(n), np.full(n, -1)
    A[0], ids[0] = 1.0, 0
    st = lg.LagrangianState(X, np.full(n, 1e-6), A, ids)
    pts = np.linspace(0.5, 6.0, 23)
    got = lf.softmax_attention(st, model, lg.gradient_weights(model), pts)
    g, f, _ = lf.direct_sums(st, model, pts, nodes=24)
    assert np.all(np.isfinite(got)) and np.all(np.abs(got) <= 1.0)
    assert np.abs(got - g / f).max() < 1e-9  # measured <= 1.8e-11 (spectral where f >= 1e-7 M K(0))


def test_velocity_of_a_smooth_state_matches_the_grid():
    """A von Mises mixture read as cells (the grid's cell averages, uniform in each cell): the
    Lagrangian softmax velocity at the points (the grid's faces) against the grid's spectral
    softmax ``f'/(beta f)`` (cell averages read as point values). Second order in h: measured
    5.48e-5, 1.37e-5, 3.43e-6 at N = 128, 256, 512 (|u| <= 0.43)."""
    errors = []
    for n in (128, 256, 512):
        cfg = load_config(_smooth(n, "dirac", "lagrangian"))
        rho = initial_density(cfg)
        p = CircleProblem(cfg.model, CircleBasis(n))
        grid = p.velocity(p.basis.forward(rho), "face")
        st = lg.from_grid(rho, np.zeros(0), np.zeros(0), np.zeros(0, int))
        np.testing.assert_allclose(np.mod(st.X, TWO_PI), p.faces, atol=1e-14)
        errors.append(np.abs(lg.velocity(st, cfg.model, lg.gradient_weights(cfg.model), st.X) - grid).max())
    assert errors[0] < 1e-4 and errors[1] < 2.5e-5 and errors[2] < 7e-6
    assert 3.5 < errors[0] / errors[1] < 4.5 and 3.5 < errors[1] / errors[2] < 4.5


def test_snapshot_diagnostics_match_the_grid():
    """At t = 0 the Lagrangian cells are the grid's cells: the Dirac diagnostics (softmax path)
    of the state equal the grid's softmax diagnostics (energy, dissipation int grad U . V drho,
    largest speed) to round-off."""
    cfg = load_config(_smooth(256, "dirac", "lagrangian"))
    rho = initial_density(cfg)
    disc = LagrangianCircleDiscretization(cfg)
    state = disc.prepare_state(rho, None, fresh=True)
    got = disc.diagnostics(state, cfg.atoms)
    grid = CircleDiscretization(load_config(_smooth(256, "grid", "fv")))
    want = grid.diagnostics(rho, cfg.atoms)
    for name in ("mass", "energy", "dissipation", "max_support_velocity"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-12), name
    # the stationarity measure of the flow that moves the measure, not of grad U
    assert got.max_support_velocity != pytest.approx(np.abs(disc.problem.potential_gradient(
        disc.problem.basis.forward(rho))).max(), rel=1e-3)


def _mode_and_energy(cfg) -> tuple[np.ndarray, float]:
    res = simulate(cfg, initial_density(cfg))
    n = cfg.domain.resolution
    return np.fft.rfft(res.final.rho)[:8] * (TWO_PI / n), res.final.diagnostics.energy


def test_short_run_matches_the_grid():
    """N = 256, beta = 5, von Mises start, ReLU perceptron, ascent, t = 1 (before concentration):
    the Lagrangian run's density modes 0..7 and energy against the pseudo-spectral N = 512 run
    (the reference, itself within 1.2e-5 of N = 1024) and the fv grid's N = 256 run.

    Measured (rk4, dt = 0.005 fixed, so that the time error is below the space error; the
    default steps, 4 of them, add about 1e-5 to the energy): modes 1.9e-4 from the reference
    (fv N = 256: 3.7e-4), energy 8.8e-6 (fv: 1.8e-6; both energies are read from the grid's cell
    averages as point masses, O(h^2) = 6e-4 times E''; the Lagrangian's converges at second
    order, 2.3e-6 at N = 512); Lagrangian against fv 3.5e-4 and 7.0e-6. Tolerances: 2 to 3 times
    those."""
    lag_m, lag_e = _mode_and_energy(load_config(_smooth(256, "dirac", "lagrangian", time__dt=0.005,
                                                        time__integrator="rk4")))
    fv_m, fv_e = _mode_and_energy(load_config(_smooth(256, "grid", "fv")))
    ref_m, ref_e = _mode_and_energy(load_config(_smooth(512, "grid", "spectral")))
    assert lag_m[0] == pytest.approx(1.0, abs=1e-14)
    assert np.abs(lag_m - ref_m).max() < 5e-4 and np.abs(lag_m - fv_m).max() < 8e-4
    assert np.abs(fv_m - ref_m).max() < 1e-3  # the grid's own accuracy
    assert abs(lag_e - ref_e) < 2.5e-5 and abs(lag_e - fv_e) < 2e-5


def two_atom_rate(D: np.ndarray, beta: float, s: float) -> np.ndarray:
    """``D'`` for two atoms of equal mass ``m`` at distance ``D`` (softmax, no perceptron).

    With ``K(p, y) = c e^{beta cos(p - y)}``: ``f(x_1) = m c (e^beta + e^{beta cos D})`` (its own mass
    counts in the normaliser), ``f'(x_1) = -m c beta sin(x_1 - x_2) e^{beta cos D} = m c beta sin(D)
    e^{beta cos D}`` (``D = x_2 - x_1``; its own term has no slope), so ``x_1' = s f'/(beta f) = s
    sin D e^{beta cos D} / (e^beta + e^{beta cos D})`` and ``x_2' = -x_1'``: ``D' = -2 s sin D /
    (1 + e^{beta (1 - cos D)})``, independent of ``m`` and ``c``; the midpoint is fixed."""
    return -2.0 * s * np.sin(D) / (1.0 + np.exp(beta * (1.0 - np.cos(D))))


@pytest.mark.parametrize("beta,kernel,direction", [(5.0, "exp_shifted", "ascent"), (2.0, "exp", "descent")])
def test_two_atoms_follow_their_softmax_ode(beta, kernel, direction):
    """Two atoms of mass 1/2 at distance 1.2: the closed form of :func:`two_atom_rate` equals the
    finite differences of the spectral ``f`` at the atoms (central, step 1e-5: measured 1.4e-11), and
    the run (rk4, dt = 0.01) follows the ODE (measured 8.4e-12) with the midpoint fixed and the
    atoms' masses exactly 1/2."""
    cfg = load_config(_two_atoms(beta, kernel, direction))
    s = cfg.model.sign
    st = lg.LagrangianState(np.array([1.0, 2.2]), np.zeros(2), np.array([0.5, 0.5]), np.array([0, 1]))
    w, h = lg.gradient_weights(cfg.model), 1e-5
    f = lf.potential(st, w, beta, np.array([1.0 - h, 1.0, 1.0 + h, 2.2 - h, 2.2, 2.2 + h]))
    u = s * np.array([f[2] - f[0], f[5] - f[3]]) / (2 * h * beta * f[[1, 4]])
    assert u[1] - u[0] == pytest.approx(two_atom_rate(1.2, beta, s), abs=1e-9)
    np.testing.assert_allclose(lg.velocity(st, cfg.model, w, st.X), u, atol=1e-9)

    times = []
    res = simulate(cfg, initial_density(cfg), trackers=[lambda snap: times.append(
        (snap.t, snap.diagnostics.dirac_position.copy(), snap.diagnostics.dirac_mass.copy()))])
    exact = solve_ivp(lambda t, y: two_atom_rate(y, beta, s), (0.0, 4.0), [1.2], rtol=1e-13, atol=1e-14,
                      method="DOP853", dense_output=True)
    for t, x, m in times:
        x = np.sort(x)
        np.testing.assert_array_equal(m, [0.5, 0.5])
        assert abs((x[1] - x[0]) - exact.sol(t)[0]) < 1e-10, t
        assert abs(0.5 * (x[0] + x[1]) - 1.6) < 1e-12
    assert res.final.t == pytest.approx(4.0) and res.final.diagnostics.mass == 1.0
    assert abs(exact.sol(4.0)[0] - 1.2) > 0.05  # the atoms did move


def test_two_atom_diagnostics_closed_form():
    """The Dirac diagnostics of two atoms (softmax, pure attention): dissipation ``int |f'|^2 /
    (beta^2 f) dmu = 2 m (m c sin D e^{beta cos D}) x_1'`` and the largest speed ``|x_1'|``;
    ``dE/dt = s`` times the dissipation (the energy of the run's snapshots, central differences
    with step 0.05: measured 8.3e-4 relative)."""
    beta, m, D = 5.0, 0.5, 1.2
    cfg = load_config(_two_atoms(beta, "exp_shifted", "ascent"),
                      output__snapshot_interval=0.05)
    disc = LagrangianCircleDiscretization(cfg)
    state = disc.prepare_state(initial_density(cfg), None, fresh=True)
    d = disc.diagnostics(state, cfg.atoms)
    c = np.exp(-beta)
    speed = -0.5 * two_atom_rate(D, beta, 1.0)
    assert d.dissipation == pytest.approx(2 * m * (m * c * np.sin(D) * np.exp(beta * np.cos(D))) * speed, rel=1e-13)
    assert d.max_support_velocity == pytest.approx(speed, rel=1e-13)
    energy = []
    simulate(cfg, initial_density(cfg), trackers=[lambda snap: energy.append(
        (snap.t, snap.diagnostics.energy, snap.diagnostics.dissipation))])
    t, e, diss = (np.array(a) for a in zip(*energy))
    rate = (e[2:] - e[:-2]) / (t[2:] - t[:-2])
    np.testing.assert_allclose(rate, diss[1:-1], rtol=2e-3)  # central differences, step 0.05


def test_config_softmax_with_dirac_needs_a_measure_scheme():
    """softmax + dirac: the Lagrangian scheme runs it; the fv Dirac state refuses it and says how."""
    base = '[model]\nattention = "softmax"\n[atoms]\nrepresentation = "dirac"\n[time]\nscheme = "{}"\n'
    assert load_config(base.format("lagrangian")).model.attention == "softmax"
    with pytest.raises(ConfigError, match=r"time\.scheme.*lagrangian"):
        load_config(base.format("fv"))
    with pytest.raises(ConfigError, match=r"time\.scheme.*lagrangian"):
        load_config('[model]\nattention = "softmax"\n[atoms]\nrepresentation = "dirac"\n')
