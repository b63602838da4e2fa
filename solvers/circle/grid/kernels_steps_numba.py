"""Whole Shu-Osher steps of the S^1 fv scheme in one compiled call, FFTs included.

A Runge-Kutta stage on S^1 is two FFTs (the density's spectrum and the attention at the faces)
and one compiled call (:func:`solvers.circle.grid.kernels_fv_numba.circle_fv_stage` for the grid density,
:func:`solvers.circle.measure.kernels_dirac_numba.dirac_stage` for density plus Dirac atoms). At
N <= 1024 the Python around them (numpy's FFT entry points, the dispatch of each call) costs
about three times the compiled work. `rocket-fft <https://github.com/styfenschaer/rocket-fft>`_
gives numba ``numpy.fft`` (the pocketfft of numpy, bitwise the same transforms), so the kernels
below run every stage of a step, FFTs included, in one call:

- :func:`grid_step`: the grid density (unnormalised attention;
  :meth:`solvers.circle.problem.CircleProblem.face_velocity`, then ``circle_fv_stage``);
- :func:`dirac_step`: density plus Dirac atoms (:meth:`solvers.circle.measure.dirac.CompiledCircleField.spectra`,
  then ``dirac_stage``);
- :func:`dirac_absorb_step`: the absorption after an accepted step, its transforms included.

Both take the step as a *plan* of Shu-Osher stages with at most one earlier stage each,
``u^(i+1) = (u^(0) + dt b_i L(u^(i))) + a_i (u^(j_i) - u^(0))`` (``j_i = 0``: no term), fluxes
limited over the Euler step ``dt b_i / alpha_ii``: the operations, in their order, of
:func:`solvers.timestepping.integrators._shu_osher_step`, which the tests compare these kernels
against (tests/circle/test_step_kernels.py). Import only when rocket-fft imports
(:func:`solvers.core.backend.fused_steps_available`).
"""

from __future__ import annotations

import numpy as np
import rocket_fft  # noqa: F401  (registers numpy.fft with numba)
from numba import njit

from solvers.circle.measure.kernels_dirac_numba import absorb_step, dirac_rhs
from solvers.circle.grid.kernels_fv_numba import circle_fv_stage
from solvers.core.kernels_stages import shu_osher_stage


@njit(cache=True, error_model="numpy")
def _moved_values(spectrum: np.ndarray, d_center: np.ndarray, moved_rows: np.ndarray) -> np.ndarray:
    """``real(moved_rows @ (spectrum d_center))`` (m,): the trigonometric polynomial at the moved
    faces (:meth:`solvers.circle.problem.CircleProblem.moved_attention`)."""
    coef = spectrum * d_center
    out = np.empty(moved_rows.shape[0])
    for q in range(moved_rows.shape[0]):
        acc = 0.0 + 0.0j
        for k in range(coef.size):
            acc += moved_rows[q, k] * coef[k]
        out[q] = acc.real
    return out


@njit(cache=True, error_model="numpy")
def grid_face_velocity(rho: np.ndarray, m_face: np.ndarray, sw_face: np.ndarray, moved: np.ndarray,
                       moved_rows: np.ndarray, d_center: np.ndarray, moved_scale: float) -> np.ndarray:
    """Signed face velocity (N,) of the grid density, unnormalised attention
    (:meth:`~solvers.circle.problem.CircleProblem.face_velocity`): ``irfft(rfft(rho) m_face) +
    sw_face``, the moved faces evaluated (``moved_scale = s / (beta N)``)."""
    spectrum = np.fft.rfft(rho)
    u = np.fft.irfft(spectrum * m_face, rho.size) + sw_face
    if moved.size:
        values = _moved_values(spectrum, d_center, moved_rows)
        for q in range(moved.size):
            u[moved[q]] = moved_scale * values[q] + sw_face[moved[q]]
    return u


@njit(cache=True, error_model="numpy")
def grid_step(rho: np.ndarray, dt: float, b: np.ndarray, a_diag: np.ndarray, a_term: np.ndarray,
              term: np.ndarray, m_face: np.ndarray, sw_face: np.ndarray, moved: np.ndarray,
              moved_rows: np.ndarray, d_center: np.ndarray, moved_scale: float, code: int, h: float,
              mass_floor: float, scale: np.ndarray, kinks: np.ndarray) -> tuple[np.ndarray, float]:
    """One Shu-Osher step of the grid density (N,): ``(new rho, largest stage rate)``.

    ``b``, ``a_diag``: ``beta_ii`` and ``alpha_ii`` of each stage; ``a_term``, ``term``: the
    weight and index ``j_i`` of its earlier stage (0: none). The rate is ``max |u| / width``
    over faces that move mass (``circle_fv_stage``'s speed over ``h``); ``kinks``: the faces
    where WENO5 is one-sided (``CircleProblem.kinks``)."""
    n_stages = b.size
    stages = np.empty((n_stages + 1, rho.size))
    stages[0] = rho
    inv_h, rate = 1.0 / h, 0.0
    for i in range(n_stages):
        c = dt * b[i]
        euler = dt * b[i] / a_diag[i]
        u = grid_face_velocity(stages[i], m_face, sw_face, moved, moved_rows, d_center, moved_scale)
        new, speed = circle_fv_stage(stages[i], u, code, euler, True, inv_h, euler / h, mass_floor,
                                     stages[0], c, a_term[i], stages[term[i]], term[i] > 0, scale, kinks)
        stages[i + 1] = new
        rate = max(rate, speed * inv_h)
    return stages[n_stages].copy(), rate


@njit(cache=True, error_model="numpy")
def dirac_spectra(rho: np.ndarray, d_face: np.ndarray, d_center: np.ndarray, moved: np.ndarray,
                  moved_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rfft(rho), g)`` with ``g = irfft(rfft(rho) d_face)`` and the moved faces evaluated
    (:meth:`solvers.circle.measure.dirac.CompiledCircleField.spectra`)."""
    fft = np.fft.rfft(rho)
    g = np.fft.irfft(fft * d_face, rho.size)
    if moved.size:
        values = _moved_values(fft, d_center, moved_rows)
        for q in range(moved.size):
            g[moved[q]] = values[q] / rho.size
    return fft, g


@njit(cache=True, error_model="numpy")
def dirac_step(state: np.ndarray, dt: float, b: np.ndarray, a_diag: np.ndarray, a_term: np.ndarray,
               term: np.ndarray, d_face: np.ndarray, d_center: np.ndarray, n_modes: int, moved: np.ndarray,
               moved_rows: np.ndarray, faces: np.ndarray, units: np.ndarray, code: int, consts: np.ndarray,
               limiter: int, kinks: np.ndarray) -> tuple[np.ndarray, float]:
    """One Shu-Osher step of the flat Dirac state ``[rho (N), x (n), m (n), ids (n)]``:
    ``(new state, largest stage rate)`` (plan as :func:`grid_step`; the rate of
    :func:`~solvers.circle.measure.kernels_dirac_numba.dirac_rhs`)."""
    n_grid, n_stages = faces.shape[1], b.size
    stages = np.empty((n_stages + 1, state.size))
    stages[0] = state
    rate = 0.0
    for i in range(n_stages):
        c = dt * b[i]
        euler = dt * b[i] / a_diag[i]
        fft, g = dirac_spectra(stages[i][:n_grid], d_face, d_center, moved, moved_rows)
        k, r = dirac_rhs(stages[i], g, fft, d_center, n_modes, faces, units, code, consts, limiter, euler, True,
                         kinks)
        stages[i + 1] = shu_osher_stage(stages[0], c, k, a_term[i], stages[term[i]], term[i] > 0)
        rate = max(rate, r)
    return stages[n_stages].copy(), rate


@njit(cache=True, error_model="numpy")
def dirac_absorb_step(state: np.ndarray, d_face: np.ndarray, d_center: np.ndarray, moved: np.ndarray,
                      moved_rows: np.ndarray, faces: np.ndarray, consts: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`~solvers.circle.measure.kernels_dirac_numba.absorb_step` of the flat state, its
    density's field by :func:`dirac_spectra`: one call after each accepted step."""
    g = dirac_spectra(state[: faces.shape[1]], d_face, d_center, moved, moved_rows)[1]
    return absorb_step(state, g, faces, consts)
