"""Spatial discretisations of ``d_t rho + s div(rho g) = 0`` on S^1 (paper eq. 2.6).

Each factory ``scheme(problem) -> rhs`` returns a pure function
``rhs(rho, dt=None) -> (drho_dt, max_rate)`` on grid arrays of shape (N,); ``dt`` is the
forward-Euler step the result will be used with (``fv`` limits its fluxes with it), and
``max_rate = max |u| / h`` is the Courant number per unit time (``dt * max_rate <= cfl``):

- ``fv``: conservative finite volumes on cell averages. Upwind flux with a limited linear
  reconstruction (MUSCL, van Leer 1979); face values stay between neighbouring averages, so
  with an SSP integrator and ``dt max|u| / h <= 1/2`` no cell sends out more than it holds
  (positivity) and the telescoping flux conserves mass to round-off. Given ``dt``, the
  outgoing fluxes of any cell that would send out more than it holds are scaled down to
  its content (MATH.md 6), so positivity holds at any step; ``max_rate`` is then taken
  only over faces whose upwind cell holds mass (density above ``mass_floor`` times the mean),
  since what the step must resolve is the motion of the mass.
- ``spectral``: pseudo-spectral, ``-s d/dtheta P(rho g)`` with the 2/3-rule projection ``P``
  (Orszag 1971); exponentially accurate while rho is smooth, no positivity guarantee.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from solvers.circle_problem import CircleProblem

Rhs = Callable[..., tuple[np.ndarray, float]]


def _minmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 0.5 * (np.sign(a) + np.sign(b)) * np.minimum(np.abs(a), np.abs(b))


def _mc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """minmod(2a, 2b, (a+b)/2), written out (it is on the hot path)."""
    mag = np.minimum(np.minimum(np.abs(a), np.abs(b)) * 2.0, 0.5 * np.abs(a + b))
    return np.where(a * b > 0.0, np.copysign(mag, a), 0.0)


def _vanleer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = a * b
    den = a + b
    safe = np.where(ab > 0, den, 1.0)
    return np.where(ab > 0, 2.0 * ab / safe, 0.0)


LIMITERS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "minmod": _minmod,  # Roe 1986
    "mc": _mc,  # monotonised central, van Leer 1977
    "vanleer": _vanleer,  # van Leer 1974
    "none": lambda a, b: np.zeros_like(a),  # first-order upwind
}


def upwind_flux(rho: np.ndarray, u_face: np.ndarray, limiter: str) -> np.ndarray:
    """Numerical flux through the right face of every cell.

    Parameters
    ----------
    rho : ndarray, shape (N,)
        Cell averages.
    u_face : ndarray, shape (N,)
        Velocity at the right face ``theta_i + h/2``.
    limiter : str
        Key of :data:`LIMITERS`.

    Returns
    -------
    ndarray, shape (N,)
        ``F_{i+1/2} = max(u,0) rho_i^+ + min(u,0) rho_{i+1}^-``.
    """
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


def fv(problem: CircleProblem, limiter: str = "mc", mass_floor: float = 1e-6) -> Rhs:
    """Finite-volume right-hand side (see the module docstring)."""
    if limiter not in LIMITERS:
        raise ValueError(f"time.limiter: unknown limiter {limiter!r}; use one of {', '.join(LIMITERS)}")
    basis = problem.basis
    inv_h = 1.0 / basis.h

    def rhs(rho: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        u = problem.velocity(basis.forward(rho), "face")
        flux = upwind_flux(rho, u, limiter)
        if dt is not None:
            flux = limit_outflow(flux, rho, dt, basis.h)
        upwind = np.where(u > 0, rho, np.roll(rho, -1))
        moving = upwind > mass_floor * max(float(np.mean(rho)), 0.0)
        speed = float(np.max(np.abs(u[moving]))) if moving.any() else 0.0
        return (np.roll(flux, 1) - flux) * inv_h, speed * inv_h

    return rhs


def dealias_cutoff(n: int) -> int:
    """Highest wavenumber kept by the 2/3 rule on an N-point grid."""
    return n // 3


def spectral(problem: CircleProblem) -> Rhs:
    """Pseudo-spectral right-hand side with 2/3-rule dealiasing of the flux."""
    basis = problem.basis
    keep = basis.wavenumbers <= dealias_cutoff(basis.n)
    ik = np.where(keep, 1j * basis.wavenumbers, 0.0)

    def rhs(rho: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        u = problem.velocity(basis.forward(rho), "center")
        flux_hat = basis.forward(rho * u)
        return -basis.backward(ik * flux_hat), float(np.max(np.abs(u))) / basis.h

    return rhs


def project(rho: np.ndarray, n: int) -> np.ndarray:
    """Drop the modes above the 2/3-rule cutoff (grid values (N,) -> grid values (N,))."""
    rho_hat = np.fft.rfft(rho)
    rho_hat[np.arange(rho_hat.size) > dealias_cutoff(n)] = 0.0
    return np.fft.irfft(rho_hat, n=n)


def averages_to_points(rho_avg: np.ndarray) -> np.ndarray:
    """Band-limited point values from cell averages (divide mode k by ``sinc(k h / 2)``)."""
    n = rho_avg.size
    k = np.arange(n // 2 + 1)
    factor = np.sinc(k / n)  # numpy sinc(x) = sin(pi x)/(pi x); k h/2 = pi k / n
    return np.fft.irfft(np.fft.rfft(rho_avg) / factor, n=n)


SCHEMES: dict[str, tuple[Callable[..., Rhs], str, str]] = {
    # name: (factory, default integrator, citation)
    "fv": (fv, "ssprk3", "MUSCL upwind finite volumes, van Leer, J. Comput. Phys. 32 (1979)"),
    "spectral": (spectral, "rk4", "Fourier pseudo-spectral, 2/3 rule: Orszag, J. Atmos. Sci. 28 (1971)"),
}
