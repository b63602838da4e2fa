"""Lagrangian particles on S^2: the whole measure as weighted points, ``mu = sum_k w_k delta_{x_k}``.

The S^2 counterpart of :mod:`solvers.circle.measure.lagrangian` (``time.scheme = "lagrangian"``). On S^1
the moving cells keep their faces; on S^2 a cell is carried by its centre: the grid density
becomes one particle per cell, at the cell's centre with the cell's mass. A weighted empirical
measure solves the continuity equation (paper eq. 2.6) exactly when every point follows

    dx_k/dt = s grad U(x_k),   grad U(x) = c_K P_x sum_j w_j e^{beta x.x_j} x_j + grad v(x) / 2,

(docs/math.md §1; ``P_x = I - x x^T``; the term ``j = k`` vanishes since ``P_x x = 0``), or with
softmax-normalised attention (paper eq. 2.9) ``dx_k/dt = s (c_K P_x sum_j w_j e^{beta x.x_j} x_j /
f(x_k) + grad v / 2)``, ``f(x) = c_K sum_j w_j e^{beta x.x_j}`` (the term ``j = k`` included: the
normaliser counts the particle's own mass, so ``f(x_k) >= c_K w_k e^beta > 0``), so the
scheme's only errors are the time step and the initial quadrature. That quadrature is exact for
the attention field: the cell centres and areas of the Gauss grid integrate the kernel's
spherical harmonics exactly up to the grid's degree (docs/methods.md §6.5), and the kernel has no
degree past the bandwidth above ``1e-17 lambda_0``. Particles never cross a face, so no mass
diffuses across a separatrix and a line of mass (a measure on a curve) is carried as points.

Particles closer than ``MERGE`` times the grid width merge into one (mass and first moment kept:
the mass-weighted mean, normalised; :func:`solvers.core.point_merge.merge_close`) and become a
Dirac atom with an identity; otherwise a particle is diffuse density, reported in its grid cell.

The attention sums: :mod:`spectral.kernel_series` (``O(n C(K+3, 3))``, exact to round-off) when
that costs less than the direct pair sums (``O(n^2)``), else the pair sums in row blocks.
"""

from __future__ import annotations

import numpy as np

from solvers.core.measure import DiracAtoms
from solvers.model import perceptron
from solvers.model.params import ModelParams
from solvers.sphere.measure.dirac import normalise
from spectral.kernel_series import series_field, series_field_numba, series_terms

MERGE = 2e-3  # particles closer than MERGE * (grid width) merge into one
BLOCK = 1 << 20  # pair sums: terms per row block of the direct path (8 MiB)


def attention_sums(x: np.ndarray, w: np.ndarray, beta: float, log_c: float,
                   method: str = "auto", compiled: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(f (n,), F (n, 3))``: ``f_k = c sum_j w_j e^{beta x_k.x_j}``, ``F_k = c sum_j w_j
    e^{beta x_k.x_j} x_j`` at the particles ``x`` (n, 3), weights ``w`` (n,).

    ``method``: ``"series"`` (:mod:`spectral.kernel_series`), ``"direct"`` (pair sums) or
    ``"auto"`` (the series when it has fewer terms than there are particles).
    """
    if method == "auto":
        method = "series" if series_terms(beta) < x.shape[0] else "direct"
    if method == "series":
        fn = series_field_numba if compiled else series_field
        return fn(x, x, w, beta, log_c)
    if method != "direct":
        raise ValueError(f"method: must be 'auto', 'series' or 'direct' (got {method!r})")
    f, F = np.empty(x.shape[0]), np.empty_like(x)
    step = max(1, BLOCK // max(x.shape[0], 1))
    for lo in range(0, x.shape[0], step):
        rows = slice(lo, lo + step)
        e = np.exp(beta * (x[rows] @ x.T) + log_c) * w
        f[rows], F[rows] = e.sum(axis=1), e @ x
    return f, F


def velocity(x: np.ndarray, w: np.ndarray, model: ModelParams, log_c: float,
             method: str = "auto", compiled: bool = True) -> np.ndarray:
    """``s V`` at the particles (unit vectors ``x`` (n, 3)), tangent vectors (n, 3): unnormalized
    attention ``(1/beta) grad (K * mu) = P_x F`` (docs/math.md §1); softmax (paper eq. 2.9)
    ``grad f / (beta f) = P_x F / f``, ``f = K * mu`` with the particle's own mass in it."""
    if x.shape[0] == 0:
        return np.zeros((0, 3))
    f, F = attention_sums(x, w, model.beta, log_c, method, compiled)
    return model.sign * _velocity(x, f, F, model)


def _gradient(x: np.ndarray, F: np.ndarray, model: ModelParams) -> np.ndarray:
    """``grad U`` at ``x`` (n, 3) from the attention sums ``F`` (n, 3): ``P_x F + grad v / 2``."""
    return F - np.sum(F * x, axis=1, keepdims=True) * x + perceptron.half_gradient(model.perceptron, x)


def _velocity(x: np.ndarray, f: np.ndarray, F: np.ndarray, model: ModelParams) -> np.ndarray:
    """The unsigned velocity ``V`` (n, 3) from the attention sums ``f`` (n,), ``F`` (n, 3): ``grad
    U`` (unnormalized attention) or ``P_x F / f + grad v / 2`` (softmax, paper eq. 2.9)."""
    if model.attention != "softmax":
        return _gradient(x, F, model)
    att = F - np.sum(F * x, axis=1, keepdims=True) * x
    return att / f[:, None] + perceptron.half_gradient(model.perceptron, x)


def particle_fields(x: np.ndarray, w: np.ndarray, model: ModelParams, log_c: float,
                    method: str = "auto") -> tuple[float, np.ndarray, np.ndarray]:
    """``(E, grad U (n, 3), V (n, 3))`` of the particles: the energy ``E = (1/(2 beta)) sum_jk w_j
    w_k K(x_j, x_k) + (1/2) sum_k w_k v(x_k)`` (paper eq. 2.7; the same formula for softmax), the
    gradient of the first variation and the unsigned velocity (:func:`_velocity`)."""
    if x.shape[0] == 0:
        return 0.0, np.zeros((0, 3)), np.zeros((0, 3))
    f, F = attention_sums(x, w, model.beta, log_c, method)
    e = float(w @ f) / (2.0 * model.beta) + 0.5 * float(w @ perceptron.potential(model.perceptron, x))
    return e, _gradient(x, F, model), _velocity(x, f, F, model)


def energy_and_dissipation(x: np.ndarray, w: np.ndarray, model: ModelParams, log_c: float,
                           method: str = "auto") -> tuple[float, float]:
    """``E`` (:func:`particle_fields`) and ``sum_k w_k grad U(x_k) . V(x_k)`` (its rate, ``dE/dt =
    s`` times it): ``sum_k w_k |grad U|^2`` for unnormalized attention, ``sum_k w_k |grad f|^2 /
    (beta^2 f)`` for pure softmax attention (docs/math.md §1)."""
    e, g, v = particle_fields(x, w, model, log_c, method)
    return e, float(w @ np.sum(g * v, axis=1))


def from_grid(rho: np.ndarray, centres: np.ndarray, area: np.ndarray, atoms: DiracAtoms) -> DiracAtoms:
    """The particles of a grid density (one per cell holding mass, at its centre, with its mass,
    identity -1) followed by the Dirac ``atoms`` (their identities), as one :class:`DiracAtoms`.

    ``rho`` (nlat, nphi), ``centres`` (nlat * nphi, 3), ``area`` (nlat, nphi)."""
    cell = (np.asarray(rho, float) * area).ravel()
    has = cell > 0
    return DiracAtoms(np.concatenate([cell[has], np.asarray(atoms.mass, float)]),
                      np.concatenate([centres[has], normalise(atoms.position)]),
                      np.concatenate([np.full(int(has.sum()), -1), np.asarray(atoms.ids, int)]))


def deposit(p: DiracAtoms, fine_cell, area: np.ndarray) -> np.ndarray:
    """The diffuse particles' (identity -1) masses in their fine cells over the cell areas: a
    grid density (nlat, nphi) holding their exact mass."""
    free = p.ids < 0
    idx = fine_cell(p.position[free])
    return (np.bincount(idx, weights=p.mass[free], minlength=area.size).reshape(area.shape) / area)
