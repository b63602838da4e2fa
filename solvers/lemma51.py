"""Lemma 5.1 checker: invert ``f = K * mu`` spectrally, and show where floating point stops it.

Paper Lemma 5.1 (MATH.md sections 2 and 4): ``mu -> f(x) = int exp(beta x.y) dmu(y)`` is
injective because every Funk-Hecke eigenvalue ``lambda_l(beta)`` is positive, ``f_l = lambda_l m_l``
degree by degree; ``mu`` has an L^2 density iff ``sum_l |f_l / lambda_l|^2 < inf``; ``f`` is even
iff ``mu`` is symmetric. In floating point the recovered ``m_l = f_l / lambda_l`` carries the
round-off of ``f_l`` (about ``eps max|f|``) amplified by ``1 / lambda_l`` (MATH.md 4).

Conventions (stated in every output file)
-----------------------------------------
- S^2: ``m_lm = int conj(Y_lm) dmu`` (orthonormal complex harmonics, Condon-Shortley, m >= 0
  stored; :mod:`spectral.sphere`), ``|m_l| = sqrt(sum_{m=-l}^{l} |m_lm|^2)``.
- S^1: complex Fourier ``m_k = int e^{-ikt} dmu(t)`` (not orthonormal); ``f_k = int f e^{-ikt} dt
  = lambda_k m_k``, ``lambda_k = 2 pi I_k(beta)``. The degree-k norm combines ``+-k``:
  ``|m_0|`` and ``sqrt(|m_k|^2 + |m_-k|^2) = sqrt(2) |m_k|`` for k > 0 (real measures).
- Scaling: all computations use the kernel ``exp(beta (x.y - 1)) = e^{-beta} K`` and the scaled
  eigenvalues ``e^{-beta} lambda_l`` (no overflow at any beta); ``m = f / lambda`` is unchanged,
  ``max_f`` is reported for the scaled kernel.
- Partial sums ``P_L = c sum_{l <= L} |m_l|^2`` with ``c = 1/(2 pi)`` on S^1, ``1`` on S^2, so that
  ``P_L -> int rho^2 dsigma`` (Parseval) for a density; for atoms P_L grows like L on S^1 and
  like L^2 on S^2 (``|m_l|^2 ~ (2l+1) sum w^2 / 4 pi``).
- Round-off floor: ``floor_l = eps max|f| / lambda_l``, ``eps = 2^(1-p)`` for p significand bits
  (2.2e-16 in double; ``mpmath.mp.eps`` at 32 and 64 digits).
- Breakdown degree. Measured ``l*``: first degree with ``|m_l| > 0`` and
  ``error_l > |m_l| / 2``. Predicted ``l*``: first degree with ``|m_l| > 0`` and
  ``floor_l >= |m_l|``. Degrees where the exact ``|m_l|`` is zero (uniform measure; odd degrees
  of symmetric atoms) are skipped; -1 in files (None in Python) means no breakdown up to lmax.

Samples of ``f`` are computed point by point from the measure (closed forms for the von Mises-
Fisher and uniform densities, sums over atoms), never from a truncated expansion, with
``x.y - 1 = -2 sin^2(gamma/2)`` from the angles so that each sample is accurate to a few ulps.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues, log_bessel_i
from spectral.sphere import SHTNS_MIN_NLAT, SphereBasis, _even_fft_size

SPHERES = {"S1": 2, "S2": 3}
MEASURES = ("vmf", "atoms", "symmetric", "uniform")
EPS = float(np.finfo(float).eps)
AUTO_LMAX_MARGIN = 1e-6  # auto lmax: first degree with lambda_l / lambda_0 < eps * margin
ALIAS_TOL = 1e-4  # grids resolve f to eps * ALIAS_TOL (aliasing far below the floor)
PERTURB_AT = {"S1": (2.0,), "S2": (2.0, 4.0)}  # the atom mixed in by the injectivity test
DEFAULT_CENTRE = {"S1": (0.7,), "S2": (1.0, 2.0)}  # vMF mean direction (angles)
SURFACE = {"S1": 2.0 * np.pi, "S2": 4.0 * np.pi}


# =========================================================================== measures

@dataclass(frozen=True)
class Measure:
    """A finite measure on S^1 or S^2 whose coefficients are known exactly.

    Attributes
    ----------
    kind : str
        ``vmf`` (density ``prop. exp(kappa e.x)``), ``atoms``, ``symmetric`` (atoms and their
        antipodes, equal weights), ``uniform``, or ``snapshot`` (atoms from a run archive).
    sphere : str
        ``"S1"`` or ``"S2"``.
    angles : ndarray, shape (n,) on S^1 (t) or (n, 2) on S^2 (theta, phi)
        Atom positions (for ``symmetric``: one of each antipodal pair); the mean direction of
        ``vmf``; empty for ``uniform``.
    weights : ndarray, shape (n,)
        Atom weights (``symmetric``: each atom of a pair); ``[mass]`` for ``vmf`` / ``uniform``.
    kappa : float
        vMF concentration.
    label : str
        Human-readable description.
    """

    kind: str
    sphere: str
    angles: np.ndarray
    weights: np.ndarray
    kappa: float = 0.0
    label: str = ""

    @property
    def dim(self) -> int:
        """Ambient dimension d (2: circle, 3: sphere)."""
        return SPHERES[self.sphere]

    @property
    def mass(self) -> float:
        """Total mass ``mu(S)``."""
        return float(np.sum(self.weights) * (2 if self.kind == "symmetric" else 1))

    @property
    def atomic(self) -> bool:
        return self.kind in ("atoms", "symmetric", "snapshot")

    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        """All atoms ``(angles, weights)``, antipodes included for ``symmetric``."""
        if self.kind != "symmetric":
            return self.angles, self.weights
        return (np.concatenate([self.angles, _antipode(self.sphere, self.angles)]),
                np.concatenate([self.weights, self.weights]))


def _antipode(sphere: str, angles: np.ndarray) -> np.ndarray:
    """Angles of ``-x``: S^1 ``t + pi``; S^2 ``(pi - theta, phi + pi)``."""
    if sphere == "S1":
        return angles + np.pi
    return np.stack([np.pi - angles[:, 0], angles[:, 1] + np.pi], axis=1)


def _check_sphere(sphere: str) -> None:
    if sphere not in SPHERES:
        raise ValueError(f"--sphere: must be S1 or S2 (got {sphere!r})")


def make_measure(kind: str, sphere: str, kappa: float = 3.0, n_atoms: int = 5,
                 seed: int = 0) -> Measure:
    """Built-in test measure of total mass 1.

    Parameters
    ----------
    kind : {"vmf", "atoms", "symmetric", "uniform"}
    sphere : {"S1", "S2"}
    kappa : float
        vMF concentration (> 0); mean direction ``DEFAULT_CENTRE``.
    n_atoms : int
        Atoms (``atoms``) or antipodal pairs (``symmetric``); positions uniform on the sphere
        and weights uniform in [0.5, 1.5] (then normalised), from ``numpy`` ``seed``.
    """
    _check_sphere(sphere)
    if kind == "vmf":
        if not np.isfinite(kappa) or kappa <= 0:
            raise ValueError(f"--kappa: must be > 0 (got {kappa}); use --measure uniform for 0")
        centre = np.array([DEFAULT_CENTRE[sphere]])
        return Measure(kind, sphere, centre.ravel() if sphere == "S1" else centre,
                       np.ones(1), float(kappa), f"von Mises-Fisher density, kappa = {kappa:g}")
    if kind == "uniform":
        shape = (0,) if sphere == "S1" else (0, 2)
        return Measure(kind, sphere, np.zeros(shape), np.ones(1), 0.0, "uniform density")
    if kind not in ("atoms", "symmetric"):
        raise ValueError(f"--measure: must be one of {', '.join(MEASURES)} (got {kind!r})")
    if int(n_atoms) != n_atoms or n_atoms < 1:
        raise ValueError(f"--atoms: must be an integer >= 1 (got {n_atoms})")
    rng = np.random.default_rng(seed)
    n = int(n_atoms)
    if sphere == "S1":
        angles = rng.uniform(0.0, 2.0 * np.pi, n)
    else:
        angles = np.stack([np.arccos(rng.uniform(-1.0, 1.0, n)), rng.uniform(0, 2 * np.pi, n)], 1)
    w = rng.uniform(0.5, 1.5, n)
    w /= w.sum() * (2 if kind == "symmetric" else 1)
    what = f"{n} atoms" if kind == "atoms" else f"{n} antipodal pairs of atoms"
    return Measure(kind, sphere, angles, w, 0.0, f"{what} (seed {seed})")


def snapshot_measure(path: str | Path, time: float | None = None) -> Measure:
    """S^1 run-archive snapshot as point masses ``rho_i h`` at ``theta_i`` (cell averages).

    Reads with :func:`solvers.archive.read_snapshot` (nearest record; the last if None).
    """
    from solvers.archive import read_snapshot

    t, theta, rho = read_snapshot(path, time)
    h = 2.0 * np.pi / theta.size
    return Measure("snapshot", "S1", np.asarray(theta, float), np.asarray(rho, float) * h, 0.0,
                   f"snapshot t = {t:g} of {Path(path).name} ({theta.size} cells as point masses)")


def density_l2(measure: Measure) -> float:
    """``int rho^2 dsigma`` (closed forms, MATH.md 4); ``inf`` for atoms.

    For a snapshot: ``sum rho_i^2 h`` of its cell-average density (the point-mass measure itself
    is not L^2, which shows only beyond degree N/2).
    """
    m, k = measure.mass, measure.kappa
    if measure.kind == "uniform":
        return m * m / SURFACE[measure.sphere]
    if measure.kind == "vmf" and measure.sphere == "S2":
        return m * m * k / np.tanh(k) / (4.0 * np.pi)
    if measure.kind == "vmf":
        return m * m * float(np.exp(log_bessel_i(0, 2 * k) - 2 * log_bessel_i(0, k))) / (2 * np.pi)
    if measure.kind == "snapshot":
        h = 2.0 * np.pi / measure.weights.size
        return float(np.sum(measure.weights ** 2) / h)
    return float("inf")


# =========================================================================== f = K * mu

def _haversine(sphere: str, a: tuple, b: tuple) -> np.ndarray:
    """``sin^2(gamma/2) = (1 - x.y)/2`` from angles, accurate to a few ulps (broadcasts)."""
    if sphere == "S1":
        return np.sin(0.5 * (a[0] - b[0])) ** 2
    return (np.sin(0.5 * (a[0] - b[0])) ** 2
            + np.sin(a[0]) * np.sin(b[0]) * np.sin(0.5 * (a[1] - b[1])) ** 2)


def _scaled_lambda0(beta: float, dim: int) -> float:
    return float(np.exp(kernel_eigenvalues(beta, 0, dim, log=True) - beta))


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
                       / SURFACE[measure.sphere])
    if measure.kind == "vmf":
        return _vmf_potential(measure, beta, grid)
    angles, weights = measure.atoms()
    f = np.zeros(shape)
    for a, w in zip(angles, weights):  # exp(beta (x.y - 1)) = exp(-2 beta sin^2(gamma/2))
        f += w * np.exp(-2.0 * beta * _haversine(measure.sphere, grid, np.atleast_1d(a)))
    return f


def _vmf_potential(measure: Measure, beta: float, grid: tuple) -> np.ndarray:
    """Closed forms (MATH.md 4), ``r = |beta x + kappa e|``, scaled by ``e^{-beta}``.

    S^2: ``(kappa / sinh kappa) sinh(r) / r``; S^1: ``I_0(r) / I_0(kappa)``. Written with
    ``delta = r - beta - kappa = -4 beta kappa h / (r + beta + kappa)``, ``h = sin^2(gamma/2)``,
    which has small relative error where f is large.
    """
    from scipy.special import ive

    k, s = measure.kappa, beta + measure.kappa
    h = _haversine(measure.sphere, grid, tuple(measure.angles[0].reshape(-1)))
    r = np.sqrt(s * s - 4.0 * beta * k * h)
    delta = -4.0 * beta * k * h / (r + s)
    if measure.sphere == "S2":
        return measure.mass * k / -np.expm1(-2.0 * k) * (np.exp(delta) - np.exp(-r - s)) / r
    return measure.mass * ive(0, r) * np.exp(delta) / ive(0, k)


# =========================================================================== exact coefficients

def exact_coefficients(measure: Measure, lmax: int, basis: SphereBasis | None = None) -> np.ndarray:
    """Exact coefficients of ``mu``.

    Returns
    -------
    ndarray, complex
        S^1: shape (lmax + 1,), ``m_k = int e^{-ikt} dmu`` for ``k = 0..lmax``.
        S^2: shape (basis.nlm,), ``m_lm = int conj(Y_lm) dmu`` in ``basis`` order.
    """
    if measure.sphere == "S1":
        return _exact_circle(measure, np.arange(lmax + 1))
    assert basis is not None and basis.lmax == lmax
    l = basis.degrees
    if measure.kind == "uniform":
        return np.where(l == 0, measure.mass / np.sqrt(4 * np.pi), 0.0).astype(complex)
    th, ph = measure.angles[:, 0], measure.angles[:, 1]
    y = np.conj(basis.harmonics(th, ph))  # (n, nlm)
    if measure.kind == "vmf":  # (kappa / sinh kappa) i_l(kappa) conj(Y_lm(e))
        k = measure.kappa
        log_sinh = k + np.log(-np.expm1(-2 * k)) - np.log(2.0)
        log_i = 0.5 * np.log(np.pi / (2 * k)) + log_bessel_i(l + 0.5, k)
        return measure.mass * np.exp(np.log(k) - log_sinh + log_i) * y[0]
    m = measure.weights @ y
    return m * (1 + (-1.0) ** l) if measure.kind == "symmetric" else m


def _exact_circle(measure: Measure, k: np.ndarray) -> np.ndarray:
    if measure.kind == "uniform":
        return np.where(k == 0, measure.mass, 0.0).astype(complex)
    if measure.kind == "vmf":  # I_k(kappa) / I_0(kappa) e^{-ik t0}
        ratio = np.exp(log_bessel_i(k, measure.kappa) - log_bessel_i(0, measure.kappa))
        return measure.mass * ratio * np.exp(-1j * k * measure.angles[0])
    m = np.exp(-1j * np.outer(k, measure.angles)) @ measure.weights
    return m * (1 + (-1.0) ** k) if measure.kind == "symmetric" else m


def degree_norms(sphere: str, coeffs: np.ndarray, basis: SphereBasis | None = None) -> np.ndarray:
    """Per-degree norms (module docstring): S^1 ``|c_0|, sqrt(2)|c_k|``; S^2 over all m."""
    if sphere == "S2":
        return basis.degree_norms(coeffs)
    k = np.arange(np.shape(coeffs)[-1])
    return np.abs(coeffs) * np.where(k == 0, 1.0, np.sqrt(2.0))


# =========================================================================== breakdown

def measured_breakdown(error: np.ndarray, exact: np.ndarray) -> int | None:
    """First degree with ``exact > 0`` and ``error > exact / 2`` (None: none up to lmax)."""
    hit = np.nonzero((exact > 0) & (error > 0.5 * exact))[0]
    return int(hit[0]) if hit.size else None


def predicted_breakdown(floor: np.ndarray, exact: np.ndarray) -> int | None:
    """First degree with ``exact > 0`` and ``floor >= exact`` (None: none up to lmax)."""
    hit = np.nonzero((exact > 0) & (floor >= exact))[0]
    return int(hit[0]) if hit.size else None


def auto_lmax(beta: float, dim: int, eps: float = EPS) -> int:
    """Degrees shown: up to the first l with ``lambda_l / lambda_0 < eps * 1e-6``.

    There the floor exceeds ``1e6 * mass / |S|`` (``max f >= mass lambda_0 / |S|``), far above
    any ``|m_l|`` of the built-in measures: the breakdown is always inside the range.
    """
    return max(8, kernel_bandwidth(beta, dim, tol=eps * AUTO_LMAX_MARGIN))


def grid_size(sphere: str, beta: float, lmax: int, eps: float = EPS) -> int:
    """Grid resolving f to ``eps * ALIAS_TOL`` for degrees up to lmax.

    S^1: points ``N >= max(2 lmax + 2, lmax + J + 1)`` (multiple of 16), ``J`` the first degree
    with ``lambda_J / lambda_0 < eps * ALIAS_TOL`` (aliases of degree <= lmax come from >= N - lmax).
    S^2: Gauss ``nlat >= max(32, lmax + 1, (lmax + J + 1) / 2)`` (even): quadrature exact to
    degree ``2 nlat - 1 >= lmax + J``.
    """
    big = kernel_bandwidth(beta, SPHERES[sphere], tol=eps * ALIAS_TOL)
    if sphere == "S1":
        n = max(2 * lmax + 2, lmax + big + 1)
        return int(16 * np.ceil(n / 16))
    n = max(SHTNS_MIN_NLAT, lmax + 1, (lmax + big + 2) // 2)
    return n + n % 2


# =========================================================================== inversion (double)

def _setup(sphere: str, lmax: int, n: int) -> tuple[tuple, Any, SphereBasis | None]:
    """Grid and forward transform ``f -> f_l`` (S^1: ``int f e^{-ikt} dt``; S^2: shtns)."""
    if sphere == "S1":
        if n < 2 * lmax + 2:
            raise ValueError(f"--n: the S^1 grid needs >= 2 lmax + 2 = {2 * lmax + 2} points "
                             f"(got {n}); raise --n or lower --lmax")
        t = 2.0 * np.pi * np.arange(n) / n
        return (t,), lambda f: np.fft.fft(f)[: lmax + 1] * (2.0 * np.pi / n), None
    if n < max(SHTNS_MIN_NLAT, lmax + 1):
        raise ValueError(f"--n: the S^2 grid needs nlat >= max(32, lmax + 1) = "
                         f"{max(SHTNS_MIN_NLAT, lmax + 1)} (got {n})")
    basis = SphereBasis(lmax, nlat=n, nphi=_even_fft_size(max(2 * lmax + 2, 2 * n)))
    return (basis.theta[:, None], basis.phi[None, :]), basis.forward, basis


def invert(measure: Measure, beta: float, lmax: int | None = None, n: int | None = None,
           perturbation: float = 1e-3) -> dict[str, Any]:
    """Recover ``m_l = f_l / lambda_l`` from samples of ``f = K * mu`` (Lemma 5.1, MATH.md 4).

    Parameters
    ----------
    measure : Measure
    beta : float
    lmax : int, optional
        Largest degree (default :func:`auto_lmax`).
    n : int, optional
        Grid: points on S^1, Gauss latitudes on S^2 (default :func:`grid_size`).
    perturbation : float
        ``eps`` of the injectivity test ``mu' = (1 - eps) mu + eps delta_{x0}``.

    Returns
    -------
    dict
        Per-degree arrays, shape (lmax + 1,): ``exact_norm``, ``recovered_norm``, ``error``,
        ``floor``, ``f_norm``, ``log_lambda`` (unscaled), ``injectivity_df`` (computed
        ``|f_l - f'_l|``), ``injectivity_df_exact`` (``lambda_l |m_l - m'_l|``, scaled),
        ``injectivity_dm``; scalars ``lstar_measured``, ``lstar_predicted``, ``max_f``
        (scaled), ``odd_fraction`` (``||f_odd|| / ||f||`` over degrees <= lmax), ``floor_ratio``
        (median of error / floor), ``injectivity_visible`` (last degree with exact
        ``|f_l - f'_l| > eps max f``), ``lmax``, ``n``; and the complex ``recovered`` and
        ``exact`` coefficients.
    """
    beta = _check_beta(beta)
    lmax = auto_lmax(beta, measure.dim) if lmax is None else _check_lmax(lmax)
    n = grid_size(measure.sphere, beta, lmax) if n is None else int(n)
    grid, transform, basis = _setup(measure.sphere, lmax, n)
    log_lam = kernel_eigenvalues(beta, np.arange(lmax + 1), measure.dim, log=True)
    with np.errstate(over="ignore"):
        inv = np.exp(beta - log_lam)  # 1 / scaled eigenvalue (inf only if lmax is absurd)
    norms = lambda c: degree_norms(measure.sphere, c, basis)  # noqa: E731
    per_l = (lambda c, v: c * v) if basis is None else basis.apply_diagonal
    f = potential(measure, beta, grid)
    f_hat = transform(f)
    with np.errstate(over="ignore", invalid="ignore"):
        recovered = per_l(f_hat, inv)
    exact = exact_coefficients(measure, lmax, basis)
    max_f = float(np.max(np.abs(f)))
    out = {"lmax": lmax, "n": n, "max_f": max_f, "log_lambda": log_lam,
           "recovered": recovered, "exact": exact, "exact_norm": norms(exact),
           "recovered_norm": norms(recovered), "f_norm": norms(f_hat)}
    with np.errstate(invalid="ignore", over="ignore"):
        out["error"] = norms(recovered - exact)
        out["floor"] = EPS * max_f * inv
    out.update(_summaries(out))
    out["odd_fraction"] = _odd_fraction(out["f_norm"])
    out.update(_injectivity(measure, beta, grid, transform, per_l, norms, f, f_hat, inv, basis,
                            perturbation, lmax))
    return out


def _summaries(res: dict[str, Any]) -> dict[str, Any]:
    exact, err, floor = res["exact_norm"], res["error"], res["floor"]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = err / floor
    return {"lstar_measured": measured_breakdown(err, exact),
            "lstar_predicted": predicted_breakdown(floor, exact),
            "floor_ratio": float(np.nanmedian(ratio[np.isfinite(ratio) & (ratio > 0)]))}


def _odd_fraction(f_norm: np.ndarray) -> float:
    """Parity test (Lemma 5.1(ii)): ``||f_odd|| / ||f||`` from the per-degree norms of f."""
    return float(np.sqrt(np.sum(f_norm[1::2] ** 2) / np.sum(f_norm ** 2)))


def _point_mass(sphere: str) -> Measure:
    at = np.array([PERTURB_AT[sphere]])
    return Measure("atoms", sphere, at.ravel() if sphere == "S1" else at, np.ones(1), 0.0,
                   "unit atom")


def _injectivity(measure, beta, grid, transform, per_l, norms, f, f_hat, inv, basis, eps_mix,
                 lmax) -> dict[str, Any]:
    """Two nearby measures ``mu`` and ``mu' = (1 - e) mu + e delta_{x0}``: f_l differences."""
    atom = _point_mass(measure.sphere)
    f2 = (1.0 - eps_mix) * f + eps_mix * potential(atom, beta, grid)
    dm = eps_mix * (exact_coefficients(atom, lmax, basis) - exact_coefficients(measure, lmax, basis))
    with np.errstate(divide="ignore"):
        df_exact = norms(per_l(dm, 1.0 / inv))
    visible = np.nonzero(df_exact > EPS * np.max(np.abs(f)))[0]
    return {"injectivity_df": norms(f_hat - transform(f2)), "injectivity_df_exact": df_exact,
            "injectivity_dm": norms(dm),
            "injectivity_visible": int(visible[-1]) if visible.size else -1}


def _check_beta(beta: float) -> float:
    b = float(beta)
    if not np.isfinite(b) or b <= 0:
        raise ValueError(f"--beta: every beta must be a finite number > 0 (got {beta})")
    return b


def _check_lmax(lmax: int) -> int:
    if int(lmax) != lmax or lmax < 2:
        raise ValueError(f"--lmax: must be an integer >= 2 (got {lmax})")
    return int(lmax)
