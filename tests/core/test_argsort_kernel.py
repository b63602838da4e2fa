"""The compiled stable sort of the saddle detector (solvers.core.atoms_numba._argsort_descending)
is numpy's ``argsort(-values, kind="mergesort")``: descending, ties in index order, NaN last."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

pytest.importorskip("numba")

from solvers.core.atoms_numba import _argsort_descending  # noqa: E402

few = st.sampled_from([0.0, 1.0, -2.5, 3.0, np.nan, np.inf])  # many ties
values = st.one_of(arrays(np.float64, st.integers(0, 70), elements=few),
                   arrays(np.float64, st.integers(0, 300), elements=st.floats(-1e3, 1e3)))


@settings(max_examples=400, deadline=None)
@given(values)
def test_it_is_numpys_stable_descending_order(v):
    np.testing.assert_array_equal(_argsort_descending(v), np.argsort(-v, kind="mergesort"))


def test_it_sorts_a_view_and_leaves_it_alone():
    v = np.array([3.0, 1.0, 3.0, 2.0, 5.0, 1.0])[1:5]
    before = v.copy()
    assert _argsort_descending(v).tolist() == [3, 1, 2, 0]
    np.testing.assert_array_equal(v, before)
