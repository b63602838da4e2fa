"""Spectral building blocks (no notion of time): kernel eigenvalues and bases.

- :mod:`~spectral.eigenvalues`: Funk-Hecke eigenvalues of ``exp(beta x.y)`` (paper Lemma 5.1).
- :mod:`~spectral.circle`: the Fourier basis on S^1.
- :mod:`~spectral.sphere`: the spherical-harmonic basis on S^2 (shtns, Gauss grid);
  :mod:`~spectral.sphere_vector`: gradient, divergence and Helmholtz parts on its grid.
- :mod:`~spectral.kernel_series`: the kernel on S^2 as a finite sum of products;
  :mod:`~spectral.kernel_series_numba`: its loops, compiled.
"""

from spectral.circle import CircleBasis
from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues, log_bessel_i
from spectral.sphere import SphereBasis

__all__ = ["CircleBasis", "SphereBasis", "kernel_bandwidth", "kernel_eigenvalues", "log_bessel_i"]
