"""What every manifold's initial data shares: checking a grid density and scaling its mass."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.model.config import ConfigError


def normalise(rho: np.ndarray, weight: np.ndarray | float, mass: float, key: str,
              where: Callable[[tuple], str], fix: str) -> np.ndarray:
    """Scale ``rho`` to total mass ``mass`` after checking it is finite, nonnegative, nonzero.

    Parameters
    ----------
    rho : ndarray, shape (N,) on S^1 or (nlat, nphi) on S^2
        Grid density.
    weight : ndarray or float
        Cell weights: ``mass = sum(rho * weight)``.
    mass : float
    key : str
        The config key named by errors.
    where : callable
        ``where(index) -> str``: the location of a cell, for the error message.
    fix : str
        What the user should change when the density is negative.
    """
    if not np.all(np.isfinite(rho)):
        raise ConfigError(key, "the initial density is not finite; check the parameters")
    total = float(np.sum(rho * weight))
    if not total > 0.0:
        raise ConfigError(key, f"the initial density has no mass (total {total:.3g})")
    i = np.unravel_index(np.argmin(rho), rho.shape)
    if rho[i] < 0.0:
        raise ConfigError(key, f"the initial density is negative (min {rho[i]:.3g} at {where(i)}): {fix}")
    rho = rho * (mass / total)
    return rho * (mass / np.sum(rho * weight))
