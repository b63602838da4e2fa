"""Fifth-order WENO face values on S^1 (``time.limiter = "weno5"``, solvers/core/limiters.py).

Against exact face values of smooth cell averages (fifth order), mass and positivity in runs,
S^2 refused, and the paper demo's Dirac state giving the same atoms at N = 128 and N = 512
(docs/methods.md §6.2, the Dirac state). The numba kernel against the numpy reference, with
random cell widths: tests/circle/test_kink_faces.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers.circle.grid.fv import transport
from solvers.core.backend import numba_available
from solvers.core.limiters import weno5_faces
from solvers.model.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "runs" / "demo.toml"


def averages(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell averages of ``exp(sin t)`` on N cells centred at ``2 pi i / N`` (fine quadrature),
    and its exact values at the right and left faces."""
    h = 2 * np.pi / n
    theta = h * np.arange(n)
    sub = (np.arange(64) + 0.5) / 64 - 0.5
    avg = np.mean(np.exp(np.sin(theta[:, None] + h * sub[None, :])), axis=1)
    # the midpoint rule on 64 sub-cells is exact to ~1e-6 h^2: refine it with Richardson
    sub2 = (np.arange(128) + 0.5) / 128 - 0.5
    avg2 = np.mean(np.exp(np.sin(theta[:, None] + h * sub2[None, :])), axis=1)
    avg = (4 * avg2 - avg) / 3
    return avg, np.exp(np.sin(theta + h / 2)), np.exp(np.sin(theta - h / 2))


def test_face_values_are_fifth_order():
    errors = []
    for n in (32, 64, 128):
        avg, right, left = averages(n)
        plus, minus = weno5_faces(avg)
        errors.append(max(np.max(np.abs(plus - right)), np.max(np.abs(minus - left))))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 4.5), (errors, orders)


def test_face_values_are_never_negative():
    rho = np.zeros(64)
    rho[20:23] = [1.0, 5.0, 1.0]  # a spike next to empty cells: the polynomials undershoot
    plus, minus = weno5_faces(rho)
    assert plus.min() >= 0.0 and minus.min() >= 0.0


@pytest.mark.parametrize("representation", ["grid", "dirac"])
def test_runs_keep_mass_and_positivity(representation):
    ds = solvers.run(DEMO, domain__resolution=128, time__limiter="weno5", time__t_end=400.0,
                     time__stop_when_stationary=False, atoms__representation=representation,
                     output__snapshot_interval=100.0)
    mass = ds["mass"].values
    assert np.max(np.abs(mass - mass[0])) < 1e-13
    assert float(ds["min_rho"].min()) >= 0.0


def test_s2_refuses_weno5():
    with pytest.raises(ConfigError, match="time.limiter") as err:
        solvers.load_config(ROOT / "runs" / "s2_descent_relu.toml", time__limiter="weno5")
    assert "S1 only" in str(err.value)


def test_dirac_demo_same_atoms_at_128_and_512():
    """Measured: N = 128 / 512 / 1024 masses within 8.0e-4 of each other (all five atoms)."""
    found = []
    for n in (128, 512):
        ds = solvers.run(DEMO, domain__resolution=n, time__limiter="weno5",
                         atoms__representation="dirac", output__snapshot_interval=100.0)
        last = ds.isel(time=-1)
        mass, pos = last["atom_mass"].values, last["atom_position"].values
        keep = np.isfinite(mass)
        found.append(mass[keep][np.argsort(pos[keep])])
    assert found[0].size == found[1].size == 5
    assert np.max(np.abs(found[0] - found[1])) < 1e-3


@pytest.mark.parametrize("backend", ["numpy"] + (["numba"] if numba_available() else []))
def test_empty_and_tiny_densities_stay_finite(backend):
    """An all-zero density (a measure of Dirac atoms only) and one of 1e-250 (eps must not
    underflow when squared)."""
    for scale in (0.0, 1e-250):
        rho = np.full(32, scale)
        rho[5] *= 3.0
        got, rate = transport(rho, np.linspace(-1, 1, 32), 0.2, "weno5", 0.1, backend=backend)
        assert np.all(np.isfinite(got)) and np.isfinite(rate)
        assert abs(np.sum(got)) <= 1e-13 * max(np.sum(np.abs(got)), 1e-300)
