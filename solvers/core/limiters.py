"""Slope limiters of the MUSCL reconstruction, shared by the S^1 and S^2 finite volumes.

``LIMITERS[name](a, b)`` takes the backward and forward differences of the cell averages and
returns the limited slope (same shape); ``"none"`` gives first-order upwind.
"""

from __future__ import annotations

from typing import Callable

import numpy as np


def _minmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 0.5 * (np.sign(a) + np.sign(b)) * np.minimum(np.abs(a), np.abs(b))


def _mc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """minmod(2a, 2b, (a+b)/2), written out (it is on the hot path)."""
    mag = np.minimum(np.minimum(np.abs(a), np.abs(b)) * 2.0, 0.5 * np.abs(a + b))
    return np.where(a * b > 0.0, np.copysign(mag, a), 0.0)


def _vanleer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = a * b
    den = a + b
    safe = np.where(ab > 0, den, 1.0)
    return np.where(ab > 0, 2.0 * ab / safe, 0.0)


LIMITERS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "minmod": _minmod,  # Roe 1986
    "mc": _mc,  # monotonised central, van Leer 1977
    "vanleer": _vanleer,  # van Leer 1974
    "none": lambda a, b: np.zeros_like(a),  # first-order upwind
}
