"""The reductions of the S^1 snapshot diagnostics as one compiled call (unnormalised attention).

:func:`solvers.circle.grid.discretization.compute_diagnostics` is the numpy reference: a dozen
array passes over the grid (cell masses, extremes, energy, dissipation, transport rate,
support velocity, spectral tail), each costing more in call overhead than in arithmetic at
the grid sizes of the paper's runs. Here they are one pass (two for the support floor, which
needs the mass). The fields themselves come from one batched inverse transform. Sums run
left to right (numpy sums pairwise): the two agree to round-off (tests/circle/test_diagnostics_numba.py).
Import through :func:`solvers.core.backend.resolve_backend` (numba is optional).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.circle.atoms_numba import detect_ring
from solvers.circle.measure.kernels_dirac_numba import face_attention, face_velocity
from solvers.circle.grid.kernels_fv_numba import circle_fv_rhs


@njit(cache=True, error_model="numpy")
def fields(stack: np.ndarray, beta: float, sign: float, w_face: np.ndarray,
           w_center: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Face velocity and ``grad U`` at the centres (N,) each from the inverse transforms
    ``stack`` (3, N) of ``rho_hat`` times the face derivative, the centre derivative and the
    kernel multipliers (the same operations as :meth:`CircleProblem.velocity` and
    :meth:`CircleProblem.potential_gradient`)."""
    n = stack.shape[1]
    face, grad_u = np.empty(n), np.empty(n)
    for i in range(n):
        face[i] = sign * (stack[0, i] / beta + w_face[i])
        grad_u[i] = stack[1, i] / beta + w_center[i]
    return face, grad_u


@njit(cache=True, error_model="numpy")
def reductions(rho: np.ndarray, weight: np.ndarray, grad_u: np.ndarray, conv: np.ndarray,
               v_center: np.ndarray, drho: np.ndarray, rho_hat: np.ndarray, k_max: int,
               floor: float) -> tuple[float, float, float, float, float, float, float, float, float]:
    """``(mass, min, max, <w, K*rho>, <w, v>, dissipation, sum |drho|, max support speed,
    tail)`` of the grid density ``rho`` (N,), ``w = rho * weight`` the cell masses;
    ``floor``: a cell is in the support when ``rho > floor * |mass|``; ``tail``: the share of
    ``sum |rho_hat_k|^2`` (0 < k <= k_max) held by ``k > 2 k_max / 3``."""
    n = rho.size
    mass, low, high, e_att, e_v, diss, moved = 0.0, np.inf, -np.inf, 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        w = rho[i] * weight[i]
        mass += w
        low, high = min(low, rho[i]), max(high, rho[i])
        e_att += w * conv[i]
        e_v += w * v_center[i]
        diss += rho[i] * grad_u[i] * grad_u[i] * weight[i]
        moved += abs(drho[i])
    level, speed = floor * abs(mass), 0.0
    for i in range(n):
        if rho[i] > level:
            speed = max(speed, abs(grad_u[i]))
    total, top = 0.0, 0.0
    for k in range(1, k_max + 1):
        p = rho_hat[k].real ** 2 + rho_hat[k].imag ** 2
        total += p
        if k > 2 * k_max / 3:
            top += p
    tail = top / total if total != 0.0 else 0.0
    return mass, low, high, e_att, e_v, diss, moved, speed, tail


@njit(cache=True, error_model="numpy")
def reductions_and_atoms(rho: np.ndarray, weight: np.ndarray, grad_u: np.ndarray,
                         conv: np.ndarray, v_center: np.ndarray, drho: np.ndarray,
                         rho_hat: np.ndarray, k_max: int, floor: float, face: np.ndarray,
                         ring: tuple) -> tuple:
    """:func:`reductions` and the atoms of the cell masses ``rho * weight`` in one call:
    ``(reductions, detect_ring(face, rho * weight, *ring))``
    (:func:`solvers.circle.atoms_numba.detect_ring`; ``ring`` from
    :meth:`solvers.circle.atoms.RingDetector.arguments`)."""
    cell_mass = np.empty(rho.size)
    for i in range(rho.size):
        cell_mass[i] = rho[i] * weight[i]
    return (reductions(rho, weight, grad_u, conv, v_center, drho, rho_hat, k_max, floor),
            detect_ring(face, cell_mass, *ring))


@njit(cache=True, error_model="numpy")
def measure_reductions(rho: np.ndarray, h: float, stack: np.ndarray, x: np.ndarray, m: np.ndarray,
                       faces: np.ndarray, consts: np.ndarray, w_center: np.ndarray,
                       v_center: np.ndarray, drho_of: tuple, rho_hat: np.ndarray, k_max: int,
                       floor: float, g_atoms: np.ndarray) -> tuple:
    """The reductions of a Dirac state's snapshot (density ``rho`` (N,) plus atoms ``x``, ``m``
    (n,)): ``(face velocity (N,), (mass, min, max, <w, K*rho>, <w, v>, dissipation, transport
    rate, max support speed, tail))`` with the atoms' mass, dissipation, moved mass and speeds
    in them, the same quantities as :func:`solvers.circle.measure.dirac_diagnostics.measure_diagnostics`.

    ``stack`` (3, N): the inverse transforms of ``rho_hat`` times ``d_face``, ``d_center`` and
    the kernel (the density's attention at faces and centres times ``beta``, and ``K*rho``);
    ``faces``, ``consts``: :class:`~solvers.circle.measure.dirac.CompiledCircleField`'s; ``drho_of``:
    ``(limiter code, scale (N,), kink faces (m,))`` for the fv divergence; ``floor``: a cell is in the support
    when ``rho > floor * |mass|``; ``g_atoms`` (n,): ``dU/dx`` at the atoms.
    """
    beta, log_c = consts[0], consts[1]
    face = face_velocity(stack[0], 1.0, x, m, faces, consts)
    grad_u = face_attention(faces[3], faces[4], x, m, beta, log_c)
    for i in range(rho.size):
        grad_u[i] = (stack[1, i] / beta + w_center[i]) + grad_u[i]
    drho = circle_fv_rhs(rho, face, drho_of[0], 0.0, False, 1.0 / h, 0.0, 0.0, drho_of[1], drho_of[2])[0]
    weight = np.full(rho.size, h)
    mass, low, high, e_att, e_v, diss, moved, _, tail = reductions(
        rho, weight, grad_u, stack[2], v_center, drho, rho_hat, k_max, np.inf)
    total, speed = mass, 0.0
    for i in range(x.size):
        total += m[i]
        diss += m[i] * g_atoms[i] * g_atoms[i]
        speed = max(speed, abs(g_atoms[i]))
    level = floor * abs(total)
    for i in range(rho.size):
        if rho[i] > level:
            speed = max(speed, abs(grad_u[i]))
    rate = moved * h
    for i in range(x.size):
        rate += 2.0 * (m[i] * abs(g_atoms[i])) / h
    return face, (total, low, high, e_att, e_v, diss, rate, speed, tail)
