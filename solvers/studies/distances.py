"""Distances between two runs' final states for the refinement ladders of
:mod:`solvers.studies.converge`: Wasserstein-1 on S^1 from the cumulative distributions, and
the kernel distance ``||mu_a - mu_b||_K`` on S^2 from spherical-harmonic moments (Funk-Hecke,
paper Lemma 5.1, docs/math.md §2).

A measure-valued state (``[atoms] representation = "dirac"``) is its grid density plus its
Dirac atoms at their exact positions (``atoms``: ``(masses (n,), positions)``, S^1 angles (n,),
S^2 unit vectors (n, 3)): on S^1 each atom is a jump of its mass in the cumulative
distribution, sampled on a grid of ``DIRAC_SAMPLES`` points as a ramp one sample wide (the
same integral; W1 to about ``1e-6 m``), on S^2 it adds ``m conj(Y_lm(x))`` to the moments."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from spectral import SphereBasis, kernel_bandwidth, kernel_eigenvalues

TWO_PI = 2.0 * np.pi
DIRAC_SAMPLES = 1 << 20  # S^1 W1 with Dirac atoms: their jumps are ramps of 2 pi / DIRAC_SAMPLES
Atoms = tuple[np.ndarray, np.ndarray] | None  # Dirac atoms: (masses, positions), or None


def s1_cdf(rho: np.ndarray, scheme: str, samples: int) -> np.ndarray:
    """``F(x) = int_0^x rho`` at ``x_j = 2 pi j / samples`` (``samples >= 2 N``, even): fv piecewise
    linear through the face values; spectral the exact integral of the trigonometric polynomial."""
    n = rho.size
    x = TWO_PI * np.arange(samples) / samples
    if scheme == "fv":
        m = rho * (TWO_PI / n)
        xp = np.concatenate([[0.0], (np.arange(n) + 0.5) * (TWO_PI / n), [TWO_PI]])
        fp = np.concatenate([[0.0], np.cumsum(m) - 0.5 * m[0], [m.sum()]])
        return np.interp(x, xp, fp)
    c = np.fft.rfft(rho) / n
    coef = c[1:] / (1j * np.arange(1, c.size))
    if n % 2 == 0:
        coef[-1] *= 0.5  # the Nyquist mode appears once in rho
    padded = np.concatenate([[0.0], coef, np.zeros(samples // 2 - coef.size)])
    g = np.fft.irfft(padded, n=samples) * samples
    return c[0].real * x + g - g[0]


def w1_s1(rho_a: np.ndarray, rho_b: np.ndarray, scheme: str, atoms_a: Atoms = None,
          atoms_b: Atoms = None) -> float:
    """Wasserstein-1 distance of two S^1 states (any N, same mass): ``min_c int |F_a - F_b - c|``;
    ``atoms_a``, ``atoms_b``: their Dirac atoms ``(masses, angles)`` (None: none)."""
    samples = 1 << max(16, math.ceil(math.log2(16 * max(rho_a.size, rho_b.size))))
    if atoms_a is not None or atoms_b is not None:
        samples = max(samples, DIRAC_SAMPLES)
    d = (s1_cdf(rho_a, scheme, samples) + atoms_cdf(atoms_a, samples)
         - s1_cdf(rho_b, scheme, samples) - atoms_cdf(atoms_b, samples))
    return float(np.mean(np.abs(d - np.median(d))) * TWO_PI)


def atoms_cdf(atoms: Atoms, samples: int) -> np.ndarray | float:
    """``sum_i m_i H(x - x_i)`` at ``x_j = 2 pi j / samples``, each jump a ramp over the sample
    interval that holds it (its integral over the circle is the jump's); 0 without atoms."""
    if atoms is None or len(atoms[0]) == 0:
        return 0.0
    u = np.arange(samples, dtype=float)
    out = np.zeros(samples)
    for m, x in zip(np.asarray(atoms[0], float), np.mod(np.asarray(atoms[1], float), TWO_PI)):
        out += m * np.clip(u - x * samples / TWO_PI + 0.5, 0.0, 1.0)
    return out


_basis = lru_cache(maxsize=8)(SphereBasis)  # one shtns plan per lmax


def sphere_moments(rho: np.ndarray, lmax: int, degree: int) -> np.ndarray:
    """Moments ``m_lm = sum rho area conj(Y_lm)`` for ``0 <= m <= l <= degree``, in the order
    ``l (l + 1) / 2 + m`` (grid of ``SphereBasis(lmax)``, ``degree <= lmax``)."""
    basis = _basis(lmax)
    keep = basis.degrees <= degree
    l, m = basis.degrees[keep], basis.orders[keep]
    return basis.forward(rho)[keep][np.argsort(l * (l + 1) // 2 + m)]


def point_moments(basis: SphereBasis, x: np.ndarray, w: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """``sum_i w_i conj(Y_lm(x_i))`` (``basis`` order, shape (nlm,)) of points ``x`` (n, 3) on the
    unit sphere with weights ``w`` (n,), ``chunk`` points at a time."""
    theta = np.arccos(np.clip(x[:, 2], -1.0, 1.0))
    phi = np.arctan2(x[:, 1], x[:, 0])
    out = np.zeros(basis.nlm, dtype=complex)
    for i in range(0, x.shape[0], chunk):
        out += np.conj(basis.harmonics(theta[i:i + chunk], phi[i:i + chunk])).T @ w[i:i + chunk]
    return out


def atom_moments(atoms: Atoms, lmax: int, degree: int) -> np.ndarray | float:
    """``sum_i m_i conj(Y_lm(x_i))`` in the order of :func:`sphere_moments`; 0 without atoms."""
    if atoms is None or len(atoms[0]) == 0:
        return 0.0
    basis = _basis(lmax)
    x = np.asarray(atoms[1], float).reshape(-1, 3)
    m = point_moments(basis, x / np.linalg.norm(x, axis=1, keepdims=True), np.asarray(atoms[0], float))
    keep = basis.degrees <= degree
    l, order = basis.degrees[keep], basis.orders[keep]
    return m[keep][np.argsort(l * (l + 1) // 2 + order)]


def kernel_distance_s2(rho_a: np.ndarray, lmax_a: int, rho_b: np.ndarray, lmax_b: int,
                       beta: float, log_shift: float = 0.0, atoms_a: Atoms = None,
                       atoms_b: Atoms = None) -> float:
    """``||mu_a - mu_b||_K`` of two S^2 grid measures (docs/math.md §2; Funk-Hecke, Lemma 5.1);
    ``log_shift``: 0 for ``exp(beta x.y)``, ``-beta`` for the shifted kernel; ``atoms_a``,
    ``atoms_b``: their Dirac atoms ``(masses, unit vectors)`` (None: none)."""
    degree = min(lmax_a, lmax_b, kernel_bandwidth(beta, 3))
    diff = (sphere_moments(rho_a, lmax_a, degree) + atom_moments(atoms_a, lmax_a, degree)
            - sphere_moments(rho_b, lmax_b, degree) - atom_moments(atoms_b, lmax_b, degree))
    l = np.repeat(np.arange(degree + 1), np.arange(1, degree + 2))
    m = np.arange(l.size) - l * (l + 1) // 2
    lam = np.exp(kernel_eigenvalues(beta, l, 3, log=True) + log_shift)
    return float(np.sqrt(np.sum(lam * np.where(m > 0, 2.0, 1.0) * np.abs(diff) ** 2)))
