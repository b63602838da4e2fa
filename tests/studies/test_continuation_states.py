"""Noisy stationary states: Newton's quadratic convergence, the free energy's stationarity, the
stability verdict against the free energy's Hessian, the noisy time evolution against the
continued branch, and ``meanfield continue`` (docs/noise.md)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.special import iv

from solvers.cli.main import main
from solvers.model.config import load_config
from solvers.studies.continuation_run import continue_states
from solvers.studies.stationary import build_problem, newton, uniform_state
from solvers.studies.stationary_linear import stability

RELU = ('[perceptron]\nactivation = "relu"\na = [[-0.9967, 0.0806], [-0.6199, -0.7847]]\n'
        'omega = [0.6325, -0.4697]\n')


def config(text: str):
    return load_config('[domain]\nmanifold = "S1"\nresolution = 128\n' + text)


def demo(noise: float, direction: str = "descent"):
    return config(f'[model]\nbeta = 5.0\ndirection = "{direction}"\nkernel = "exp_shifted"\n'
                  f'noise = {noise}\n' + RELU)


def test_newton_converges_quadratically() -> None:
    problem = build_problem(demo(0.02))
    x, history = newton(problem, uniform_state(problem))
    assert history[-1] <= 1e-13
    e = np.array(history)
    fast = e[(e > 1e-14) & (e < 0.5)]  # the asymptotic regime, above round-off
    assert fast.size >= 4
    orders = np.log(fast[2:] / fast[1:-1]) / np.log(fast[1:-1] / fast[:-2])
    assert np.all(orders > 1.7), (history, orders)


def test_free_energy_is_stationary_at_a_stationary_state() -> None:
    """d/d eps F(rho + eps delta) = 0 for mean-zero delta, and dF/dnu = -s int rho log rho
    along the branch (the envelope theorem), with F = E - s nu int rho log rho."""
    nu = 0.1
    problem = build_problem(demo(nu), symmetric=False)
    x, _ = newton(problem, uniform_state(problem))
    rho, b = problem.density(x), problem.basis
    delta = problem.rho0 * (np.cos(2 * b.points[:, 0]) + 0.5 * b.points[:, 1] ** 3)
    delta -= b.integrate(delta) / b.area  # mean zero, in the basis' span
    eps = 1e-5
    slope = (problem.free_energy(rho + eps * delta) - problem.free_energy(rho - eps * delta)) / (2 * eps)
    energy_slope = b.integrate(delta * problem.potential(x))  # dE alone: O(1)
    assert abs(slope) <= 1e-7 * abs(energy_slope)
    h = 1e-4 * nu
    f = [problem.at("model.noise", v).free_energy(problem.at("model.noise", v).density(
        newton(problem.at("model.noise", v), x)[0])) for v in (nu + h, nu - h)]
    entropy = b.integrate(rho * np.log(rho))
    np.testing.assert_allclose((f[0] - f[1]) / (2 * h), -problem.sign * entropy, rtol=1e-6)


def test_stability_agrees_with_the_free_energy_hessian() -> None:
    """L = s A H: stable iff the fixed-point Jacobian I - P dR of the full (unsymmetric) problem
    has no negative eigenvalue, the rotation's zero aside (docs/noise.md §2)."""
    cfg = config('[model]\nbeta = 2.0\ndirection = "ascent"\nnoise = 1.0\n')
    result = continue_states(cfg, "model.noise", 0.09, depth=1)
    full = build_problem(cfg, symmetric=False)
    verdicts = set()
    for rec in result.records[::7]:
        sym = result.problem.at("model.noise", rec.value)
        problem = full.at("model.noise", rec.value)
        x = problem.basis.project(sym.density(rec.x))
        assert np.max(np.abs(problem.residual(x))) <= 1e-11 * problem.rho0
        mu = np.sort(np.linalg.eigvals(problem.jacobian(x)).real)
        moving = np.abs(x[problem.basis.degree > 0]).max() > 1e-9 * problem.rho0
        if moving:  # the rotation's neutral direction
            mu = np.delete(mu, np.argmin(np.abs(mu)))
        verdict = stability(sym, rec.x).stable
        assert verdict == bool(mu.min() > 1e-9), (rec.branch, rec.value, mu[:3])
        verdicts.add(verdict)
    assert verdicts == {True, False}


def test_descent_states_are_all_stable() -> None:
    """With descent the free energy is convex (K positive definite): one stable branch."""
    result = continue_states(demo(1.0), "model.noise", 0.05, depth=1)
    assert len(result.parents) == 1 and not any(r.kind for r in result.records[1:-1])
    for rec in result.records[::10]:
        st = stability(result.problem.at("model.noise", rec.value), rec.x)
        assert st.stable and st.neutral == 0


def noisy_run(beta: float, nu: float, n: int = 64, t_end: float = 160.0, dt: float = 0.02) -> float:
    """An independent pseudo-spectral integrating-factor RK4 run of pure attention (ascent,
    exp kernel, M = 1) from ``(1 + 1e-3 cos theta) / (2 pi)``; returns |rho_hat_1| / rho_hat_0."""
    theta = 2 * np.pi * np.arange(n) / n
    k = np.arange(n // 2 + 1)
    mult = 2 * np.pi * iv(k, beta) / beta  # U_att = (1/beta) K*rho, Fourier multiplier
    rhs_k = lambda c: -1j * k * np.fft.rfft(np.fft.irfft(c, n) * np.fft.irfft(1j * k * mult * c, n))
    c = np.fft.rfft((1 + 1e-3 * np.cos(theta)) / (2 * np.pi))
    decay = np.exp(-nu * k**2 * dt / 2)  # integrating factor of the Laplacian over half a step
    for _ in range(int(round(t_end / dt))):
        a = rhs_k(c)
        b = rhs_k(decay * (c + 0.5 * dt * a)) / decay
        d = rhs_k(decay * (c + 0.5 * dt * b)) / decay
        e = rhs_k(decay**2 * (c + dt * d)) / decay**2
        c = decay**2 * (c + dt / 6 * (a + 2 * b + 2 * d + e))
    return float(abs(c[1]) / abs(c[0]))


def test_a_noisy_run_ends_on_the_stable_branch() -> None:
    beta = 2.0
    nu = 0.6 * iv(1, beta) / beta
    cfg = config(f'[model]\nbeta = {beta}\ndirection = "ascent"\nnoise = 1.0\n')
    result = continue_states(cfg, "model.noise", 0.5 * nu, at=(nu,), depth=1, max_branches=3)
    at = [r for r in result.records if r.kind == "requested" and np.isclose(r.value, nu, rtol=1e-14)]
    states = {bool(stability(result.problem.at("model.noise", nu), r.x).stable):
              result.problem.at("model.noise", nu).moments(r.x, 1)[0] for r in at}
    assert set(states) == {True, False} and states[False] < 1e-12  # the uniform state: unstable
    np.testing.assert_allclose(noisy_run(beta, nu), states[True], rtol=0, atol=1e-6)


def test_cli_writes_the_archive_and_the_figure(tmp_path, capsys) -> None:
    cfg = tmp_path / "pure.toml"
    cfg.write_text('[domain]\nmanifold = "S1"\nresolution = 64\n[model]\nbeta = 2.0\n'
                   'direction = "ascent"\nnoise = 1.0\n')
    out, png = tmp_path / "c.nc", tmp_path / "c.png"
    assert main(["continue", str(cfg), "--param", "model.noise", "--to", "0.3", "--at", "0.5",
                 "-o", str(out), "--figure", str(png)]) == 0
    assert "branch_point  model.noise = 0.79531842731" in capsys.readouterr().out
    with xr.open_dataset(out) as ds:
        for name in ("parameter", "branch", "stable", "free_energy", "rho", "eigenvalues",
                     "special_parameter", "special_kind"):
            assert name in ds
        assert ds["stable"].dtype == bool and ds["rho"].dims == ("point", "theta")
        assert list(ds["special_kind"].values) == ["branch_point"] * 2
        assert np.isclose(ds["parameter"].values, 0.5).sum() == 3  # one per branch
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["continue", str(cfg), "--param", "model.noise", "--to", "0",
                 "-o", str(tmp_path / "d.nc")]) == 2
    assert "error: --to: model.noise must stay > 0" in capsys.readouterr().err
    assert main(["run", str(cfg), "-o", str(tmp_path / "r.nc"), "-q"]) == 0  # noise: time-stepped too
    with xr.open_dataset(tmp_path / "r.nc") as ds:
        assert "free_energy" in ds and ds.attrs["method"] == "spectral"
