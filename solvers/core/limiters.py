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


EPS_FLOOR = 1e-100  # WENO eps when the density is (nearly) 0: (eps + beta)^2 must not underflow


def weno5_faces(d: np.ndarray, kinks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fifth-order WENO face values of the periodic cell averages ``d`` (N,) (Jiang & Shu,
    J. Comput. Phys. 126 (1996), with ``eps = 1e-6 mean(d)^2``, at least ``EPS_FLOOR``), clipped at 0.

    Returns ``(plus, minus)``, each (N,): the value of cell ``i`` at its right face (from cells
    ``i-2 .. i+2``) and at its left face (the mirror stencil). S^1 only (``time.limiter =
    "weno5"``); the slope limiters above are the MUSCL alternatives.

    ``kinks`` (int, (m,)): faces where the density has a corner (face ``k`` between cells ``k``
    and ``k+1``: the faces moved onto the perceptron's corners, ``time.kink_faces``). The four
    cells around each take only the candidate stencils that do not reach across it
    (:func:`one_sided_weights`), as WENO does near a discontinuity whose place is known.
    """
    eps = max(1e-6 * float(np.mean(d)) ** 2, EPS_FLOOR)
    plus = _weno5_right(d, eps)
    minus = _weno5_right(d[::-1], eps)[::-1]
    n, kinks = d.size, np.zeros(0, dtype=np.int64) if kinks is None else np.asarray(kinks, dtype=np.int64)
    for k in kinks:
        for i in ((k + r) % n for r in (-1, 0, 1, 2)):
            w = one_sided_weights(int(i), kinks, n)
            a, b, c, e, f = d[(i - 2) % n], d[(i - 1) % n], d[i], d[(i + 1) % n], d[(i + 2) % n]
            plus[i] = weno5_value_masked(a, b, c, e, f, eps, w[0], w[1], w[2])
            minus[i] = weno5_value_masked(f, e, c, b, a, eps, w[3], w[4], w[5])
    return np.maximum(plus, 0.0), np.maximum(minus, 0.0)


def one_sided_weights(i: int, kinks: np.ndarray, n: int) -> tuple[float, float, float, float, float, float]:
    """Which of cell ``i``'s three WENO5 candidate stencils stay on one side of every kink face:
    ``(p0, p1, p2)`` for its right-face value and ``(q0, q1, q2)`` for its left-face value, each
    1.0 (kept) or 0.0 (it holds both cells ``k`` and ``k+1`` of a kink face ``k``).

    Right-face value: ``p0`` takes cells ``i-2..i``, ``p1`` ``i-1..i+1``, ``p2`` ``i..i+2``;
    left-face value (the mirror): ``q0`` ``i..i+2``, ``q1`` ``i-1..i+1``, ``q2`` ``i-2..i``. With
    ``r = i - k`` (mod N, in ``[-N/2, N/2)``): ``i-2..i`` crosses face ``k`` for ``r`` in {1, 2},
    ``i-1..i+1`` for {0, 1}, ``i..i+2`` for {-1, 0}.
    """
    p0 = p1 = p2 = q0 = q1 = q2 = 1.0
    half = n // 2
    for j in range(kinks.size):
        r = (i - int(kinks[j]) + half) % n - half
        if r == 1 or r == 2:
            p0, q2 = 0.0, 0.0
        if r == 0 or r == 1:
            p1, q1 = 0.0, 0.0
        if r == -1 or r == 0:
            p2, q0 = 0.0, 0.0
    return p0, p1, p2, q0, q1, q2


def _weno5_right(v: np.ndarray, eps: float) -> np.ndarray:
    """WENO5 value at the right face of every cell of the periodic ``v`` (N,)."""
    return weno5_value(np.roll(v, 2), np.roll(v, 1), v, np.roll(v, -1), np.roll(v, -2), eps)


def weno5_value(vm2, vm1, v, vp1, vp2, eps):
    """WENO5 value at the face between ``v`` and ``vp1``, from the left: the three candidate
    stencils weighted by their smoothness (linear weights 1/10, 6/10, 3/10). Floats or arrays;
    :mod:`solvers.core.kernels_numba` compiles :func:`weno5_value_masked` with numba's ``njit``,
    and this is it with every stencil kept (the weights times 1.0: the same value to the bit)."""
    return weno5_value_masked(vm2, vm1, v, vp1, vp2, eps, 1.0, 1.0, 1.0)


def weno5_value_masked(vm2, vm1, v, vp1, vp2, eps, w0, w1, w2):
    """:func:`weno5_value` with the candidate stencils' linear weights times ``w0, w1, w2`` (1 or
    0: :func:`one_sided_weights`); no stencil left: the cell's own value (first order). Floats
    or arrays (the weights floats); compiled for numba too."""
    p0 = (2.0 * vm2 - 7.0 * vm1 + 11.0 * v) / 6.0
    p1 = (-vm1 + 5.0 * v + 2.0 * vp1) / 6.0
    p2 = (2.0 * v + 5.0 * vp1 - vp2) / 6.0
    b0 = 13.0 / 12.0 * (vm2 - 2.0 * vm1 + v) ** 2 + 0.25 * (vm2 - 4.0 * vm1 + 3.0 * v) ** 2
    b1 = 13.0 / 12.0 * (vm1 - 2.0 * v + vp1) ** 2 + 0.25 * (vm1 - vp1) ** 2
    b2 = 13.0 / 12.0 * (v - 2.0 * vp1 + vp2) ** 2 + 0.25 * (3.0 * v - 4.0 * vp1 + vp2) ** 2
    a0, a1, a2 = w0 * 0.1 / (eps + b0) ** 2, w1 * 0.6 / (eps + b1) ** 2, w2 * 0.3 / (eps + b2) ** 2
    if w0 + w1 + w2 == 0.0:
        return v
    return (a0 * p0 + a1 * p1 + a2 * p2) / (a0 + a1 + a2)


CIRCLE_RECONSTRUCTIONS = (*LIMITERS, "weno5")  # time.limiter on S^1 (weno5: S^1 only)
