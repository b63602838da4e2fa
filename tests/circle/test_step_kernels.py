"""Whole compiled S^1 steps (:mod:`solvers.circle.grid.kernels_steps_numba`) against the stage
by stage path (one compiled call per stage after numpy's FFTs) and the numpy reference.

The whole step runs the same operations in the same order; its FFTs are rocket-fft's, which
round differently from numpy's in the last bit, so the comparisons are to round-off (1e-13 of
the state's largest value after one step), not bitwise.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("rocket_fft")

from solvers.api import load_config  # noqa: E402
from solvers.circle.grid.fv import fv  # noqa: E402
from solvers.core.measure import DiracAtoms  # noqa: E402
from solvers.io.state import initial_state  # noqa: E402
from solvers.timestepping.integrators import (  # noqa: E402
    INTEGRATORS,
    ButcherTable,
    _shu_osher_step,
    rk_step,
)
from solvers.timestepping.simulation import Solver  # noqa: E402
from solvers.timestepping.registry import make_discretization  # noqa: E402

A = [[-0.9967456002240224, 0.0806114658969388], [-0.6198538201675943, -0.784717300448792]]


def config(n: int, representation: str, beta: float = 20.0, kink: bool = True, extra: str = ""):
    return load_config(
        f'[domain]\nmanifold = "S1"\nresolution = {n}\n[model]\nbeta = {beta}\nkernel = "exp_shifted"\n'
        f'direction = "descent"\n[perceptron]\nactivation = "relu"\na = {A}\nomega = [0.63, -0.47]\n'
        f'[initial]\nkind = "uniform"\n[time]\nkink_faces = {str(kink).lower()}\n{extra}'
        f'[atoms]\nrepresentation = "{representation}"\n')


class StageByStage:
    """The rhs without its whole-step kernel: ``_shu_osher_step`` then calls ``fused_stage``."""

    def __init__(self, rhs):
        self.rhs, self.fused_stage = rhs, rhs.fused_stage

    def __call__(self, *args, **kwargs):
        return self.rhs(*args, **kwargs)


def state_after(cfg, t: float) -> tuple[object, np.ndarray]:
    """The solver's discretisation and its state at ``t`` (Dirac atoms captured by then)."""
    rho0, atoms0 = initial_state(cfg)
    s = Solver(cfg, rho0, atoms0=atoms0)
    while s.t < t:
        s.step(t)
    return s.disc, s.rho


def close(got: np.ndarray, ref: np.ndarray, tol: float = 1e-13) -> bool:
    return bool(np.max(np.abs(got - ref)) <= tol * np.max(np.abs(ref)))


SSP_TABLES = [name for name, table in INTEGRATORS.items() if table.stage_plan is not None]


def test_plans_cover_the_ssp_tables():
    assert {"ssprk2", "ssprk3", "ssprk10_2"} <= set(SSP_TABLES)
    assert INTEGRATORS["rk4"].stage_plan is None  # no Shu-Osher form: the Butcher path
    b, a_diag, a_term, term = INTEGRATORS["ssprk3"].stage_plan
    assert np.allclose(a_term, [0.0, 0.25, 2 / 3]) and list(term) == [0, 1, 2]
    assert np.allclose(b, [1.0, 0.25, 2 / 3]) and np.allclose(a_diag, [1.0, 0.25, 2 / 3])
    # a stage drawing on two earlier stages has no plan (the stage-by-stage path runs it)
    alpha = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]])
    table = ButcherTable("two", 1, np.zeros((3, 3)), np.ones(3) / 3, "test", alpha, np.diag([1.0, 0.5, 0.5]))
    assert table.stage_plan is None


@pytest.mark.parametrize("table", SSP_TABLES)
@pytest.mark.parametrize("kink", [True, False])
def test_grid_step_equals_stage_by_stage(table, kink):
    cfg = config(256, "grid", kink=kink)
    disc, rho = state_after(cfg, 30.0)
    assert (disc.problem.moved_faces.size > 0) == kink  # the corners' faces: evaluated, not transformed
    t = INTEGRATORS[table]
    whole, rate = rk_step(t, disc.rhs, rho, 0.3, backend="numba")
    staged, rate_s = _shu_osher_step(t, StageByStage(disc.rhs), rho, 0.3, "numba")
    numpy_rhs = fv(disc.problem, cfg.time.limiter, cfg.time.cfl_floor, backend="numpy")
    reference, rate_r = rk_step(t, numpy_rhs, rho, 0.3, backend="numpy")
    assert close(whole, staged) and close(whole, reference, 1e-12)
    assert abs(rate - rate_s) <= 1e-13 * rate_s and abs(rate - rate_r) <= 1e-12 * rate_r
    assert abs(whole.sum() - rho.sum()) <= 1e-13 * rho.sum()  # mass to round-off


@pytest.mark.parametrize("table", SSP_TABLES)
@pytest.mark.parametrize("kink", [True, False])
def test_dirac_step_equals_stage_by_stage(table, kink):
    cfg = config(256, "dirac", kink=kink)
    disc, state = state_after(cfg, 30.0)
    assert disc.layout.count(state) >= 1  # atoms captured: their fields are in the step
    t = INTEGRATORS[table]
    whole, rate = rk_step(t, disc.rhs, state, 0.3, backend="numba")
    staged, rate_s = _shu_osher_step(t, StageByStage(disc.rhs), state, 0.3, "numba")
    reference, rate_r = rk_step(t, disc._rhs, state, 0.3, backend="numpy")
    assert close(whole, staged) and close(whole, reference, 1e-12)
    assert abs(rate - rate_s) <= 1e-13 * rate_s and abs(rate - rate_r) <= 1e-12 * rate_r
    g = disc.layout.grid_size
    before, after = disc.total_mass(state), disc.total_mass(whole)
    assert abs(after - before) <= 1e-14 and whole[:g].min() >= -1e-15


def test_dirac_step_without_atoms_and_with_an_outflow_limited_step():
    """No atom (the layout's empty tails) and a step far past the CFL number, where the outflow
    limiter scales fluxes: both paths limit the same faces."""
    cfg = config(128, "dirac", beta=5.0)
    disc = make_discretization(cfg)
    rho = disc.prepare_state(np.abs(1 + np.sin(3 * disc.problem.basis.theta)) / (2 * np.pi),
                             DiracAtoms.empty(1), fresh=True)
    t = INTEGRATORS["ssprk3"]
    for dt in (0.1, 40.0):
        whole, _ = rk_step(t, disc.rhs, rho, dt, backend="numba")
        staged, _ = _shu_osher_step(t, StageByStage(disc.rhs), rho, dt, "numba")
        assert close(whole, staged) and whole.min() >= 0.0


def test_runs_take_the_whole_steps():
    """The solver's S^1 fv rhs (grid and Dirac) carries the whole-step kernel; softmax does not."""
    for rep in ("grid", "dirac"):
        assert callable(getattr(make_discretization(config(64, rep)).rhs, "fused_step", None))
    cfg = load_config('[domain]\nmanifold = "S1"\nresolution = 64\n[model]\nbeta = 2.0\nattention = "softmax"\n')
    assert getattr(make_discretization(cfg).rhs, "fused_step", None) is None


def test_step_bounds_do_not_see_the_last_bits_of_the_mass():
    """A resume recomputes the mass from the archived state, a few ulps off the run's: the
    rate bound and the Dirac floor are the same (a resumed run at the rate bound takes the
    uninterrupted run's steps; tests/io/test_kill_resume.py runs it end to end)."""
    from solvers.core.discretization import bound_mass

    assert bound_mass(0.9999999999999998) == bound_mass(1.0000000000000002) == 1.0
    assert abs(bound_mass(0.123456789012345) - 0.123456789012345) <= 5e-10 * 0.123456789012345
    cfg = config(128, "dirac", beta=5.0)
    rho0, atoms0 = initial_state(cfg)
    solvers = [Solver(cfg, rho0 * f, atoms0=atoms0) for f in (1.0, 1.0 - 2.0 ** -52, 1.0 + 2.0 ** -51)]
    assert len({s.rate_dt for s in solvers}) == 1
    assert len({float(s.disc.compiled.consts[4]) for s in solvers}) == 1
