"""Polish at a ReLU corner: U is only C^1 there, so its Hessian has two one-sided values and the
stability verdict must hold on both sides (never a silent one-sided verdict)."""

import numpy as np
import pytest

from solvers.core.point_atoms import AtomSystem, newton, tangent_bases
from solvers.model.params import ModelParams, PerceptronParams
from solvers.studies.polish import _report, format_report


def _system(omega: float, direction: str) -> AtomSystem:
    # one unit a = (1, 0), b = 0: its corner is x = (0, 1) (theta = pi/2), where sigma(0) = 0
    percep = PerceptronParams("relu", np.array([[1.0, 0.0]]), np.array([omega]), np.array([0.0]))
    model = ModelParams(beta=1.0, direction=direction, kernel="exp", perceptron=percep)
    return AtomSystem(model, np.array([0.5]))


def _potential(system: AtomSystem, x_atom: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """U(y) = (m / beta) e^{beta y.x} + v(y) / 2 of one atom (its own mass included), on S^1."""
    y = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    p = system.model.perceptron
    v = p.omega[0] * np.maximum(y @ p.a[0] + p.b[0], 0.0) ** 2
    return system.m[0] * np.exp(system.model.beta * (y @ x_atom)) / system.model.beta + 0.5 * v


@pytest.mark.parametrize("omega,direction", [(4.0, "ascent"), (-4.0, "ascent"), (4.0, "descent")])
def test_one_sided_hessians_at_a_corner(omega, direction):
    system = _system(omega, direction)
    x0 = np.array([[0.0, 1.0]])
    result = newton(system, x0)
    assert result.converged and np.allclose(result.x, x0, atol=1e-12)
    assert system.on_corners(result.x).tolist() == [True]
    r = _report(system, x0, result, True, 0.0, direction)
    left, right = (h[0, 0] for h in r.hess_u_sides)
    # independent: one-sided second differences of U along the circle at theta = pi/2
    eps, t = 1e-4, np.pi / 2
    u = lambda d: _potential(system, x0[0], np.array([t + d]))[0]  # noqa: E731
    fd_right = (u(2 * eps) - 2 * u(eps) + u(0.0)) / eps ** 2
    fd_left = (u(-2 * eps) - 2 * u(-eps) + u(0.0)) / eps ** 2
    # theta increases towards -x: the unit is active (a.y > 0) on the side theta < pi/2
    assert {round(left, 3), round(right, 3)} == {round(fd_left, 3), round(fd_right, 3)}
    sign = 1.0 if direction == "ascent" else -1.0
    both = bool(-sign * fd_left >= 0 and -sign * fd_right >= 0)
    assert r.stable == both
    text = format_report(r)
    assert "ReLU corner" in text and ("disagree" in r.stability) == (np.sign(fd_left) != np.sign(fd_right))


def test_no_corner_no_sides():
    system = _system(4.0, "descent")
    x0 = np.array([[1.0, 0.0]])  # s = 1: away from the corner
    assert system.on_corners(x0).tolist() == [False]
    bases = tangent_bases(x0)
    assert system.hess_u_full(x0, bases).shape == (1, 1, 1)
