"""The kernel series (spectral/kernel_series.py) against the direct sums ``sum_j w_j e^{beta x.x_j}``,
its truncation degree against the exponential tail, and the compiled loops against numpy."""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import numpy as np
import pytest

from spectral.kernel_series import (
    coefficients,
    exponents,
    series_degree,
    series_field,
    series_field_numba,
)

RNG = np.random.default_rng(11)


def _unit(n: int) -> np.ndarray:
    x = RNG.normal(size=(n, 3))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0, 5.0, 12.0, 50.0])
def test_degree_bounds_the_tail(beta):
    """The tail past the degree is below 1e-16 e^beta; two degrees less it is not (the degree is
    minimal or one above: the bound is a geometric series)."""
    k = series_degree(beta)
    tail = sum(Fraction(beta) ** j / factorial(j) for j in range(k + 1, k + 120))
    assert float(tail) <= 1e-16 * np.exp(beta) * (1 + 1e-12)
    if k > 1:
        assert float(tail + sum(Fraction(beta) ** j / factorial(j) for j in (k - 1, k))) > 1e-16 * np.exp(beta)


def test_exponents_and_coefficients():
    """C(K+3, 3) distinct multi-indices of degree <= K; the coefficients of one degree sum the
    multinomial expansion: at x = y = (1, 0, 0) the series is sum_k beta^k / k!."""
    a = exponents(6)
    assert a.shape == (84, 3) and len({tuple(r) for r in a}) == 84 and a.sum(axis=1).max() == 6
    c = coefficients(2.0, 0.0, a)
    only_x = (a[:, 1] == 0) & (a[:, 2] == 0)
    np.testing.assert_allclose(c[only_x], [2.0**k / factorial(k) for k in range(7)], rtol=1e-14)


@pytest.mark.parametrize("beta,log_c", [(0.5, 0.0), (1.0, -1.0), (5.0, -5.0), (9.0, 0.0)])
def test_series_equals_direct_sums(beta, log_c):
    """``f`` and ``F`` within 1e-14 relative of the direct sums; numba within 1e-14 of numpy."""
    x, p = _unit(400), _unit(250)
    w = RNG.uniform(0.1, 1.0, 400)
    e = np.exp(beta * (p @ x.T) + log_c) * w
    f0, F0 = e.sum(axis=1), e @ x
    f1, F1 = series_field(p, x, w, beta, log_c)
    f2, F2 = series_field_numba(p, x, w, beta, log_c)
    scale = np.exp(beta + log_c) * w.sum()
    assert np.abs(f1 - f0).max() < 1e-14 * scale and np.abs(F1 - F0).max() < 1e-14 * scale
    assert np.abs(f2 - f1).max() < 1e-14 * scale and np.abs(F2 - F1).max() < 1e-14 * scale


def test_series_rejects_negative_beta():
    with pytest.raises(ValueError, match="beta"):
        series_degree(-1.0)
