"""Spherical-harmonic basis on S^2: a thin wrapper around shtns (Gauss grid).

Conventions (docs/math.md §2, checked against ``scipy.special.sph_harm_y`` in
``tests/test_sphere_basis.py``):

- Grid: Gauss-Legendre colatitudes ``theta`` (``nlat`` of them, increasing from the north pole)
  times ``nphi`` equally spaced longitudes ``phi_k = 2 pi k / nphi``; fields are arrays of shape
  ``(nlat, nphi)`` (shtns ``SHT_PHI_CONTIGUOUS`` layout).
- Harmonics: orthonormal complex ``Y_lm`` for the unnormalised surface measure
  ``dsigma = sin(theta) dtheta dphi`` (``int |Y_lm|^2 dsigma = 1``), with the Condon-Shortley
  phase: shtns' default, identical to ``sph_harm_y(l, m, theta, phi)``.
- Coefficients of a real field: ``c_lm = int conj(Y_lm) f dsigma`` for ``0 <= m <= l <= lmax``,
  stored in shtns' own order (m-major); ``degrees[i]``, ``orders[i]`` give ``(l, m)`` of entry
  ``i`` and :meth:`SphereBasis.index` the reverse. The field is
  ``f = sum_l [c_l0 Y_l0 + 2 Re sum_{m>0} c_lm Y_lm]`` (``c_{l,-m} = (-1)^m conj(c_lm)``).
- Quadrature: ``weights`` (nlat, nphi) sum to ``4 pi``; shtns' ``gauss_wts()`` holds the north
  hemisphere only (normalised to sum 1; for odd ``nlat`` its last entry is half the equator's
  weight), and is mirrored here.

shtns prints a banner on stdout at import and ends the process (``exit``) on some invalid grids:
the module imports it lazily with the banner sent to stderr, and validates every size first.
The module knows nothing about time stepping.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

SHTNS_MIN_NLAT = 32  # this shtns build refuses smaller Gauss grids (and exits the process)


def _import_shtns() -> Any:
    """Import shtns with its banner (printed by its Python module at import, and by the C
    library) kept off stdout: a debug log line (keeps tool output clean, nothing under -q)."""
    if "shtns" in sys.modules:
        return sys.modules["shtns"]
    banner = io.StringIO()
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no usable fd 1: import plainly
        with contextlib.redirect_stdout(banner):
            import shtns
        logging.getLogger(__name__).debug("%s", banner.getvalue().strip())
        return shtns
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(banner):
            import shtns
        logging.getLogger(__name__).debug("%s", banner.getvalue().strip())
        try:
            ctypes.CDLL(None).fflush(None)
        except (OSError, AttributeError):
            pass
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return shtns


_TWO_PI_LONG = np.longdouble("6.283185307179586476925286766559005768")


def expi(k: ArrayLike, angle: ArrayLike) -> np.ndarray:
    """``exp(i k angle)`` for integers ``k``, accurate to a few ulps even when ``k angle`` is large.

    The product ``k * angle`` rounded in double carries an absolute error ``~ eps |k angle|``
    (1e-14 at ``k angle ~ 100``); here it is formed and reduced modulo ``2 pi`` in numpy's
    extended precision (80-bit on x86; where ``longdouble`` is plain double nothing is lost
    relative to the naive formula). Broadcasts ``k`` against ``angle``.
    """
    ks = np.asarray(k, dtype=np.longdouble) * np.asarray(angle, dtype=np.longdouble)
    return np.exp(1j * np.asarray(np.fmod(ks, _TWO_PI_LONG), dtype=float))


def _even_fft_size(n: int) -> int:
    """Smallest even integer ``>= n`` of the form ``2^a 3^b 5^c`` (fast FFT length)."""
    m = max(2, int(n) + (int(n) % 2))
    while True:
        k = m
        for p in (2, 3, 5):
            while k % p == 0:
                k //= p
        if k == 1:
            return m
        m += 2


@dataclass(frozen=True)
class SphereBasis:
    """Orthonormal complex spherical harmonics up to degree ``lmax`` on a Gauss grid.

    Parameters
    ----------
    lmax : int
        Largest degree (>= 1); ``mmax = lmax``.
    nlat : int, optional
        Number of Gauss colatitudes, ``>= max(32, lmax + 1)``. Default: ``lmax + 1`` rounded up
        to even, at least 32. The quadrature is exact for products of degree ``<= 2 nlat - 1``
        (analysis of band-limited data of degree ``<= 2 nlat - 1 - lmax`` is exact).
    nphi : int, optional
        Number of longitudes, ``> 2 lmax``. Default: smallest even FFT-friendly size
        ``>= 2 lmax + 2``.
    """

    lmax: int
    nlat: int | None = None
    nphi: int | None = None

    def __post_init__(self) -> None:
        if int(self.lmax) != self.lmax or self.lmax < 1:
            raise ValueError(f"lmax: must be an integer >= 1 (got {self.lmax})")
        lmax = int(self.lmax)
        nlat = max(SHTNS_MIN_NLAT, lmax + 1 + (lmax + 1) % 2) if self.nlat is None else self.nlat
        nphi = _even_fft_size(2 * lmax + 2) if self.nphi is None else self.nphi
        if int(nlat) != nlat or nlat < max(SHTNS_MIN_NLAT, lmax + 1):
            raise ValueError(f"nlat: must be an integer >= max(32, lmax + 1) = "
                             f"{max(SHTNS_MIN_NLAT, lmax + 1)} (got {nlat})")
        if int(nphi) != nphi or nphi <= 2 * lmax:
            raise ValueError(f"nphi: must be an integer > 2 lmax = {2 * lmax} (got {nphi})")
        object.__setattr__(self, "lmax", lmax)
        object.__setattr__(self, "nlat", int(nlat))
        object.__setattr__(self, "nphi", int(nphi))

    # ------------------------------------------------------------------ shtns and layout
    @cached_property
    def _sht(self) -> Any:
        shtns = _import_shtns()
        sh = shtns.sht(self.lmax, self.lmax, norm=shtns.sht_orthonormal, nthreads=1)
        sh.set_grid(self.nlat, self.nphi, flags=shtns.sht_gauss | shtns.SHT_PHI_CONTIGUOUS)
        if tuple(sh.spat_shape) != (self.nlat, self.nphi):  # layout assumption of this module
            raise RuntimeError(f"shtns spatial shape {sh.spat_shape} != {(self.nlat, self.nphi)}")
        return sh

    @property
    def shape(self) -> tuple[int, int]:
        """Grid shape ``(nlat, nphi)``."""
        return (self.nlat, self.nphi)

    @cached_property
    def nlm(self) -> int:
        """Number of stored coefficients ``(lmax + 1)(lmax + 2) / 2``."""
        return int(self._sht.nlm)

    @cached_property
    def degrees(self) -> np.ndarray:
        """Degree ``l`` of each stored coefficient, shape (nlm,)."""
        return np.asarray(self._sht.l, dtype=int).copy()

    @cached_property
    def orders(self) -> np.ndarray:
        """Order ``m >= 0`` of each stored coefficient, shape (nlm,)."""
        return np.asarray(self._sht.m, dtype=int).copy()

    def index(self, l: int, m: int) -> int:
        """Position of ``(l, m)`` (``0 <= m <= l <= lmax``) in a coefficient array."""
        if not 0 <= m <= l <= self.lmax:
            raise ValueError(f"(l, m): need 0 <= m <= l <= lmax = {self.lmax} (got {(l, m)})")
        return int(self._sht.idx(int(l), int(m)))

    # ------------------------------------------------------------------ grid
    @cached_property
    def theta(self) -> np.ndarray:
        """Gauss colatitudes in radians, increasing, shape (nlat,)."""
        return np.arccos(np.asarray(self._sht.cos_theta, dtype=float))

    @cached_property
    def phi(self) -> np.ndarray:
        """Longitudes ``2 pi k / nphi`` in radians, shape (nphi,)."""
        return 2.0 * np.pi * np.arange(self.nphi) / self.nphi

    @cached_property
    def weights(self) -> np.ndarray:
        """Full-sphere quadrature weights, shape (nlat, nphi), summing to ``4 pi``."""
        north = np.asarray(self._sht.gauss_wts(), dtype=float)  # (ceil(nlat/2),), sum 1
        if self.nlat % 2:  # odd nlat: shtns stores half the equator's weight
            gauss = np.concatenate([north[:-1], [2.0 * north[-1]], north[-2::-1]])
        else:
            gauss = np.concatenate([north, north[::-1]])  # the Legendre weights, sum 2
        return np.outer(gauss, np.full(self.nphi, 2.0 * np.pi / self.nphi))

    @cached_property
    def points(self) -> np.ndarray:
        """Cartesian grid points, shape (nlat, nphi, 3)."""
        st, ct = np.sin(self.theta)[:, None], np.cos(self.theta)[:, None]
        cp, sp = np.cos(self.phi)[None, :], np.sin(self.phi)[None, :]
        return np.stack(np.broadcast_arrays(st * cp, st * sp, ct), axis=-1)

    # ------------------------------------------------------------------ transforms
    def forward(self, field: ArrayLike) -> np.ndarray:
        """Real grid values (..., nlat, nphi) -> coefficients ``int conj(Y_lm) f dsigma`` (..., nlm)."""
        f = np.asarray(field, dtype=float)
        if f.shape[-2:] != self.shape:
            raise ValueError(f"field: expected trailing shape {self.shape} (got {f.shape})")
        flat = f.reshape(-1, *self.shape)
        out = np.stack([self._sht.analys(np.array(x, dtype=np.float64, order="C")) for x in flat])
        return out.reshape(*f.shape[:-2], self.nlm)

    def backward(self, coeffs: ArrayLike) -> np.ndarray:
        """Coefficients (..., nlm) -> real grid values (..., nlat, nphi)."""
        c = np.asarray(coeffs, dtype=complex)
        if c.shape[-1] != self.nlm:
            raise ValueError(f"coeffs: expected trailing length nlm = {self.nlm} (got {c.shape})")
        flat = c.reshape(-1, self.nlm)
        out = np.stack([self._sht.synth(np.array(x, dtype=np.complex128, order="C")) for x in flat])
        return out.reshape(*c.shape[:-1], *self.shape)

    def apply_diagonal(self, coeffs: ArrayLike, per_degree: ArrayLike) -> np.ndarray:
        """Rotation-invariant operator: ``c_lm * per_degree[l]``.

        ``per_degree`` has shape (lmax + 1,) (e.g. the Funk-Hecke eigenvalues of docs/math.md §2:
        ``(K * rho)_lm = lambda_l rho_lm``).
        """
        mult = np.asarray(per_degree)
        if mult.shape[-1] != self.lmax + 1:
            raise ValueError(f"per_degree: expected length lmax + 1 = {self.lmax + 1} "
                             f"(got {mult.shape[-1]})")
        return np.asarray(coeffs) * mult[..., self.degrees]

    def degree_norms(self, coeffs: ArrayLike) -> np.ndarray:
        """Per-degree norms ``sqrt(sum_{m=-l}^{l} |c_lm|^2)`` of a real field, shape (..., lmax + 1).

        Uses ``|c_{l,-m}| = |c_lm|``: ``|c_l0|^2 + 2 sum_{m>0} |c_lm|^2``.
        """
        c = np.asarray(coeffs)
        power = np.abs(c) ** 2 * np.where(self.orders == 0, 1.0, 2.0)
        onehot = self.degrees[:, None] == np.arange(self.lmax + 1)[None, :]  # (nlm, lmax + 1)
        return np.sqrt(power @ onehot.astype(float))

    def harmonics(self, theta: ArrayLike, phi: ArrayLike) -> np.ndarray:
        """``Y_lm`` at arbitrary points (scipy's ``sph_harm_y`` at ``phi = 0`` times
        :func:`expi`; independent of shtns).

        Parameters
        ----------
        theta, phi : array_like, shape (n,)
            Colatitudes and longitudes in radians.

        Returns
        -------
        ndarray, shape (n, nlm), complex
        """
        from scipy import special

        th = np.atleast_1d(np.asarray(theta, dtype=float))[:, None]
        ph = np.atleast_1d(np.asarray(phi, dtype=float))[:, None]
        l, m = self.degrees[None, :], self.orders[None, :]
        if hasattr(special, "sph_harm_y"):  # scipy >= 1.15
            legendre = special.sph_harm_y(l, m, th, 0.0).real
        else:  # older scipy: (order, degree, azimuth, polar)
            legendre = special.sph_harm(m, l, 0.0, th).real
        return legendre * expi(m, ph)  # e^{i m phi} without the rounding of m * phi
