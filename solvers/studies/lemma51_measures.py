"""Lemma 5.1 test measures: exact coefficients and point-by-point samples of ``f = K * mu``.

Part of the Lemma 5.1 checker (:mod:`solvers.studies.lemma51`, whose docstring states the conventions):
the built-in measures and run-archive snapshots, ``int rho^2``, the scaled eigenvalues
``e^{-beta} lambda_l``, samples of the scaled ``e^{-beta} (K * mu)`` (closed forms for the von
Mises-Fisher and uniform densities, sums over atoms, never a truncated expansion), the exact
coefficients ``m_l`` and the per-degree norms. What differs between the manifolds (angles,
haversines, the vMF closed forms, the basis and its coefficients) is asked of the measure's
:class:`~solvers.core.manifold.Manifold`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from solvers.core.manifold import Manifold
from solvers.timestepping.manifolds import MANIFOLDS, manifold_of
from spectral.eigenvalues import kernel_eigenvalues

MEASURES = ("vmf", "atoms", "symmetric", "uniform")
EPS = float(np.finfo(float).eps)


# =========================================================================== measures

@dataclass(frozen=True)
class Measure:
    """A finite measure on a manifold ``S^{d-1}`` whose coefficients are known exactly.

    Attributes
    ----------
    kind : str
        ``vmf`` (density ``prop. exp(kappa e.x)``), ``atoms``, ``symmetric`` (atoms and their
        antipodes, equal weights), ``uniform``, or ``snapshot`` (atoms from a run archive).
    manifold : Manifold
        Where the measure lives (its ``name`` is the report's ``sphere``).
    angles : ndarray, shape ``(n,) + manifold.angle_axes``: (n,) on S^1 (t), (n, 2) on S^2 (theta, phi)
        Atom positions (for ``symmetric``: one of each antipodal pair); the mean direction of
        ``vmf``; empty for ``uniform``.
    weights : ndarray, shape (n,)
        Atom weights (``symmetric``: each atom of a pair); ``[mass]`` for ``vmf`` / ``uniform``.
    kappa : float
        vMF concentration.
    label : str
        Human-readable description.
    n_cells : int
        ``snapshot``: the first ``n_cells`` atoms are the grid's cells (``rho_i h`` at the
        centres); the rest are the record's Dirac atoms (measure-valued runs).
    cell_l2 : float
        ``snapshot``: ``int rho^2 dsigma`` of the grid density (its quadrature).
    """

    kind: str
    manifold: Manifold
    angles: np.ndarray
    weights: np.ndarray
    kappa: float = 0.0
    label: str = ""
    n_cells: int = 0
    cell_l2: float = 0.0

    @property
    def sphere(self) -> str:
        """The manifold's name (``S1``, ``S2``): the report's ``sphere`` attribute."""
        return self.manifold.name

    @property
    def dim(self) -> int:
        """Ambient dimension d (2: circle, 3: sphere)."""
        return self.manifold.dimension

    @property
    def mass(self) -> float:
        """Total mass ``mu(S)``."""
        return float(np.sum(self.weights) * (2 if self.kind == "symmetric" else 1))


def as_manifold(sphere: Manifold | str) -> Manifold:
    """The manifold ``sphere``, or the one of that name (a ValueError naming ``--sphere``)."""
    if isinstance(sphere, Manifold):
        return sphere
    try:
        return manifold_of(sphere)
    except ValueError:
        names = " or ".join(m.name for m in MANIFOLDS)
        raise ValueError(f"--sphere: must be {names} (got {sphere!r})") from None


def make_measure(kind: str, sphere: Manifold | str, kappa: float = 3.0, n_atoms: int = 5,
                 seed: int = 0) -> Measure:
    """Built-in test measure of total mass 1.

    Parameters
    ----------
    kind : {"vmf", "atoms", "symmetric", "uniform"}
    sphere : Manifold or its name (``S1``, ``S2``)
    kappa : float
        vMF concentration (> 0); mean direction the manifold's ``check_centre``.
    n_atoms : int
        Atoms (``atoms``) or antipodal pairs (``symmetric``); positions uniform on the sphere
        and weights uniform in [0.5, 1.5] (then normalised), from ``numpy`` ``seed``.
    """
    manifold = as_manifold(sphere)
    if kind == "vmf":
        if not np.isfinite(kappa) or kappa <= 0:
            raise ValueError(f"--kappa: must be > 0 (got {kappa}); use --measure uniform for 0")
        centre = np.array(manifold.check_centre).reshape((1,) + manifold.angle_axes)
        return Measure(kind, manifold, centre, np.ones(1), float(kappa),
                       f"von Mises-Fisher density, kappa = {kappa:g}")
    if kind == "uniform":
        return Measure(kind, manifold, np.zeros((0,) + manifold.angle_axes), np.ones(1), 0.0,
                       "uniform density")
    if kind not in ("atoms", "symmetric"):
        raise ValueError(f"--measure: must be one of {', '.join(MEASURES)} (got {kind!r})")
    if int(n_atoms) != n_atoms or n_atoms < 1:
        raise ValueError(f"--atoms: must be an integer >= 1 (got {n_atoms})")
    rng = np.random.default_rng(seed)
    n = int(n_atoms)
    angles = manifold.uniform_angles(rng, n)
    w = rng.uniform(0.5, 1.5, n)
    w /= w.sum() * (2 if kind == "symmetric" else 1)
    what = f"{n} atoms" if kind == "atoms" else f"{n} antipodal pairs of atoms"
    return Measure(kind, manifold, angles, w, 0.0, f"{what} (seed {seed})")


def snapshot_measure(path: str | Path, time: float | None = None) -> Measure:
    """A run archive's snapshot (S^1 or S^2) as point masses at the grid's nodes, plus, for a
    measure-valued run, the record's Dirac atoms ``m_i`` at their exact positions.

    The nodes' masses are ``rho`` times the cell sizes (S^1: ``rho_i h`` at the cell centres;
    S^2: ``rho_jk w_jk`` at the Gauss nodes, the quadrature weights), so the measure's exact
    coefficients up to the grid's degree are the density's quadrature projection on the basis
    (:meth:`~solvers.core.manifold.Manifold.snapshot_point_masses`). The manifold is the
    archive's own: one grid axis S^1, two (colatitude, longitude) S^2. Reads with
    :func:`solvers.io.reading.read_snapshot` and :func:`~solvers.io.reading.read_dirac`
    (nearest record; the last if None).
    """
    from solvers.io.reading import read_dirac, read_snapshot

    t, axes, rho = read_snapshot(path, time)
    n_axes = len(axes) if isinstance(axes, tuple) else 1  # (theta,) or (theta, phi)
    manifold = next(m for m in MANIFOLDS if len(m.grid_dims) == n_axes)
    angles, masses, l2 = manifold.snapshot_point_masses(axes, rho, path)
    cells = masses.size
    label = f"snapshot t = {t:g} of {Path(path).name} ({cells} cells as point masses"
    dirac = read_dirac(path, t)
    if dirac is None or dirac.count == 0:
        return Measure("snapshot", manifold, angles, masses, 0.0, label + ")", n_cells=cells,
                       cell_l2=l2)
    return Measure("snapshot", manifold,
                   np.concatenate([angles, manifold.positions_to_angles(dirac.position)]),
                   np.concatenate([masses, dirac.mass]), 0.0,
                   label + f", {dirac.count} Dirac atoms)", n_cells=cells, cell_l2=l2)


def density_l2(measure: Measure) -> float:
    """``int rho^2 dsigma`` (closed forms, docs/math.md §4); ``inf`` for atoms.

    For a snapshot: ``int rho^2`` of its grid density by the grid's quadrature (the point-mass
    measure itself is not L^2, which shows only beyond the grid's degree); ``inf`` when it
    holds Dirac atoms.
    """
    m = measure.mass
    if measure.kind == "uniform":
        return m * m / measure.manifold.surface
    if measure.kind == "vmf":
        return measure.manifold.vmf_density_l2(m, measure.kappa)
    if measure.kind == "snapshot":
        if measure.weights.size > measure.n_cells:
            return float("inf")  # Dirac atoms
        return measure.cell_l2
    return float("inf")


# =========================================================================== f = K * mu

def _bessel_ratios(nu0: float, count: int, x: float) -> np.ndarray:
    """``I_{nu0+j}(x) / I_{nu0+j-1}(x)`` for ``j = 1..count`` by backward recurrence (docs/math.md §2).

    ``r(nu) = 1 / (2 nu / x + r(nu + 1))``, started well above ``max(count, x)`` from the
    uniform asymptotic ``r ~ x / (nu + sqrt(nu^2 + x^2))``; every step is relatively stable.
    """
    top = nu0 + count + 40 + int(x + 10 * np.sqrt(x))
    nu = float(top)
    r = x / (nu + np.hypot(nu, x))
    out = np.empty(count)
    for j in range(int(top - nu0), 0, -1):
        r = 1.0 / (2.0 * (nu0 + j) / x + r)  # r = I_{nu0+j} / I_{nu0+j-1}
        if j <= count:
            out[j - 1] = r
    return out


def scaled_eigenvalues(beta: float, degrees: Any, dim: int) -> np.ndarray:
    """``e^{-beta} lambda_l(beta)`` (docs/math.md §2) to a few ulps for every representable value.

    ``exp(kernel_eigenvalues(log=True) - beta)`` carries a relative error ~ ``beta eps`` (the
    logarithm is accurate to ``eps |log lambda|``), and scipy's ``ive`` at half-integer orders
    only ~1e-14; here ``lambda_0`` has a closed form (S^1 ``2 pi ive(0, beta)``, S^2
    ``2 pi (1 - e^{-2 beta}) / beta``) and ``lambda_l / lambda_0`` is a product of Bessel ratios.
    Values below 1e-280 fall back to the logarithmic evaluation.
    """
    from scipy.special import ive

    l = np.asarray(degrees)
    if dim not in (2, 3):
        return np.exp(kernel_eigenvalues(beta, l, dim, log=True) - beta)
    lmax = int(np.max(l)) if l.size else 0
    lam0 = 2 * np.pi * (ive(0, beta) if dim == 2 else -np.expm1(-2 * beta) / beta)
    with np.errstate(under="ignore"):
        table = lam0 * np.concatenate([[1.0], np.cumprod(_bessel_ratios(dim / 2 - 1, lmax, beta))])
    out = table[l]
    tiny = out < 1e-280
    if np.any(tiny):
        out = np.where(tiny, np.exp(kernel_eigenvalues(beta, l, dim, log=True) - beta), out)
    return out


def _scaled_lambda0(beta: float, dim: int) -> float:
    return float(scaled_eigenvalues(beta, 0, dim))


def potential(measure: Measure, beta: float, grid: tuple) -> np.ndarray:
    """Scaled ``e^{-beta} (K * mu)`` at the grid points, point by point (no expansion).

    Parameters
    ----------
    measure : Measure
    beta : float
    grid : tuple of arrays
        S^1: ``(t,)``; S^2: ``(theta, phi)`` (broadcastable, e.g. (nlat, 1) and (1, nphi)).

    Returns
    -------
    ndarray, the broadcast shape of the grid arrays
    """
    shape = np.broadcast_shapes(*(np.shape(g) for g in grid))
    if measure.kind == "uniform":
        return np.full(shape, measure.mass * _scaled_lambda0(beta, measure.dim)
                       / measure.manifold.surface)
    if measure.kind == "vmf":
        return _vmf_potential(measure, beta, grid)
    f = np.zeros(shape)
    sides = (False, True) if measure.kind == "symmetric" else (False,)
    for a, w in zip(measure.angles, measure.weights):
        for antipode in sides:  # exp(beta (x.y - 1)) = exp(-2 beta sin^2(gamma/2))
            hav = measure.manifold.haversine(grid, np.atleast_1d(a), antipode)
            f += w * np.exp(-2.0 * beta * hav)
    return f


def _vmf_potential(measure: Measure, beta: float, grid: tuple) -> np.ndarray:
    """Closed forms (docs/math.md §4), ``r = |beta x + kappa e|``, scaled by ``e^{-beta}``.

    S^2: ``(kappa / sinh kappa) sinh(r) / r``; S^1: ``I_0(r) / I_0(kappa)``
    (:meth:`~solvers.core.manifold.Manifold.vmf_potential`). Written with
    ``delta = r - beta - kappa = -4 beta kappa h / (r + beta + kappa)``, ``h = sin^2(gamma/2)``,
    which has small relative error where f is large.
    """
    k, s = measure.kappa, beta + measure.kappa
    h = measure.manifold.haversine(grid, tuple(measure.angles[0].reshape(-1)))
    r = np.sqrt(s * s - 4.0 * beta * k * h)
    delta = -4.0 * beta * k * h / (r + s)
    return measure.manifold.vmf_potential(measure.mass, k, r, s, delta)


# =========================================================================== exact coefficients

def exact_coefficients(measure: Measure, lmax: int, basis: Any = None) -> np.ndarray:
    """Exact coefficients of ``mu``.

    Parameters
    ----------
    basis : the basis of the manifold's ``check_grid`` (S^2: a ``SphereBasis`` of ``lmax``;
        S^1: None)

    Returns
    -------
    ndarray, complex
        S^1: shape (lmax + 1,), ``m_k = int e^{-ikt} dmu`` for ``k = 0..lmax``.
        S^2: shape (basis.nlm,), ``m_lm = int conj(Y_lm) dmu`` in ``basis`` order.
    """
    manifold = measure.manifold
    if measure.kind == "uniform":
        return manifold.uniform_coefficients(measure.mass, lmax, basis)
    if measure.kind == "vmf":
        lam = scaled_eigenvalues(measure.kappa, np.arange(lmax + 1), measure.dim)
        return manifold.vmf_coefficients(measure.mass, measure.kappa, measure.angles, lam, basis)
    return manifold.atom_coefficients(measure.angles, measure.weights,
                                      measure.kind == "symmetric", lmax, basis)


def degree_norms(sphere: Manifold | str, coeffs: np.ndarray, basis: Any = None) -> np.ndarray:
    """Per-degree norms (:mod:`solvers.studies.lemma51` docstring): S^1 ``|c_0|, sqrt(2)|c_k|``; S^2 over all m."""
    return as_manifold(sphere).coefficient_norms(coeffs, basis)
