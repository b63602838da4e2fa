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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues, log_bessel_i
from spectral.sphere import SHTNS_MIN_NLAT, SphereBasis, _even_fft_size, expi

if TYPE_CHECKING:  # xarray is imported where datasets are built (keeps `meanfield --help` fast)
    import xarray as xr

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
    theta, rho = np.asarray(theta, float), np.asarray(rho, float)
    if theta.ndim != 1 or rho.shape != theta.shape:
        raise ValueError(f"--archive: {path} is not an S^1 archive (rho has shape {rho.shape}); "
                         "only S^1 snapshots are supported")
    h = 2.0 * np.pi / theta.size
    return Measure("snapshot", "S1", theta, rho * h, 0.0,
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

def _haversine(sphere: str, a: tuple, b: tuple, antipode: bool = False) -> np.ndarray:
    """``sin^2(gamma/2) = (1 - x.y)/2`` from angles, accurate to a few ulps (broadcasts).

    ``antipode``: the same for ``x`` and ``-y``, ``(1 + x.y)/2``, written with the angles of
    ``y`` itself (``t + pi`` rounded in double would break the symmetry at the 1e-16 level).
    """
    if sphere == "S1":
        return (np.cos if antipode else np.sin)(0.5 * (a[0] - b[0])) ** 2
    if antipode:
        return (np.cos(0.5 * (a[0] + b[0])) ** 2
                + np.sin(a[0]) * np.sin(b[0]) * np.cos(0.5 * (a[1] - b[1])) ** 2)
    return (np.sin(0.5 * (a[0] - b[0])) ** 2
            + np.sin(a[0]) * np.sin(b[0]) * np.sin(0.5 * (a[1] - b[1])) ** 2)


def _bessel_ratios(nu0: float, count: int, x: float) -> np.ndarray:
    """``I_{nu0+j}(x) / I_{nu0+j-1}(x)`` for ``j = 1..count`` by backward recurrence (MATH.md 2).

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
    """``e^{-beta} lambda_l(beta)`` (MATH.md 2) to a few ulps for every representable value.

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
                       / SURFACE[measure.sphere])
    if measure.kind == "vmf":
        return _vmf_potential(measure, beta, grid)
    f = np.zeros(shape)
    sides = (False, True) if measure.kind == "symmetric" else (False,)
    for a, w in zip(measure.angles, measure.weights):
        for antipode in sides:  # exp(beta (x.y - 1)) = exp(-2 beta sin^2(gamma/2))
            hav = _haversine(measure.sphere, grid, np.atleast_1d(a), antipode)
            f += w * np.exp(-2.0 * beta * hav)
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
        k = measure.kappa  # 4 pi i_l(kappa) = lambda_l(kappa); kappa e^k / sinh k = 2k / (1 - e^{-2k})
        i_l = scaled_eigenvalues(k, l, 3) / (4 * np.pi)  # e^{-kappa} i_l(kappa)
        return measure.mass * 2 * k / -np.expm1(-2 * k) * i_l * y[0]
    m = measure.weights @ y
    return m * (1 + (-1.0) ** l) if measure.kind == "symmetric" else m


def _exact_circle(measure: Measure, k: np.ndarray) -> np.ndarray:
    if measure.kind == "uniform":
        return np.where(k == 0, measure.mass, 0.0).astype(complex)
    if measure.kind == "vmf":  # I_k(kappa) / I_0(kappa) e^{-ik t0}
        lam = scaled_eigenvalues(measure.kappa, np.arange(k.max() + 1), 2)  # 2 pi e^-k I_j(k)
        ratio = lam[k] / lam[0]
        return measure.mass * ratio * expi(-k, measure.angles[0])
    m = expi(-k[:, None], measure.angles[None, :]) @ measure.weights
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
    with np.errstate(over="ignore", divide="ignore"):
        inv = 1.0 / scaled_eigenvalues(beta, np.arange(lmax + 1), measure.dim)
    norms = lambda c: degree_norms(measure.sphere, c, basis)
    per_l = (lambda c, v: c * v) if basis is None else basis.apply_diagonal
    f = potential(measure, beta, grid)
    f_hat = transform(f)
    with np.errstate(over="ignore", invalid="ignore"):
        recovered = per_l(f_hat, inv)
    exact = exact_coefficients(measure, lmax, basis)
    max_f = float(np.max(np.abs(f)))
    out = {"lmax": lmax, "n": n, "max_f": max_f, "log_lambda": log_lam,
           "recovered": recovered, "exact": exact, "exact_norm": norms(exact), "f_norm": norms(f_hat)}
    with np.errstate(invalid="ignore", over="ignore"):  # inf only far past l* (huge lmax)
        out["recovered_norm"] = norms(recovered)
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
    ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
    return {"lstar_measured": measured_breakdown(err, exact),
            "lstar_predicted": predicted_breakdown(floor, exact),
            "floor_ratio": float(np.median(ratio)) if ratio.size else float("nan")}


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


# =========================================================================== precision study (S^1)

GUARD_DIGITS = 20  # samples are computed with this many extra digits, then rounded


def _mp_potential(measure: Measure, beta: float, n: int, dps: int) -> list:
    """Scaled f at ``t_i = 2 pi i / n``, correctly rounded to ``dps`` digits (mpmath)."""
    import mpmath as mp

    with mp.workdps(dps + GUARD_DIGITS):
        b = mp.mpf(beta)
        t = [2 * mp.pi * i / n for i in range(n)]
        if measure.kind == "uniform":
            vals = [measure.mass * mp.exp(-b) * mp.besseli(0, b)] * n
        elif measure.kind == "vmf":  # e^{-beta} I_0(r) / I_0(kappa), r = |beta x + kappa e|
            k, t0 = mp.mpf(measure.kappa), mp.mpf(float(measure.angles[0]))
            c = measure.mass * mp.exp(-b) / mp.besseli(0, k)
            vals = [c * mp.besseli(0, mp.sqrt(b * b + k * k + 2 * b * k * mp.cos(ti - t0)))
                    for ti in t]
        else:
            atoms = [(mp.mpf(float(a)), mp.mpf(float(w))) for a, w in zip(measure.angles,
                                                                       measure.weights)]
            if measure.kind == "symmetric":  # exact antipodes
                atoms += [(a + mp.pi, w) for a, w in atoms]
            vals = [mp.fsum(w * mp.exp(-2 * b * mp.sin((ti - a) / 2) ** 2) for a, w in atoms)
                    for ti in t]
    with mp.workdps(dps):
        return [+v for v in vals]  # unary plus rounds to the working precision


def _mp_exact(measure: Measure, kmax: int, dps: int) -> list:
    """Reference ``m_k = int e^{-ikt} dmu``, k = 0..kmax, at ``dps`` digits."""
    import mpmath as mp

    with mp.workdps(dps):
        if measure.kind == "uniform":
            return [mp.mpc(measure.mass)] + [mp.mpc(0)] * kmax
        if measure.kind == "vmf":
            k, t0 = mp.mpf(measure.kappa), mp.mpf(float(measure.angles[0]))
            i0 = mp.besseli(0, k)
            return [measure.mass * mp.besseli(j, k) / i0 * mp.expj(-j * t0) for j in range(kmax + 1)]
        atoms = [(mp.mpf(float(a)), mp.mpf(float(w))) for a, w in zip(measure.angles, measure.weights)]
        sym = measure.kind == "symmetric"
        return [(1 + (-1) ** j if sym else 1) * mp.fsum(w * mp.expj(-j * a) for a, w in atoms)
                for j in range(kmax + 1)]


def _mp_invert(measure: Measure, beta: float, kmax: int, n: int, dps: int) -> tuple[list, float, float]:
    """``m_k = f_k / lambda_k`` with f sampled, transformed (DFT) and divided at ``dps`` digits.

    Returns ``(recovered m_k list, max f (scaled), eps = 2^(1 - prec))``.
    """
    import mpmath as mp

    f = _mp_potential(measure, beta, n, dps)
    with mp.workdps(dps):
        b = mp.mpf(beta)
        cos_t = [mp.cos(2 * mp.pi * j / n) for j in range(n)]
        sin_t = [mp.sin(2 * mp.pi * j / n) for j in range(n)]
        h, scale = 2 * mp.pi / n, 2 * mp.pi * mp.exp(-b)
        out = []
        for k in range(kmax + 1):
            idx = [(k * i) % n for i in range(n)]
            fk = h * mp.mpc(mp.fdot(f, [cos_t[j] for j in idx]), -mp.fdot(f, [sin_t[j] for j in idx]))
            out.append(fk / (scale * mp.besseli(k, b)))
        return out, float(max(f)), float(mp.eps)


def _mp_error_norms(recovered: list, reference: list, dps: int) -> np.ndarray:
    import mpmath as mp

    with mp.workdps(dps):
        err = np.array([float(abs(mp.mpc(r) - e)) for r, e in zip(recovered, reference)])
    return degree_norms("S1", err)


def _check_digits(digits: Any) -> tuple[int, ...]:
    d = tuple(sorted({int(x) for x in digits}))
    if any(x < 17 or x > 200 for x in d):
        raise ValueError(f"--digits: working precisions must be integers in 17..200 (got {digits})")
    return d


def precision_study(measure: Measure, betas: Any, digits: Any = (32, 64), lmax: int | None = None,
                    n: int | None = None) -> xr.Dataset:
    """The S^1 inversion at 16 (IEEE double), and ``digits`` decimal digits (mpmath), on two grids.

    For each beta: ``lmax`` and the grid ``N`` are chosen for the highest precision
    (:func:`auto_lmax`, :func:`grid_size`), and every precision runs on ``N`` and ``2 N`` points:
    the breakdown degree moves with the working precision, not with the grid (MATH.md 4).

    Returns
    -------
    xarray.Dataset
        ``p_error``, ``p_floor`` (beta, precision, refinement, degree); ``p_lstar_measured``,
        ``p_lstar_predicted``, ``p_floor_ratio`` (beta, precision, refinement); ``p_n``
        (beta, refinement); ``p_exact_norm`` (beta, degree); ``p_lmax`` (beta).
    """
    if measure.sphere != "S1":
        raise ValueError("--digits: the precision study runs on S^1 only; use --sphere S1 or "
                         "pass --digits with no values")
    digits = _check_digits(digits)
    betas = _check_betas(betas)
    try:
        import mpmath  # noqa: F401
    except ImportError:
        raise ValueError("--digits: the precision study needs mpmath (pip install mpmath); or "
                         "pass --digits with no value to skip it") from None
    precisions = (16,) + digits
    dps_ref = max(digits) + GUARD_DIGITS
    rows = [_precision_rows(measure, b, precisions, lmax, n, dps_ref) for b in betas]
    size = max(r["lmax"] for r in rows) + 1
    pad = lambda a: _pad(np.asarray(a, float), size)
    dims4 = ("beta", "precision", "refinement", "degree")
    dims3 = ("beta", "precision", "refinement")
    data = {
        "p_error": (dims4, np.array([[[pad(e) for e in pe] for pe in r["error"]] for r in rows])),
        "p_floor": (dims4, np.array([[[pad(e) for e in pe] for pe in r["floor"]] for r in rows])),
        "p_lstar_measured": (dims3, np.array([r["lstar_measured"] for r in rows], dtype=np.int32)),
        "p_lstar_predicted": (dims3, np.array([r["lstar_predicted"] for r in rows], dtype=np.int32)),
        "p_floor_ratio": (dims3, np.array([r["floor_ratio"] for r in rows])),
        "p_n": (("beta", "refinement"), np.array([r["n"] for r in rows], dtype=np.int32)),
        "p_exact_norm": (("beta", "degree"), np.array([pad(r["exact_norm"]) for r in rows])),
        "p_lmax": (("beta",), np.array([r["lmax"] for r in rows], dtype=np.int32)),
    }
    coords = {"beta": list(betas), "precision": list(precisions), "refinement": [1, 2],
              "degree": np.arange(size)}
    import xarray as xr

    ds = xr.Dataset(data, coords=coords)
    ds["precision"].attrs["long_name"] = ("working precision in decimal digits: 16 = IEEE double "
                                          "(numpy, 53 bits), others mpmath dps")
    ds["refinement"].attrs["long_name"] = "grid refinement: N and 2 N points (p_n)"
    return ds


def _precision_rows(measure: Measure, beta: float, precisions: tuple, lmax: int | None,
                    n: int | None, dps_ref: int) -> dict[str, Any]:
    import mpmath as mp

    with mp.workdps(max(precisions)):
        eps_hi = float(mp.eps)
    kmax = auto_lmax(beta, 2, eps_hi) if lmax is None else _check_lmax(lmax)
    n0 = grid_size("S1", beta, kmax, eps_hi) if n is None else int(n)
    reference = _mp_exact(measure, kmax, dps_ref)
    exact_norm = degree_norms("S1", np.array([float(abs(e)) for e in reference]))
    log_lam = kernel_eigenvalues(beta, np.arange(kmax + 1), 2, log=True)
    out: dict[str, Any] = {"lmax": kmax, "n": [n0, 2 * n0], "exact_norm": exact_norm}
    for key in ("error", "floor", "lstar_measured", "lstar_predicted", "floor_ratio"):
        out[key] = [[None, None] for _ in precisions]
    for i, p in enumerate(precisions):
        for j, npts in enumerate(out["n"]):
            if p == 16:
                res = invert(measure, beta, kmax, npts)
                rec, max_f, eps = list(res["recovered"]), res["max_f"], EPS
            else:
                rec, max_f, eps = _mp_invert(measure, beta, kmax, npts, p)
            err = _mp_error_norms(rec, reference, dps_ref)
            floor = np.exp(np.log(eps * max_f) + beta - log_lam)
            summary = _summaries({"exact_norm": exact_norm, "error": err, "floor": floor})
            out["error"][i][j], out["floor"][i][j] = err, floor
            for key in ("lstar_measured", "lstar_predicted"):
                out[key][i][j] = -1 if summary[key] is None else summary[key]
            out["floor_ratio"][i][j] = summary["floor_ratio"]
    return out


# =========================================================================== dataset

def _pad(a: np.ndarray, size: int) -> np.ndarray:
    return np.concatenate([a, np.full(size - a.size, np.nan)])


def _check_betas(betas: Any) -> tuple[float, ...]:
    b = tuple(_check_beta(x) for x in np.atleast_1d(betas))
    if not b or len(set(b)) != len(b):
        raise ValueError(f"--beta: give one or more distinct values > 0 (got {list(b)})")
    return b


def lemma51_dataset(measure: Measure, betas: Any, lmax: int | None = None, n: int | None = None,
                    perturbation: float = 1e-3) -> xr.Dataset:
    """:func:`invert` for every beta, gathered on a common ``degree`` axis (NaN past each lmax).

    Returns
    -------
    xarray.Dataset
        (beta, degree): ``recovered_norm``, ``error``, ``floor``, ``f_norm``, ``log_lambda``,
        ``partial_sum_recovered``, ``injectivity_df``, ``injectivity_df_exact``;
        (degree): ``exact_norm``, ``partial_sum_exact``, ``injectivity_dm``;
        (beta): ``lstar_measured``, ``lstar_predicted`` (-1: none), ``floor_ratio``,
        ``odd_fraction``, ``max_f``, ``injectivity_visible``, ``lmax``, ``n_grid``.
    """
    betas = _check_betas(betas)
    if not np.isfinite(perturbation) or not 0 < perturbation < 1:
        raise ValueError(f"--perturbation: must be in (0, 1) (got {perturbation})")
    res = [invert(measure, b, lmax, n, perturbation) for b in betas]
    widest = max(res, key=lambda r: r["lmax"])
    size = widest["lmax"] + 1
    c = 1.0 / (2 * np.pi) if measure.sphere == "S1" else 1.0
    per_beta = lambda key: (("beta", "degree"), np.array([_pad(r[key], size) for r in res]))
    with np.errstate(over="ignore", invalid="ignore"):
        psum = np.array([_pad(c * np.cumsum(r["recovered_norm"] ** 2), size) for r in res])
    scalar = lambda key, dt=float: (("beta",), np.array([-1 if r[key] is None else r[key]
                                                          for r in res], dtype=dt))
    data = {key: per_beta(key) for key in ("recovered_norm", "error", "floor", "f_norm",
                                          "log_lambda", "injectivity_df", "injectivity_df_exact")}
    data.update({
        "exact_norm": (("degree",), widest["exact_norm"]),
        "partial_sum_exact": (("degree",), c * np.cumsum(widest["exact_norm"] ** 2)),
        "partial_sum_recovered": (("beta", "degree"), psum),
        "injectivity_dm": (("degree",), widest["injectivity_dm"]),
        "lstar_measured": scalar("lstar_measured", np.int32),
        "lstar_predicted": scalar("lstar_predicted", np.int32),
        "injectivity_visible": scalar("injectivity_visible", np.int32),
        "lmax": scalar("lmax", np.int32), "n_grid": scalar("n", np.int32),
        "floor_ratio": scalar("floor_ratio"), "odd_fraction": scalar("odd_fraction"),
        "max_f": scalar("max_f"),
    })
    import xarray as xr

    ds = xr.Dataset(data, coords={"beta": list(betas), "degree": np.arange(size)})
    ds.attrs.update(_attributes(measure, perturbation))
    return ds


def _attributes(measure: Measure, perturbation: float) -> dict[str, Any]:
    s1 = measure.sphere == "S1"
    return {
        "title": "Lemma 5.1 check: spectral inversion of f = K * mu (MATH.md 2, 4)",
        "sphere": measure.sphere, "measure": measure.kind, "measure_label": measure.label,
        "kappa": measure.kappa, "mass": measure.mass, "density_l2": density_l2(measure),
        "eps": EPS, "perturbation": perturbation,
        "perturbation_atom": str(PERTURB_AT[measure.sphere]),
        "coefficients": ("m_k = int exp(-i k t) dmu(t) (complex Fourier, not orthonormal); degree "
                         "norm |m_0|, sqrt(|m_k|^2 + |m_-k|^2) for k > 0" if s1 else
                         "m_lm = int conj(Y_lm) dmu, orthonormal complex Y_lm with Condon-Shortley "
                         "phase; degree norm sqrt(sum_{m=-l..l} |m_lm|^2)"),
        "kernel_scaling": "f and lambda for exp(beta (x.y - 1)) = exp(-beta) K; m = f / lambda",
        "partial_sums": ("(1/2 pi) sum_{|k| <= L} |m_k|^2 -> int rho^2 dt" if s1 else
                         "sum_{l <= L} |m_l|^2 -> int rho^2 dsigma"),
        "floor": "eps * max|f| / lambda_l",
        "lstar_measured_definition": "first l with |m_l| > 0 and error_l > |m_l| / 2 (-1: none)",
        "lstar_predicted_definition": "first l with |m_l| > 0 and floor_l >= |m_l| (-1: none)",
        "odd_fraction_definition": "||f_odd|| / ||f|| over degrees <= lmax (0 iff mu symmetric)",
        "injectivity": ("mu' = (1 - p) mu + p delta_x0: injectivity_df = computed |f_l - f'_l|, "
                        "injectivity_df_exact = lambda_l |m_l - m'_l| (> 0 at every l with "
                        "m_l != m'_l); injectivity_visible = last l with that > eps max f"),
    }


def run_lemma51(measure: Measure, betas: Any, digits: Any = (32, 64), lmax: int | None = None,
                n: int | None = None, perturbation: float = 1e-3) -> xr.Dataset:
    """Full report: :func:`lemma51_dataset`, plus :func:`precision_study` on S^1 when ``digits``."""
    ds = lemma51_dataset(measure, betas, lmax, n, perturbation)
    if digits:
        study = precision_study(measure, betas, digits, lmax, n)
        import xarray as xr

        ds = xr.merge([ds, study], join="outer", combine_attrs="override")
    return ds


# =========================================================================== report

def _lstar(v: Any) -> str:
    return "none" if int(v) < 0 else str(int(v))


def format_report(ds: xr.Dataset, per_degree: str = "short") -> str:
    """The stdout table: a summary per beta, rows per degree, and the precision study.

    ``per_degree``: ``"short"`` (degrees up to the predicted l* + 3), ``"full"``, or ``"none"``.
    """
    a = ds.attrs
    header = (f"{'beta':>8} {'lmax':>5} {'grid':>5} {'l*meas':>6} {'l*pred':>6} "
              f"{'err/floor':>9} {'odd(f)':>9} {'P(l*-1)':>12} {'P(lmax) rec':>12} {'inj.vis':>7}")
    lines = [f"Lemma 5.1 check on {a['sphere']}: {a['measure_label']} (mass {a['mass']:.6g})",
             f"  coefficients: {a['coefficients']}",
             (f"  floor = eps max|f| / lambda_l, eps = {a['eps']:.3g}; l* measured: "
              f"{a['lstar_measured_definition']}; predicted: {a['lstar_predicted_definition']}"),
             f"  int rho^2 = {a['density_l2']:.10g}; partial sums {a['partial_sums']}",
             "", header]
    for b in ds["beta"].values:
        r = ds.sel(beta=b)
        lm, ls = int(r["lmax"]), int(r["lstar_measured"])
        before = float(ds["partial_sum_exact"][ls - 1]) if ls > 0 else float("nan")
        lines.append(f"{b:8.4g} {lm:5d} {int(r['n_grid']):5d} {_lstar(ls):>6} "
                     f"{_lstar(r['lstar_predicted']):>6} {float(r['floor_ratio']):9.2f} "
                     f"{float(r['odd_fraction']):9.1e} {before:12.6g} "
                     f"{float(r['partial_sum_recovered'][lm]):12.4g} "
                     f"{int(r['injectivity_visible']):7d}")
    if per_degree != "none":
        for b in ds["beta"].values:
            lines += _degree_rows(ds, b, per_degree == "full")
    if "p_error" in ds:
        lines += _precision_rows_text(ds)
    return "\n".join(lines)


def _degree_rows(ds: xr.Dataset, beta: float, full: bool) -> list[str]:
    r = ds.sel(beta=beta)
    last = int(r["lmax"])
    if not full and int(r["lstar_predicted"]) >= 0:
        last = min(last, int(r["lstar_predicted"]) + 3)
    out = ["", f"beta = {beta:g}: per degree (full table in the NetCDF file)",
           (f"{'l':>4} {'|m_l| exact':>11} {'|m_l| rec':>11} {'error':>10} {'floor':>10} "
           f"{'P_L exact':>11} {'P_L rec':>11} {'|f_l|':>10} {'|df_l|':>10} {'lam|dm_l|':>10}")]
    for l in range(last + 1):
        v = {k: float(r[k][l]) for k in ("recovered_norm", "error", "floor", "f_norm",
                                          "partial_sum_recovered", "injectivity_df",
                                          "injectivity_df_exact")}
        out.append(f"{l:4d} {float(ds['exact_norm'][l]):11.4e} {v['recovered_norm']:11.4e} "
                   f"{v['error']:10.3e} {v['floor']:10.3e} {float(ds['partial_sum_exact'][l]):11.6g} "
                   f"{v['partial_sum_recovered']:11.4g} {v['f_norm']:10.3e} "
                   f"{v['injectivity_df']:10.3e} {v['injectivity_df_exact']:10.3e}")
    return out


def _precision_rows_text(ds: xr.Dataset) -> list[str]:
    out = ["", ("precision study on S^1 (f sampled, DFT and lambda_k = 2 pi I_k(beta) at the working "
           "precision; 16 = IEEE double, others mpmath)"),
           (f"{'beta':>8} {'digits':>6} {'N':>5} {'l*meas':>6} {'l*pred':>6} {'err/floor':>9}   "
           f"{'2N':>5} {'l*meas':>6} {'l*pred':>6} {'err/floor':>9}")]
    for b in ds["beta"].values:
        for p in ds["precision"].values:
            cells = []
            for g in (1, 2):
                r = ds.sel(beta=b, precision=p, refinement=g)
                cells.append(f"{int(ds['p_n'].sel(beta=b, refinement=g)):5d} "
                             f"{_lstar(r['p_lstar_measured']):>6} {_lstar(r['p_lstar_predicted']):>6} "
                             f"{float(r['p_floor_ratio']):9.2f}")
            out.append(f"{b:8.4g} {int(p):6d} " + "   ".join(cells))
    return out


# =========================================================================== command line

def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``meanfield lemma51`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "lemma51", help="check Lemma 5.1: invert f = K*mu degree by degree, with its round-off limit",
        description="Recover the coefficients of a measure mu from f = K*mu (paper Lemma 5.1) on "
                    "S^1 or S^2, compare with the exact ones, and show the round-off floor "
                    "eps max|f| / lambda_l (MATH.md 4). Writes OUT.nc, OUT.png and a table.")
    p.add_argument("--measure", default="vmf", metavar="{vmf,atoms,symmetric,uniform}",
                   help="built-in test measure (default vmf)")
    p.add_argument("--archive", metavar="RUN.nc", help="use a snapshot of an S^1 run archive")
    p.add_argument("--time", type=float, help="snapshot time (nearest record; default: last)")
    p.add_argument("--sphere", default=None, metavar="{S1,S2}", help="default S1")
    p.add_argument("--beta", type=float, nargs="+", default=[5.0, 20.0, 50.0],
                   help="one or more inverse temperatures (default 5 20 50)")
    p.add_argument("--kappa", type=float, default=3.0, help="vMF concentration (default 3)")
    p.add_argument("--atoms", type=int, default=5, help="atoms, or pairs for symmetric (5)")
    p.add_argument("--seed", type=int, default=0, help="atom positions and weights (0)")
    p.add_argument("--lmax", type=int, help="largest degree (default: past the breakdown)")
    p.add_argument("--n", type=int, help="grid: points on S^1, Gauss latitudes on S^2")
    p.add_argument("--digits", type=int, nargs="*", default=None,
                   help="S^1 precision study at these decimal digits (default 32 64); "
                        "--digits with no value skips it")
    p.add_argument("--perturbation", type=float, default=1e-3, help="injectivity test (1e-3)")
    p.add_argument("-o", "--output", metavar="OUT.nc", help="default lemma51_<measure>_<sphere>.nc")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--table", default="short", metavar="{short,full,none}",
                   help="per-degree rows on stdout (default short: up to l* + 3)")
    p.set_defaults(func=run_command)
    return p


def _measure_from_args(args: argparse.Namespace) -> Measure:
    sphere = args.sphere or "S1"
    _check_sphere(sphere)
    if args.archive:
        if sphere != "S1":
            raise ValueError("--sphere: run archives hold S^1 densities; use --sphere S1")
        return snapshot_measure(args.archive, args.time)
    if args.time is not None:
        raise ValueError("--time: only with --archive RUN.nc")
    return make_measure(args.measure, sphere, args.kappa, args.atoms, args.seed)


def _output_path(args: argparse.Namespace, measure: Measure) -> Path:
    out = Path(args.output or f"lemma51_{measure.kind}_{measure.sphere}.nc")
    if out.suffix != ".nc":
        raise ValueError(f"--output: must end in .nc (got {out}); the PNG takes the same stem")
    if args.archive and out.resolve() == Path(args.archive).resolve():
        raise ValueError("--output: would overwrite the input archive; choose another path")
    return out


def run_command(args: argparse.Namespace) -> int:
    """``meanfield lemma51``: compute, print the table, write OUT.nc and OUT.png.

    User errors print one line ``error: ...`` on stderr and return 2.
    """
    try:
        if args.table not in ("short", "full", "none"):
            raise ValueError(f"--table: must be short, full or none (got {args.table!r})")
        measure = _measure_from_args(args)
        out = _output_path(args, measure)
        digits = args.digits if args.digits is not None else (
            (32, 64) if measure.sphere == "S1" else ())
        ds = run_lemma51(measure, args.beta, digits, args.lmax, args.n, args.perturbation)
    except FileNotFoundError as err:
        print(f"error: file not found: {err.filename or err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_report(ds, args.table))
    ds.to_netcdf(out)
    print(f"wrote {out}")
    if not args.no_plot:
        from solvers.lemma51_plot import plot_lemma51

        png = plot_lemma51(ds, out.with_suffix(".png"))
        print(f"wrote {png}")
    return 0
