"""Noise in the S^2 time stepping (docs/noise.md §5): pure diffusion against the exact heat
solution, mass, positivity and the free energy's monotonicity, and the noisy growth rates
``s M l(l+1) i_l(beta)/beta - nu l(l+1)`` (docs/math.md §3.2) against the time stepper."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import spherical_in

import solvers
from spectral import SphereBasis

LMAX = 31


def run(noise: float, beta: float = 2.0, direction: str = "ascent", modes: list | None = None,
        t_end: float = 2.0, interval: float = 0.5, **time) -> object:
    """A pure-attention S^2 run with noise (the default method: spectral)."""
    cfg = {"domain": {"manifold": "S2", "resolution": LMAX},
           "model": {"beta": beta, "direction": direction, "noise": noise},
           "initial": {"kind": "uniform", "modes": modes or [[1, 0, 1e-3]]},
           "time": {"t_end": t_end, **time},
           "output": {"snapshot_interval": interval, "progress": False}}
    return solvers.run(cfg)


def coefficients(ds, l: int) -> np.ndarray:  # noqa: E741 (the degree)
    """The ``Y_l0`` coefficient of every record."""
    b = SphereBasis(LMAX)
    return np.array([b.forward(r)[b.index(l, 0)].real for r in ds["rho"].values])


def test_pure_diffusion_is_the_exact_heat_solution() -> None:
    """beta = 1e-6, degrees 3 and 4 only: the attention moves them at O(beta^2); Y_l0 decays as exp(-nu l(l+1) t)."""
    nu, t = 0.2, 1.0
    ds = run(nu, beta=1e-6, modes=[[3, 0, 0.1], [4, 0, 0.05]], t_end=t, interval=t)
    assert ds.attrs["method"] == "spectral"
    for l in (3, 4):  # noqa: E741
        a = coefficients(ds, l)
        # atol: the potential's constant part M / beta = 1e6 leaves round-off of ~1e-10 in grad U
        np.testing.assert_allclose(a[-1], a[0] * np.exp(-nu * l * (l + 1) * t), rtol=0, atol=1e-8)
        assert a[-1] < 0.1 * a[0]  # it decayed (by e^-2.4 and e^-4)


@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_mass_positivity_and_the_free_energy(direction: str) -> None:
    nu1 = spherical_in(1, 2.0) / 2.0
    modes = [[1, 0, 1e-2]] if direction == "ascent" else [[1, 0, 0.1], [2, 1, 0.05]]
    ds = run(0.7 * nu1, direction=direction, modes=modes, t_end=12.0, interval=0.5)
    mass = ds["mass"].values
    np.testing.assert_allclose(mass, mass[0], rtol=0, atol=1e-13)
    assert ds["min_rho"].values.min() > 0.0
    f = ds["free_energy"].values * (1 if direction == "ascent" else -1)
    assert np.all(np.diff(f) >= -1e-12 * np.abs(f[1:])), np.diff(f).min()
    assert f[-1] - f[0] > 1e-3


@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_noisy_growth_rates(direction: str) -> None:
    beta, nu, s = 2.0, 0.3, 1 if direction == "ascent" else -1
    for l in (1, 2):  # noqa: E741 (one run each; 1e-8: Y_20 squared feeds Y_20)
        ds = run(nu, beta=beta, direction=direction, modes=[[l, 0, 1e-8]], t_end=1.0,
                 interval=1.0, dt=0.01)
        a = coefficients(ds, l)
        measured = np.log(a[-1] / a[0])
        expected = l * (l + 1) * (s * spherical_in(l, beta) / beta - nu)
        assert abs(measured - expected) < 1e-6 * max(1.0, abs(expected)), (l, measured, expected)
