"""Fourier basis on the circle S^1 = R / 2 pi Z.

Grid: ``N`` equal cells; cell ``i`` is centred at ``theta_i = 2 pi i / N`` and spans
``[theta_i - h/2, theta_i + h/2]``, ``h = 2 pi / N``. The right face of cell ``i`` is
``theta_i + h/2``.

Spectral convention: ``rho(theta) = sum_k c_k e^{i k theta}`` for ``|k| <= N/2``, stored as the
``N//2 + 1`` non-negative wavenumbers (real data): ``c = rfft(rho) / N``. Then
``int rho dtheta = 2 pi c_0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class CircleBasis:
    """Uniform grid and real FFT on the circle.

    Parameters
    ----------
    n : int
        Number of grid cells (even, >= 4).
    """

    n: int

    def __post_init__(self) -> None:
        if int(self.n) != self.n or self.n < 4 or self.n % 2:
            raise ValueError(f"resolution: the circle grid needs an even integer >= 4 (got {self.n})")

    @property
    def h(self) -> float:
        """Cell width ``2 pi / N``."""
        return 2.0 * np.pi / self.n

    @cached_property
    def theta(self) -> np.ndarray:
        """Cell centres, shape (N,)."""
        return self.h * np.arange(self.n)

    @cached_property
    def faces(self) -> np.ndarray:
        """Right faces ``theta_i + h/2``, shape (N,)."""
        return self.theta + 0.5 * self.h

    @cached_property
    def cell_weight(self) -> np.ndarray:
        """Quadrature weights (all ``h``), shape (N,): ``mass = sum(rho * cell_weight)``."""
        return np.full(self.n, self.h)

    def cell_of(self, angles: ArrayLike) -> np.ndarray:
        """Index of the cell ``[theta_i - h/2, theta_i + h/2)`` holding each angle (any real
        angle, reduced mod 2 pi), integer array of the shape of ``angles``."""
        return np.rint(np.asarray(angles, dtype=float) / self.h).astype(int) % self.n

    @cached_property
    def wavenumbers(self) -> np.ndarray:
        """Non-negative wavenumbers ``k = 0..N/2``, shape (N//2 + 1,)."""
        return np.arange(self.n // 2 + 1)

    def forward(self, rho: np.ndarray) -> np.ndarray:
        """Grid values ``rho`` (..., N) -> coefficients ``rho_hat`` (..., N//2 + 1)."""
        return np.fft.rfft(rho, axis=-1) / self.n

    def backward(self, rho_hat: np.ndarray) -> np.ndarray:
        """Coefficients ``rho_hat`` (..., N//2 + 1) -> grid values (..., N)."""
        return np.fft.irfft(rho_hat, n=self.n, axis=-1) * self.n

    def derivative(self, rho_hat: np.ndarray, order: int = 1) -> np.ndarray:
        """Spectral derivative ``d^order/dtheta^order`` of ``rho_hat`` (..., N//2 + 1).

        The Nyquist mode is dropped for odd orders (its derivative is not real on the grid).
        """
        mult = (1j * self.wavenumbers) ** order
        if order % 2:
            mult[-1] = 0.0
        return rho_hat * mult

    def apply_diagonal(self, rho_hat: np.ndarray, multiplier: ArrayLike) -> np.ndarray:
        """Apply a diagonal (Fourier-multiplier) operator: ``rho_hat_k * multiplier_k``."""
        return rho_hat * np.asarray(multiplier)

    def shift(self, rho_hat: np.ndarray, delta: float) -> np.ndarray:
        """Coefficients of ``theta -> rho(theta + delta)`` (evaluation at shifted points).

        ``backward(shift(rho_hat, h/2))`` gives the band-limited interpolant at the faces.
        The Nyquist mode is kept only when the shift is a multiple of the grid spacing.
        """
        mult = np.exp(1j * self.wavenumbers * delta)
        if not np.isclose((delta / self.h) % 1.0, 0.0) and not np.isclose((delta / self.h) % 1.0, 1.0):
            mult[-1] = 0.0
        return rho_hat * mult

    def evaluate(self, rho_hat: np.ndarray, points: ArrayLike) -> np.ndarray:
        """Band-limited interpolant at arbitrary angles.

        Parameters
        ----------
        rho_hat : ndarray, shape (N//2 + 1,)
        points : array_like, shape (m,)

        Returns
        -------
        ndarray, shape (m,)
        """
        return np.real(self.evaluation_matrix(points) @ rho_hat)

    def evaluation_matrix(self, points: ArrayLike) -> np.ndarray:
        """Rows ``R`` (m, N//2 + 1) with ``Re(R @ rho_hat) = evaluate(rho_hat, points)``: the
        real-transform weights (1 at ``k = 0`` and Nyquist, else 2) times ``e^{i k p}``, for
        evaluating many coefficient vectors at the same ``points`` (shape (m,))."""
        k = self.wavenumbers
        weight = np.where((k == 0) | (k == self.n // 2), 1.0, 2.0)
        return weight * np.exp(1j * np.multiply.outer(np.asarray(points, dtype=float), k))
