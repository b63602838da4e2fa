"""Spectral building blocks (no notion of time): kernel eigenvalues and bases."""

from spectral.circle import CircleBasis
from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues, log_bessel_i
from spectral.sphere import SphereBasis

__all__ = ["CircleBasis", "SphereBasis", "kernel_bandwidth", "kernel_eigenvalues", "log_bessel_i"]
