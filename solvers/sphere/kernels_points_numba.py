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
def point_gradient(coeffs: np.ndarray, x: np.ndarray, L: int, pole_sin: float,
                   out: np.ndarray) -> None:
    """The tangent gradient of ``f = Re sum_k w_m c_k Ybar_k e^{i m phi}`` (``w_0 = 1``,
    ``w_m = 2``) at the unit vectors ``x`` (n, 3) into ``out`` (n, 3):
    ``d_theta f e_theta + (d_phi f / sin theta) e_phi``; rows with ``sin theta < pole_sin`` are
    left 0 (the caller evaluates them otherwise)."""
    k = coeffs.size
    p, dp = np.empty(k), np.empty(k)
    for i in range(x.shape[0]):
        s = math.hypot(x[i, 0], x[i, 1])
        if s < pole_sin:
            out[i, 0] = out[i, 1] = out[i, 2] = 0.0
            continue
        theta, phi = math.atan2(s, x[i, 2]), math.atan2(x[i, 1], x[i, 0])
        _legendre_row(theta, L, p, dp, True)
        j, gt, gp = 0, 0.0, 0.0
        for m in range(L + 1):
            w = 1.0 if m == 0 else 2.0
            c, sn = math.cos(m * phi), math.sin(m * phi)
            for _ in range(m, L + 1):
                re = coeffs[j].real * c - coeffs[j].imag * sn  # Re(c_k e^{i m phi})
                im = coeffs[j].real * sn + coeffs[j].imag * c  # Im(c_k e^{i m phi})
                gt += w * dp[j] * re
                gp -= w * m * p[j] * im  # Re(i m c_k e^{i m phi}) = -m Im(...)
                j += 1
        gp /= math.sin(theta)
        ct, cp, sp = math.cos(theta), math.cos(phi), math.sin(phi)
        out[i, 0] = gt * ct * cp - gp * sp
        out[i, 1] = gt * ct * sp + gp * cp
        out[i, 2] = -gt * math.sin(theta)
