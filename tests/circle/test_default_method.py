"""The default method (a config that names no scheme): spectral while smooth, then Lagrangian cells.

Checked against exact results (docs/math.md §3.2 growth rates, §3.3 two atoms) and against the
paper's particle code (the S^1 ascent setup, where the finite-volume grid traps an atom).
"""

import numpy as np
import pytest
from scipy import special
from scipy.integrate import solve_ivp

from solvers.circle.handover import CELLS, SPECTRAL, SpectralToCells
from solvers.io.state import initial_density, initial_state
from solvers.model.config import load_config
from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.timestepping.simulation import Solver
from solvers.timestepping.registry import make_discretization
from solvers.timestepping.loop import simulate

PAPER_RELU = """
[perceptron]
activation = "relu"
a = [[-0.9967456002240224, 0.0806114658969388], [-0.6198538201675943, -0.784717300448792]]
omega = [0.6324575844117477, -0.4696753890279187]
"""


def test_a_config_naming_no_scheme_runs_the_default_method():
    cfg = load_config("[model]\nbeta = 2.0\n")
    assert cfg.time.scheme == "auto" and cfg.atoms.representation == "dirac"
    assert isinstance(make_discretization(cfg), SpectralToCells)
    assert plan_method(cfg).automatic
    assert RunConfig().time.scheme == "auto" and plan_method(RunConfig()).representation == "dirac"


@pytest.mark.parametrize("named", ['[atoms]\nrepresentation = "grid"', '[atoms]\nrepresentation = "dirac"',
                                   '[time]\nlimiter = "minmod"', '[time]\ncfl_floor = 0.01'])
def test_naming_a_grid_knob_keeps_the_finite_volume_grid(named):
    cfg = load_config(named + "\n")
    assert cfg.time.scheme == "fv"
    assert not plan_method(cfg).automatic


def test_s2_default_choices():
    asc = load_config('[domain]\nmanifold = "S2"\nresolution = 31\n[model]\ndirection = "ascent"\n')
    desc = load_config('[domain]\nmanifold = "S2"\nresolution = 31\n[model]\ndirection = "descent"\n')
    assert plan_method(asc).scheme == "lagrangian"
    assert plan_method(desc).scheme == "fv"


def _rate(j: int, n: int = 256, beta: float = 5.0) -> tuple[float, float]:
    """Measured and exact (docs/math.md §3.2, ascent, M = 1) growth rate of mode j, default method."""
    exact = j * j * special.iv(j, beta) / beta
    t_end = min(1.0, 4.0 / exact)
    cfg = load_config(f'[domain]\nresolution = {n}\n[model]\nbeta = {beta}\ndirection = "ascent"\n'
                      f'[time]\nt_end = {t_end}\n[output]\nsnapshot_interval = {t_end}\n')
    h = 2 * np.pi / n
    theta = h * np.arange(n)
    # cell averages of (1 + eps cos j theta) / (2 pi), eps = 1e-6
    rho0 = (1 + 1e-6 * np.cos(j * theta) * np.sinc(j * h / (2 * np.pi))) / (2 * np.pi)
    solver = Solver(cfg, rho0)
    assert solver.rho[-1] == SPECTRAL
    a0 = abs(np.fft.rfft(solver.disc.density(solver.rho))[j])
    while solver.t < t_end:
        solver.step(t_end)
    assert solver.rho[-1] == SPECTRAL  # smooth throughout: no hand-over
    return np.log(abs(np.fft.rfft(solver.disc.density(solver.rho))[j]) / a0) / t_end, exact


@pytest.mark.parametrize("j", [1, 3, 6])
def test_default_method_gives_the_linear_growth_rates(j):
    measured, exact = _rate(j)
    # measured 3.6e-7, 1.3e-6, 4.1e-7 (relative 7e-8): the error-controlled spectral phase
    assert abs(measured - exact) < 1e-5


@pytest.mark.parametrize("direction,t_end", [("ascent", 0.3), ("descent", 3.0)])
def test_two_atoms_follow_their_ode_at_default_settings(direction, t_end):
    """docs/math.md §3.3: ``D' = -2 s m exp(beta cos D) sin D`` with no time knob set."""
    s = 1.0 if direction == "ascent" else -1.0
    cfg = load_config(f'[domain]\nresolution = 128\n[model]\nbeta = 2.0\ndirection = "{direction}"\n'
                      f'[initial]\nkind = "atoms"\ncenters = [0.0, 1.0]\nweights = [0.5, 0.5]\n'
                      f'[time]\nt_end = {t_end}\n[output]\nsnapshot_interval = {t_end}\n')
    res = simulate(cfg, initial_density(cfg))
    x = np.sort(res.final.diagnostics.dirac_position)
    gap = x[1] - x[0]
    gap = min(gap, 2 * np.pi - gap)
    exact = solve_ivp(lambda t, y: [-2 * s * 0.5 * np.exp(2.0 * np.cos(y[0])) * np.sin(y[0])],
                      (0, t_end), [1.0], rtol=1e-13, atol=1e-14, method="DOP853").y[0, -1]
    assert abs(gap - exact) < 1e-6  # measured 4.3e-8 (ascent), 1.0e-7 (descent)
    assert res.final.diagnostics.mass == pytest.approx(1.0, abs=1e-14)


def test_hand_over_keeps_mass_and_positivity():
    """A ReLU run leaves the spectral phase at once (its velocity has corners); the cells start
    from the exact cell averages of the spectral state: same mass, rho >= 0."""
    cfg = load_config(f'[domain]\nresolution = 128\n[model]\nbeta = 5.0\ndirection = "descent"\n'
                      f'kernel = "exp_shifted"\n{PAPER_RELU}[time]\nt_end = 2.0\n'
                      f'[output]\nsnapshot_interval = 1.0\n')
    rho0, atoms0 = initial_state(cfg)
    solver = Solver(cfg, rho0, atoms0=atoms0)
    masses = [solver.disc.total_mass(solver.rho)]
    while solver.t < 2.0:
        solver.step(2.0)
        masses.append(solver.disc.total_mass(solver.rho))
        assert np.all(solver.disc.density(solver.rho) >= 0.0)
    assert solver.rho[-1] == CELLS
    history = solver.disc.history
    assert [h[1] for h in history] == ["spectral", "lagrangian"] and 0 < history[1][0] < 2.0
    assert np.max(np.abs(np.array(masses) - masses[0])) < 1e-14


@pytest.mark.parametrize("n", [256, 512])
def test_paper_ascent_beta10_has_the_particle_codes_two_atoms(n):
    """runs/paper_s1_ascent_relu.toml at beta = 10 with default method and time settings: the
    particle code (500 particles, seed 42) ends with 2 clusters (.552, .448); the fv grid at
    N = 512 trapped a third atom (.459, .336, .205). Measured: .5412/.4588 at both N."""
    cfg = load_config(f'[domain]\nresolution = {n}\n[model]\nbeta = 10.0\ndirection = "ascent"\n'
                      f'kernel = "exp_shifted"\n{PAPER_RELU}[time]\nt_end = 2000.0\n'
                      f'stop_when_stationary = true\nstationary_tol = 1e-5\n'
                      f'[output]\nsnapshot_interval = 10.0\n')
    rho0, atoms0 = initial_state(cfg)
    res = simulate(cfg, rho0, atoms0=atoms0)
    masses = np.sort(res.final.diagnostics.atom_mass)[::-1]
    assert res.reason == "stationary" and masses.size == 2
    assert np.max(np.abs(masses - [0.552, 0.448])) < 0.04
    assert np.max(np.abs(masses - [0.5412, 0.4588])) < 1e-3  # N = 256 and 512 agree
