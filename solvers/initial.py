"""Initial densities on the S^1 grid, as exact cell averages scaled to the requested mass.

Cell ``i`` covers ``[theta_i - h/2, theta_i + h/2]`` with ``theta_i = 2 pi i / N``, ``h = 2 pi / N``.
The mass of a grid density is ``sum(rho) * h``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import special

from solvers.config import ConfigError
from solvers.params import RunConfig

TWO_PI = 2.0 * np.pi
GAUSS_POINTS = 8


def cell_centers(n: int) -> np.ndarray:
    """Cell centres ``theta_i = 2 pi i / n``, shape (n,)."""
    return TWO_PI * np.arange(n) / n


def cell_width(n: int) -> float:
    """Cell width ``h = 2 pi / n``."""
    return TWO_PI / n


def initial_density(config: RunConfig) -> np.ndarray:
    """Cell averages of the configured initial density, with ``sum(rho) * h == initial.mass``.

    Parameters
    ----------
    config : RunConfig
        ``domain.resolution`` gives the number of cells N; ``initial`` the density.

    Returns
    -------
    ndarray, shape (N,)

    Raises
    ------
    ConfigError
        For a negative or non-finite density, zero mass, a missing archive, or S^2.
    """
    if config.domain.manifold != "S1":
        raise ConfigError("domain.manifold", "initial densities are only implemented on S1 "
                                             "so far: set domain.manifold = \"S1\"")
    init, n = config.initial, config.domain.resolution
    if init.kind == "uniform":
        rho, key = uniform_density(n, init.modes), "initial.modes"
    elif init.kind == "von_mises":
        rho, key = von_mises_density(n, init.centers, init.kappas, init.weights), "initial.kappas"
    elif init.kind == "archive":
        rho, key = archive_density(n, init.path, init.time), "initial.path"
    else:
        raise ConfigError("initial.kind", f"unknown kind {init.kind!r}")
    return normalise(rho, init.mass, key)


def uniform_density(n: int, modes: tuple = ()) -> np.ndarray:
    """Cell averages of ``(1 + sum_k amp_k cos(k theta)) / (2 pi)``.

    The average of ``cos(k t)`` over cell i is ``cos(k theta_i) sin(k h/2) / (k h/2)``.
    """
    theta = cell_centers(n)
    rho = np.ones(n)
    for k, amp in modes:
        rho += amp * np.cos(k * theta) * np.sinc(k / n)  # np.sinc(x) = sin(pi x)/(pi x)
    return rho / TWO_PI


def von_mises_pdf(t: np.ndarray, center: float, kappa: float) -> np.ndarray:
    """``exp(kappa cos(t - c)) / (2 pi I_0(kappa))``, overflow-free for large kappa."""
    return np.exp(kappa * (np.cos(t - center) - 1.0)) / (TWO_PI * special.ive(0, kappa))


def von_mises_density(n: int, centers: tuple, kappas: tuple, weights: tuple) -> np.ndarray:
    """Cell averages of the mixture ``sum_i w_i vM(c_i, kappa_i)`` (weights as given).

    Each cell is split into ``m`` pieces narrower than about half a standard deviation
    ``1/sqrt(kappa)`` and each piece is integrated with 8-point Gauss-Legendre.
    """
    h = cell_width(n)
    m = max(1, int(np.ceil(2.0 * h * np.sqrt(max(kappas, default=0.0)))))
    x, w = np.polynomial.legendre.leggauss(GAUSS_POINTS)
    edges = -0.5 * h + h * np.arange(m) / m  # left ends of the pieces, relative to theta_i
    offsets = (edges[:, None] + 0.5 * (h / m) * (x[None, :] + 1.0)).ravel()
    weights_q = np.tile(w, m) * 0.5 / m  # sums to 1: an average over the cell
    t = cell_centers(n)[:, None] + offsets[None, :]
    rho = np.zeros(n)
    for c, kappa, weight in zip(centers, kappas, weights):
        rho += weight * von_mises_pdf(t, c, kappa) @ weights_q
    return rho


def resample_conservative(rho: np.ndarray, n: int) -> np.ndarray:
    """Resample cell averages on a uniform periodic grid to ``n`` cells.

    The cumulative mass on the old faces is interpolated linearly at the new faces and
    differenced: mass is kept (to round-off) and a nonnegative density stays nonnegative.
    """
    m = rho.size
    h_old, h_new = cell_width(m), cell_width(n)
    faces_old = (np.arange(m + 1) - 0.5) * h_old
    cum = np.concatenate([[0.0], np.cumsum(rho * h_old)])
    x = (np.arange(n + 1) - 0.5) * h_new - faces_old[0]
    wraps = np.floor(x / TWO_PI)
    mass_at = np.interp(x - wraps * TWO_PI + faces_old[0], faces_old, cum) + wraps * cum[-1]
    return np.diff(mass_at) / h_new


def archive_density(n: int, path: str, time: float | None = None) -> np.ndarray:
    """The snapshot of a run archive nearest to ``time`` (last if None), resampled to n cells."""
    if not Path(path).is_file():
        raise ConfigError("initial.path", f"archive not found: {path}")
    from solvers.archive import read_snapshot

    try:
        _, theta, rho = read_snapshot(path, time)
    except ValueError as err:  # not a run archive, or an empty one
        raise ConfigError("initial.path", str(err)) from None
    rho = np.asarray(rho, dtype=float)
    if rho.ndim != 1 or not np.allclose(theta, cell_centers(rho.size), rtol=0, atol=1e-9):
        raise ConfigError("initial.path", f"{path} does not hold an S1 run on the standard grid")
    return resample_conservative(rho, n)


def normalise(rho: np.ndarray, mass: float, key: str) -> np.ndarray:
    """Scale ``rho`` to total mass ``mass`` after checking it is finite, nonnegative, nonzero."""
    h = cell_width(rho.size)
    if not np.all(np.isfinite(rho)):
        raise ConfigError(key, "the initial density is not finite; check the parameters")
    total = float(np.sum(rho) * h)
    if not total > 0.0:
        raise ConfigError(key, f"the initial density has no mass (total {total:.3g})")
    i = int(np.argmin(rho))
    if rho[i] < 0.0:
        fix = "reduce the amplitudes (sum of |amplitude| <= 1 keeps it positive)" \
            if key == "initial.modes" else "it must be nonnegative everywhere"
        raise ConfigError(key, f"the initial density is negative (min {rho[i]:.3g} at "
                               f"{np.degrees(cell_centers(rho.size)[i]):.1f} deg): {fix}")
    rho = rho * (mass / total)
    return rho * (mass / (np.sum(rho) * h))
