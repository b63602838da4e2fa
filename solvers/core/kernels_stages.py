"""Compiled Runge-Kutta stages (numba): the Shu-Osher stage combinations.

The operations and their order are those of
:func:`solvers.timestepping.integrators._shu_osher_step` (numpy), so the two agree bitwise
(tests/core/test_kernels.py). Import only through :mod:`solvers.core.backend` users (numba
is optional at run time).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange



@njit(cache=True, inline="always", error_model="numpy")
def _stage_body(u0, c, k, alpha, uj, with_j):
    out = np.empty_like(u0)
    if with_j:
        for i in prange(u0.size):
            out[i] = (u0[i] + c * k[i]) + alpha * (uj[i] - u0[i])
    else:
        for i in prange(u0.size):
            out[i] = u0[i] + c * k[i]
    return out


@njit(cache=True, error_model="numpy")
def shu_osher_stage(u0, c, k, alpha, uj, with_j):
    """One Shu-Osher stage in one pass: ``(u0 + c k) + alpha (uj - u0)`` (``with_j``), else ``u0 + c k``.

    Elementwise over 1-D arrays, the operations and their order of
    :func:`solvers.timestepping.integrators._shu_osher_step` (which writes the convex
    combination as ``u0 + alpha (uj - u0)`` so that mass is conserved to round-off).
    """
    return _stage_body(u0, c, k, alpha, uj, with_j)


@njit(cache=True, parallel=True, error_model="numpy")
def shu_osher_stage_threads(u0, c, k, alpha, uj, with_j):
    """:func:`shu_osher_stage` on numba's threads (S^2 grids; every element the same operations)."""
    return _stage_body(u0, c, k, alpha, uj, with_j)


@njit(cache=True, inline="always", error_model="numpy")
def _difference_body(a, alpha, uj, u0):
    out = np.empty_like(a)
    for i in prange(a.size):
        out[i] = a[i] + alpha * (uj[i] - u0[i])
    return out


@njit(cache=True, error_model="numpy")
def add_scaled_difference(a, alpha, uj, u0):
    """``a + alpha (uj - u0)`` elementwise, 1-D (further terms of a Shu-Osher stage)."""
    return _difference_body(a, alpha, uj, u0)


@njit(cache=True, parallel=True, error_model="numpy")
def add_scaled_difference_threads(a, alpha, uj, u0):
    """:func:`add_scaled_difference` on numba's threads."""
    return _difference_body(a, alpha, uj, u0)
