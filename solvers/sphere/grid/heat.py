"""The heat semigroup of the S^2 pseudo-spectral scheme: the noise ``+ nu Laplacian rho``
(docs/noise.md §5).

The Laplace-Beltrami operator is diagonal in the spherical harmonics, ``Delta Y_lm = -l(l+1)
Y_lm``, so ``exp(tau nu Delta)`` multiplies degree ``l`` by ``exp(-nu l(l+1) tau)``: exact for
every ``tau >= 0`` (no step limit from ``nu lmax^2``). Degree 0 has multiplier 1: the mass (the
Gauss quadrature of a band-limited field) is kept to round-off.

Only the spectral scheme has it: the finite volumes' merged polar cells make their discrete
Laplacian neither diagonal in a basis nor cheap to exponentiate (docs/noise.md §5).
"""

from __future__ import annotations

import numpy as np

from solvers.core.noise import phi

from spectral.sphere import SphereBasis


class SphereHeat:
    """``exp(tau nu Delta)`` on Gauss-grid values of shape (nlat, nphi).

    Parameters
    ----------
    basis : SphereBasis
        The Gauss grid and its transforms.
    noise : float
        ``nu > 0``.
    """

    def __init__(self, basis: SphereBasis, noise: float) -> None:
        self.basis, self.noise = basis, float(noise)
        l = basis.degrees.astype(float)  # noqa: E741 (the degree)
        self.symbol = l * (l + 1.0)  # -eigenvalue of the Laplacian on degree l

    def __call__(self, rho: np.ndarray, tau: float) -> np.ndarray:
        """``exp(tau nu Delta) rho`` for grid values ``rho`` (nlat, nphi), ``tau >= 0``."""
        if tau == 0.0:
            return rho
        b = self.basis  # the change alone through the transforms (degree 0: exactly none)
        return rho + b.backward(b.forward(rho) * np.expm1(-self.noise * float(tau) * self.symbol))

    def phi(self, rho: np.ndarray, tau: float, order: int) -> np.ndarray:
        """``phi_order(tau nu Delta) rho`` for grid values ``rho`` (nlat, nphi)
        (:func:`solvers.core.noise.phi`; ``order = 0``: the semigroup itself)."""
        multiplier = phi(-self.noise * float(tau) * self.symbol, order)
        return self.basis.backward(self.basis.forward(rho) * multiplier)

    def diffusion(self, rho: np.ndarray) -> np.ndarray:
        """``nu Delta rho`` for grid values ``rho`` (nlat, nphi)."""
        b = self.basis
        return b.backward(b.forward(rho) * (-self.noise * self.symbol))
