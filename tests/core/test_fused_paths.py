"""The fused / truncated fast paths of the S^2 step against their references.

- analysis of degrees ``l <= L`` only (rfft + compiled Gauss-Legendre sums) against the full
  shtns analysis: equal to 1e-14 of the largest coefficient, exactly 0 above ``L``;
- both face velocities from one batched irfft against the per-component synthesis (bitwise)
  and the numpy reference (1e-14);
- the band-by-band fv kernel against the numpy reference on grids without merging, with the
  default merging and with heavy merging;
- the compiled Shu-Osher stage combinations against the numpy form (bitwise), and mass to
  round-off over many steps.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.backend import keep_freed_memory, numba_available
from solvers.core.limiters import LIMITERS
from solvers.model.params import ModelParams, PerceptronParams
from solvers.sphere.grid.fv import SphereFV
from solvers.sphere.cells import SphereGrid
from solvers.sphere.problem import SphereProblem
from solvers.timestepping.integrators import (
    FUSE_MIN_SIZE,
    INTEGRATORS,
    _fusable,
    rk_step,
)

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba not installed")

A3 = np.array([(-0.56, 0.045, -0.83), (-0.90, 0.36, -0.27), (0.48, 0.15, -0.86)])
OMEGA3 = np.array([-0.42, -1.11, -0.36])


def problem(lmax, attention="unnormalized", beta=2.0, merge_ratio=0.5, kernel="exp_shifted"):
    model = ModelParams(beta, "descent", attention, kernel, PerceptronParams("relu", A3, OMEGA3, np.zeros(3)))
    return SphereProblem(model, SphereGrid(lmax, merge_ratio=merge_ratio))


def smooth_density(grid, amp=0.6):
    x = grid.points(grid.theta, grid.phi)
    return grid.to_fine(grid.to_cells((1 + amp * x[..., 0] * x[..., 2] + 0.3 * x[..., 1]) / (4 * np.pi)))


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("lmax,beta", [(31, 2.0), (63, 1.0), (63, 30.0), (95, 4.0)])
def test_truncated_analysis_matches_shtns(lmax, beta):
    prob = problem(lmax, beta=beta)
    rng = np.random.default_rng(lmax)
    degrees = prob.grid.basis.degrees
    for rho in (smooth_density(prob.grid), rng.random(prob.grid.shape)):
        got = prob.kernel_coefficients(rho, backend="numba")
        ref = prob.kernel_coefficients(rho, backend="numpy")
        assert rel_err(got, ref) <= 1e-14
        assert np.all(got[degrees > prob.bandwidth] == 0)


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
def test_batched_face_velocities(attention):
    prob = problem(47, attention)
    f_lm = prob.kernel_coefficients(smooth_density(prob.grid))
    batched = prob.face_velocities(f_lm, backend="numba")
    for got, where in zip(batched, ("theta_faces", "phi_faces")):
        assert np.array_equal(got, prob.velocity(f_lm, where, backend="numba"))
        assert rel_err(got, prob.velocity(f_lm, where, backend="numpy")) <= 1e-14
    assert all(np.array_equal(a, b) for a, b in zip(batched, prob.face_velocities(f_lm, backend="numba")))


@pytest.mark.parametrize("merge_ratio", [0.0, 0.5, 2.0])
@pytest.mark.parametrize("limiter", list(LIMITERS))
@pytest.mark.parametrize("dt", [None, 1e-3, 0.05])
def test_band_kernel_matches_numpy_with_any_merging(merge_ratio, limiter, dt):
    prob = problem(31, merge_ratio=merge_ratio)
    grid = prob.grid
    nlat, nphi = grid.shape
    rng = np.random.default_rng(int(10 * merge_ratio) + len(limiter))
    ref_fv, num_fv = SphereFV(prob, limiter, backend="numpy"), SphereFV(prob, limiter, backend="numba")
    for _ in range(3):
        cells = rng.random(grid.n_cells) ** 2
        cells[rng.random(grid.n_cells) < 0.3] = 0.0
        rho = grid.to_fine(cells)
        u_theta, u_phi = rng.normal(size=(nlat + 1, nphi)) * 3.0, rng.normal(size=(nlat, nphi)) * 3.0
        u_phi[rng.random(u_phi.shape) < 0.05] = 0.0
        ref, rate_ref = ref_fv.transport(rho, u_theta, u_phi, dt)
        got, rate = num_fv.transport(rho, u_theta, u_phi, dt)
        assert np.max(np.abs(got - ref)) <= 1e-14 * np.max(np.abs(ref))
        assert rate == pytest.approx(rate_ref, rel=1e-14, abs=0.0)
        assert abs(np.sum(got * grid.area)) <= 1e-13 * np.sum(np.abs(got) * grid.area)
        assert np.array_equal(got, grid.to_fine(num_fv.cells(got)))  # constant over merged cells


@pytest.mark.parametrize("name", ["euler", "ssprk2", "ssprk3"])
def test_fused_shu_osher_stages_are_bitwise_the_numpy_form(name):
    prob = problem(63)  # 64 x 128 = FUSE_MIN_SIZE values: the fused path
    rhs = SphereFV(prob)
    rho = smooth_density(prob.grid)
    assert _fusable(rho, rho)
    for dt in (1e-3, 0.02):
        got, rate = rk_step(INTEGRATORS[name], rhs, rho, dt, backend="numba")
        ref, rate_ref = rk_step(INTEGRATORS[name], rhs, rho, dt, backend="numpy")
        assert np.array_equal(got, ref) and rate == rate_ref
    # 1-D states (S^1 layout; one large enough to be fused) and a non-contiguous state (numpy)
    u = np.random.default_rng(1).random(FUSE_MIN_SIZE + 301)

    def decay(v, dt=None):
        return -v * np.cos(np.arange(v.size)).reshape(v.shape), 1.0

    a = rk_step(INTEGRATORS[name], decay, u, 0.1, backend="numba")[0]
    assert np.array_equal(a, rk_step(INTEGRATORS[name], decay, u, 0.1, backend="numpy")[0])
    v = np.random.default_rng(2).random((8, 12))[:, ::2]
    assert np.array_equal(rk_step(INTEGRATORS[name], decay, v, 0.1, backend="numba")[0],
                          rk_step(INTEGRATORS[name], decay, v, 0.1, backend="numpy")[0])


@pytest.mark.parametrize("merge_ratio", [0.0, 2.0])
@pytest.mark.parametrize("limiter", ["mc", "minmod"])
def test_sphere_fused_stage_is_bitwise_rhs_then_combination(merge_ratio, limiter):
    """SphereFV.fused_stage (the combination inside the fv kernel) against the right-hand side
    followed by the numpy form of the stage, with and without the ``alpha (uj - u0)`` term."""
    prob = problem(31, merge_ratio=merge_ratio)
    fv = SphereFV(prob, limiter, backend="numba")
    rho = smooth_density(prob.grid)
    u0, uj = prob.grid.to_fine(prob.grid.to_cells(rho * 1.1)), prob.grid.to_fine(prob.grid.to_cells(rho * 0.9))
    for dt, c, alpha in ((0.02, 0.25, 0.0), (0.05, 2 / 3, 1 / 3)):
        k, rate_ref = fv(rho, dt)
        ref = u0 + c * k
        if alpha:
            ref = ref + alpha * (uj - u0)
        got, rate = fv.fused_stage(rho, dt, u0, c, alpha, uj)
        assert np.array_equal(got, ref) and rate == rate_ref


def test_fast_path_conserves_mass_to_roundoff():
    prob = problem(63, beta=4.0)
    rhs = SphereFV(prob)
    rho = smooth_density(prob.grid, amp=0.9)
    area = prob.grid.area
    m0 = np.sum(rho * area)
    for _ in range(200):
        rho, _ = rk_step(INTEGRATORS["ssprk3"], rhs, rho, 0.02, backend="numba")
    assert abs(np.sum(rho * area) - m0) <= 1e-13 * m0
    assert rho.min() >= -1e-15 * rho.max()


def test_keep_freed_memory_is_idempotent():
    first = keep_freed_memory()
    assert isinstance(first, bool) and keep_freed_memory() == first


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("limiter", sorted(LIMITERS))
def test_fused_circle_fv_stages_match_the_reference_step(attention, limiter):
    """SSP-RK3 steps on S^1 with the fused fv stage (transport and Shu-Osher combination in one
    compiled call) equal the numpy reference step bitwise, speed included."""
    from solvers.circle.grid.fv import fv
    from solvers.circle.problem import CircleProblem
    from spectral import CircleBasis

    a2 = np.array([[-0.99, 0.08], [-0.62, -0.78]])
    model = ModelParams(5.0, "descent", attention, "exp_shifted",
                        PerceptronParams("relu", a2, np.array([0.63, -0.47]), np.zeros(2)))
    prob = CircleProblem(model, CircleBasis(256))
    theta = prob.basis.theta
    rho = (1 + 0.8 * np.cos(3 * theta) + 0.3 * np.sin(7 * theta)) / (2 * np.pi)
    rho[40:60] = 0.0  # empty cells: the outflow limiter and the mass floor act
    fast, ref = fv(prob, limiter, backend="numba"), fv(prob, limiter, backend="numpy")
    assert hasattr(fast, "fused_stage") and not hasattr(ref, "fused_stage")
    if hasattr(fast, "fused_step"):  # stage by stage here; the whole step: tests/circle/test_step_kernels.py
        del fast.fused_step
    table = INTEGRATORS["ssprk3"]
    a, b = rho.copy(), rho.copy()
    for _ in range(20):
        (a, sa), (b, sb) = rk_step(table, fast, a, 0.02, "numba"), rk_step(table, ref, b, 0.02, "numpy")
        np.testing.assert_array_equal(a, b)
        assert sa == sb
    assert abs(a.sum() - rho.sum()) < 1e-13 * rho.sum()


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("integrator", ["ssprk3", "ssprk10_2"])
def test_threaded_s2_step_is_bitwise_the_serial_one(monkeypatch, attention, integrator):
    """The threaded kernels (fv body in band chunks, Legendre sums split by rows or orders,
    stage combinations) give bitwise the serial step on a grid
    with merged polar cells, with the thread threshold lowered so that lmax 31 uses them."""
    import numba

    import solvers.core.backend as backend

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only (NUMBA_NUM_THREADS < 2)")
    prob = problem(63, attention)
    fv = SphereFV(prob, "mc", backend="numba")
    g = prob.grid
    x = g.points(g.theta, g.phi)
    rho = (1 + 0.3 * x[..., 0] * x[..., 2] + 0.2 * x[..., 1]) / (4 * np.pi)
    table = INTEGRATORS[integrator]
    monkeypatch.setattr(backend, "THREADS_MIN_VALUES", 0)
    monkeypatch.setenv("MEANFIELD_THREADS", "2")
    results = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            assert backend.compute_threads(rho.size) == threads
            u, r = rho, []
            for _ in range(3):
                u, rate = rk_step(table, fv, u, 0.02, backend="numba")
                r.append(rate)
            results.append((u, r))
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]
    assert not np.array_equal(results[0][0], rho)  # it moved


def test_threads_are_opt_in(monkeypatch):
    """One thread unless ``MEANFIELD_THREADS`` asks for more; a bad value names the variable."""
    import solvers.core.backend as backend

    monkeypatch.delenv("MEANFIELD_THREADS", raising=False)
    assert backend.compute_threads(10**6) == 1
    monkeypatch.setenv("MEANFIELD_THREADS", "2")
    assert backend.compute_threads(10) == 1  # small grids stay serial
    assert backend.compute_threads(10**6) == min(2, __import__("numba").get_num_threads())
    monkeypatch.setenv("MEANFIELD_THREADS", "two")
    with pytest.raises(ValueError, match="MEANFIELD_THREADS"):
        backend.compute_threads(10**6)
