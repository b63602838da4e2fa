"""Compiled point sums of :mod:`solvers.sphere.point_spectra` (numpy reference: its scipy path).

The normalised associated Legendre functions ``Ybar_lm(theta)`` (orthonormal on S^2, with the
Condon-Shortley phase, as ``scipy.special.sph_legendre_p``) by the standard three-term recurrence
in ``l`` from ``Ybar_mm = (-1)^m sqrt((2m+1)!! / (4 pi (2m)!!)) sin^m theta``, and their
``d/dtheta = (l cos theta Ybar_lm - sqrt((2l+1)/(2l-1) (l^2-m^2)) Ybar_{l-1,m}) / sin theta``
(away from the poles). Coefficients are stored m-major with ``l = m..L`` (shtns order cut at L).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _legendre_row(theta: float, L: int, p: np.ndarray, dp: np.ndarray, with_dp: bool) -> None:
    """``Ybar_lm(theta)`` into ``p`` (and ``d/dtheta`` into ``dp``) for m = 0..L, l = m..L."""
    ct, st = math.cos(theta), math.sin(theta)
    pmm = math.sqrt(0.25 / math.pi)
    k = 0
    for m in range(L + 1):
        if m > 0:
            pmm *= -math.sqrt((2.0 * m + 1.0) / (2.0 * m)) * st
        prev2, prev = 0.0, pmm
        p[k] = pmm
        if with_dp:
            dp[k] = m * ct * pmm / st
        k += 1
        for l in range(m + 1, L + 1):
            a = math.sqrt((4.0 * l * l - 1.0) / (l * l - m * m))
            b = math.sqrt(((l - 1.0) ** 2 - m * m) / (4.0 * (l - 1.0) ** 2 - 1.0))
            cur = a * (ct * prev - b * prev2)
            p[k] = cur
            if with_dp:
                dp[k] = (l * ct * cur - math.sqrt((2.0 * l + 1.0) / (2.0 * l - 1.0) * (l * l - m * m)) * prev) / st
            k += 1
            prev2, prev = prev, cur


@njit(cache=True)
def point_coefficients(theta: np.ndarray, phi: np.ndarray, mass: np.ndarray, L: int,
                       lam: np.ndarray) -> np.ndarray:
    """``lam_k sum_i mass_i Ybar_k(theta_i) e^{-i m_k phi_i}``, shape (k,) complex."""
    k = lam.size
    out = np.zeros(k, dtype=np.complex128)
    p, dp = np.empty(k), np.empty(0)
    for i in range(theta.size):
        _legendre_row(theta[i], L, p, dp, False)
        j = 0
        for m in range(L + 1):
            ph = mass[i] * complex(math.cos(m * phi[i]), -math.sin(m * phi[i]))
            for _ in range(m, L + 1):
                out[j] += p[j] * ph
                j += 1
    for j in range(k):
        out[j] *= lam[j]
    return out


@njit(cache=True)
def point_gradient(coeffs: np.ndarray, theta: np.ndarray, phi: np.ndarray, L: int) -> np.ndarray:
    """``(d_theta f, d_phi f / sin theta)`` of ``f = Re sum_k w_m c_k Ybar_k e^{i m phi}`` at
    each point (``w_0 = 1``, ``w_m = 2``), shape (n, 2); points off the poles only."""
    k = coeffs.size
    out = np.zeros((theta.size, 2))
    p, dp = np.empty(k), np.empty(k)
    for i in range(theta.size):
        _legendre_row(theta[i], L, p, dp, True)
        j, gt, gp = 0, 0.0, 0.0
        for m in range(L + 1):
            w = 1.0 if m == 0 else 2.0
            c, s = math.cos(m * phi[i]), math.sin(m * phi[i])
            for _ in range(m, L + 1):
                re = coeffs[j].real * c - coeffs[j].imag * s  # Re(c_k e^{i m phi})
                im = coeffs[j].real * s + coeffs[j].imag * c  # Im(c_k e^{i m phi})
                gt += w * dp[j] * re
                gp -= w * m * p[j] * im  # Re(i m c_k e^{i m phi}) = -m Im(...)
                j += 1
        out[i, 0] = gt
        out[i, 1] = gp / math.sin(theta[i])
    return out
