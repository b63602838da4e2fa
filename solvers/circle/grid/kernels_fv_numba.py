"""Fused numba kernels of the S^1 finite volumes (the hot loops): the right-hand side and one
Runge-Kutta stage in one compiled call.

Each kernel does in one compiled call what the numpy reference code in
:mod:`solvers.circle.grid.fv` does with a dozen array passes: limited linear reconstruction
(MUSCL or WENO5 with one-sided stencils at perceptron corners), upwind flux, outflow limiting
(docs/math.md §6), the telescoping update and the moving-mass speed. Every floating-point
operation is the reference's, in the same order, so the two agree to round-off (bitwise, except
the mean density behind the mass floor, summed here left to right instead of pairwise).

Compiled with ``cache=True``: the first process on a machine pays the compile time, later ones
load the cached machine code. Import this module only where :mod:`solvers.core.backend` chose
numba (numba is optional at run time).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.core.kernels_numba import _clip01, limited_slope
from solvers.core.kernels_stages import shu_osher_stage
from solvers.core.limiters import EPS_FLOOR, one_sided_weights, weno5_value_masked

WENO5 = 4  # solvers.core.kernels_numba.LIMITER_CODES["weno5"]

# the numpy reference's function itself, compiled (one source for both paths)
_weno5_masked = njit(cache=True, inline="always", error_model="numpy")(weno5_value_masked)


_one_sided = njit(cache=True, error_model="numpy")(one_sided_weights)


@njit(cache=True, inline="always", error_model="numpy")
def _weno5(vm2, vm1, v, vp1, vp2, eps):
    """:func:`solvers.core.limiters.weno5_value`: every stencil kept."""
    return _weno5_masked(vm2, vm1, v, vp1, vp2, eps, 1.0, 1.0, 1.0)


@njit(cache=True, error_model="numpy")
def weno5_faces(d, plus, minus, kinks):
    """:func:`solvers.core.limiters.weno5_faces` into ``plus``, ``minus`` (N,) (periodic), the
    cells around the faces ``kinks`` (int64, (m,)) from one-sided stencils."""
    n = d.size
    total = 0.0
    for i in range(n):
        total += d[i]
    mean = total / n
    eps = max(1e-6 * mean ** 2, EPS_FLOOR)
    ext = np.empty(n + 4)  # periodic padding: ext[j + 2] = d[j mod n]
    for j in range(n + 4):
        ext[j] = d[(j - 2) % n]
    for i in range(n):
        a, b, c, e, f = ext[i], ext[i + 1], ext[i + 2], ext[i + 3], ext[i + 4]
        plus[i] = max(_weno5(a, b, c, e, f, eps), 0.0)
        minus[i] = max(_weno5(f, e, c, b, a, eps), 0.0)
    for q in range(kinks.size):
        for r in range(-1, 3):
            i = (kinks[q] + r) % n
            w = _one_sided(i, kinks, n)
            a, b, c, e, f = ext[i], ext[i + 1], ext[i + 2], ext[i + 3], ext[i + 4]
            plus[i] = max(_weno5_masked(a, b, c, e, f, eps, w[0], w[1], w[2]), 0.0)
            minus[i] = max(_weno5_masked(f, e, c, b, a, eps, w[3], w[4], w[5]), 0.0)


@njit(cache=True, error_model="numpy")
def circle_fv_rhs(rho, u, code, dt, limit, inv_h, dt_over_h, mass_floor, scale, kinks):
    """S^1: ``(d rho/dt, max |u| / h over faces whose upwind cell holds mass)``.

    ``rho``, ``u`` (N,): cell masses over ``h`` and right-face velocities; ``limit``: scale the
    outflow of every cell to its content over ``dt`` (``dt_over_h = dt / h``); ``scale`` (N,):
    ``h / width`` of each cell (all 1 on the uniform grid; :mod:`solvers.circle.cells`),
    the reconstruction works on the densities ``rho * scale``; ``kinks`` (int64, (m,)): the
    faces on perceptron corners, where WENO5 takes one-sided stencils (empty: none).
    """
    n = rho.size
    dens = np.empty(n)
    for i in range(n):
        dens[i] = rho[i] * scale[i]
    plus, minus = np.empty(n), np.empty(n)  # each cell's value at its right and left face
    if code == WENO5:
        weno5_faces(dens, plus, minus, kinks)
    else:
        for i in range(n):
            im = i - 1 if i > 0 else n - 1
            ip = i + 1 if i < n - 1 else 0
            slope = limited_slope(dens[i] - dens[im], dens[ip] - dens[i], code)
            plus[i] = dens[i] + 0.5 * slope
            minus[i] = dens[i] - 0.5 * slope
    flux = np.empty(n)
    total = 0.0
    for i in range(n):
        ip = i + 1 if i < n - 1 else 0
        left = plus[i]
        right = minus[ip]
        flux[i] = max(u[i], 0.0) * left + min(u[i], 0.0) * right
        total += rho[i]
    if limit:
        keep = np.empty(n)
        for i in range(n):
            im = i - 1 if i > 0 else n - 1
            outflow = (max(flux[i], 0.0) + max(-flux[im], 0.0)) * dt_over_h
            s = 1.0
            if outflow > rho[i]:
                s = rho[i] / (outflow if outflow > 0.0 else 1.0)
            keep[i] = _clip01(s)
        for i in range(n):
            ip = i + 1 if i < n - 1 else 0
            flux[i] = flux[i] * keep[i] if flux[i] > 0.0 else flux[i] * keep[ip]
    floor = mass_floor * max(total / n, 0.0)
    out = np.empty(n)
    speed = 0.0
    for i in range(n):
        im = i - 1 if i > 0 else n - 1
        ip = i + 1 if i < n - 1 else 0
        out[i] = (flux[im] - flux[i]) * inv_h
        up = i if u[i] > 0.0 else ip
        if rho[up] > floor:
            speed = max(speed, abs(u[i]) * scale[up])
    return out, speed


@njit(cache=True, error_model="numpy")
def circle_fv_stage(rho, u, code, dt, limit, inv_h, dt_over_h, mass_floor, u0, c, alpha, uj,
                    with_j, scale, kinks):
    """S^1 fv stage: ``k = circle_fv_rhs(rho, u, ...)`` then ``shu_osher_stage(u0, c, k, alpha,
    uj, with_j)``, in one call; returns ``(stage, max |u| / h where mass moves)``."""
    k, speed = circle_fv_rhs(rho, u, code, dt, limit, inv_h, dt_over_h, mass_floor, scale, kinks)
    return shu_osher_stage(u0, c, k, alpha, uj, with_j), speed
