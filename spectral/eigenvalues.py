"""Funk-Hecke eigenvalues of the kernel ``K_beta(x, y) = exp(beta x.y)`` (paper Lemma 5.1).

For every degree-j spherical harmonic on ``S^{d-1}`` (unnormalised surface measure),

    int K(x, y) Y_j(x) dsigma(x) = lambda_j(beta) Y_j(y),
    lambda_j(beta) = (2 pi)^{d/2} beta^{1 - d/2} I_{j + d/2 - 1}(beta)        (docs/math.md §2)

(S^1: ``2 pi I_j(beta)``; S^2: ``4 pi i_j(beta)``). The evaluation works in logarithms:
``log I_nu(beta) = log ive(nu, beta) + beta`` where the scaled Bessel function is
representable, and the positive power series summed with log-sum-exp where it underflows.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

_TINY = 1e-280  # below this ive() loses relative accuracy (subnormal range)


def _log_iv_series(nu: np.ndarray, x: float) -> np.ndarray:
    """``log I_nu(x)`` from the power series, for ``nu`` where ``ive`` underflows.

    ``I_nu(x) = sum_k (x/2)^{2k+nu} / (k! Gamma(nu+k+1))``; all terms are positive, so the
    log-sum-exp is accurate to a few ulps of the largest log-term.

    Parameters
    ----------
    nu : ndarray, shape (m,)
        Orders (>= 0).
    x : float
        Argument (> 0).
    """
    nu = np.asarray(nu, dtype=float)
    q = 0.25 * x * x
    # The terms peak near k(nu + k) = q; sum well past the peak.
    k_peak = 0.5 * (-nu + np.sqrt(nu * nu + 4.0 * q))
    n_terms = int(np.max(k_peak + 12.0 * np.sqrt(k_peak + 1.0) + 40.0))
    out = np.empty_like(nu)
    chunk = max(1, 2_000_000 // max(n_terms, 1))
    k = np.arange(n_terms, dtype=float)
    for start in range(0, nu.size, chunk):
        nus = nu[start:start + chunk, None]
        terms = k * np.log(q) - special.gammaln(k + 1.0) - special.gammaln(nus + k + 1.0)
        out[start:start + chunk] = nus[:, 0] * np.log(0.5 * x) + special.logsumexp(terms, axis=1)
    return out


def log_bessel_i(nu: ArrayLike, x: float) -> np.ndarray:
    """``log I_nu(x)`` for ``x > 0`` and ``nu >= 0``, without overflow or underflow.

    Parameters
    ----------
    nu : array_like
        Orders, any shape.
    x : float
        Argument, ``x > 0``.

    Returns
    -------
    ndarray, same shape as ``nu``
    """
    nu = np.asarray(nu, dtype=float)
    flat = nu.ravel()
    scaled = special.ive(flat, x)
    out = np.empty_like(flat)
    good = np.isfinite(scaled) & (scaled > _TINY)
    out[good] = np.log(scaled[good]) + x
    if not np.all(good):
        out[~good] = _log_iv_series(flat[~good], x)
    return out.reshape(nu.shape)


def kernel_eigenvalues(beta: float, degrees: ArrayLike, dim: int, log: bool = False) -> np.ndarray:
    """Funk-Hecke eigenvalues ``lambda_j(beta)`` of ``exp(beta x.y)`` on ``S^{dim-1}``.

    Paper Lemma 5.1; formula of docs/math.md §2, unnormalised surface measure.

    Parameters
    ----------
    beta : float
        Inverse temperature, ``beta > 0`` (stable for 1e-3 <= beta <= 1e4).
    degrees : array_like of int
        Harmonic degrees ``j >= 0`` (any shape; up to several thousand).
    dim : int
        Ambient dimension d (2: circle, 3: sphere; any d >= 2 works).
    log : bool
        Return ``log lambda_j`` (never overflows or underflows).

    Returns
    -------
    ndarray, shape of ``degrees``
        ``lambda_j`` (may overflow to inf / underflow to 0 when ``log=False``).
    """
    beta = float(beta)
    if not np.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta: must be a finite number > 0 (got {beta})")
    if int(dim) != dim or dim < 2:
        raise ValueError(f"dim: must be an integer >= 2 (got {dim})")
    j = np.asarray(degrees)
    if np.any(j < 0) or not np.all(np.equal(np.mod(j, 1), 0)):
        raise ValueError("degrees: must be non-negative integers")
    nu = j.astype(float) + 0.5 * dim - 1.0
    log_lam = 0.5 * dim * np.log(2.0 * np.pi) + (1.0 - 0.5 * dim) * np.log(beta)
    log_lam = log_lam + log_bessel_i(nu, beta)
    if log:
        return log_lam
    with np.errstate(over="ignore", under="ignore"):
        return np.exp(log_lam)


def kernel_bandwidth(beta: float, dim: int, tol: float = 1e-16) -> int:
    """First degree ``j*`` with ``lambda_j / lambda_0 < tol`` (docs/math.md §2, table).

    The attention velocity depends only on degrees below ``j*``.
    """
    n = 64
    while True:
        log_lam = kernel_eigenvalues(beta, np.arange(n), dim, log=True)
        below = np.nonzero(log_lam - log_lam[0] < np.log(tol))[0]
        if below.size:
            return int(below[0])
        n *= 2
