"""What the noisy dynamics share on S^1 and S^2 (docs/noise.md): the free energy and the
``phi`` functions of the exponential integrators.

With noise ``nu`` the dynamics ``d_t rho = -s div(rho grad U) + nu Laplacian rho`` are the
gradient flow of ``F = E - s nu int rho log rho`` (``E`` the paper's energy, eq. 2.7):
``dF/dt = s int rho |grad(U - s nu log rho)|^2``, so ``F`` increases under ascent and
decreases under descent. Without noise ``F = E``.

The heat semigroup ``exp(tau nu Delta)`` and the ``phi`` functions of ``tau nu Delta`` are
multipliers in the grid's basis (each manifold's ``grid.heat`` module).
"""

from __future__ import annotations

from math import factorial

import numpy as np

PHI_SERIES = 1.0  # |z| below it: the Taylor series of phi_k (the closed form cancels there)
PHI_TERMS = 24  # terms of the series: 1/24! < 1e-23 at |z| = 1


def entropy(rho: np.ndarray, weight: np.ndarray) -> float:
    """``int rho log rho`` by the grid's quadrature, ``0 log 0 = 0``.

    Parameters
    ----------
    rho : ndarray
        Grid density (S^1: (N,), S^2: (nlat, nphi)); values ``<= 0`` (a spectral state may hold
        them at round-off level where it is nearly empty) count as 0.
    weight : ndarray, shape of ``rho``
        Quadrature weights (cell widths or areas).
    """
    positive = rho > 0.0
    safe = np.where(positive, rho, 1.0)
    return float(np.sum(np.where(positive, rho * np.log(safe), 0.0) * weight))


def free_energy(energy: float, rho: np.ndarray, weight: np.ndarray, sign: float,
                noise: float) -> float:
    """``F = E - s nu int rho log rho`` for the grid density ``rho`` (``energy``: its ``E``)."""
    if noise == 0.0:
        return float(energy)
    return float(energy) - sign * noise * entropy(rho, weight)


def phi(z: np.ndarray, order: int) -> np.ndarray:
    """``phi_k(z) = sum_m z^m / (m + k)!`` for real ``z <= 0`` (any shape), ``k = order >= 0``:
    ``phi_0 = e^z``, ``phi_{k+1}(z) = (phi_k(z) - 1/k!) / z`` (Hochbruck & Ostermann, Acta
    Numerica 19 (2010), eq. 2.10). The recurrence where ``|z| >= PHI_SERIES``, the series below."""
    z = np.asarray(z, dtype=float)
    small = np.abs(z) < PHI_SERIES
    zs = np.where(small, z, 0.0)
    series = sum(zs**m / factorial(m + order) for m in range(PHI_TERMS))
    zl = np.where(small, -1.0, z)
    value = np.exp(zl)
    for k in range(order):
        value = (value - 1.0 / factorial(k)) / zl
    return np.where(small, series, value)
