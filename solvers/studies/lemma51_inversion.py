"""Lemma 5.1 inversion ``m_l = f_l / lambda_l``: round-off floors, breakdown degrees, parity,
injectivity, and the S^1 precision study in mpmath.

Part of the Lemma 5.1 checker (:mod:`solvers.studies.lemma51`, whose docstring states the conventions:
coefficient norms, kernel scaling, ``floor_l = eps max|f| / lambda_l`` and the measured and
predicted breakdown degrees ``l*``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from solvers.core.manifold import Manifold
from solvers.studies.lemma51_measures import (
    EPS,
    Measure,
    as_manifold,
    exact_coefficients,
    potential,
    scaled_eigenvalues,
)
from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues

if TYPE_CHECKING:  # xarray is imported where datasets are built (keeps `meanfield --help` fast)
    import xarray as xr

AUTO_LMAX_MARGIN = 1e-6  # auto lmax: first degree with lambda_l / lambda_0 < eps * margin
ALIAS_TOL = 1e-4  # grids resolve f to eps * ALIAS_TOL (aliasing far below the floor)


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


def grid_size(sphere: Manifold | str, beta: float, lmax: int, eps: float = EPS) -> int:
    """Grid resolving f to ``eps * ALIAS_TOL`` for degrees up to lmax
    (:meth:`~solvers.core.manifold.Manifold.check_grid_size`).

    S^1: points ``N >= max(2 lmax + 2, lmax + J + 1)`` (multiple of 16), ``J`` the first degree
    with ``lambda_J / lambda_0 < eps * ALIAS_TOL`` (aliases of degree <= lmax come from >= N - lmax).
    S^2: Gauss ``nlat >= max(32, lmax + 1, (lmax + J + 1) / 2)`` (even): quadrature exact to
    degree ``2 nlat - 1 >= lmax + J``.
    """
    manifold = as_manifold(sphere)
    big = kernel_bandwidth(beta, manifold.dimension, tol=eps * ALIAS_TOL)
    return manifold.check_grid_size(lmax, big)


# =========================================================================== inversion (double)

def invert(measure: Measure, beta: float, lmax: int | None = None, n: int | None = None,
           perturbation: float = 1e-3) -> dict[str, Any]:
    """Recover ``m_l = f_l / lambda_l`` from samples of ``f = K * mu`` (Lemma 5.1, docs/math.md §4).

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
    manifold = measure.manifold
    n = grid_size(manifold, beta, lmax) if n is None else int(n)
    grid, transform, basis = manifold.check_grid(lmax, n)
    log_lam = kernel_eigenvalues(beta, np.arange(lmax + 1), measure.dim, log=True)
    with np.errstate(over="ignore", divide="ignore"):
        inv = 1.0 / scaled_eigenvalues(beta, np.arange(lmax + 1), measure.dim)
    norms = lambda c: manifold.coefficient_norms(c, basis)
    per_l = lambda c, v: manifold.per_degree(c, v, basis)
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


def _point_mass(manifold: Manifold) -> Measure:
    """The unit atom at the manifold's ``check_atom``."""
    at = np.array(manifold.check_atom).reshape((1,) + manifold.angle_axes)
    return Measure("atoms", manifold, at, np.ones(1), 0.0, "unit atom")


def _injectivity(measure, beta, grid, transform, per_l, norms, f, f_hat, inv, basis, eps_mix,
                 lmax) -> dict[str, Any]:
    """Two nearby measures ``mu`` and ``mu' = (1 - e) mu + e delta_{x0}``: f_l differences."""
    atom = _point_mass(measure.manifold)
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


def _pad(a: np.ndarray, size: int) -> np.ndarray:
    return np.concatenate([a, np.full(size - a.size, np.nan)])


def _check_betas(betas: Any) -> tuple[float, ...]:
    b = tuple(_check_beta(x) for x in np.atleast_1d(betas))
    if not b or len(set(b)) != len(b):
        raise ValueError(f"--beta: give one or more distinct values > 0 (got {list(b)})")
    return b



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


def _mp_error_norms(manifold: Manifold, recovered: list, reference: list, dps: int) -> np.ndarray:
    import mpmath as mp

    with mp.workdps(dps):
        err = np.array([float(abs(mp.mpc(r) - e)) for r, e in zip(recovered, reference)])
    return manifold.coefficient_norms(err, None)


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
    the breakdown degree moves with the working precision, not with the grid (docs/math.md §4).

    Returns
    -------
    xarray.Dataset
        ``p_error``, ``p_floor`` (beta, precision, refinement, degree); ``p_lstar_measured``,
        ``p_lstar_predicted``, ``p_floor_ratio`` (beta, precision, refinement); ``p_n``
        (beta, refinement); ``p_exact_norm`` (beta, degree); ``p_lmax`` (beta).
    """
    if not measure.manifold.precision_study:
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
    return _precision_dataset(rows, betas, precisions)


def _precision_dataset(rows: list[dict[str, Any]], betas: tuple[float, ...],
                       precisions: tuple[int, ...]) -> xr.Dataset:
    """Gather :func:`_precision_rows` of every beta on a common ``degree`` axis (NaN past lmax)."""
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
    manifold = measure.manifold
    kmax = auto_lmax(beta, measure.dim, eps_hi) if lmax is None else _check_lmax(lmax)
    n0 = grid_size(manifold, beta, kmax, eps_hi) if n is None else int(n)
    reference = _mp_exact(measure, kmax, dps_ref)
    exact_norm = manifold.coefficient_norms(np.array([float(abs(e)) for e in reference]), None)
    log_lam = kernel_eigenvalues(beta, np.arange(kmax + 1), measure.dim, log=True)
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
            err = _mp_error_norms(manifold, rec, reference, dps_ref)
            floor = np.exp(np.log(eps * max_f) + beta - log_lam)
            summary = _summaries({"exact_norm": exact_norm, "error": err, "floor": floor})
            out["error"][i][j], out["floor"][i][j] = err, floor
            for key in ("lstar_measured", "lstar_predicted"):
                out[key][i][j] = -1 if summary[key] is None else summary[key]
            out["floor_ratio"][i][j] = summary["floor_ratio"]
    return out

