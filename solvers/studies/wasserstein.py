"""Exact Wasserstein-1 distance on the circle between weighted particles and grid densities.

On the circle of length ``2 pi`` with geodesic cost, for two measures of equal mass with
cumulative distributions ``F_a(x) = mu_a([0, x])``, ``F_b`` (Rabin, Delon and Gousseau 2011,
"Transportation distances on the circle", eq. 6; Werman et al. 1985)

    W1(mu_a, mu_b) = min_c int_0^{2 pi} |F_a(x) - F_b(x) - c| dx,

attained at ``c`` = a median of ``D = F_a - F_b`` under the Lebesgue measure on ``[0, 2 pi)``.

Measures (:class:`CircleMeasure`): a piecewise-constant grid density (cell averages ``rho_i`` on
the cells ``[theta_i - h/2, theta_i + h/2]``, ``theta_i = 2 pi i / N``, ``h = 2 pi / N``: the
S^1 grid of :mod:`solvers.circle.initial`), weighted atoms (particles), or the sum of both. Every CDF
is then linear between the merged breakpoints (cell faces, atom positions, 0, 2 pi) and jumps
at atoms, so ``D`` is piecewise linear: ``int |D - c|`` has a closed form on every piece and the
median is found by bisection of the monotone function ``c -> |{D < c}|``. The result is exact
up to rounding (no sampling of the CDFs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TWO_PI = 2.0 * np.pi


@dataclass(frozen=True)
class CircleMeasure:
    """A finite measure on the circle: grid density plus weighted atoms.

    Attributes
    ----------
    grid : ndarray, shape (N,), or None
        Cell averages on ``theta_i = 2 pi i / N`` (cell mass ``rho_i 2 pi / N``).
    positions : ndarray, shape (n,)
        Atom angles, reduced to ``[0, 2 pi)``.
    weights : ndarray, shape (n,)
        Atom masses (non-negative).
    """

    grid: np.ndarray | None = None
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0))
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def mass(self) -> float:
        grid_mass = 0.0 if self.grid is None else float(np.sum(self.grid)) * TWO_PI / self.grid.size
        return grid_mass + float(np.sum(self.weights))

    def faces(self) -> np.ndarray:
        """Points where the CDF has a kink or a jump, shape (k,), in ``[0, 2 pi)``."""
        parts = [self.positions]
        if self.grid is not None:
            parts.append((np.arange(self.grid.size) + 0.5) * TWO_PI / self.grid.size)
        return np.concatenate(parts)

    def cdf(self, x: np.ndarray, left: bool = False) -> np.ndarray:
        """``F(x) = mu([0, x])`` (``left=True``: ``mu([0, x))``) for ``x`` in ``[0, 2 pi]``, shape of x."""
        x = np.asarray(x, dtype=float)
        out = np.zeros_like(x)
        if self.grid is not None:
            out += grid_cdf(self.grid, x)
        if self.positions.size:
            order = np.argsort(self.positions)
            cum = np.concatenate([[0.0], np.cumsum(self.weights[order])])
            idx = np.searchsorted(self.positions[order], x, side="left" if left else "right")
            out += cum[idx]
        return out


def particles(theta: np.ndarray, weights: np.ndarray | None = None,
              mass: float = 1.0) -> CircleMeasure:
    """Atoms at angles ``theta`` (n,) with ``weights`` (n,) (default: equal, summing to ``mass``)."""
    theta = np.mod(np.asarray(theta, dtype=float).ravel(), TWO_PI)
    theta[theta >= TWO_PI] = 0.0  # mod can round up to 2 pi
    if weights is None:
        weights = np.full(theta.size, mass / max(theta.size, 1))
    weights = np.asarray(weights, dtype=float).ravel()
    if weights.shape != theta.shape or np.any(weights < 0):
        raise ValueError("weights: must be non-negative, one per position")
    return CircleMeasure(None, theta, weights)


def grid_density(rho: np.ndarray) -> CircleMeasure:
    """The piecewise-constant density with cell averages ``rho`` (N,) on ``theta_i = 2 pi i/N``."""
    rho = np.asarray(rho, dtype=float).ravel()
    if np.any(rho < 0):
        raise ValueError("rho: a grid density must be non-negative")
    return CircleMeasure(rho)


def grid_cdf(rho: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``int_0^x rho`` of the piecewise-constant density, ``x`` in ``[0, 2 pi]`` (any shape).

    Cell 0 straddles 0: ``F`` has knots at 0, the faces ``(i + 1/2) h`` and ``2 pi``.
    """
    n = rho.size
    h = TWO_PI / n
    m = rho * h
    xp = np.concatenate([[0.0], (np.arange(n) + 0.5) * h, [TWO_PI]])
    fp = np.concatenate([[0.0], np.cumsum(m) - 0.5 * m[0], [m.sum()]])
    return np.interp(x, xp, fp)


def difference_pieces(a: CircleMeasure, b: CircleMeasure) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``D = F_a - F_b`` as linear pieces on the merged breakpoints.

    Returns
    -------
    lengths, start, end : ndarray, shape (k,)
        Piece lengths (summing to ``2 pi``) and the values ``D(x_k+)``, ``D(x_{k+1}-)``.
    """
    knots = np.unique(np.concatenate([[0.0, TWO_PI], a.faces(), b.faces()]))
    lo, hi = knots[:-1], knots[1:]
    start = a.cdf(lo) - b.cdf(lo)
    end = a.cdf(hi, left=True) - b.cdf(hi, left=True)
    return hi - lo, start, end


def measure_below(c: float, lengths: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Lebesgue measure of ``{D < c}`` for pieces with value ranges ``[lo, hi]`` (each (k,))."""
    width = hi - lo
    flat = width <= 0.0
    frac = np.where(flat, (lo < c).astype(float),
                    np.clip((c - lo) / np.where(flat, 1.0, width), 0.0, 1.0))
    return float(lengths @ frac)


def median_level(lengths: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    """A median ``c`` of the piecewise-linear ``D`` (Lebesgue measure): ``|{D < c}| <= pi <= |{D <= c}|``.

    Bisection on the monotone ``c -> |{D < c}|`` down to adjacent floating-point numbers.
    """
    lo_v, hi_v = np.minimum(start, end), np.maximum(start, end)
    half = 0.5 * float(np.sum(lengths))
    a, b = float(lo_v.min()), float(hi_v.max())
    for _ in range(200):
        mid = 0.5 * (a + b)
        if mid <= a or mid >= b:
            break
        if measure_below(mid, lengths, lo_v, hi_v) > half:
            b = mid
        else:
            a = mid
    return a if measure_below(b, lengths, lo_v, hi_v) > half else b


def abs_integral(lengths: np.ndarray, u0: np.ndarray, u1: np.ndarray) -> float:
    """``sum_k int |u|`` over pieces where ``u`` runs linearly from ``u0`` to ``u1`` (each (k,)).

    Same sign: ``L |u0 + u1| / 2``; a sign change: ``L (u0^2 + u1^2) / (2 |u0 - u1|)``.
    """
    cross = u0 * u1 < 0
    den = np.where(cross, 2.0 * np.abs(u0 - u1), 1.0)
    piece = np.where(cross, (u0 * u0 + u1 * u1) / den, 0.5 * np.abs(u0 + u1))
    return float(lengths @ piece)


def w1(a: CircleMeasure, b: CircleMeasure, rtol: float = 1e-9) -> float:
    """Exact Wasserstein-1 distance on the circle (geodesic cost) between equal-mass measures.

    Parameters
    ----------
    a, b : CircleMeasure
        Masses must agree to ``rtol`` (relative).

    Returns
    -------
    float
        ``min_c int_0^{2 pi} |F_a - F_b - c| dx`` (Rabin et al. 2011, eq. 6).
    """
    ma, mb = a.mass, b.mass
    if abs(ma - mb) > rtol * max(abs(ma), abs(mb), 1e-300):
        raise ValueError(f"W1 needs equal masses (got {ma:.17g} and {mb:.17g})")
    lengths, start, end = difference_pieces(a, b)
    c = median_level(lengths, start, end)
    return abs_integral(lengths, start - c, end - c)
