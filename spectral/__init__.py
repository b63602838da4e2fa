"""Spectral building blocks (no notion of time): kernel eigenvalues and bases."""

from spectral.circle import CircleBasis
from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues, log_bessel_i

__all__ = ["CircleBasis", "kernel_bandwidth", "kernel_eigenvalues", "log_bessel_i"]
