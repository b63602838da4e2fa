"""Honest orders (solvers.studies.orders): design orders from the data, E/P flags on synthetic
error sequences, Richardson on sequences with a known limit and order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers.studies import orders as od
from solvers.studies.converge import observed_orders


@pytest.mark.parametrize("space, scheme, activation, concentrated, label", [
    (True, "fv", "gelu", False, "2"),
    (True, "spectral", "gelu", False, "exponential"),
    (False, "fv", "gelu", False, "3"),
    (True, "spectral", "relu", False, "algebraic <= 2 (relu: C^1 potential)"),
    (True, "fv", "leaky_relu", False, "algebraic <= 2 (leaky_relu: C^1 potential)"),
    (False, "spectral", "relu", True, "algebraic <= 4 (relu: C^1 potential, concentrated density)"),
    (True, "spectral", "none", True, "algebraic <= 2 (concentrated density)"),
])
def test_design_order_from_scheme_and_data(space, scheme, activation, concentrated, label):
    integrator = 3 if scheme == "fv" else 4
    design = od.design_order(space, scheme, integrator, activation, concentrated)
    assert design.label() == label
    assert design.kind != "exponential" or (activation == "gelu" and not concentrated)


def test_design_order_attribute_is_the_number_when_exact():
    assert od.design_order(True, "fv", 3, "gelu", False).attr() == 2
    assert od.design_order(True, "fv", 3, "relu", False).attr().startswith("algebraic")


def test_concentration_from_atoms_or_tail():
    assert not od.is_concentrated(0, 1e-5)
    assert od.is_concentrated(1, 0.0) and od.is_concentrated(0, 0.01)


def test_flags_on_clean_erratic_and_pre_asymptotic_sequences():
    exact = od.DesignOrder("algebraic", 2)
    clean = observed_orders([2.0 ** (-2 * k) for k in range(5)], 2.0)
    assert od.order_flags(clean, exact) == ["", "", "", "", ""]
    # e_k = h^2 + 5 h (h = 2^-k): order ~1 first, then rising toward 2 (pre-asymptotic)
    pre = observed_orders([4.0 ** -k + 5 * 2.0 ** -k for k in range(4)], 2.0)
    assert od.order_flags(pre, exact)[1:] == ["P", "P", "P"]
    erratic = [np.nan, 2.0, 2.9, 1.1, 2.0]  # successive orders jump by > 0.3
    assert od.order_flags(erratic, exact) == ["", "", "EP", "EP", "E"]
    bound = od.DesignOrder("algebraic", 2, bound=True, reason="relu")
    # below the bound by more than the tolerance: L (allowed, but the scheme's order not seen)
    assert od.order_flags([np.nan, 1.5, 1.6, 2.6, -0.5], bound) == ["", "L", "L", "EP", "EP"]
    assert od.order_flags([np.nan, 1.8, 1.9], bound) == ["", "", ""]
    expo = od.DesignOrder("exponential")
    assert od.order_flags([np.nan, 4.0, 7.0, 3.0], expo) == ["", "", "E", "EP"]


def test_asymptotic_range():
    exact, bound = od.DesignOrder("algebraic", 2), od.DesignOrder("algebraic", 2, True, "relu")
    assert od.in_asymptotic_range([np.nan, 2.05], ["", ""], exact)
    assert not od.in_asymptotic_range([np.nan, 1.2], ["", "P"], exact)
    assert not od.in_asymptotic_range([np.nan, 1.2], ["", ""], bound)  # one order: no agreement
    assert od.in_asymptotic_range([np.nan, 1.2, 1.3, np.nan], ["", "", "", ""], bound)
    assert not od.in_asymptotic_range([np.nan, np.nan], ["", ""], exact)


@pytest.mark.parametrize("p, ratio", [(2.0, 2.0), (1.0, 2.0), (3.0, 1.5)])
def test_richardson_recovers_limit_order_and_error(p, ratio):
    limit, c = 0.7, 0.3
    q = [limit + c * ratio ** (-p * k) for k in range(4)]
    est, err, order = od.richardson(q, ratio)
    assert order == pytest.approx(p, rel=1e-9)
    assert est == pytest.approx(limit, abs=1e-13)
    assert err == pytest.approx(abs(q[-1] - limit), rel=1e-9)


def test_richardson_refuses_non_monotone_and_roundoff_sequences():
    assert all(math.isnan(v) for v in od.richardson([1.0, 1.1, 1.05], 2.0)[:2])
    assert all(math.isnan(v) for v in od.richardson([1.0, 1.1, 1.3], 2.0)[:2])
    assert all(math.isnan(v) for v in od.richardson([1.0, 1.0 + 1e-9, 1.0 + 1e-9 + 1e-17], 2.0)[:2])


def test_tail_error_of_a_geometric_sequence_of_distances():
    # errors e_k = 2^-2k; successive distances d_k = e_k - e_{k+1} = (3/4) e_k: e_last = d / 3
    e = [4.0 ** -k for k in range(5)]
    assert od.tail_error(e[3] - e[4], 2.0, 2.0) == pytest.approx(e[4], rel=1e-12)
    assert math.isnan(od.tail_error(1e-3, np.nan, 2.0))
