"""Compiled loops of :mod:`spectral.kernel_series` (the numpy functions there are the reference).

Monomials ``x^alpha`` are visited in the order of :func:`spectral.kernel_series.exponents`
(degree, then ``a``, then ``b``) from per-point power tables, so no ``points x terms`` array is
formed. ``moments`` sums over the points in one block per thread, then adds the blocks.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def _powers(p: np.ndarray, degree: int) -> np.ndarray:
    out = np.empty((3, degree + 1))
    for d in range(3):
        out[d, 0] = 1.0
        for k in range(1, degree + 1):
            out[d, k] = out[d, k - 1] * p[d]
    return out


@nb.njit(cache=True)
def _accumulate(x: np.ndarray, w: np.ndarray, lo: int, hi: int, degree: int, out: np.ndarray) -> None:
    for i in range(lo, hi):
        pw = _powers(x[i], degree)
        t = 0
        for k in range(degree + 1):
            for a in range(k + 1):
                for b in range(k - a + 1):
                    mono = w[i] * pw[0, a] * pw[1, b] * pw[2, k - a - b]
                    out[t, 0] += mono
                    out[t, 1] += mono * x[i, 0]
                    out[t, 2] += mono * x[i, 1]
                    out[t, 3] += mono * x[i, 2]
                    t += 1


@nb.njit(parallel=True, cache=True)
def moments(x: np.ndarray, w: np.ndarray, degree: int, blocks: int) -> np.ndarray:
    """``M_alpha = sum_j w_j x_j^alpha (1, x_j)``, shape (terms, 4), summed in ``blocks`` parts
    (one per thread)."""
    terms = (degree + 1) * (degree + 2) * (degree + 3) // 6
    blocks = max(1, min(blocks, x.shape[0] // 64))
    part = np.zeros((blocks, terms, 4))
    n = x.shape[0]
    for b in nb.prange(blocks):
        _accumulate(x, w, b * n // blocks, (b + 1) * n // blocks, degree, part[b])
    return part.sum(axis=0)


@nb.njit(parallel=True, cache=True)
def evaluate(targets: np.ndarray, cm: np.ndarray, degree: int) -> np.ndarray:
    """``sum_alpha p^alpha cm_alpha`` at every target p, shape (P, 4); ``cm`` (terms, 4)."""
    out = np.zeros((targets.shape[0], 4))
    for i in nb.prange(targets.shape[0]):
        pw = _powers(targets[i], degree)
        t = 0
        s0 = s1 = s2 = s3 = 0.0
        for k in range(degree + 1):
            for a in range(k + 1):
                for b in range(k - a + 1):
                    mono = pw[0, a] * pw[1, b] * pw[2, k - a - b]
                    s0 += mono * cm[t, 0]
                    s1 += mono * cm[t, 1]
                    s2 += mono * cm[t, 2]
                    s3 += mono * cm[t, 3]
                    t += 1
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = s0, s1, s2, s3
    return out
