"""Finite-volume discretisation of ``d_t rho + s div(rho g) = 0`` on S^1 (paper eq. 2.6).

The factory ``fv(problem) -> rhs`` returns a pure function
``rhs(rho, dt=None) -> (drho_dt, max_rate)`` on grid arrays of shape (N,); ``dt`` is the
forward-Euler step the result will be used with (``fv`` limits its fluxes with it), and
``max_rate = max |u| / h`` is the Courant number per unit time (``dt * max_rate <= cfl``):

- ``fv``: conservative finite volumes on cell averages. Upwind flux with a limited linear
  reconstruction (MUSCL, van Leer 1979); face values stay between neighbouring averages, so
  with an SSP integrator and ``dt max|u| / h <= 1/2`` no cell sends out more than it holds
  (positivity) and the telescoping flux conserves mass to round-off. Given ``dt``, the
  outgoing fluxes of any cell that would send out more than it holds are scaled down to
  its content (docs/math.md §6), so positivity holds at any step; ``max_rate`` is then taken
  only over faces whose upwind cell holds mass (density above ``mass_floor`` times the mean),
  since what the step must resolve is the motion of the mass.
- with ``time.kink_faces`` the face nearest each corner of the perceptron velocity sits on the
  corner (:mod:`solvers.circle.cells`): ``rho`` stays the cell mass over ``h`` and the
  reconstruction works on the density ``rho h / width``.

``backend="numba"`` (the default when numba imports, see :mod:`solvers.core.backend`) runs all of
this after the velocity as one compiled kernel (:func:`solvers.circle.grid.kernels_fv_numba.circle_fv_rhs`);
``backend="numpy"`` runs the array code below, the reference the kernel is tested against.

The pseudo-spectral scheme is in :mod:`solvers.circle.grid.spectral`; the limiters, shared with the
sphere, in :mod:`solvers.core.limiters`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from solvers.circle.problem import CircleProblem
from solvers.core.backend import fused_steps_available, resolve_backend
from solvers.core.discretization import Rhs
from solvers.core.limiters import CIRCLE_RECONSTRUCTIONS, LIMITERS, weno5_faces


def upwind_flux(rho: np.ndarray, u_face: np.ndarray, limiter: str,
                kinks: np.ndarray | None = None) -> np.ndarray:
    """Numerical flux through the right face of every cell.

    Parameters
    ----------
    rho : ndarray, shape (N,)
        Cell densities (cell averages).
    u_face : ndarray, shape (N,)
        Velocity at the right face ``theta_i + h/2``.
    limiter : str
        Key of :data:`LIMITERS`, or ``"weno5"`` (:func:`solvers.core.limiters.weno5_faces`).
    kinks : ndarray of int, shape (m,), optional
        Faces on the perceptron's corners (``CircleProblem.moved_faces``): ``weno5`` takes
        one-sided stencils there (the MUSCL limiters ignore it).

    Returns
    -------
    ndarray, shape (N,)
        ``F_{i+1/2} = max(u,0) rho_i^+ + min(u,0) rho_{i+1}^-``.
    """
    if limiter == "weno5":
        plus, minus = weno5_faces(rho, kinks)
        left_state, right_state = plus, np.roll(minus, -1)
    else:
        slope = LIMITERS[limiter](rho - np.roll(rho, 1), np.roll(rho, -1) - rho)
        left_state = rho + 0.5 * slope  # value of cell i at its right face
        right_state = np.roll(rho - 0.5 * slope, -1)  # value of cell i+1 at its left face
    return np.maximum(u_face, 0.0) * left_state + np.minimum(u_face, 0.0) * right_state


def limit_outflow(flux: np.ndarray, rho: np.ndarray, dt: float, h: float) -> np.ndarray:
    """Scale the outgoing fluxes of every cell so that it sends out at most what it holds.

    A face's flux leaves exactly one cell (its upwind cell), so the scaling is well defined
    and the update stays conservative. ``flux`` (N,) is through right faces.
    """
    out_right = np.maximum(flux, 0.0)  # leaves cell i through its right face
    out_left = np.maximum(-np.roll(flux, 1), 0.0)  # leaves cell i through its left face
    outflow = (out_right + out_left) * (dt / h)
    scale = np.where(outflow > rho, rho / np.where(outflow > 0, outflow, 1.0), 1.0)
    scale = np.clip(scale, 0.0, 1.0)
    # flux > 0 leaves cell i (scale[i]); flux < 0 leaves cell i+1 (scale[i+1])
    return np.where(flux > 0, flux * scale, flux * np.roll(scale, -1))


def transport(rho: np.ndarray, u: np.ndarray, h: float, limiter: str = "mc", dt: float | None = None,
              mass_floor: float = 1e-6, backend: str | None = None,
              scale: np.ndarray | None = None, kinks: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """``(d rho/dt, max_rate)`` for the cell masses over ``h``, ``rho``, and right-face velocities
    ``u`` (N,). ``scale`` (N,): ``h / width`` of each cell (None: the uniform grid; see
    :mod:`solvers.circle.cells`); the reconstruction works on ``rho * scale`` and the
    CFL rate on ``|u| scale / h``. ``kinks`` (m,): the faces on perceptron corners, where
    ``weno5`` is one-sided (:func:`solvers.core.limiters.weno5_faces`; None: none)."""
    inv_h = 1.0 / h
    scale = np.ones(rho.shape) if scale is None else scale
    kinks = np.zeros(0, dtype=np.int64) if kinks is None else np.ascontiguousarray(kinks, dtype=np.int64)
    if resolve_backend(backend) == "numba":
        from solvers.circle.grid.kernels_fv_numba import circle_fv_rhs
        from solvers.core.kernels_numba import LIMITER_CODES

        limit = dt is not None
        step = float(dt) if limit else 0.0
        drho, speed = circle_fv_rhs(np.ascontiguousarray(rho, dtype=float), np.ascontiguousarray(u, dtype=float),
                                    LIMITER_CODES[limiter], step, limit, inv_h, step / h, mass_floor,
                                    np.ascontiguousarray(scale, dtype=float), kinks)
        return drho, speed * inv_h
    flux = upwind_flux(rho * scale, u, limiter, kinks)
    if dt is not None:
        flux = limit_outflow(flux, rho, dt, h)
    right = u > 0
    upwind = np.where(right, rho, np.roll(rho, -1))
    moving = upwind > mass_floor * max(float(np.mean(rho)), 0.0)
    courant = np.abs(u) * np.where(right, scale, np.roll(scale, -1))
    speed = float(np.max(courant[moving])) if moving.any() else 0.0
    return (np.roll(flux, 1) - flux) * inv_h, speed * inv_h


def fv(problem: CircleProblem, limiter: str = "mc", mass_floor: float = 1e-6,
       backend: str | None = None) -> Rhs:
    """Finite-volume right-hand side (see the module docstring); ``backend``: "numba" or "numpy"."""
    if limiter not in CIRCLE_RECONSTRUCTIONS:
        raise ValueError(f"time.limiter: unknown limiter {limiter!r}; use one of "
                         f"{', '.join(CIRCLE_RECONSTRUCTIONS)}")
    basis = problem.basis
    h, backend, scale, kinks = basis.h, resolve_backend(backend), problem.cell_scale, problem.kinks

    def rhs(rho: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        return transport(rho, problem.face_velocity(rho), h, limiter, dt, mass_floor, backend, scale, kinks)

    def with_velocity(rho: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, float]:
        """``rhs(rho)`` given the face velocity ``u = velocity(forward(rho), "face")``."""
        return transport(rho, u, h, limiter, None, mass_floor, backend, scale, kinks)

    rhs.with_velocity = with_velocity  # type: ignore[attr-defined]  (snapshot diagnostics)
    if backend == "numba":
        rhs.fused_stage = _fused_stage(problem, limiter, mass_floor)  # type: ignore[attr-defined]
        if fused_steps_available() and not problem.softmax:
            rhs.fused_step = _fused_step(problem, limiter, mass_floor)  # type: ignore[attr-defined]
    return rhs


def _fused_stage(problem: CircleProblem, limiter: str, mass_floor: float) -> Callable:
    """``fused_stage(rho, dt, u0, c, alpha, uj) -> (u0 + c rhs(rho, dt)) + alpha (uj - u0),
    max_rate``: an SSP Runge-Kutta stage in one compiled call (same operations as the
    reference; see :func:`solvers.timestepping.integrators._shu_osher_step`)."""
    from solvers.core.kernels_numba import LIMITER_CODES
    from solvers.circle.grid.kernels_fv_numba import circle_fv_stage

    code, h, scale, kinks = LIMITER_CODES[limiter], problem.basis.h, problem.cell_scale, problem.kinks
    inv_h = 1.0 / h

    def fused_stage(rho: np.ndarray, dt: float, u0: np.ndarray, c: float, alpha: float,
                    uj: np.ndarray) -> tuple[np.ndarray, float]:
        new, speed = circle_fv_stage(rho, problem.face_velocity(rho), code, float(dt), True,
                                     inv_h, float(dt) / h, mass_floor, u0, float(c),
                                     float(alpha), uj, alpha != 0.0, scale, kinks)
        return new, speed * inv_h

    return fused_stage


def _fused_step(problem: CircleProblem, limiter: str, mass_floor: float) -> Callable:
    """``fused_step(rho, dt, plan) -> (rho_new, max_rate)``: a whole Shu-Osher step (plan:
    :attr:`solvers.timestepping.integrators.ButcherTable.stage_plan`) in one compiled call,
    FFTs included (:func:`solvers.circle.grid.kernels_steps_numba.grid_step`; unnormalised
    attention), the operations of the stage-by-stage :func:`_fused_stage` path."""
    from solvers.circle.grid.kernels_steps_numba import grid_step
    from solvers.core.kernels_numba import LIMITER_CODES

    code, h, scale = LIMITER_CODES[limiter], problem.basis.h, problem.cell_scale
    fields = (problem.multipliers("m_face"), problem.multipliers("sw_face"), *problem.moved_evaluation(),
              problem.multipliers("d_center"), problem.sign / (problem.model.beta * problem.basis.n))

    def fused_step(rho: np.ndarray, dt: float, plan: tuple) -> tuple[np.ndarray, float]:
        return grid_step(np.ascontiguousarray(rho, dtype=float), float(dt), *plan, *fields, code, h,
                         mass_floor, scale, problem.kinks)

    return fused_step
