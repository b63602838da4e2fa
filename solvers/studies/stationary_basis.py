"""Real orthogonal bases on a quadrature grid, for the noisy stationary problem (docs/noise.md).

The stationary equation and its linearisation are written in a real basis ``phi_i`` of
low-degree functions, orthogonal for the grid's quadrature weights, together with the tangent
gradients of the basis functions:

- S^1 (:class:`spectral.CircleBasis`): ``1, cos(k theta), sin(k theta)``, ``1 <= k <= kmax``, on
  ``N`` equally spaced points (trapezoidal rule, exact for degrees ``< N``); the gradient is
  ``d/dtheta`` (one component, along ``tau = (-sin t, cos t)``).
- S^2 (:class:`spectral.SphereBasis`, shtns): ``Y_l0`` and ``sqrt(2) Re Y_lm``,
  ``sqrt(2) Im Y_lm`` (``m > 0``), ``l <= lmax``, on the Gauss grid (exact for degrees
  ``<= 2 nlat - 1``); the gradient has the components along ``e_theta`` and ``e_phi``.

A *symmetric* basis keeps the functions invariant under the symmetry that fixes the phase of
pure attention's branches: even functions ``cos(k theta)`` on S^1, axisymmetric ``Y_l0`` on S^2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.core.manifold import Manifold
from solvers.timestepping.manifolds import CIRCLE, SPHERE
from spectral.circle import CircleBasis
from spectral.sphere import SphereBasis
from spectral.sphere_vector import gradient as sphere_gradient


@dataclass(frozen=True, eq=False)
class RealBasis:
    """Real basis functions sampled on a quadrature grid.

    Attributes
    ----------
    manifold : Manifold
        The manifold of the grid (:mod:`solvers.core.manifold`).
    points : ndarray, shape (n_grid, d)
        Grid points on the unit sphere (d = 2 or 3), flattened (S^2: ``(nlat * nphi, 3)``).
    frame : ndarray, shape (n_grid, c, d)
        Orthonormal tangent frame (S^1: ``tau``; S^2: ``e_theta, e_phi``); c = d - 1.
    weights : ndarray, shape (n_grid,)
        Quadrature weights (sum ``|S^{d-1}|``).
    phi : ndarray, shape (n_grid, n)
        Grid values of the basis functions.
    grad : ndarray, shape (n_grid, n, c)
        Their gradients in the frame.
    degree : ndarray, shape (n,)
        Degree (wavenumber) of each function.
    norm2 : ndarray, shape (n,)
        ``int phi_i^2`` (quadrature).
    shape : tuple of int
        Grid shape (S^1 ``(N,)``, S^2 ``(nlat, nphi)``).
    coords : dict
        The grid's axes as xarray coordinates (``name: (dim, values, attrs)``), one per
        ``manifold.grid_dims``.
    """

    manifold: Manifold
    points: np.ndarray
    frame: np.ndarray
    weights: np.ndarray
    phi: np.ndarray
    grad: np.ndarray
    degree: np.ndarray
    norm2: np.ndarray
    shape: tuple
    coords: dict

    @property
    def size(self) -> int:
        return int(self.phi.shape[1])

    @property
    def area(self) -> float:
        """``|S^{d-1}|``: ``2 pi`` or ``4 pi``."""
        return self.manifold.surface

    def project(self, field: np.ndarray) -> np.ndarray:
        """Coefficients ``int phi_i f / int phi_i^2`` of grid values ``f`` (n_grid,) -> (n,)."""
        return (self.phi.T @ (self.weights * field)) / self.norm2

    def integrate(self, field: np.ndarray) -> float:
        """``int f`` of grid values ``f`` (n_grid,)."""
        return float(self.weights @ field)


def circle_basis(n_grid: int, kmax: int, symmetric: bool = False, constant: bool = True) -> RealBasis:
    """S^1 basis ``1, cos k theta, sin k theta`` (``k <= kmax``) on ``n_grid`` points.

    ``symmetric``: cosines only (even functions); ``constant``: include ``1``.
    """
    grid = CircleBasis(n_grid)
    if not 1 <= kmax < n_grid // 2:
        raise ValueError(f"kmax: need 1 <= kmax < N/2 = {n_grid // 2} (got {kmax})")
    t = grid.theta
    ks = np.arange(0 if constant else 1, kmax + 1)
    cols, grads, degs = [], [], []
    for k in ks:
        cols.append(np.cos(k * t))
        grads.append(-k * np.sin(k * t))
        degs.append(k)
        if k and not symmetric:
            cols.append(np.sin(k * t))
            grads.append(k * np.cos(k * t))
            degs.append(k)
    phi = np.stack(cols, axis=1)
    weights = grid.cell_weight
    points = np.stack([np.cos(t), np.sin(t)], axis=1)
    frame = np.stack([-np.sin(t), np.cos(t)], axis=1)[:, None, :]
    coords = {"theta": ("theta", 2 * np.pi * np.arange(n_grid) / n_grid,
                        {"units": "radian", "long_name": "angle"})}
    return RealBasis(CIRCLE, points, frame, weights, phi, np.stack(grads, axis=1)[:, :, None],
                     np.asarray(degs), (weights @ phi**2), (n_grid,), coords)


def sphere_basis(lmax_grid: int, lmax: int, symmetric: bool = False,
                 constant: bool = True) -> RealBasis:
    """S^2 real orthonormal harmonics of degree ``<= lmax`` on the Gauss grid of ``lmax_grid``.

    ``symmetric``: ``Y_l0`` only (axisymmetric about the z axis); ``constant``: include ``Y_00``.
    """
    grid = SphereBasis(lmax_grid)
    if not 1 <= lmax <= lmax_grid:
        raise ValueError(f"lmax: need 1 <= lmax <= the grid's lmax {lmax_grid} (got {lmax})")
    cols, grads, degs = [], [], []
    for l in range(0 if constant else 1, lmax + 1):
        for m in range(0, 1 if symmetric else l + 1):
            for part in ((1.0,) if m == 0 else (np.sqrt(0.5), -1j * np.sqrt(0.5))):
                c = np.zeros(grid.nlm, complex)
                c[grid.index(l, m)] = part  # backward: f = 2 Re(c Y_lm) for m > 0
                cols.append(grid.backward(c).ravel())
                gt, gp = sphere_gradient(grid, c)
                grads.append(np.stack([gt.ravel(), gp.ravel()], axis=1))
                degs.append(l)
    theta, lon = np.meshgrid(grid.theta, grid.phi, indexing="ij")
    th, ph = theta.ravel(), lon.ravel()
    e_theta = np.stack([np.cos(th) * np.cos(ph), np.cos(th) * np.sin(ph), -np.sin(th)], axis=1)
    e_phi = np.stack([-np.sin(ph), np.cos(ph), np.zeros_like(ph)], axis=1)
    weights = grid.weights.ravel()
    phi = np.stack(cols, axis=1)
    pts = grid.points.reshape(-1, 3)
    coords = {"theta": ("theta", np.arccos(np.clip(pts.reshape(*grid.shape, 3)[:, 0, 2], -1, 1)),
                        {"units": "radian", "long_name": "Gauss colatitude"}),
              "phi": ("phi", 2 * np.pi * np.arange(grid.shape[1]) / grid.shape[1],
                      {"units": "radian", "long_name": "longitude"})}
    return RealBasis(SPHERE, pts, np.stack([e_theta, e_phi], axis=1),
                     weights, phi, np.stack(grads, axis=1), np.asarray(degs),
                     weights @ phi**2, grid.shape, coords)


def make_basis(manifold: Manifold, resolution: int, degree: int, symmetric: bool = False,
               constant: bool = True) -> RealBasis:
    """:func:`circle_basis` (``resolution`` = N points) or :func:`sphere_basis` (``resolution``
    = the Gauss grid's lmax), with functions up to ``degree``."""
    return _BUILDERS[manifold](resolution, degree, symmetric, constant)


_BUILDERS = {CIRCLE: circle_basis, SPHERE: sphere_basis}  # the basis of each manifold object
