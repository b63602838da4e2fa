"""Fused numba kernels of the Dirac-atom fields on S^2 (the numpy references are in
:mod:`solvers.sphere.dirac`; tests/sphere/test_sphere_dirac.py compares the two).

Both are sums of ``c_K w e^{beta p.y}`` over point masses ``(y, w)``, docs/math.md §1:

- :func:`along_sum`: at many points ``p`` (the faces) with unit vectors ``e_p``, the component
  ``sum_i c_K m_i e^{beta p.x_i} (e_p . x_i)`` of the atoms' attention velocity (``e_p . p = 0``);
- :func:`point_mass_sum`: at a few points (the atoms), ``sum_c c_K w_c e^{beta x.y_c}`` and
  ``sum_c c_K w_c e^{beta x.y_c} y_c`` over the cells (empty cells skipped).

Compiled with ``cache=True``; import only through :mod:`solvers.core.backend` users (numba is
optional at run time).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def along_sum(points, e, x, m, beta, log_c):
    """``out_p = sum_i m_i e^{beta p.x_i + log_c} (e_p . x_i)``.

    points, e : (P, 3); x : (n, 3); m : (n,). Returns (P,).
    """
    n_p, n = points.shape[0], x.shape[0]
    out = np.zeros(n_p)
    for p in range(n_p):
        px, py, pz = points[p, 0], points[p, 1], points[p, 2]
        ex, ey, ez = e[p, 0], e[p, 1], e[p, 2]
        acc = 0.0
        for i in range(n):
            d = px * x[i, 0] + py * x[i, 1] + pz * x[i, 2]
            acc += m[i] * np.exp(beta * d + log_c) * (ex * x[i, 0] + ey * x[i, 1] + ez * x[i, 2])
        out[p] = acc
    return out


@njit(cache=True, error_model="numpy")
def point_mass_sum(x, y, w, beta, log_c):
    """``(pot (n,), grad (n, 3))``: ``sum_c w_c e^{beta x.y_c + log_c}`` and the same times ``y_c``.

    x : (n, 3) evaluation points; y : (N, 3) cell centres; w : (N,) cell masses (zeros skipped).
    """
    n, n_c = x.shape[0], y.shape[0]
    pot = np.zeros(n)
    grad = np.zeros((n, 3))
    for i in range(n):
        xx, xy, xz = x[i, 0], x[i, 1], x[i, 2]
        a = gx = gy = gz = 0.0
        for c in range(n_c):
            if w[c] == 0.0:
                continue
            k = w[c] * np.exp(beta * (xx * y[c, 0] + xy * y[c, 1] + xz * y[c, 2]) + log_c)
            a += k
            gx += k * y[c, 0]
            gy += k * y[c, 1]
            gz += k * y[c, 2]
        pot[i] = a
        grad[i, 0], grad[i, 1], grad[i, 2] = gx, gy, gz
    return pot, grad
