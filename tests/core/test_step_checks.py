"""The checks after each step (``Solver._checked``): the compiled one-pass extremes against
numpy, and what the solver does with them (flush, clip, raise)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import make_config
from hypothesis import given, settings
from hypothesis import strategies as hst

from solvers.core.kernels_numba import extremes
from solvers.timestepping.simulation import FLUSH_FRACTION, BlowUpError, Solver

values = hst.floats(allow_nan=True, allow_infinity=True, width=64) | hst.sampled_from([0.0, 1e-310, -1e-300])


@settings(max_examples=200, deadline=None)
@given(a=hst.lists(values, min_size=0, max_size=40), cut=hst.integers(0, 40))
def test_extremes_match_numpy(a, cut):
    arr = np.array(a, dtype=float)
    grid = min(cut, arr.size)
    low, top, positive, finite = extremes(arr, grid)
    assert finite == bool(np.isfinite(arr).all())
    if not finite:
        return
    d = arr[:grid]
    assert (low, top) == ((d.min(), d.max()) if grid else (math.inf, -math.inf))
    assert positive == (d[d > 0].min() if np.any(d > 0) else math.inf)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_checked_flushes_clips_and_raises(backend, monkeypatch):
    if backend == "numpy":
        monkeypatch.setenv("MEANFIELD_NUMPY", "1")
    n = 96
    cfg = make_config(n=n, beta=1.0, scheme="fv", t_end=1.0)
    solver = Solver(cfg, np.full(n, 1 / (2 * np.pi)))
    rho = np.full(n, 0.5)
    assert solver._checked(rho, 0.1, clip=True) is rho  # nothing to change: the same array
    rho[3], rho[5] = 1e-120, -1e-14  # below FLUSH_FRACTION * max, a round-off negative
    out = solver._checked(rho, 0.1, clip=True)
    assert out[3] == 0.0 and out[5] == 0.0 and np.all(out[6:] == 0.5) and FLUSH_FRACTION * 0.5 > 1e-120
    assert solver._checked(rho, 0.1, clip=False) is rho  # the spectral scheme: no clipping
    rho[5] = -1e-3
    with pytest.raises(FloatingPointError, match="went negative"):
        solver._checked(rho, 0.1, clip=True)
    rho[5] = np.nan
    with pytest.raises(BlowUpError, match="non-finite"):
        solver._checked(rho, 0.1, clip=False)
