"""Compiled pieces shared by the finite-volume kernels of every manifold: the limited slopes
and the extremes of a state (the manifolds' fused right-hand sides call them).

The slopes repeat the operations of :data:`solvers.core.limiters.LIMITERS` in the same order,
so the compiled and the numpy paths agree bitwise.

Compiled with ``cache=True``: the first process on a machine pays the compile time
(benchmarks/README.md), later ones load the cached machine code. Import this module only
through :mod:`solvers.core.backend` (numba is optional at run time).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# order of solvers.core.limiters.LIMITERS
LIMITER_CODES = {"minmod": 0, "mc": 1, "vanleer": 2, "none": 3, "weno5": 4}  # weno5: S^1 only


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
def extremes(a: np.ndarray, grid: int) -> tuple[float, float, float, bool]:
    """``(min, max, smallest positive)`` of ``a[:grid]`` (``inf``, ``-inf``, ``inf`` where there is
    none) and whether every value of ``a`` (1-D) is finite, in one pass (the checks after each
    step, :meth:`solvers.timestepping.simulation.Solver._checked`)."""
    low, top, positive, finite = np.inf, -np.inf, np.inf, True
    for i in range(a.size):
        v = a[i]
        if not np.isfinite(v):
            finite = False
        elif i < grid:
            low = min(low, v)
            top = max(top, v)
            if v > 0.0:
                positive = min(positive, v)
    return low, top, positive, finite
