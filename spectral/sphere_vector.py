"""Vector calculus on the Gauss grid of a :class:`spectral.sphere.SphereBasis` (shtns vector transforms).

Conventions (checked against closed forms in ``tests/test_sphere_vector.py``, not taken from docs):

- A tangent field is given by its components ``(v_theta, v_phi)`` on the grid, each of shape
  ``(nlat, nphi)``: ``v_theta`` along ``e_theta`` (southward, increasing colatitude), ``v_phi``
  along ``e_phi`` (eastward), as in :mod:`solvers.sphere_problem`.
- ``grad S = d_theta S e_theta + (1/sin theta) d_phi S e_phi`` (shtns ``synth_grad``).
- Helmholtz decomposition (shtns ``spat_to_SHsphtor``): ``v = grad S + (toroidal part)``; only the
  spheroidal potential ``S`` has a divergence: ``div v = Lap S = -sum l(l+1) S_lm Y_lm`` on the
  unit sphere.

Discrete meaning of :func:`divergence`: shtns' vector analysis is a quadrature (FFT in
longitude, Gauss-Legendre in latitude), so for *any* grid field ``F`` it returns exactly
``div(F)_lm = -sum_nodes w F . grad conj(Y_lm)`` (discrete integration by parts, verified in the
tests). Hence ``sum_nodes w g div(F) = -sum_nodes w F . grad g`` for every ``g`` of degree
``<= lmax``: the identity behind mass conservation and the discrete energy identity (docs/math.md §1).
It is the exact coefficient when ``F . grad Y`` is a polynomial of degree ``<= 2 nlat - 1`` whose
longitude frequencies stay below ``nphi - m``: e.g. ``F = rho grad f`` with ``rho``, ``f`` of
degree ``<= c`` gives exact output degrees ``l`` with ``2c + l <= 2 nlat - 1`` and
``2c + l < nphi`` (the 2/3 rule of :mod:`solvers.sphere_spectral`).

The module knows nothing about the model or time stepping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from spectral.sphere import SphereBasis


def _sht(basis: SphereBasis) -> Any:
    """The basis' shtns object (grid (nlat, nphi), ``SHT_PHI_CONTIGUOUS``, orthonormal, CS phase)."""
    return basis._sht  # SphereBasis owns the one shtns instance per grid (no public accessor)


def _grid_field(basis: SphereBasis, v: ArrayLike, name: str) -> np.ndarray:
    a = np.ascontiguousarray(v, dtype=np.float64)
    if a.shape != basis.shape:
        raise ValueError(f"{name}: expected shape {basis.shape} (got {a.shape})")
    return a


def laplacian_eigenvalues(basis: SphereBasis) -> np.ndarray:
    """``-l(l+1)`` of every stored coefficient (shtns order), shape (nlm,), spectral."""
    l = basis.degrees.astype(float)
    return -l * (l + 1.0)


def gradient(basis: SphereBasis, coeffs: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Surface gradient of a real scalar given by its coefficients.

    Parameters
    ----------
    basis : SphereBasis
    coeffs : array_like, shape (nlm,), complex
        Spectral coefficients ``S_lm`` (shtns order, ``m >= 0``) of a real field ``S``.

    Returns
    -------
    v_theta, v_phi : ndarray, each shape (nlat, nphi)
        Grid values of ``d_theta S`` (southward) and ``(1/sin theta) d_phi S`` (eastward).
    """
    c = np.ascontiguousarray(coeffs, dtype=np.complex128)
    if c.shape != (basis.nlm,):
        raise ValueError(f"coeffs: expected shape ({basis.nlm},) (got {c.shape})")
    vt, vp = _sht(basis).synth_grad(c)
    return np.asarray(vt, dtype=float), np.asarray(vp, dtype=float)


def helmholtz(basis: SphereBasis, v_theta: ArrayLike, v_phi: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Spheroidal and toroidal potentials of a tangent field given on the grid.

    Parameters
    ----------
    basis : SphereBasis
    v_theta, v_phi : array_like, each shape (nlat, nphi)
        Grid components (southward, eastward).

    Returns
    -------
    s_lm, t_lm : ndarray, each shape (nlm,), complex
        Spectral potentials (shtns order); ``grad S`` is the curl-free part, ``s_00 = t_00 = 0``.
    """
    vt = _grid_field(basis, v_theta, "v_theta")
    vp = _grid_field(basis, v_phi, "v_phi")
    s, t = _sht(basis).analys(vt, vp)
    return np.asarray(s, dtype=complex), np.asarray(t, dtype=complex)


def divergence(basis: SphereBasis, v_theta: ArrayLike, v_phi: ArrayLike) -> np.ndarray:
    """Surface divergence of a tangent field given on the grid, as coefficients.

    Parameters
    ----------
    basis : SphereBasis
    v_theta, v_phi : array_like, each shape (nlat, nphi)
        Grid components (southward, eastward).

    Returns
    -------
    ndarray, shape (nlm,), complex
        Spectral ``div(v)_lm = -l(l+1) S_lm`` (degree 0 exactly zero: the integral of a
        divergence vanishes); see the module docstring for its discrete meaning.
    """
    s, _ = helmholtz(basis, v_theta, v_phi)
    return laplacian_eigenvalues(basis) * s
