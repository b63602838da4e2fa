"""Initial densities on S^2 as cell averages (or node values) scaled to the requested mass.

The cells of :class:`~solvers.sphere.cells.SphereGrid` (``lmax = domain.resolution``): cell
``(j, k)`` spans the band ``theta_faces[j] .. theta_faces[j + 1]`` and the longitudes
``phi_k -+ dphi/2``; its area is ``grid.area[j, k]`` and the mass is ``sum(rho * grid.area)``.
Cell averages are computed by a tensor Gauss-Legendre rule inside every cell (in ``theta``, with
the Jacobian ``sin theta``: smooth up to the poles, unlike the integrand in ``mu = cos theta``
for odd orders ``m``), divided by the same rule applied to 1. Densities read from an archive
arrive through :mod:`solvers.io.state`, which calls :func:`from_snapshot`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.core.initial import normalise
from solvers.model.config import ConfigError
from solvers.model.params import InitialParams
from solvers.sphere.cells import SphereGrid

TWO_PI = 2.0 * np.pi
FOUR_PI = 4.0 * np.pi
GAUSS_POINTS = 8


def sphere_initial_density(init: InitialParams, grid: SphereGrid, point_values: bool = False) -> np.ndarray:
    """Cell averages (or, with ``point_values``, values at the Gauss nodes) of the analytic
    initial density ``init`` (uniform or von Mises-Fisher) on ``grid``, scaled to ``init.mass``;
    ``kind = "atoms"``: the uniform density (with ``modes``) holding ``mass`` minus the Dirac
    atoms' weights (zero when they hold it all).

    Returns
    -------
    ndarray, shape (nlat, nphi)
        ``sum(rho * grid.area) == init.mass`` (to round-off).
    """
    if init.kind == "uniform":
        rho, key = sphere_uniform_density(grid, init.modes, point_values), "initial.modes"
    elif init.kind == "von_mises":
        rho = vmf_density(grid, init.centers, init.kappas, init.weights, point_values)
        key = "initial.kappas"
    elif init.kind == "atoms":  # the density under the Dirac atoms: the mass they leave
        rest = init.mass - float(np.sum(init.weights))
        if rest <= 1e-12 * init.mass:
            return np.zeros(grid.shape)
        return scale(sphere_uniform_density(grid, init.modes, point_values), rest, "initial.modes", grid)
    else:
        raise ConfigError("initial.kind", f"unknown kind {init.kind!r}")
    return scale(rho, init.mass, key, grid)


def scale(rho: np.ndarray, mass: float, key: str, grid: SphereGrid) -> np.ndarray:
    """:func:`solvers.core.initial.normalise` on ``grid``."""
    fix = ("reduce the amplitudes (sum of |amplitude| sqrt(4 pi (2 l + 1)) <= 1 keeps it positive)" if key == "initial.modes"
           else "it must be nonnegative everywhere")

    def where(i: tuple) -> str:
        return (f"colatitude {np.degrees(grid.theta[i[0]]):.1f} deg, "
                f"longitude {np.degrees(grid.phi[i[1]]):.1f} deg")

    return normalise(rho, grid.area, mass, key, where, fix)


def from_snapshot(axes: object, rho: np.ndarray, grid: SphereGrid, path: str) -> np.ndarray:
    """An archived S^2 snapshot on ``grid``.

    The same grid: a copy. Another Gauss grid: :func:`resample_sphere`, then negatives are
    clipped to 0 (the caller renormalises the mass to ``initial.mass``).
    """
    if rho.ndim != 2 or not isinstance(axes, tuple) or rho.shape[0] < 32:
        raise ConfigError("initial.path", f"{path} does not hold an S2 run")
    if rho.shape == grid.shape and np.allclose(axes[0], grid.theta, rtol=0, atol=1e-9):
        return rho.copy()
    try:
        return np.maximum(resample_sphere(rho, grid.lmax), 0.0)
    except ValueError as err:  # a grid shtns cannot analyse
        raise ConfigError("initial.path", f"{path}: cannot resample its grid ({err})") from None


def sphere_sample(grid: SphereGrid, f: Callable[[np.ndarray, np.ndarray], np.ndarray],
                  point_values: bool, sub: int = 1) -> np.ndarray:
    """``f`` at the Gauss nodes (``point_values``) or its cell averages, shape (nlat, nphi)."""
    if point_values:
        return np.asarray(f(grid.theta[:, None], grid.phi[None, :]), dtype=float)
    return sphere_cell_averages(grid, f, sub=sub)


def sphere_cell_averages(grid: SphereGrid, f: Callable[[np.ndarray, np.ndarray], np.ndarray],
                         sub: int = 1, points: int = GAUSS_POINTS) -> np.ndarray:
    """Averages of ``f(theta, phi)`` over the cells of ``grid``.

    Each cell is split into ``sub x sub`` pieces, each integrated by a ``points x points``
    Gauss-Legendre rule in ``(theta, phi)`` with the Jacobian ``sin theta``; the result is
    divided by the same rule applied to 1, so constants are reproduced exactly.

    Parameters
    ----------
    f : callable
        Vectorised ``f(theta, phi)`` (broadcasting arrays of radians).

    Returns
    -------
    ndarray, shape (nlat, nphi)
    """
    x, w = np.polynomial.legendre.leggauss(points)
    u = ((np.arange(sub)[:, None] + 0.5 * (x[None, :] + 1.0)) / sub).ravel()  # nodes in [0, 1]
    wu = np.tile(w, sub) / (2.0 * sub)  # weights on [0, 1], summing to 1
    phi = grid.phi[:, None] + grid.dphi * (u[None, :] - 0.5)  # (nphi, P)
    out = np.empty(grid.shape)
    faces = grid.theta_faces
    for j in range(grid.shape[0]):
        theta = faces[j] + (faces[j + 1] - faces[j]) * u  # (Q,)
        wt = wu * np.sin(theta)
        values = f(theta[:, None, None], phi[None, :, :])  # (Q, nphi, P)
        out[j] = np.einsum("a,akb,b->k", wt, values, wu) / wt.sum()
    return out


def _real_harmonic(l: int, m: int, theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``Re Y_lm(theta, phi) = Y_lm(theta, 0) cos(m phi)`` (orthonormal, Condon-Shortley)."""
    from scipy import special

    if hasattr(special, "sph_harm_y"):  # scipy >= 1.15
        y = special.sph_harm_y(l, m, theta, 0.0)
    else:
        y = special.sph_harm(m, l, 0.0, theta)
    return np.real(y) * np.cos(m * phi)


def sphere_uniform_density(grid: SphereGrid, modes: tuple = (), point_values: bool = False) -> np.ndarray:
    """Cell averages (or node values) of ``1/(4 pi) + sum amp Re Y_lm``, ``modes = ((l, m, amp), ...)``."""
    def f(theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
        total = np.full(np.broadcast_shapes(theta.shape, phi.shape), 1.0 / FOUR_PI)
        for l, m, amp in modes:
            total = total + amp * _real_harmonic(l, m, theta, phi)
        return total

    return sphere_sample(grid, f, point_values) if modes else np.full(grid.shape, 1.0 / FOUR_PI)


def vmf_pdf(x: np.ndarray, center: np.ndarray, kappa: float) -> np.ndarray:
    """von Mises-Fisher density ``kappa/(4 pi sinh kappa) exp(kappa e.x)`` on S^2.

    Evaluated as ``kappa/(2 pi (1 - exp(-2 kappa))) exp(kappa (e.x - 1))`` (no overflow);
    ``1/(4 pi)`` at ``kappa = 0``. ``x``: shape (..., 3) unit vectors; ``center``: (3,).
    """
    if kappa < 1e-12:
        return np.full(x.shape[:-1], 1.0 / FOUR_PI)
    return kappa / (TWO_PI * -np.expm1(-2.0 * kappa)) * np.exp(kappa * (x @ center - 1.0))


def vmf_density(grid: SphereGrid, centers: tuple, kappas: tuple, weights: tuple,
                point_values: bool = False) -> np.ndarray:
    """Cell averages (or node values) of the mixture ``sum_i w_i vMF(e_i, kappa_i)``.

    Cells are split into pieces narrower than about half the width ``1/sqrt(kappa)``.
    """
    h = max(float(grid.dtheta.max()), grid.dphi)
    sub = max(1, int(np.ceil(2.0 * h * np.sqrt(max(kappas, default=0.0)))))

    def f(theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
        st = np.sin(theta)
        x = np.stack(np.broadcast_arrays(st * np.cos(phi), st * np.sin(phi), np.cos(theta)), -1)
        return sum(w * vmf_pdf(x, np.asarray(c, float), k)
                   for c, k, w in zip(centers, kappas, weights))

    return sphere_sample(grid, f, point_values, sub=sub)


def resample_sphere(rho: np.ndarray, lmax: int) -> np.ndarray:
    """Spectral resampling of a Gauss-grid field to ``SphereBasis(lmax)``'s grid.

    The old field (shape (nlat, nphi), any Gauss grid) is analysed with its own
    :class:`~spectral.SphereBasis` (``lmax_old = min(nlat - 1, (nphi - 1) // 2)``), truncated
    to degrees ``<= min(lmax_old, lmax)`` and synthesised on the new grid. Cell averages are
    treated as point values (an O(h^2) error) and truncation ripples can be negative: the
    caller clips negatives to 0 and renormalises (:func:`sphere_archive_density`).

    Returns
    -------
    ndarray, shape ``SphereBasis(lmax).shape``
    """
    from spectral.sphere import SphereBasis

    nlat, nphi = rho.shape
    old = SphereBasis(min(nlat - 1, (nphi - 1) // 2), nlat=nlat, nphi=nphi)
    new = SphereBasis(lmax)
    keep = min(old.lmax, new.lmax)
    sel = np.flatnonzero(new.degrees <= keep)
    coeffs = np.zeros(new.nlm, dtype=complex)
    source = [old.index(l, m) for l, m in zip(new.degrees[sel], new.orders[sel])]
    coeffs[sel] = old.forward(rho)[source]
    return new.backward(coeffs)
