"""Noise in the S^1 time stepping (docs/noise.md §5): the heat semigroup against expm of the
discrete Laplacian and the exact heat solution, mass and positivity, the free energy's
monotonicity, the noisy growth rates ``s r_j - nu j^2`` (docs/math.md §3.2) and the stationary
state against the continued branch."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.special import iv

import solvers
from solvers.circle.grid.heat import CircleHeat
from solvers.studies.continuation_run import continue_states
from solvers.studies.stationary_linear import stability
from spectral import CircleBasis


def run(noise: float, n: int = 64, beta: float = 2.0, direction: str = "ascent",
        modes: list | None = None, t_end: float = 10.0, interval: float = 1.0, **time) -> object:
    """A pure-attention S^1 run with noise (the dataset)."""
    cfg = {"domain": {"manifold": "S1", "resolution": n},
           "model": {"beta": beta, "direction": direction, "noise": noise},
           "initial": {"kind": "uniform", "modes": modes or [[1, 1e-3]]},
           "time": {"t_end": t_end, **time},
           "output": {"snapshot_interval": interval, "progress": False}}
    return solvers.run(cfg)


def coefficient(ds, k: int) -> np.ndarray:
    """``|rho_hat_k| / rho_hat_0`` at every record (point values or cell averages)."""
    c = np.fft.rfft(ds["rho"].values, axis=-1)
    return np.abs(c[:, k]) / c[:, 0].real


def test_fv_heat_step_is_the_exponential_of_the_discrete_laplacian() -> None:
    basis, nu, tau = CircleBasis(32), 0.7, 0.05
    lap = (np.roll(np.eye(32), 1, axis=0) - 2 * np.eye(32) + np.roll(np.eye(32), -1, axis=0)) / basis.h**2
    exact = expm(tau * nu * lap)
    heat = CircleHeat(basis, nu, "fv")
    ours = np.stack([heat(e, tau) for e in np.eye(32)], axis=1)
    np.testing.assert_allclose(ours, exact, rtol=0, atol=1e-14)
    assert exact.min() > 0 and ours.min() > -1e-16  # a positive matrix (round-off aside)
    np.testing.assert_allclose(ours.sum(axis=0), 1.0, rtol=0, atol=1e-14)  # mass


@pytest.mark.parametrize("scheme", ["spectral", "fv"])
def test_pure_diffusion_is_the_exact_heat_solution(scheme: str) -> None:
    """beta = 1e-6 and no mode 1: the attention moves nothing (modes 3, 5 feel it at O(beta^2)),
    so the run is the heat equation; spectral against exp(-nu k^2 t) on the modes, fv against
    expm of its discrete Laplacian on the initial cell averages."""
    nu, t = 0.3, 2.0
    ds = run(nu, n=64, beta=1e-6, modes=[[3, 0.2], [5, 0.1]], t_end=t, interval=t, scheme=scheme)
    rho0, rho = ds["rho"].values[0], ds["rho"].values[-1]
    if scheme == "spectral":
        k = np.arange(33)
        expected = np.fft.irfft(np.fft.rfft(rho0) * np.exp(-nu * k**2 * t), n=64)
        theta = ds["theta"].values
        direct = (1 + 0.2 * np.exp(-9 * nu * t) * np.cos(3 * theta)
                  + 0.1 * np.exp(-25 * nu * t) * np.cos(5 * theta)) / (2 * np.pi)
        np.testing.assert_allclose(rho, direct, rtol=0, atol=1e-12)
    else:
        h = 2 * np.pi / 64
        lap = (np.roll(np.eye(64), 1, 0) - 2 * np.eye(64) + np.roll(np.eye(64), -1, 0)) / h**2
        expected = expm(t * nu * lap) @ rho0
    np.testing.assert_allclose(rho, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scheme, direction", [("spectral", "ascent"), ("fv", "ascent"),
                                               ("spectral", "descent"), ("fv", "descent")])
def test_mass_positivity_and_the_free_energy(scheme: str, direction: str) -> None:
    """Ascent at nu = 0.4 nu_1 (a peak forms, the density spans two decades and more) and descent from a
    concentrated start: mass to round-off, rho >= 0 at every record, F monotone (up for ascent,
    down for descent) and E != F."""
    nu1 = iv(1, 3.0) / 3.0
    modes = [[1, 0.5], [2, 0.3]] if direction == "descent" else [[1, 1e-2]]
    ds = run(0.4 * nu1, n=96, beta=3.0, direction=direction, modes=modes, t_end=15.0,
             interval=0.5, scheme=scheme)
    mass = ds["mass"].values
    np.testing.assert_allclose(mass, mass[0], rtol=0, atol=1e-13)
    assert ds["min_rho"].values.min() >= 0.0
    assert ds["max_rho"].values[-1] / ds["min_rho"].values[-1] > (100 if direction == "ascent" else 1)
    f = ds["free_energy"].values * (1 if direction == "ascent" else -1)
    assert np.all(np.diff(f) >= -1e-12 * np.abs(f[1:])), np.diff(f).min()
    assert f[-1] - f[0] > 1e-3  # it moved
    assert np.all(ds["free_energy"].values != ds["energy"].values)


@pytest.mark.parametrize("direction", ["ascent", "descent"])
def test_noisy_growth_rates(direction: str) -> None:
    """Mode j of a 1e-5 perturbation (one at a time) grows at ``s M j^2 I_j(beta)/beta - nu j^2`` (docs/math.md
    §3.2 plus the diffusion; at nu = 0.5 mode 1 grows under ascent, modes 2 and 3 decay),
    measured by the time stepper (the default method, ETDRK4 at dt = 0.01) from t = 0 to 1."""
    beta, nu, s = 2.0, 0.5, 1 if direction == "ascent" else -1
    for j in (1, 2, 3):  # one run each: mode 1 squared would feed mode 2
        ds = run(nu, n=64, beta=beta, direction=direction, modes=[[j, 1e-5]], t_end=1.0,
                 interval=0.5, dt=0.01)
        a = coefficient(ds, j)
        measured = np.log(a[2] / a[0])
        expected = s * j**2 * iv(j, beta) / beta - nu * j**2
        assert abs(measured - expected) < 1e-6 * max(1.0, abs(expected)), (j, measured, expected)


@pytest.mark.slow
def test_a_noisy_run_ends_on_the_stable_branch() -> None:
    """docs/noise.md: pure attention, beta = 2, ascent, nu = 0.6 nu_1, uniform + 1e-3 cos theta,
    run (the default method) until stationary: |rho_hat_1| / rho_hat_0 is that of the stable
    branch that ``meanfield continue`` computes at the same nu, to 1e-6."""
    beta = 2.0
    nu = 0.6 * iv(1, beta) / beta
    ds = run(nu, n=64, beta=beta, t_end=400.0, interval=2.0, stop_when_stationary=True,
             stationary_window_time=20.0, stationary_tol=1e-10)
    assert ds.attrs["method"] == "spectral" and float(ds["time"].values[-1]) < 400.0  # it stopped
    cfg = solvers.load_config({"domain": {"manifold": "S1", "resolution": 64},
                               "model": {"beta": beta, "direction": "ascent", "noise": 1.0}})
    result = continue_states(cfg, "model.noise", 0.5 * nu, at=(nu,), depth=1, max_branches=3)
    problem = result.problem.at("model.noise", nu)
    stable = [problem.moments(r.x, 1)[0] for r in result.records
              if r.kind == "requested" and np.isclose(r.value, nu, rtol=1e-14)
              and stability(problem, r.x).stable]
    assert stable and np.ptp(stable) < 1e-12  # both directions of the mode-1 branch
    measured = float(coefficient(ds, 1)[-1])
    assert abs(measured - stable[0]) < 1e-6, (measured, stable[0])
