"""Pseudo-arclength continuation of a zero set ``F(u, q) = 0``, ``u`` in R^n, ``q`` scalar (docs/noise.md §3).

Generic over the equation: :class:`Equation` gives ``F``, ``dF/du`` (analytic) and ``dF/dq``
(central differences). A step predicts along the unit tangent ``t`` of ``z = (u, q)`` and corrects
with Newton on the bordered system ``F(z) = 0``, ``t . (z - z_prev) = ds`` (Keller's
pseudo-arclength). Along a branch two test functions are watched:

- ``fold``: the ``q`` component of the tangent changes sign;
- ``branch point``: ``det [[F_u, F_q], [t^T]]`` changes sign (it does not vanish at folds).

A sign change is located by Brent's method on the arclength of the step, each trial point
corrected onto the branch, to ``xtol`` in arclength (1e-14 relative: the parameter to about
1e-13). At a simple branch point the null space of ``[F_u, F_q]`` is two-dimensional; the new
branch leaves along the null vector orthogonal to the old tangent (:func:`switch_direction`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Steps:
    """Step control: arclength bounds, Newton tolerance and iterations, largest turn per step."""

    ds: float = 0.02
    ds_min: float = 1e-7
    ds_max: float = 0.1
    tol: float = 1e-12
    max_newton: int = 12
    max_angle: float = 0.35  # radians between successive tangents
    fd_step: float = 1e-6


@dataclass(frozen=True, eq=False)
class Equation:
    """``F(u, q)`` (n,), ``F_u(u, q)`` (n, n) and ``F_q(u, q)`` (n,) when given, else by central
    differences of relative step ``fd_step``."""

    residual: Callable[[np.ndarray, float], np.ndarray]
    jacobian: Callable[[np.ndarray, float], np.ndarray]
    fd_step: float = 1e-6
    derivative: Callable[[np.ndarray, float], np.ndarray] | None = None

    def f(self, z: np.ndarray) -> np.ndarray:
        return self.residual(z[:-1], float(z[-1]))

    def fq(self, z: np.ndarray) -> np.ndarray:
        if self.derivative is not None:
            return self.derivative(z[:-1], float(z[-1]))
        h = self.fd_step * max(1.0, abs(float(z[-1])))
        u, q = z[:-1], float(z[-1])
        return (self.residual(u, q + h) - self.residual(u, q - h)) / (2.0 * h)

    def full_jacobian(self, z: np.ndarray) -> np.ndarray:
        """``[F_u, F_q]``, shape (n, n + 1)."""
        return np.hstack([self.jacobian(z[:-1], float(z[-1])), self.fq(z)[:, None]])


def bordered(eq: Equation, z: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``[[F_u, F_q], [t^T]]``, shape (n + 1, n + 1)."""
    return np.vstack([eq.full_jacobian(z), t[None, :]])


def tangent(eq: Equation, z: np.ndarray, t_prev: np.ndarray) -> np.ndarray:
    """Unit tangent at ``z``, oriented along ``t_prev`` (``t . t_prev > 0``)."""
    rhs = np.zeros(z.size)
    rhs[-1] = 1.0
    t = np.linalg.solve(bordered(eq, z, t_prev), rhs)
    t /= np.linalg.norm(t)
    return t if t @ t_prev >= 0 else -t


def correct(eq: Equation, z_pred: np.ndarray, z_ref: np.ndarray, t_ref: np.ndarray, ds: float,
            steps: Steps) -> tuple[np.ndarray | None, int]:
    """Newton on ``F(z) = 0``, ``t_ref . (z - z_ref) = ds`` from ``z_pred``.

    Returns the corrected point (None if Newton fails) and the iterations it took."""
    z = z_pred.copy()
    for it in range(1, steps.max_newton + 1):
        f = eq.f(z)
        g = np.append(f, t_ref @ (z - z_ref) - ds)
        if not np.all(np.isfinite(g)):
            return None, it
        if np.max(np.abs(g)) <= steps.tol:
            return z, it
        try:
            dz = np.linalg.solve(bordered(eq, z, t_ref), -g)
        except np.linalg.LinAlgError:
            return None, it
        z = z + dz
        if np.max(np.abs(dz)) <= steps.tol * 1e-2 * max(1.0, np.max(np.abs(z))):
            return z, it
    f = eq.f(z)
    ok = np.max(np.abs(np.append(f, t_ref @ (z - z_ref) - ds))) <= 100 * steps.tol
    return (z if ok else None), steps.max_newton


def bp_test(eq: Equation, z: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """``(sign, log|det|)`` of the bordered matrix: changes sign at branch points only."""
    sign, logdet = np.linalg.slogdet(bordered(eq, z, t))
    return float(sign), float(logdet)


@dataclass(frozen=True)
class Located:
    """A located special point: its ``z``, kind (``"branch_point"`` or ``"fold"``) and the
    tangent (at a branch point: the old branch's, from the step's start)."""

    kind: str
    z: np.ndarray
    t: np.ndarray


def locate(eq: Equation, kind: str, z0: np.ndarray, t0: np.ndarray, ds: float,
           steps: Steps) -> Located | None:
    """The zero of the test function ``kind`` on the step ``(z0, t0, ds)`` (Brent on the arclength).

    Returns None when a trial point cannot be corrected (the step is then kept as it is)."""
    ref = bp_test(eq, z0, t0)[1] if kind == "branch_point" else 0.0
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def point(sigma: float) -> tuple[np.ndarray, np.ndarray]:
        if sigma not in cache:
            z, _ = correct(eq, z0 + sigma * t0, z0, t0, sigma, steps)
            if z is None:
                raise RuntimeError("corrector failed while locating")
            cache[sigma] = (z, tangent(eq, z, t0))
        return cache[sigma]

    def test(sigma: float) -> float:
        if sigma == 0.0:
            z, t = z0, t0
        else:
            z, t = point(sigma)
        if kind == "fold":
            return float(t[-1])
        sign, logdet = bp_test(eq, z, t)
        return sign * np.exp(np.clip(logdet - ref, -700.0, 700.0))

    try:
        sigma = brentq(test, 0.0, ds, xtol=1e-15 * max(abs(ds), 1e-300), rtol=1e-15, maxiter=200)
        z, t = point(sigma) if sigma else (z0, t0)
    except (RuntimeError, ValueError) as err:
        log.warning("could not locate the %s on this step: %s", kind.replace("_", " "), err)
        return None
    # the tangent at the step's start: at a branch point the tangent solve is singular
    return Located(kind, z, t if kind == "fold" else t0)


def switch_direction(eq: Equation, z: np.ndarray, t: np.ndarray) -> np.ndarray:
    """At a simple branch point: the unit null vector of ``[F_u, F_q]`` orthogonal to ``t``."""
    _, _, vt = np.linalg.svd(eq.full_jacobian(z))
    null = vt[-2:]  # the two right singular vectors of the smallest singular values
    c = null @ t
    w = null.T @ np.array([-c[1], c[0]])
    return w / np.linalg.norm(w)


def solve_at(eq: Equation, u0: np.ndarray, q: float, steps: Steps) -> np.ndarray | None:
    """Newton on ``F(u, q) = 0`` at fixed ``q`` from ``u0``; None if it fails."""
    u = u0.copy()
    for _ in range(2 * steps.max_newton):
        f = eq.residual(u, q)
        if not np.all(np.isfinite(f)):
            return None
        if np.max(np.abs(f)) <= steps.tol:
            return u
        try:
            u = u - np.linalg.solve(eq.jacobian(u, q), f)
        except np.linalg.LinAlgError:
            return None
    return u if np.max(np.abs(eq.residual(u, q))) <= 100 * steps.tol else None


def step(eq: Equation, z: np.ndarray, t: np.ndarray, ds: float,
         steps: Steps) -> tuple[np.ndarray, np.ndarray, float, float]:
    """One accepted pseudo-arclength step from ``(z, t)``, shortening ``ds`` as needed.

    Returns the new point, its tangent, the step taken and the next step's length.
    Raises RuntimeError when the step falls below ``steps.ds_min``."""
    while abs(ds) >= steps.ds_min:
        z_new, its = correct(eq, z + ds * t, z, t, ds, steps)
        if z_new is not None:
            t_new = tangent(eq, z_new, t)
            if float(np.clip(t_new @ t, -1.0, 1.0)) >= np.cos(steps.max_angle):
                grow = 1.5 if its <= 3 else (1.0 if its <= 6 else 0.7)
                nxt = float(np.clip(abs(ds) * grow, steps.ds_min, steps.ds_max))
                return z_new, t_new, ds, nxt
        ds *= 0.5
    raise RuntimeError("step length below ds_min (a singular point the corrector cannot pass)")
