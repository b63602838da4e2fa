"""The attention kernel ``c exp(beta x.y)`` on S^2 as a finite sum of products (no notion of time).

Expanding the exponential and the power of the dot product (multinomial theorem),

    exp(beta x.y) = sum_{k >= 0} beta^k (x.y)^k / k! = sum_alpha beta^|alpha| x^alpha y^alpha / alpha!,

over multi-indices ``alpha = (a, b, c)`` with ``x^alpha = x_1^a x_2^b x_3^c`` and
``alpha! = a! b! c!``. On unit vectors ``|x.y| <= 1``, and every degree's terms sum in absolute
value to at most ``(sum_d |x_d y_d|)^k <= 1``, so truncating at degree ``K`` leaves at most
``sum_{k > K} beta^k / k!``: :func:`series_degree` picks the smallest ``K`` that puts this below
``tol exp(beta)`` (``tol = 1e-16``: round-off; at ``beta = 1``, ``K = 17``, 1140 terms).

For point masses ``w_j`` at ``x_j`` (n points) the field ``F(x) = c sum_j w_j e^{beta x.x_j} x_j``
(whose tangential part is ``(1/beta)`` times the sphere gradient of ``K * mu``, docs/math.md §1)
and the potential ``(K * mu)(x) = c sum_j w_j e^{beta x.x_j}`` then cost ``O(n C(K+3, 3))``
instead of ``O(n^2)``: the moments ``M_alpha = sum_j w_j x_j^alpha (1, x_j)`` once, then
``sum_alpha coef_alpha x^alpha M_alpha`` at each point. This is the fast path of the S^2
Lagrangian particles (:mod:`solvers.sphere.measure.lagrangian`) when ``beta`` is small; the direct pair
sums stay the reference (tests/spectral/test_kernel_series.py compares the two).

``series_field`` is the numpy reference; ``series_field_numba`` the compiled loop (no
``n x terms`` temporaries), equal to it to round-off.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln

TOL = 1e-16  # the truncated tail relative to exp(beta)


@lru_cache(maxsize=64)
def series_degree(beta: float, tol: float = TOL) -> int:
    """Smallest ``K`` whose bound of the tail ``sum_{k > K} beta^k / k!`` is at most ``tol
    exp(beta)``: once ``K + 2 > beta`` the tail is below the geometric series of its first term,
    ``beta^{K+1} / (K+1)! / (1 - beta / (K+2))`` (logarithms: no overflow at large beta). The
    bound is within a factor 2 of the tail, so ``K`` is minimal or one above."""
    if beta < 0:
        raise ValueError(f"beta: must be >= 0 (got {beta})")
    if beta == 0:
        return 0
    limit = np.log(tol) + beta
    k, log_term = 0, np.log(beta)  # log of the first omitted term, beta^{k+1} / (k+1)!
    while k + 2 <= beta or log_term - np.log1p(-beta / (k + 2)) > limit:
        k += 1
        log_term += np.log(beta) - np.log(k + 1)
    return k


def series_terms(beta: float) -> int:
    """Number of terms ``C(K + 3, 3)`` of the series at ``beta`` (``K``: :func:`series_degree`)."""
    k = series_degree(beta)
    return (k + 1) * (k + 2) * (k + 3) // 6


def exponents(degree: int) -> np.ndarray:
    """All ``alpha = (a, b, c)`` with ``a + b + c <= degree``, shape (C(degree + 3, 3), 3)."""
    return np.array([(a, b, k - a - b) for k in range(degree + 1)
                     for a in range(k + 1) for b in range(k - a + 1)], dtype=np.int64)


def coefficients(beta: float, log_c: float, alpha: np.ndarray) -> np.ndarray:
    """``c beta^|alpha| / alpha!`` for the rows of ``alpha`` (terms,), ``log_c = log c``."""
    alpha = np.asarray(alpha).reshape(-1, 3)
    k = alpha.sum(axis=1)
    logb = np.log(beta) if beta > 0 else -np.inf
    return np.exp(log_c + np.where(k > 0, k * logb, 0.0) - gammaln(alpha + 1.0).sum(axis=1))


@lru_cache(maxsize=32)
def _table(beta: float, log_c: float, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, coef)`` of :func:`exponents` and :func:`coefficients`, computed once per
    ``(beta, log_c, degree)`` (read-only: a run evaluates the field four times a step)."""
    alpha = exponents(degree)
    coef = coefficients(beta, log_c, alpha)
    alpha.flags.writeable = coef.flags.writeable = False
    return alpha, coef


def _monomials(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``x^alpha`` for points ``x`` (n, 3), shape (n, terms)."""
    degree = int(alpha.max()) if alpha.size else 0
    powers = x[:, :, None] ** np.arange(degree + 1)  # (n, 3, degree + 1)
    return powers[:, 0, alpha[:, 0]] * powers[:, 1, alpha[:, 1]] * powers[:, 2, alpha[:, 2]]


def series_field(targets: np.ndarray, x: np.ndarray, w: np.ndarray, beta: float, log_c: float,
                 degree: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(f (P,), F (P, 3))``: ``f = c sum_j w_j e^{beta p.x_j}`` and ``F = c sum_j w_j
    e^{beta p.x_j} x_j`` at the ``targets`` p (P, 3), sources ``x`` (n, 3) with weights ``w``
    (n,); numpy reference (memory ``O((P + n) terms)``)."""
    degree = series_degree(beta) if degree is None else int(degree)
    alpha, coef = _table(float(beta), float(log_c), degree)
    src = _monomials(np.asarray(x, float), alpha)
    moments = src.T @ np.column_stack([w, w[:, None] * x])  # (terms, 4)
    out = _monomials(np.asarray(targets, float), alpha) @ (coef[:, None] * moments)
    return out[:, 0], out[:, 1:]


def series_field_numba(targets: np.ndarray, x: np.ndarray, w: np.ndarray, beta: float,
                       log_c: float, degree: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`series_field` by the compiled loops (same arguments and results)."""
    import numba

    from spectral.kernel_series_numba import evaluate, moments

    degree = series_degree(beta) if degree is None else int(degree)
    _, coef = _table(float(beta), float(log_c), degree)
    m = moments(np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(w, dtype=float), degree,
                numba.get_num_threads())
    out = evaluate(np.ascontiguousarray(targets, dtype=float), coef[:, None] * m, degree)
    return out[:, 0], out[:, 1:]
