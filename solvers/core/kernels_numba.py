"""Fused numba kernels of the finite-volume right-hand sides on S^1 and S^2 (the hot loops).

Each kernel does in one compiled call what the numpy reference code in
:mod:`solvers.circle.fv` / :mod:`solvers.sphere.fv` does with a dozen array passes: limited
linear reconstruction (MUSCL), upwind flux, outflow limiting (docs/math.md §6), the
telescoping update and the moving-mass speed. Every floating-point operation is the
reference's, in the same order, so the two agree to round-off (bitwise, except the mean
density behind the mass floor, summed here left to right instead of pairwise).

Compiled with ``cache=True``: the first process on a machine pays the compile time
(benchmarks/README.md), later ones load the cached machine code. Import this module only
through :mod:`solvers.core.backend` (numba is optional at run time).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# order of solvers.core.limiters.LIMITERS
LIMITER_CODES = {"minmod": 0, "mc": 1, "vanleer": 2, "none": 3}


@njit(cache=True, inline="always", error_model="numpy")
def _sign(x: float) -> float:
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


@njit(cache=True, inline="always", error_model="numpy")
def limited_slope(a: float, b: float, code: int) -> float:
    """The slope of :data:`solvers.core.limiters.LIMITERS` (same operations), scalar."""
    if code == 0:  # minmod
        return 0.5 * (_sign(a) + _sign(b)) * min(abs(a), abs(b))
    if code == 1:  # mc
        mag = min(min(abs(a), abs(b)) * 2.0, 0.5 * abs(a + b))
        return math.copysign(mag, a) if a * b > 0.0 else 0.0
    if code == 2:  # van Leer
        ab = a * b
        return 2.0 * ab / (a + b) if ab > 0.0 else 0.0
    return 0.0


@njit(cache=True, inline="always", error_model="numpy")
def _clip01(s: float) -> float:
    return min(max(s, 0.0), 1.0)


@njit(cache=True, error_model="numpy")
def circle_fv_rhs(rho, u, code, dt, limit, inv_h, dt_over_h, mass_floor):
    """S^1: ``(d rho/dt, max |u| / h over faces whose upwind cell holds mass)``.

    ``rho``, ``u`` (N,): cell averages and right-face velocities; ``limit``: scale the
    outflow of every cell to its content over ``dt`` (``dt_over_h = dt / h``).
    """
    n = rho.size
    slope = np.empty(n)
    for i in range(n):
        im = i - 1 if i > 0 else n - 1
        ip = i + 1 if i < n - 1 else 0
        slope[i] = limited_slope(rho[i] - rho[im], rho[ip] - rho[i], code)
    flux = np.empty(n)
    total = 0.0
    for i in range(n):
        ip = i + 1 if i < n - 1 else 0
        left = rho[i] + 0.5 * slope[i]
        right = rho[ip] - 0.5 * slope[ip]
        flux[i] = max(u[i], 0.0) * left + min(u[i], 0.0) * right
        total += rho[i]
    if limit:
        scale = np.empty(n)
        for i in range(n):
            im = i - 1 if i > 0 else n - 1
            outflow = (max(flux[i], 0.0) + max(-flux[im], 0.0)) * dt_over_h
            s = 1.0
            if outflow > rho[i]:
                s = rho[i] / (outflow if outflow > 0.0 else 1.0)
            scale[i] = _clip01(s)
        for i in range(n):
            ip = i + 1 if i < n - 1 else 0
            flux[i] = flux[i] * scale[i] if flux[i] > 0.0 else flux[i] * scale[ip]
    floor = mass_floor * max(total / n, 0.0)
    out = np.empty(n)
    speed = 0.0
    for i in range(n):
        im = i - 1 if i > 0 else n - 1
        ip = i + 1 if i < n - 1 else 0
        out[i] = (flux[im] - flux[i]) * inv_h
        upwind = rho[i] if u[i] > 0.0 else rho[ip]
        if upwind > floor:
            speed = max(speed, abs(u[i]))
    return out, speed


@njit(cache=True, error_model="numpy")
def sphere_fv_rhs(rho, u_phi, u_theta, first, band, right, left, right_face, area, zonal_width,
                  cell_id, dtheta, face_length, code, dt, limit, mass_floor):
    """S^2 on the reduced grid: ``(d rho/dt on the fine (nlat, nphi) grid, max_rate)``.

    Same operations as :class:`solvers.sphere.fv.SphereFV` (see there for the arrays), in
    three passes over the fine grid: reconstruction + meridional fluxes + their outflow sums
    + meridional rate; limiting + divergence; output.
    """
    nlat, nphi = rho.shape
    n = first.size
    flat = rho.ravel()
    uz = u_phi.ravel()
    rho_c = np.empty(n)
    total = 0.0
    for c in range(n):
        rho_c[c] = flat[first[c]]
        total += rho_c[c]
    floor = mass_floor * max(total / n, 0.0)
    # zonal: reconstruction, flux through the east face of every cell, zonal rate
    east = np.empty(n)
    west = np.empty(n)
    for c in range(n):
        r = rho_c[c]
        s = limited_slope(r - rho_c[left[c]], rho_c[right[c]] - r, code)
        east[c] = r + 0.5 * s
        west[c] = r - 0.5 * s
    fz = np.empty(n)
    rz = 0.0
    for c in range(n):
        u = uz[right_face[c]]
        cr = right[c]
        fz[c] = (max(u, 0.0) * east[c] + min(u, 0.0) * west[cr]) * dtheta[band[c]]
        if u > 0.0:
            up, wz = rho_c[c], zonal_width[c]
        else:
            up, wz = rho_c[cr], zonal_width[cr]
        if up > floor:
            rz = max(rz, abs(u) / wz)
    # meridional (southward positive) through band boundaries, row by row: face row j lies
    # between cell rows j-1 and j; the outflow sums are accumulated in the reference's order
    fm = np.zeros((nlat + 1, nphi))
    out_s = np.zeros(n)
    out_n = np.zeros(n)
    south_prev = np.empty(nphi)  # south-face value of row j-1
    north_row = np.empty(nphi)
    rm = 0.0
    for j in range(nlat):
        jm = j - 1 if j > 0 else 0
        jp = j + 1 if j < nlat - 1 else j
        for k in range(nphi):
            r = rho_c[cell_id[j, k]]
            s = limited_slope(r - rho_c[cell_id[jm, k]], rho_c[cell_id[jp, k]] - r, code)
            north_row[k] = r - 0.5 * s
            if j > 0:
                u = u_theta[j, k]
                f = (max(u, 0.0) * south_prev[k] + min(u, 0.0) * north_row[k]) * face_length[j, k]
                fm[j, k] = f
                if u > 0.0:
                    up, w = rho_c[cell_id[j - 1, k]], dtheta[j - 1]
                else:
                    up, w = r, dtheta[j]
                if up > floor:
                    rm = max(rm, abs(u) / w)
            south_prev[k] = r + 0.5 * s
        if limit:
            for k in range(nphi):
                if j > 0:
                    out_s[cell_id[j - 1, k]] += max(fm[j, k], 0.0)
                out_n[cell_id[j, k]] += max(-fm[j, k], 0.0)
    if limit:
        # (last row's south faces are the pole: zero flux, adds 0.0 like the reference)
        scale = np.empty(n)
        for c in range(n):
            out = max(fz[c], 0.0) + max(-fz[left[c]], 0.0)
            out += out_s[c]
            out += out_n[c]
            content = rho_c[c] * area[c]
            sent = dt * out
            s = 1.0
            if sent > content:
                s = content / (sent if sent > 0.0 else 1.0)
            scale[c] = _clip01(s)
        for c in range(n):
            fz[c] = fz[c] * scale[c] if fz[c] > 0.0 else fz[c] * scale[right[c]]
        for j in range(1, nlat):
            for k in range(nphi):
                f = fm[j, k]
                fm[j, k] = f * scale[cell_id[j - 1, k]] if f > 0.0 else f * scale[cell_id[j, k]]
    merid = np.zeros(n)
    for j in range(nlat):
        for k in range(nphi):
            merid[cell_id[j, k]] += fm[j, k] - fm[j + 1, k]
    rate_c = np.empty(n)
    for c in range(n):
        rate_c[c] = ((fz[left[c]] - fz[c]) + merid[c]) / area[c]
    out = np.empty((nlat, nphi))
    for j in range(nlat):
        for k in range(nphi):
            out[j, k] = rate_c[cell_id[j, k]]
    return out, rz + rm


@njit(cache=True, error_model="numpy")
def legendre_spectrum(table, c, starts, m_unique, n_freq, row_scale):
    """Longitude spectrum ``spec[j, m] = row_scale[j] sum_{l} table[j, (l, m)] c_(l, m)``.

    ``table`` (n_theta, n_sel) real, ``c`` (n_sel,) complex, entries of order
    ``m_unique[q]`` in ``starts[q]:starts[q+1]``; returns (n_theta, n_freq) complex.
    """
    nt, ns = table.shape
    nq = m_unique.size
    spec = np.zeros((nt, n_freq), dtype=np.complex128)
    for j in range(nt):
        for q in range(nq):
            stop = starts[q + 1] if q + 1 < nq else ns
            re = 0.0
            im = 0.0
            for i in range(starts[q], stop):
                t = table[j, i]
                re += t * c[i].real
                im += t * c[i].imag
            spec[j, m_unique[q]] = complex(re * row_scale[j], im * row_scale[j])
    return spec


@njit(cache=True, error_model="numpy")
def signed_sum(a, w, sign):
    """``sign * (a + w)`` elementwise, 2-D."""
    out = np.empty_like(a)
    for j in range(a.shape[0]):
        for k in range(a.shape[1]):
            out[j, k] = sign * (a[j, k] + w[j, k])
    return out


@njit(cache=True, error_model="numpy")
def signed_ratio_sum(g, f, beta, w, sign):
    """``sign * (g / (beta f) + w)`` elementwise, 2-D (softmax attention)."""
    out = np.empty_like(g)
    for j in range(g.shape[0]):
        for k in range(g.shape[1]):
            out[j, k] = sign * (g[j, k] / (beta * f[j, k]) + w[j, k])
    return out
