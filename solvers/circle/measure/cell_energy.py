"""The energy of the S^1 Lagrangian measure (moving cells plus Dirac atoms), exactly.

``E[mu] = (1/(2 beta)) iint K dmu dmu + (1/2) int v dmu`` (paper eq. 2.7, docs/math.md §1) of the
measure the cells carry, not of its projection on the uniform grid: the grid cell averages
smooth the cells' sub-cell positions, and their energy moved by up to 7e-8 against the flow's
direction between two records of a descent run (the energy of the projection is not monotone).

- Attention: with the measure's Fourier coefficients ``mu_j = int e^{-i j y} dmu`` (closed form
  per cell and atom, :func:`solvers.circle.measure.lagrangian_fields.coefficients`),
  ``(1/(2 beta)) iint K dmu dmu = (1/2) sum_{|j| <= J} w_j |mu_j|^2`` with
  ``w_j = lambda_j / (2 pi beta)`` (Funk-Hecke, paper Lemma 5.1), exact to round-off past the
  kernel's bandwidth J.
- Perceptron: ``int v dmu`` over each cell piece between its ends and the activation's corners
  (``a_j.x + b_j = 0``, where ReLU's ``phi`` is only C^1) by Gauss-Legendre with ``NODES``
  nodes (``v`` is analytic on each piece: exact to round-off on cells of width ``O(h)``), plus
  ``A_i v(x_i)`` for each atom.
"""

from __future__ import annotations

import numpy as np

from solvers.circle.measure import lagrangian_fields as fields
from solvers.circle.measure.lagrangian import LagrangianState
from solvers.model import perceptron
from solvers.model.params import ModelParams

TWO_PI = 2.0 * np.pi
NODES = 8
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(NODES)  # computed once (a snapshot reused it)


def corners(model: ModelParams) -> np.ndarray:
    """Angles (k,) in ``[0, 2 pi)`` where some unit's ``a_j.x + b_j`` vanishes."""
    p = model.perceptron
    if p.n_units == 0:
        return np.zeros(0)
    r = np.hypot(p.a[:, 0], p.a[:, 1])
    alpha = np.arctan2(p.a[:, 1], p.a[:, 0])
    ok = (r > 0) & (np.abs(p.b) <= r)
    delta = np.arccos(np.clip(-p.b[ok] / r[ok], -1.0, 1.0))
    return np.mod(np.concatenate([alpha[ok] + delta, alpha[ok] - delta]), TWO_PI)


def attention_energy(state: LagrangianState, w: np.ndarray) -> float:
    """``(1/(2 beta)) iint K dmu dmu`` of the cells and atoms (``w`` from
    :func:`~solvers.circle.measure.lagrangian_fields.gradient_weights`)."""
    mu = fields.coefficients(state, w.size - 1)
    return float(0.5 * (w[0] * mu[0].real ** 2 + 2.0 * np.sum(w[1:] * np.abs(mu[1:]) ** 2)))


def perceptron_energy(state: LagrangianState, model: ModelParams) -> float:
    """``(1/2) int v dmu``: Gauss-Legendre on the cell pieces between corners, plus the atoms."""
    p = model.perceptron
    if p.n_units == 0:
        return 0.0
    X, L = state.X, state.lengths()
    x0 = X[0]
    kinks = np.mod(corners(model) - x0, TWO_PI) + x0  # in [X_0, X_0 + 2 pi)
    ends = np.concatenate([X, [x0 + TWO_PI]])
    breaks = np.unique(np.concatenate([ends, kinks]))
    lo, hi = breaks[:-1], breaks[1:]
    cell = np.searchsorted(X, 0.5 * (lo + hi), side="right") - 1
    density = np.divide(state.m, L, out=np.zeros_like(L), where=L > 0)[cell]
    nodes, weights = _NODES, _WEIGHTS
    half = 0.5 * (hi - lo)
    theta = (0.5 * (lo + hi))[:, None] + half[:, None] * nodes[None, :]
    v = perceptron.circle_potential(p, np.mod(theta.ravel(), TWO_PI)).reshape(theta.shape)
    cells = float(np.sum(density * half * (v @ weights)))
    atoms = float(state.A @ perceptron.circle_potential(p, np.mod(X, TWO_PI)))
    return 0.5 * (cells + atoms)


def energy(state: LagrangianState, model: ModelParams, w: np.ndarray | None = None) -> float:
    """``E[mu]`` of the Lagrangian measure (module docstring)."""
    w = fields.gradient_weights(model) if w is None else w
    return attention_energy(state, w) + perceptron_energy(state, model)
