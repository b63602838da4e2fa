"""Initial densities as cell averages scaled to the requested mass, on S^1 and S^2.

S^1: cell ``i`` covers ``[theta_i - h/2, theta_i + h/2]`` with ``theta_i = 2 pi i / N``,
``h = 2 pi / N``; the mass of a grid density is ``sum(rho) * h``.

S^2: the cells of :class:`~solvers.sphere_grid.SphereGrid` (``lmax = domain.resolution``): cell
``(j, k)`` spans the band ``theta_faces[j] .. theta_faces[j + 1]`` and the longitudes
``phi_k -+ dphi/2``; its area is ``grid.area[j, k]`` and the mass is ``sum(rho * grid.area)``.
Cell averages are computed by a tensor Gauss-Legendre rule inside every cell (in ``theta``, with
the Jacobian ``sin theta``: smooth up to the poles, unlike the integrand in ``mu = cos theta``
for odd orders ``m``), divided by the same rule applied to 1.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import special

from solvers.config import ConfigError
from solvers.params import InitialParams, RunConfig
from solvers.sphere_grid import SphereGrid

TWO_PI = 2.0 * np.pi
FOUR_PI = 4.0 * np.pi
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
        ``domain.resolution`` gives the number of cells N (S^1) or ``lmax`` (S^2);
        ``initial`` the density.

    Returns
    -------
    ndarray, shape (N,) on S^1, (nlat, nphi) of ``SphereGrid(lmax)`` on S^2
        S^2: ``sum(rho * SphereGrid(lmax).area) == initial.mass``.

    Raises
    ------
    ConfigError
        For a negative or non-finite density, zero mass, or a missing or unsuitable archive.
    """
    if config.domain.manifold == "S2":
        # the spectral scheme's state is point values at the Gauss nodes (on S^1 the scheme
        # converts cell averages itself, exactly, mode by mode; on S^2 cells are not
        # rotation-invariant, so the point values are sampled here)
        return sphere_initial_density(config.initial, SphereGrid(config.domain.resolution),
                                      point_values=config.time.scheme == "spectral")
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


def _read_archive(path: str, time: float | None) -> tuple[object, np.ndarray]:
    """``(axes, rho)`` of the snapshot nearest ``time``; problems become ``initial.path`` errors."""
    if not Path(path).is_file():
        raise ConfigError("initial.path", f"archive not found: {path}")
    from solvers.archive import read_snapshot

    try:
        _, axes, rho = read_snapshot(path, time)
    except ValueError as err:  # not a run archive, or an empty one
        raise ConfigError("initial.path", str(err)) from None
    return axes, np.asarray(rho, dtype=float)


def archive_density(n: int, path: str, time: float | None = None) -> np.ndarray:
    """The snapshot of a run archive nearest to ``time`` (last if None), resampled to n cells."""
    theta, rho = _read_archive(path, time)
    if rho.ndim != 1 or not np.allclose(theta, cell_centers(rho.size), rtol=0, atol=1e-9):
        raise ConfigError("initial.path", f"{path} does not hold an S1 run on the standard grid")
    return resample_conservative(rho, n)


def normalise(rho: np.ndarray, mass: float, key: str,
              grid: SphereGrid | None = None) -> np.ndarray:
    """Scale ``rho`` to total mass ``mass`` after checking it is finite, nonnegative, nonzero.

    Parameters
    ----------
    rho : ndarray, shape (N,) on S^1 or (nlat, nphi) on S^2
    mass : float
    key : str
        The config key named by errors.
    grid : SphereGrid, optional
        The S^2 grid (weights ``grid.area``); None on S^1 (weights ``2 pi / N``).
    """
    weight = cell_width(rho.size) if grid is None else grid.area
    if not np.all(np.isfinite(rho)):
        raise ConfigError(key, "the initial density is not finite; check the parameters")
    total = float(np.sum(rho * weight))
    if not total > 0.0:
        raise ConfigError(key, f"the initial density has no mass (total {total:.3g})")
    i = np.unravel_index(np.argmin(rho), rho.shape)
    if rho[i] < 0.0:
        raise ConfigError(key, f"the initial density is negative (min {rho[i]:.3g} at "
                               f"{_location(i, rho.shape, grid)}): {_fix(key, grid)}")
    rho = rho * (mass / total)
    return rho * (mass / np.sum(rho * weight))


def _location(i: tuple, shape: tuple, grid: SphereGrid | None) -> str:
    if grid is None:
        return f"{np.degrees(cell_centers(shape[0])[i[0]]):.1f} deg"
    return (f"colatitude {np.degrees(grid.theta[i[0]]):.1f} deg, "
            f"longitude {np.degrees(grid.phi[i[1]]):.1f} deg")


def _fix(key: str, grid: SphereGrid | None) -> str:
    if key != "initial.modes":
        return "it must be nonnegative everywhere"
    if grid is None:
        return "reduce the amplitudes (sum of |amplitude| <= 1 keeps it positive)"
    return "reduce the amplitudes (sum of |amplitude| sqrt(4 pi (2 l + 1)) <= 1 keeps it positive)"


# --------------------------------------------------------------------------- S^2


def sphere_initial_density(init: InitialParams, grid: SphereGrid, point_values: bool = False) -> np.ndarray:
    """Cell averages (or, with ``point_values``, values at the Gauss nodes) of ``init`` on ``grid``,
    scaled to mass ``init.mass``.

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
    elif init.kind == "archive":
        rho, key = sphere_archive_density(grid, init.path, init.time), "initial.path"
    else:
        raise ConfigError("initial.kind", f"unknown kind {init.kind!r}")
    return normalise(rho, init.mass, key, grid)


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


def sphere_archive_density(grid: SphereGrid, path: str, time: float | None = None) -> np.ndarray:
    """The snapshot of an S^2 run archive nearest to ``time`` (last if None) on ``grid``.

    The same grid: a copy. Another Gauss grid: :func:`resample_sphere`, then negatives are
    clipped to 0 (the caller renormalises the mass to ``initial.mass``).
    """
    axes, rho = _read_archive(path, time)
    if rho.ndim != 2 or not isinstance(axes, tuple) or rho.shape[0] < 32:
        raise ConfigError("initial.path", f"{path} does not hold an S2 run")
    if rho.shape == grid.shape and np.allclose(axes[0], grid.theta, rtol=0, atol=1e-9):
        return rho.copy()
    try:
        return np.maximum(resample_sphere(rho, grid.lmax), 0.0)
    except ValueError as err:  # a grid shtns cannot analyse
        raise ConfigError("initial.path", f"{path}: cannot resample its grid ({err})") from None
