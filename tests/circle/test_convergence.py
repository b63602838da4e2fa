"""Grid convergence of both S^1 schemes before concentration (benchmarks/convergence_s1.py)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "convergence_s1", Path(__file__).resolve().parents[2] / "benchmarks" / "convergence_s1.py")
conv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conv)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_smooth_case_fv_second_order_spectral_exponential():
    sizes = [128, 256, 512, 1024]
    errors = conv.table("gelu", 2.0, sizes)
    fv_orders = np.log2(np.array(errors["fv"][:-1]) / np.array(errors["fv"][1:]))
    assert np.all(fv_orders > 1.4) and fv_orders[-1] == pytest.approx(2.0, abs=0.3)
    assert errors["spectral"][2] < 1e-13  # N = 512: round-off
    assert errors["spectral"][0] > 1e4 * errors["spectral"][1]  # faster than any power


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_relu_case_w1_second_order():
    sizes = [128, 256, 512]
    errors = conv.table("relu", 2.0, sizes)
    for scheme in ("fv", "spectral"):
        orders = np.log2(np.array(errors[scheme][:-1]) / np.array(errors[scheme][1:]))
        assert np.all(orders > 1.6), (scheme, orders)


def test_w1_of_a_shifted_atom():
    n = 256
    a, b = np.zeros(n), np.zeros(n)
    a[10], b[14] = n / (2 * np.pi), n / (2 * np.pi)  # unit atoms, 4 cells apart
    assert conv.w1(a, b) == pytest.approx(4 * 2 * np.pi / n, rel=1e-3)
