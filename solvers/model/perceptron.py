"""The perceptron potential and its sphere gradient on ``S^{d-1}`` for any d (docs/math.md §1).

``v(x) = sum_j omega_j phi(a_j.x + b_j)`` and ``grad v / 2 = sum_j omega_j sigma(a_j.x + b_j) P_x a_j``
with ``P_x = I - x x^T`` (paper eq. 2.7 and the proof of Thm 3.3, Part II).
"""

from __future__ import annotations

import numpy as np

from solvers.model.activations import get_activation
from solvers.model.params import PerceptronParams


def potential(p: PerceptronParams, x: np.ndarray) -> np.ndarray:
    """Perceptron potential ``v(x)``.

    Parameters
    ----------
    p : PerceptronParams
    x : ndarray, shape (m, d)
        Points on the sphere.

    Returns
    -------
    ndarray, shape (m,)
    """
    if p.n_units == 0:
        return np.zeros(x.shape[0])
    act = get_activation(p.activation)
    s = x @ p.a.T + p.b  # (m, n_units)
    return act.phi(s) @ p.omega


def half_gradient(p: PerceptronParams, x: np.ndarray) -> np.ndarray:
    """Sphere gradient of ``v/2``: ``sum_j omega_j sigma(a_j.x + b_j) P_x a_j``.

    Parameters
    ----------
    p : PerceptronParams
    x : ndarray, shape (m, d)

    Returns
    -------
    ndarray, shape (m, d)
        Tangent vectors.
    """
    if p.n_units == 0:
        return np.zeros_like(x)
    act = get_activation(p.activation)
    s = x @ p.a.T + p.b
    euclid = (act.sigma(s) * p.omega) @ p.a  # (m, d): sum_j omega_j sigma_j a_j
    return euclid - np.sum(euclid * x, axis=1, keepdims=True) * x


def lipschitz(p: PerceptronParams) -> float:
    """``sum_j |omega_j| (Lip(sigma) |a_j|^2 + max|sigma(a_j.x + b_j)| |a_j|)`` (docs/math.md §5's C)."""
    if p.n_units == 0:
        return 0.0
    act = get_activation(p.activation)
    norms = np.linalg.norm(p.a, axis=1)
    s = np.linspace(-1.0, 1.0, 201)[None, :] * norms[:, None] + p.b[:, None]
    sig_max = np.max(np.abs(act.sigma(s)), axis=1)
    return float(np.sum(np.abs(p.omega) * (act.lipschitz * norms**2 + sig_max * norms)))


def draw_units(seed: int, units: int, d: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """``(a (units, d), omega (units,))`` drawn from ``seed`` as the paper's particle code draws a
    gradient perceptron: ``a_j`` a standard normal vector normalised to unit length (uniform on
    ``S^{d-1}``), then ``omega_j`` normal with standard deviation ``scale``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(units, d))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    return a, rng.normal(scale=scale, size=units)


def circle_points(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points ``x = (cos t, sin t)`` and tangents ``tau = (-sin t, cos t)``, each (m, 2)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.stack([c, s], axis=1), np.stack([-s, c], axis=1)


def circle_velocity(p: PerceptronParams, theta: np.ndarray) -> np.ndarray:
    """Perceptron velocity on S^1: ``sum_j omega_j sigma(a_j.x + b_j) (a_j.tau)`` (docs/math.md §1).

    Parameters
    ----------
    theta : ndarray, shape (m,)

    Returns
    -------
    ndarray, shape (m,)
    """
    x, tau = circle_points(theta)
    return np.sum(half_gradient(p, x) * tau, axis=1)


def circle_potential(p: PerceptronParams, theta: np.ndarray) -> np.ndarray:
    """``v(theta)`` on S^1, shape (m,)."""
    x, _ = circle_points(theta)
    return potential(p, x)


def circle_lipschitz(p: PerceptronParams, n: int = 8192) -> float:
    """Numerical bound of ``max |d/dtheta (perceptron velocity)|`` on S^1 (for the step bound)."""
    if p.n_units == 0:
        return 0.0
    theta = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    w = circle_velocity(p, theta)
    return float(np.max(np.abs(np.diff(np.append(w, w[0])))) * n / (2.0 * np.pi))
