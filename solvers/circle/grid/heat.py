"""The heat semigroup of the S^1 grid schemes: the noise ``+ nu Laplacian rho`` (docs/noise.md §5).

The Laplacian is diagonal in the Fourier basis, so its semigroup is one multiplier per mode:

- ``spectral`` (point values): the exact Laplacian, symbol ``-k^2``;
- ``fv`` (cell averages): the discrete Laplacian ``(rho_{i+1} - 2 rho_i + rho_{i-1}) / h^2``, a
  circulant matrix with symbol ``-(2 sin(k h / 2) / h)^2``. Its exponential is that of the
  matrix itself (not an approximation): ``exp(tau nu Delta_h) = exp(-2 tau nu / h^2)
  exp(tau nu A / h^2)`` with ``A`` the non-negative neighbour matrix, so every entry is
  ``>= 0`` (positivity), and its columns sum to 1 (mass) because those of ``Delta_h`` sum to 0.

Mode 0 has multiplier ``exp(0) = 1``: the mass is kept to round-off. No step limit follows
from ``nu N^2``: the multipliers are exact for any ``tau >= 0``.
"""

from __future__ import annotations

import numpy as np

from solvers.core.noise import phi

from spectral import CircleBasis


class CircleHeat:
    """``exp(tau nu Delta)`` on S^1 grid arrays of shape (N,).

    Parameters
    ----------
    basis : CircleBasis
        The grid (N cells of width ``h``).
    noise : float
        ``nu > 0``.
    scheme : str
        ``"spectral"`` (exact Laplacian) or ``"fv"`` (its three-point discretisation).
    """

    def __init__(self, basis: CircleBasis, noise: float, scheme: str) -> None:
        k, h = basis.wavenumbers.astype(float), basis.h
        self.n, self.noise = basis.n, float(noise)
        # -symbol is the eigenvalue of the Laplacian on mode k
        self.symbol = k**2 if scheme == "spectral" else (2.0 * np.sin(0.5 * k * h) / h) ** 2

    def __call__(self, rho: np.ndarray, tau: float) -> np.ndarray:
        """``exp(tau nu Delta) rho`` for grid values ``rho`` (N,), ``tau >= 0``."""
        if tau == 0.0:
            return rho
        # the change alone through the transforms (mode 0: exactly none), so that the mass's
        # round-off scales with the change, not with the state
        change = np.expm1(-self.noise * float(tau) * self.symbol)
        return rho + np.fft.irfft(np.fft.rfft(rho) * change, n=self.n)

    def phi(self, rho: np.ndarray, tau: float, order: int) -> np.ndarray:
        """``phi_order(tau nu Delta) rho`` for grid values ``rho`` (N,)
        (:func:`solvers.core.noise.phi`; ``order = 0``: the semigroup itself)."""
        multiplier = phi(-self.noise * float(tau) * self.symbol, order)
        return np.fft.irfft(np.fft.rfft(rho) * multiplier, n=self.n)

    def diffusion(self, rho: np.ndarray) -> np.ndarray:
        """``nu Delta rho`` for grid values ``rho`` (N,): the noise's part of ``d rho / dt``."""
        return np.fft.irfft(np.fft.rfft(rho) * (-self.noise * self.symbol), n=self.n)

