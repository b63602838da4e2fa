"""The numba kernels against the numpy reference: same results to round-off (docs/math.md §6).

Random densities (with empty cells, so that the outflow limiter and the mass floor act) and
random face velocities, every limiter, with and without the Euler step ``dt``; on S^1 and
on S^2 (reduced grid), and the S^2 face velocities (unnormalised and softmax).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_config, perceptron

from solvers.circle.grid.fv import fv, transport
from solvers.circle.problem import CircleProblem
from solvers.core.backend import default_backend, numba_available, resolve_backend
from solvers.core.limiters import LIMITERS
from solvers.model.params import ModelParams, PerceptronParams
from solvers.sphere.grid.fv import SphereFV
from solvers.sphere.cells import SphereGrid
from solvers.sphere.problem import SphereProblem
from spectral import CircleBasis

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba not installed")
ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-14


def close(a, b, tol=TOL):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(float(np.max(np.abs(b))), 1e-300)
    return float(np.max(np.abs(a - b))) <= tol * scale


def random_density(rng, shape, empty=0.3):
    rho = rng.random(shape) ** 2
    rho[rng.random(shape) < empty] = 0.0
    return rho


@pytest.mark.parametrize("limiter", list(LIMITERS))
@pytest.mark.parametrize("dt", [None, 1e-3, 0.05])
@pytest.mark.parametrize("n", [16, 257])
def test_circle_transport_numba_matches_numpy(limiter, dt, n):
    rng = np.random.default_rng(n + len(limiter))
    h = 2 * np.pi / n
    for _ in range(5):
        rho = random_density(rng, n)
        u = rng.normal(size=n) * 3.0
        u[rng.random(n) < 0.1] = 0.0
        ref, rate_ref = transport(rho, u, h, limiter, dt, backend="numpy")
        got, rate = transport(rho, u, h, limiter, dt, backend="numba")
        assert close(got, ref)
        assert rate == pytest.approx(rate_ref, rel=TOL, abs=0.0)
        assert abs(np.sum(got)) <= 1e-13 * np.sum(np.abs(got))  # telescoping


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
def test_circle_rhs_numba_matches_numpy(attention):
    cfg = make_config(128, beta=3.0, attention=attention, percep=perceptron())
    prob = CircleProblem(cfg.model, CircleBasis(128))
    rho = 1.0 + 0.5 * np.cos(np.arange(128) * 2 * np.pi / 128) ** 3
    for dt in (None, 0.02):
        ref = fv(prob, "mc", backend="numpy")(rho, dt)
        got = fv(prob, "mc", backend="numba")(rho, dt)
        assert close(got[0], ref[0]) and got[1] == pytest.approx(ref[1], rel=TOL)


A3 = np.array([(-0.56, 0.045, -0.83), (-0.90, 0.36, -0.27), (0.48, 0.15, -0.86)])
OMEGA3 = np.array([-0.42, -1.11, -0.36])


def sphere_problem(lmax, attention="unnormalized", backend=None, merge_ratio=0.5):
    model = ModelParams(2.0, "descent", attention, "exp_shifted", PerceptronParams("relu", A3, OMEGA3, np.zeros(3)))
    return SphereProblem(model, SphereGrid(lmax, merge_ratio=merge_ratio), backend)


@pytest.fixture(scope="module")
def sphere31():
    return sphere_problem(31)


@pytest.mark.parametrize("limiter", list(LIMITERS))
@pytest.mark.parametrize("dt", [None, 1e-3, 0.05])
def test_sphere_transport_numba_matches_numpy(sphere31, limiter, dt):
    prob, grid = sphere31, sphere31.grid
    rng = np.random.default_rng(len(limiter))
    ref_fv = SphereFV(prob, limiter, backend="numpy")
    num_fv = SphereFV(prob, limiter, backend="numba")
    nlat, nphi = grid.shape
    for _ in range(3):
        rho = grid.to_fine(random_density(rng, grid.n_cells))
        u_theta = rng.normal(size=(nlat + 1, nphi)) * 3.0
        u_phi = rng.normal(size=(nlat, nphi)) * 3.0
        ref, rate_ref = ref_fv.transport(rho, u_theta, u_phi, dt)
        got, rate = num_fv.transport(rho, u_theta, u_phi, dt)
        assert close(got, ref)
        assert rate == pytest.approx(rate_ref, rel=TOL, abs=0.0)
        assert abs(np.sum(got * grid.area)) <= 1e-13 * np.sum(np.abs(got) * grid.area)
        if dt is not None:  # one limited Euler step keeps rho >= 0
            assert np.min(rho + dt * got) >= -1e-14 * rho.max()


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
def test_sphere_velocities_and_rhs_numba_match_numpy(attention):
    prob = sphere_problem(31, attention)
    grid = prob.grid
    x = grid.points(grid.theta, grid.phi)
    rho = grid.to_fine(grid.to_cells((1 + 0.6 * x[..., 0] * x[..., 2] + 0.3 * x[..., 1]) / (4 * np.pi)))
    f_lm = prob.kernel_coefficients(rho)
    for where in ("theta_faces", "phi_faces"):
        assert close(prob.velocity(f_lm, where, backend="numba"), prob.velocity(f_lm, where, backend="numpy"))
    for dt in (None, 0.01):
        ref = SphereFV(prob, backend="numpy")(rho, dt)
        got = SphereFV(prob, backend="numba")(rho, dt)
        assert close(got[0], ref[0], 1e-13) and got[1] == pytest.approx(ref[1], rel=1e-13)


def test_backend_selection(monkeypatch):
    assert resolve_backend("numpy") == "numpy" and resolve_backend("numba") == "numba"
    with pytest.raises(ValueError):
        resolve_backend("fortran")
    monkeypatch.setenv("MEANFIELD_NUMPY", "1")
    assert default_backend() == "numpy" and resolve_backend(None) == "numpy"
    monkeypatch.delenv("MEANFIELD_NUMPY")
    assert default_backend() == "numba"


@pytest.mark.slow
def test_kernels_load_from_cache_in_a_new_process():
    """``cache=True``: a second process finds the compiled kernels on disk (no compile)."""
    # numba's own counters, not a wall time (a busy machine made loading take over a second)
    code = ("import sys, numpy as np; from numba.core.registry import CPUDispatcher; "
            "from solvers.circle.grid.fv import transport; "
            "transport(np.ones(8), np.ones(8), 1.0, 'mc', 0.1, backend='numba'); "
            "kernels = [v for n, m in list(sys.modules.items()) if n.startswith('solvers') "
            "for v in vars(m).values() if isinstance(v, CPUDispatcher)]; "
            "print(sum(sum(k.stats.cache_hits.values()) for k in kernels), "
            "sum(sum(k.stats.cache_misses.values()) for k in kernels))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)  # fills the cache
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    hits, misses = (int(x) for x in out.stdout.split()[-2:])
    assert hits >= 1 and misses == 0  # loaded from the cache, nothing compiled
