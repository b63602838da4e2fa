"""Compiled sums of the Dirac-atom fields on S^2, ring by ring (the numpy references, direct sums
over points, are in :mod:`solvers.sphere.measure.dirac`; tests/sphere/test_dirac_rings.py compares the two).

Both are sums of ``c_K w e^{beta p.y}`` over point masses ``(y, w)`` (docs/math.md §1):

- :func:`ring_along_spectrum`: on the rings of faces or cell centres, the component
  ``sum_i c_K m_i e^{beta p.x_i} (e_p . x_i)`` of the atoms' attention velocity (``e_p``:
  ``e_theta`` or ``e_phi``), or their potential ``sum_i c_K m_i e^{beta p.x_i}``;
- :func:`ring_point_sums`: at a few points (the atoms), ``sum_c c_K w_c e^{beta x.y_c}`` and
  ``sum_c c_K w_c e^{beta x.y_c} y_c`` over the cells.

The grid's faces and cells lie on latitude rings with uniform longitudes ``phi_k = phi_0 + k dphi``.
On a ring at colatitude ``theta`` and a point ``x_i`` at ``(theta_i, phi_i)``,
``p.x_i = cos(theta) cos(theta_i) + sin(theta) sin(theta_i) cos(phi - phi_i)``, and the
Jacobi-Anger expansion ``e^{A cos t} = sum_n I_n(A) e^{i n t}`` (``A = beta sin(theta) sin(theta_i)``,
``I_n`` the modified Bessel functions, DLMF 10.35.1) turns a ring's sum into a trigonometric
polynomial in ``phi``: ``cos t e^{A cos t}`` has the coefficients ``(I_{n-1} + I_{n+1}) / 2`` and
``sin t e^{A cos t}`` the coefficients ``-i (I_{n-1} - I_{n+1}) / 2``. Terms past ``n_terms``
(:func:`bessel_terms`: ``I_n(A) e^{-A} < 1e-18`` for every ``A <= beta``) are below round-off, so
these are the direct sums to round-off, at ``O(n_terms)`` work per ring and point instead of
``O(nphi)`` exponentials; one FFT per ring goes between coefficients and ring values.

Compiled with ``cache=True``; import only through :mod:`solvers.core.backend` users (numba is
optional at run time).
"""

from __future__ import annotations

import numpy as np
from numba import njit

BESSEL_TOL = 1e-18  # I_n(A) e^{-A} past the last term, relative to sum_n I_n(A) e^{-A} = 1


def bessel_terms(beta: float) -> int:
    """Number of Jacobi-Anger terms for the kernel ``e^{beta x.y}``: the smallest N with
    ``I_n(beta) e^{-beta} < BESSEL_TOL`` for n > N (and so for every ``A <= beta``: for such n,
    ``I_n(A) e^{-A}`` increases with A)."""
    from scipy.special import ive

    n = 1
    while ive(n + 1, beta) >= BESSEL_TOL:
        n += 1
    return n


@njit(cache=True, error_model="numpy")
def scaled_bessel(a, n_terms, out):
    """``out[n] = I_n(a) e^{-a}`` for ``n = 0 .. n_terms`` (``out``: at least n_terms + 1 entries).

    Miller's backward recurrence ``I_{n-1} = I_{n+1} + (2n/a) I_n`` from ``n_terms + 8`` (with
    ``n_terms`` from :func:`bessel_terms`, ``I_n`` is there far below round-off of the sum;
    tests check 1e-14 against scipy up to beta = 2000), normalised by ``e^a = I_0 + 2 sum_n I_n``
    (DLMF 10.35.5); ``a < 1e-8``: the series' leading terms ``e^{-a} (a/2)^n / n!``.
    """
    for n in range(n_terms + 1):
        out[n] = 0.0
    if a < 1e-8:
        t = np.exp(-a)
        for n in range(n_terms + 1):
            out[n] = t
            t *= 0.5 * a / (n + 1)
        return
    start = n_terms + 8
    two_over_a = 2.0 / a
    upper, value, total = 0.0, 1e-280, 0.0  # I_{n+1}, I_n (unnormalised)
    for n in range(start, 0, -1):
        lower = upper + (n * two_over_a) * value  # I_{n-1}
        total += 2.0 * value
        if n <= n_terms:
            out[n] = value
        upper, value = value, lower
        if value > 1e250:  # rescale everything kept so far
            upper *= 1e-250
            value *= 1e-250
            total *= 1e-250
            for k in range(n, n_terms + 1):
                out[k] *= 1e-250
    total += value
    out[0] = value
    for n in range(n_terms + 1):
        out[n] /= total


@njit(cache=True, error_model="numpy")
def _spherical(x):
    """``(cos theta, sin theta, phi)`` of a unit vector."""
    return x[2], np.sqrt(x[0] * x[0] + x[1] * x[1]), np.arctan2(x[1], x[0])


@njit(cache=True, error_model="numpy")
def ring_along_spectrum(theta, phi0, x, m, beta, log_c, n_terms, kind, scale, out):
    """Add to ``out`` (R, nphi // 2 + 1) ``scale`` times the half spectra ``S`` of the atoms'
    attention along unit vectors ``e_p`` on R rings: ``irfft(S, nphi) * nphi`` is
    ``sum_i m_i e^{beta p.x_i + log_c} (e_p . x_i)`` at ``p`` on ring r, longitudes
    ``phi0 + k 2 pi / nphi``.

    theta : (R,) ring colatitudes; x : (n, 3) unit vectors; m : (n,).
    kind : 0 for ``e_p = e_theta``, 1 for ``e_p = e_phi``, 2 for ``e_p . x_i`` replaced by 1
    (the potential). ``nphi = 2 (out.shape[1] - 1)``.
    """
    n_rings, half = theta.shape[0], out.shape[1] - 1
    nphi = 2 * half
    ive = np.empty(n_terms + 2)
    for i in range(x.shape[0]):
        ci, si, phi_i = _spherical(x[i])
        rot = np.exp(1j * (phi0 - phi_i))
        for r in range(n_rings):
            c, s = np.cos(theta[r]), np.sin(theta[r])
            a = beta * s * si
            scaled_bessel(a, n_terms + 1, ive)
            pref = scale * m[i] * np.exp(beta * c * ci + a + log_c)
            z = 1.0 + 0.0j
            for n in range(n_terms + 1):
                lo = ive[n - 1] if n > 0 else ive[1]
                if kind == 0:  # e_theta . x_i = cos(theta) s_i cos(t) - sin(theta) c_i
                    v = pref * (0.5 * c * si * (lo + ive[n + 1]) - s * ci * ive[n]) * z
                elif kind == 1:  # e_phi . x_i = -s_i sin(t)
                    v = pref * si * 0.5j * (lo - ive[n + 1]) * z
                else:
                    v = pref * ive[n] * z
                b = n % nphi
                if b <= half:
                    out[r, b] += v
                if n > 0:
                    b = (nphi - b) % nphi
                    if b <= half:
                        out[r, b] += np.conj(v)
                z *= rot


@njit(cache=True, error_model="numpy")
def _ring_moments(w_hat, r, lo, hi, nphi, out):
    """``out[j - lo] = sum_k w_k e^{i j 2 pi k / nphi}`` on ring r for ``lo <= j <= hi``, from
    ``w_hat = rfft(w)``."""
    half = nphi // 2
    for j in range(lo, hi + 1):
        b = j % nphi
        out[j - lo] = np.conj(w_hat[r, b]) if b <= half else w_hat[r, nphi - b]


@njit(cache=True, error_model="numpy")
def ring_point_sums(w_hat, theta, phi0, nphi, x, beta, log_c, n_terms):
    """``(pot (n,), grad (n, 3))``: ``sum_c w_c e^{beta x.y_c + log_c}`` and the same times
    ``y_c``, over cells ``y_c`` on R rings (colatitudes ``theta`` (R,), longitudes
    ``phi0 + k 2 pi / nphi``) with masses ``w`` (R, nphi) given as ``w_hat = rfft(w, axis=1)``.
    """
    n = x.shape[0]
    pot = np.zeros(n)
    grad = np.zeros((n, 3))
    ive = np.empty(n_terms + 1)
    moment = np.empty(2 * n_terms + 2, dtype=np.complex128)  # j = 1 - N .. N + 1
    off = n_terms - 1  # moment[j + off]
    shift = np.exp(1j * phi0)
    sph = np.empty((n, 3))
    for i in range(n):
        sph[i, 0], sph[i, 1], sph[i, 2] = _spherical(x[i])
    for r in range(theta.shape[0]):
        if w_hat[r, 0].real == 0.0:  # an empty ring (masses are >= 0)
            continue
        _ring_moments(w_hat, r, 1 - n_terms, n_terms + 1, nphi, moment)
        c, s = np.cos(theta[r]), np.sin(theta[r])
        for i in range(n):
            ci, si, phi_i = sph[i, 0], sph[i, 1], sph[i, 2]
            a = beta * s * si
            scaled_bessel(a, n_terms, ive)
            pref = np.exp(beta * c * ci + a + log_c)
            # sum_k w_k e^{A cos(phi_k - phi_i)} e^{i q phi_k} = sum_n I_n e^{-i n phi_i} G(n + q),
            # G(j) = sum_k w_k e^{i j phi_k} = e^{i j phi0} moment(j)
            ring = ive[0] * moment[off].real
            plane = ive[0] * moment[1 + off]
            rot = np.exp(1j * (phi0 - phi_i))
            z = rot
            for k in range(1, n_terms + 1):
                ring += 2.0 * ive[k] * (z * moment[k + off]).real
                plane += ive[k] * (z * moment[k + 1 + off] + np.conj(z) * moment[1 - k + off])
                z *= rot
            plane *= shift
            pot[i] += pref * ring
            grad[i, 0] += pref * s * plane.real
            grad[i, 1] += pref * s * plane.imag
            grad[i, 2] += pref * c * ring
    return pot, grad
