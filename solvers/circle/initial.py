"""Initial densities on S^1 as cell averages scaled to the requested mass.

Cell ``i`` covers ``[theta_i - h/2, theta_i + h/2]`` with ``theta_i = 2 pi i / N``,
``h = 2 pi / N``; the mass of a grid density is ``sum(rho) * h``. Densities read from an
archive arrive through :mod:`solvers.io.state`, which calls :func:`from_snapshot`.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from solvers.core.initial import normalise
from solvers.model.config import ConfigError
from solvers.model.params import InitialParams

TWO_PI = 2.0 * np.pi
GAUSS_POINTS = 8


def cell_centers(n: int) -> np.ndarray:
    """Cell centres ``theta_i = 2 pi i / n``, shape (n,)."""
    return TWO_PI * np.arange(n) / n


def cell_width(n: int) -> float:
    """Cell width ``h = 2 pi / n``."""
    return TWO_PI / n


def circle_initial_density(init: InitialParams, n: int) -> np.ndarray:
    """Cell averages (shape (n,)) of the analytic initial density ``init`` (uniform or von Mises),
    with ``sum(rho) * 2 pi / n == init.mass``."""
    if init.kind == "uniform":
        rho, key = uniform_density(n, init.modes), "initial.modes"
    elif init.kind == "von_mises":
        rho, key = von_mises_density(n, init.centers, init.kappas, init.weights), "initial.kappas"
    elif init.kind == "atoms":  # the density under the Dirac atoms: the mass they leave
        rest = init.mass - float(np.sum(init.weights))
        if rest <= 1e-12 * init.mass:
            return np.zeros(n)
        return scale(uniform_density(n, init.modes), rest, "initial.modes")
    else:
        raise ConfigError("initial.kind", f"unknown kind {init.kind!r}")
    return scale(rho, init.mass, key)


def scale(rho: np.ndarray, mass: float, key: str) -> np.ndarray:
    """:func:`solvers.core.initial.normalise` on the S^1 grid of ``rho.size`` cells."""
    fix = ("reduce the amplitudes (sum of |amplitude| <= 1 keeps it positive)" if key == "initial.modes"
           else "it must be nonnegative everywhere")
    return normalise(rho, cell_width(rho.size), mass, key,
                     lambda i: f"{np.degrees(cell_centers(rho.size)[i[0]]):.1f} deg", fix)


def from_snapshot(theta: np.ndarray, rho: np.ndarray, n: int, path: str) -> np.ndarray:
    """An archived S^1 snapshot (centres ``theta``, densities ``rho``) resampled to n cells."""
    if rho.ndim != 1 or not np.allclose(theta, cell_centers(rho.size), rtol=0, atol=1e-9):
        raise ConfigError("initial.path", f"{path} does not hold an S1 run on the standard grid")
    return resample_conservative(rho, n)


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
