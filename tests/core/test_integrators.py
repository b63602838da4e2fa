"""Every integrator of the registry on closed-form problems (one table, every scheme):
observed order against the table's order on a nonlinear ODE with an exact solution, the SSP
coefficient of the Shu-Osher forms, and positivity of upwind transport up to ``C`` times the
forward-Euler Courant limit."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.timestepping.integrators import INTEGRATORS, rk_step, ssprk_s2


def riccati(u: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
    """``du/dt = u^2``: ``u(t) = u0 / (1 - u0 t)``."""
    return u * u, 0.0


def error(name: str, steps: int, t_end: float = 0.5) -> float:
    u = np.array([1.0, 0.5])
    dt = t_end / steps
    for _ in range(steps):
        u = rk_step(INTEGRATORS[name], riccati, u, dt, backend="numpy")[0]
    exact = np.array([1.0, 0.5]) / (1.0 - np.array([1.0, 0.5]) * t_end)
    return float(np.max(np.abs(u - exact)))


@pytest.mark.parametrize("name", sorted(INTEGRATORS))
def test_observed_order_is_the_tables(name):
    table = INTEGRATORS[name]
    assert max(table.order_residuals()) < 1e-14
    e1, e2 = error(name, 40), error(name, 80)
    assert np.log2(e1 / e2) == pytest.approx(table.order, abs=0.15)


def test_ssp_coefficients():
    got = {name: t.ssp_coefficient for name, t in INTEGRATORS.items() if t.alpha is not None}
    assert got == {"euler": 1.0, "ssprk2": 1.0, "ssprk3": 1.0, "ssprk10_2": 9.0}
    for s in (2, 4, 7):
        assert ssprk_s2(s).validate().ssp_coefficient == s - 1


def upwind(u: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
    """First-order upwind transport at speed 1 on a periodic grid of spacing 1."""
    return np.roll(u, 1) - u, 1.0


@pytest.mark.parametrize("name", [n for n, t in INTEGRATORS.items() if t.alpha is not None])
def test_ssp_positivity_up_to_c_times_the_euler_limit(name):
    """Forward Euler keeps upwind transport non-negative up to Courant 1: an SSP table up to
    ``C``; a little beyond, the step of a single spike goes negative."""
    table = INTEGRATORS[name]
    spike = np.zeros(32)
    spike[5] = 1.0
    ok = rk_step(table, upwind, spike, table.ssp_coefficient, backend="numpy")[0]
    assert ok.min() >= -1e-15 and ok.sum() == pytest.approx(1.0, abs=1e-14)
    bad = rk_step(table, upwind, spike, 1.2 * table.ssp_coefficient, backend="numpy")[0]
    assert bad.min() < 0.0
