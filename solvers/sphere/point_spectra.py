"""Point masses and point values through the kernel's truncated expansion on S^2.

The attention field of a measure is ``f = K * mu`` with ``f_lm = lambda_l mu_lm`` (Funk-Hecke,
docs/math.md §2). :class:`SphereProblem` keeps the degrees ``l <= L``, ``L`` the first degree
with ``lambda_L < 1e-17 lambda_0`` (when the basis reaches it). For point masses ``m_i`` at
``x_i = (theta_i, phi_i)`` the coefficients are

    f_lm = lambda_l sum_i m_i Ybar_lm(theta_i) e^{-i m phi_i}

(the grid analysis of :meth:`SphereProblem.kernel_coefficients` with the cells replaced by the
points), and a band-limited field ``f = Re sum_{l <= L, m >= 0} w_m f_lm Ybar_lm(theta) e^{i m phi}``
(``w_0 = 1``, ``w_m = 2``: the real field's conjugate orders) has the tangent gradient

    grad f = d_theta f e_theta + (1 / sin theta) d_phi f e_phi.

Both are sums of ``O(L^2)`` terms per point. Where ``L`` is the kernel's bandwidth they equal the
closed forms (``sum_i m_i K(x, x_i)`` and the point-mass sums over cells) to round-off: the
omitted eigenvalues are below ``1e-17 lambda_0``. :attr:`PointSpectra.exact` says whether that
holds (``L < lmax``); callers keep the closed forms otherwise. The ``numba`` backend runs the
sums compiled (:mod:`solvers.sphere.kernels_points_numba`); ``numpy`` is the reference (scipy's
Legendre functions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

POLE_SIN = 1e-6  # below this sin(theta) the spherical components are not used (see gradient)


def spherical_angles(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta, phi, sin theta)`` of unit vectors ``x`` (n, 3)."""
    rho = np.hypot(x[:, 0], x[:, 1])
    return np.arctan2(rho, x[:, 2]), np.arctan2(x[:, 1], x[:, 0]), rho


@dataclass(frozen=True)
class PointSpectra:
    """The truncated expansion's point operations for one basis and kernel.

    Parameters
    ----------
    sel : ndarray, shape (k,)
        The stored coefficients with ``l <= L`` (shtns order, orders contiguous).
    degrees, orders : ndarray, shape (k,)
        ``l`` and ``m`` of those coefficients.
    lam : ndarray, shape (k,)
        The kernel's eigenvalue of each (``c_K lambda_l``, shifted kernels included).
    L : int
        The highest degree kept.
    exact : bool
        Whether the kernel's eigenvalues past ``L`` are below ``1e-17 lambda_0``.
    backend : {"numba", "numpy"}
    """

    sel: np.ndarray
    degrees: np.ndarray
    orders: np.ndarray
    lam: np.ndarray
    L: int
    exact: bool
    backend: str = "numpy"

    def _legendre(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Ybar_lm(theta_i)`` and its ``d/dtheta``, each (n, k)."""
        both = special.sph_legendre_p_all(self.L, self.L, theta, diff_n=1)
        return both[0][self.degrees, self.orders].T, both[1][self.degrees, self.orders].T

    def coefficients(self, x: np.ndarray, mass: np.ndarray) -> np.ndarray:
        """``f_lm`` (k,) complex of the point masses ``mass`` (n,) at unit vectors ``x`` (n, 3)."""
        theta, phi, _ = spherical_angles(x)
        if self.backend == "numba":
            from solvers.sphere.kernels_points_numba import point_coefficients

            return point_coefficients(theta, phi, np.asarray(mass, dtype=float), self.L, self.lam)
        p, _ = self._legendre(theta)
        phase = np.exp(-1j * np.outer(phi, self.orders))
        return self.lam * ((mass[:, None] * p * phase).sum(axis=0))

    def gradient(self, coeffs: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tangent gradient (n, 3) at unit vectors ``x`` (n, 3) of the field with coefficients
        ``coeffs`` (k,), and a mask (n,) of the points where it holds: ``sin theta >= 1e-6``
        (nearer a pole the ``1/sin theta`` of the longitude derivative loses digits; those rows
        are 0 and the caller evaluates them otherwise)."""
        if self.backend == "numba":
            from solvers.sphere.kernels_points_numba import point_gradient

            x = np.ascontiguousarray(x, dtype=float)
            grad = np.empty_like(x)
            point_gradient(np.ascontiguousarray(coeffs, dtype=complex), x, self.L, POLE_SIN, grad)
            return grad, np.hypot(x[:, 0], x[:, 1]) >= POLE_SIN
        theta, phi, s = spherical_angles(x)
        ok = s >= POLE_SIN
        p, dp = self._legendre(theta)
        w = np.where(self.orders == 0, 1.0, 2.0) * coeffs
        rot = np.exp(1j * np.outer(phi, self.orders)) * w  # (n, k)
        d_theta = np.real((dp * rot).sum(axis=1))
        d_phi = np.real((p * rot * (1j * self.orders)).sum(axis=1)) / np.where(ok, s, 1.0)
        ct, cp, sp = np.cos(theta), np.cos(phi), np.sin(phi)
        e_theta = np.stack([ct * cp, ct * sp, -s], axis=1)
        e_phi = np.stack([-sp, cp, np.zeros_like(sp)], axis=1)
        grad = d_theta[:, None] * e_theta + d_phi[:, None] * e_phi
        grad[~ok] = 0.0
        return grad, ok
