"""Pseudo-spectral discretisation of ``d_t rho + s div(rho g) = 0`` on S^1 (paper eq. 2.6).

``spectral(problem) -> rhs``: ``-s d/dtheta P(rho g)`` with the 2/3-rule projection ``P``
(Orszag 1971); exponentially accurate while rho is smooth, no positivity guarantee. Grid
arrays have shape (N,) and hold point values.
"""

from __future__ import annotations

import numpy as np

from solvers.circle.problem import CircleProblem
from solvers.core.discretization import Rhs


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
