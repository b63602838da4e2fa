"""One-sided WENO5 at the faces on the perceptron's corners (``time.kink_faces``,
solvers/core/limiters.py ``weno5_faces(d, kinks)``).

At a ReLU corner the velocity, and with it the density, has a corner on a known face. The four
cells around it take only the candidate stencils on their own side: on a density made of two
quadratics that meet there, every kept stencil is exact, so the face values are exact to
round-off; the plain WENO5 weights the stencils that reach across too.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.backend import numba_available
from solvers.core.limiters import one_sided_weights, weno5_faces


def corner_averages(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell averages (exact) of a density with a corner at face ``k`` (cells ``i`` span
    ``[i - 1/2, i + 1/2]`` in units of h, the corner at ``k + 1/2``), and its right- and
    left-face values. Two quadratics, equal at the corner, different slopes and curvatures."""
    x0 = k + 0.5

    def prim(x):  # antiderivative of the density, piecewise
        left = 2.0 * x + 0.30 * (x - x0) ** 2 / 2 + 0.02 * (x - x0) ** 3 / 3
        right = 2.0 * x - 0.45 * (x - x0) ** 2 / 2 - 0.05 * (x - x0) ** 3 / 3
        return np.where(x <= x0, left, right)

    def value(x):
        return np.where(x <= x0, 2.0 + 0.30 * (x - x0) + 0.02 * (x - x0) ** 2,
                        2.0 - 0.45 * (x - x0) - 0.05 * (x - x0) ** 2)

    i = np.arange(n, dtype=float)
    lo, hi = i - 0.5, i + 0.5
    avg = np.where((hi <= x0) | (lo >= x0), prim(hi) - prim(lo), 0.0)
    return avg, value(hi), value(lo)


def test_one_sided_values_are_exact_at_a_corner():
    n, k = 40, 20
    avg, right, left = corner_averages(n, k)
    near = np.arange(k - 1, k + 3)  # the cells whose stencils reach across face k
    plus, minus = weno5_faces(avg, np.array([k]))
    np.testing.assert_allclose(plus[near], right[near], atol=1e-12)
    np.testing.assert_allclose(minus[near], left[near], atol=1e-12)
    plain_plus, plain_minus = weno5_faces(avg)
    assert np.max(np.abs(plain_plus[near] - right[near])) > 1e-6  # the plain weights leak across
    far = np.r_[3 : k - 3, k + 5 : n - 3]
    np.testing.assert_array_equal(plus[far], plain_plus[far])  # nothing changes away from it
    np.testing.assert_array_equal(minus[far], plain_minus[far])


@pytest.mark.parametrize("r,want", [(-2, (1, 1, 1, 1, 1, 1)), (-1, (1, 1, 0, 0, 1, 1)),
                                    (0, (1, 0, 0, 0, 0, 1)), (1, (0, 0, 1, 1, 0, 0)),
                                    (2, (0, 1, 1, 1, 1, 0)), (3, (1, 1, 1, 1, 1, 1))])
def test_which_stencils_cross(r, want):
    """Cell ``k + r`` against a kink face ``k``, also across the periodic seam."""
    for k in (10, 0, 63):
        assert one_sided_weights((k + r) % 64, np.array([k]), 64) == tuple(float(w) for w in want)


def test_two_kinks_a_cell_apart_leave_the_cell_its_own_value():
    d = np.random.default_rng(2).uniform(0.5, 1.5, 32)
    plus, minus = weno5_faces(d, np.array([10, 11]))  # cell 11 lies between two kink faces
    assert plus[11] == d[11] and minus[11] == d[11]


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
def test_compiled_kernel_matches():
    from solvers.circle.grid.kernels_fv_numba import weno5_faces as compiled

    rng = np.random.default_rng(4)
    for kinks in ([5], [0, 31], [10, 11], [3, 20, 40, 62]):
        d = rng.uniform(0.0, 2.0, 64)
        d[30:34] = 0.0
        k = np.asarray(kinks, dtype=np.int64)
        plus, minus = np.empty(64), np.empty(64)
        compiled(d, plus, minus, k)
        ref_plus, ref_minus = weno5_faces(d, k)
        np.testing.assert_allclose(plus, ref_plus, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(minus, ref_minus, rtol=1e-13, atol=1e-15)


# -- the option in runs ------------------------------------------------------------------------
def test_the_option_is_retired():
    """``time.one_sided_kinks`` is retired: a config naming it gets an error with the replacement
    (the stencils above stay, tested on their own)."""
    from solvers.api import load_config
    from solvers.model.config import ConfigError

    with pytest.raises(ConfigError, match=r"time\.one_sided_kinks: is retired"):
        load_config('[time]\none_sided_kinks = true\nlimiter = "weno5"\n')
