"""Lemma 5.1 on ``S^{d-1}``, any d: recover the degree-j content of a measure from ``f = K*mu``
in the Gegenbauer (zonal) basis, and show where floating point stops it.

A full harmonic basis of ``S^{d-1}`` has ``N(d, j)`` functions per degree (``N(50, 20)`` is
about 1e17); the check uses only zonal functions, exact and cheap in any d.

Conventions (stated in the output file)
---------------------------------------
- Normalised surface measure ``dsigma / |S^{d-1}|``; ``Z_j(t) = C_j^a(t) / C_j^a(1)``,
  ``a = d/2 - 1`` (``Z_j(1) = 1``); addition theorem ``sum_m Y_jm(x) Y_jm(y) = N(d, j) Z_j(x.y)``
  for an orthonormal basis ``Y_jm``; ``|m_j|^2 = sum_m |int Y_jm dmu|^2``.
- Kernel scaled as in the S^1/S^2 check: ``exp(beta (x.y - 1))``, eigenvalues
  ``lam_j = e^{-beta} lambda_j(beta, d) / |S^{d-1}|`` (:func:`spectral.kernel_eigenvalues`), so
  ``f_j = lam_j m_j`` degree by degree and ``lam_0 <= 1``.
- Zonal means: ``f^c(s)``, the mean of ``f`` over ``{y : y.c = s}``, holds the zonal part of
  ``f`` about ``c``: ``f_j(c) = N(d, j) int f^c(s) Z_j(s) dnu(s)``, ``dnu`` the probability
  weight ``(1 - s^2)^{(d-3)/2}`` on [-1, 1], integrated by Gauss-Gegenbauer quadrature. Each
  sample ``f^c(s)`` is computed point by point from the measure (closed forms below).
- ``atoms`` (``sum_i w_i delta_{x_i}``, seeded): exact ``|m_j|^2 = N(d, j) sum_{i,k} w_i w_k
  Z_j(x_i.x_k)``; recovered ``|m_j|^2 = sum_i w_i f_j(x_i) / lam_j`` (``int f_j dmu = lam_j
  |m_j|^2``). ``f^c(s) = sum_k w_k e^{beta (s t_k - 1)} M(beta sqrt(1-s^2) sqrt(1-t_k^2))``,
  ``t_k = x_k.c``, ``M(z) = 0F1(; (d-1)/2; z^2/4)`` the mean of ``e^{z u.v}`` on ``S^{d-2}``.
- ``vmf`` (density ``e^{kappa x.e} / lam_0(kappa)`` against ``dsigma / |S|``): zonal about ``e``,
  exact ``m_j = sqrt(N(d, j)) lam_j(kappa) / lam_0(kappa)`` (unscaled ratio); recovered
  ``m_j = a_j / lam_j``, ``a_j = sqrt(N(d, j)) int f(s) Z_j(s) dnu(s)``; ``f(s) =
  M_d(r) / M_d(kappa)``, ``r = |beta x + kappa e|``, ``M_d(z) = 0F1(; d/2; z^2/4)``.
- Floor ``eps max|f| / lam_j`` (``sum |weights Y_j| <= 1`` in the normalised measure); the
  breakdown degrees as in :mod:`solvers.studies.lemma51`; partial sums ``sum_{l <= L} |m_l|^2``
  (an L^2 density: to ``int rho^2`` against the normalised measure; atoms: growing).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from solvers.io.cf import describe
from solvers.studies.lemma51_inversion import (
    ALIAS_TOL,
    auto_lmax,
    measured_breakdown,
    predicted_breakdown,
)
from solvers.studies.lemma51_measures import EPS
from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues

GEGENBAUER_MEASURES = ("atoms", "vmf")
MAX_NODES = 1 << 14


def log_harmonic_dimension(d: int, degrees: np.ndarray) -> np.ndarray:
    """``log N(d, j)``, the dimension of the degree-j harmonics on ``S^{d-1}`` (d >= 3)."""
    j = np.asarray(degrees, dtype=float)
    return (np.log(2 * j + d - 2) - np.log(j + d - 2) + special.gammaln(j + d - 1)
            - special.gammaln(j + 1) - special.gammaln(d - 1))


def log_sphere_area(d: int) -> float:
    """``log |S^{d-1}|``."""
    return float(np.log(2.0) + 0.5 * d * np.log(np.pi) - special.gammaln(0.5 * d))


def log_eigenvalues(beta: float, lmax: int, d: int) -> np.ndarray:
    """``log lam_j``, j = 0..lmax: the eigenvalues of ``exp(beta (x.y - 1))`` against the
    normalised surface measure, shape (lmax + 1,)."""
    return kernel_eigenvalues(beta, np.arange(lmax + 1), d, log=True) - beta - log_sphere_area(d)


def zonal_polynomials(t: np.ndarray, lmax: int, d: int) -> np.ndarray:
    """``Z_j(t)`` for j = 0..lmax, shape (lmax + 1,) + t.shape, by the three-term recurrence
    ``Z_{j+1} = ((2j + 2a) t Z_j - j Z_{j-1}) / (j + 2a)``, ``a = d/2 - 1``."""
    t = np.asarray(t, dtype=float)
    a = 0.5 * d - 1.0
    z = np.empty((lmax + 1,) + t.shape)
    z[0] = 1.0
    if lmax >= 1:
        z[1] = t
    for j in range(1, lmax):
        z[j + 1] = ((2 * j + 2 * a) * t * z[j] - j * z[j - 1]) / (j + 2 * a)
    return z


def sphere_mean(z: np.ndarray, d: int) -> np.ndarray:
    """``M_d(z) e^{-z}``: the mean of ``e^{z u.v}`` over ``u`` on ``S^{d-1}``, times ``e^{-z}``
    (``0F1(; d/2; z^2/4) = Gamma(d/2) (2/z)^{d/2-1} I_{d/2-1}(z)``), for z >= 0."""
    z = np.asarray(z, dtype=float)
    nu = 0.5 * d - 1.0
    small = z < 1.0
    zs = np.where(small, z, 1.0)
    series = special.hyp0f1(nu + 1.0, 0.25 * zs * zs) * np.exp(-zs)
    zb = np.where(small, 1.0, z)
    bessel = np.exp(special.gammaln(nu + 1.0) + nu * np.log(2.0 / zb)) * special.ive(nu, zb)
    return np.where(small, series, bessel)


def nodes(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Gegenbauer nodes and probability weights (n,) for ``(1 - s^2)^{(d-3)/2}``."""
    s, w = special.roots_gegenbauer(int(n), 0.5 * d - 1.0)
    return s, w / w.sum()


def gegenbauer_lmax(beta: float, d: int, margin: float = 1e10, cap: int = 4096) -> int:
    """Degrees shown: up to the first j (at least :func:`auto_lmax`) where the floor of a unit
    mass, ``eps / lam_j``, exceeds ``margin sqrt(N(d, j))``, a bound of ``|m_j|`` for any
    probability measure (``|Z_j| <= 1``): the breakdown is always inside the range."""
    j = np.arange(cap + 1)
    past = np.log(EPS) - log_eigenvalues(beta, cap, d) >= np.log(margin) + 0.5 * log_harmonic_dimension(d, j)
    first = int(np.argmax(past)) if past.any() else cap
    return max(auto_lmax(beta, d), first)


def quadrature_size(beta: float, lmax: int, d: int) -> int:
    """Nodes resolving the degrees <= lmax of f to ``eps * ALIAS_TOL``: exact to degree
    ``lmax + J`` (``J`` the first degree with ``lam_J / lam_0 < eps * ALIAS_TOL``)."""
    big = kernel_bandwidth(beta, d, tol=EPS * ALIAS_TOL)
    return int(min(MAX_NODES, max(32, (lmax + big) // 2 + 2)))


def make_atoms(d: int, count: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(weights (count,), positions (count, d))``: seeded atoms of total mass 1 on ``S^{d-1}``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, d))
    w = rng.uniform(0.5, 1.5, size=count)
    return w / w.sum(), x / np.linalg.norm(x, axis=1, keepdims=True)


def atoms_zonal_mean(s: np.ndarray, centre: np.ndarray, w: np.ndarray, x: np.ndarray, beta: float,
                     d: int) -> np.ndarray:
    """``f^c(s)`` of the atoms (module docstring), scaled kernel, shape s.shape."""
    t = np.clip(x @ centre, -1.0, 1.0)  # (k,)
    s = np.asarray(s, dtype=float)[..., None]
    z = beta * np.sqrt(np.clip(1 - s * s, 0, None)) * np.sqrt(np.clip(1 - t * t, 0, None))
    return np.sum(w * np.exp(beta * (s * t - 1) + z) * sphere_mean(z, d - 1), axis=-1)


def vmf_potential(s: np.ndarray, beta: float, kappa: float, d: int) -> np.ndarray:
    """``f(s)`` of the vMF density (module docstring), scaled kernel, shape s.shape."""
    s = np.asarray(s, dtype=float)
    r = np.sqrt(beta * beta + kappa * kappa + 2 * beta * kappa * s)
    gap = 2 * beta * kappa * (s - 1) / (r + beta + kappa)  # r - beta - kappa, no cancellation
    return sphere_mean(r, d) / sphere_mean(np.array(kappa), d) * np.exp(gap)


def invert_gegenbauer(measure: str, d: int, beta: float, lmax: int | None = None,
                      n: int | None = None, atoms: int = 5, seed: int = 0,
                      kappa: float = 3.0) -> dict[str, Any]:
    """Recover the degree norms ``|m_j|``, j = 0..lmax, of ``measure`` from ``f = K*mu``.

    Returns
    -------
    dict
        Per degree (lmax + 1,): ``exact_norm``, ``recovered_norm``, ``error``, ``floor``,
        ``sum_floor`` (the round-off bound of the quadrature sums), ``f_norm`` (``lam_j |m_j|`` recovered from f), ``log_lambda`` (of ``lam_j``);
        scalars ``lstar_measured``, ``lstar_predicted``, ``lstar_sum`` (None: none), ``floor_ratio``
        (median error / floor where the error is above zero), ``max_f``, ``lmax``, ``n``.
    """
    if measure not in GEGENBAUER_MEASURES:
        raise ValueError(f"--measure: with --dim d >= 4 one of {', '.join(GEGENBAUER_MEASURES)} "
                         f"(got {measure!r})")
    lmax = gegenbauer_lmax(beta, d) if lmax is None else int(lmax)
    n = quadrature_size(beta, lmax, d) if n is None else int(n)
    s, ws = nodes(n, d)
    zj = zonal_polynomials(s, lmax, d)  # (lmax + 1, n)
    log_n = log_harmonic_dimension(d, np.arange(lmax + 1))
    log_lam = log_eigenvalues(beta, lmax, d)
    lam = np.exp(log_lam)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if measure == "atoms":
            w, x = make_atoms(d, atoms, seed)
            gram = zonal_polynomials(np.clip(x @ x.T, -1, 1), lmax, d)  # (lmax + 1, k, k)
            exact = np.sqrt(np.clip(np.exp(log_n) * np.einsum("i,jik,k->j", w, gram, w), 0, None))
            means = np.stack([atoms_zonal_mean(s, c, w, x, beta, d) for c in x])  # (k, n)
            f_at = np.exp(log_n)[:, None] * ((zj * ws) @ means.T)  # f_j(x_i), (lmax + 1, k)
            f_sq = f_at @ w  # lam_j |m_j|^2
            # round-off bound of the quadrature sums (eps times the sum of absolute terms)
            bound_sq = EPS * np.exp(log_n) * (((np.abs(zj) * ws) @ np.abs(means).T) @ w) / lam
            sum_floor = np.sqrt(exact ** 2 + bound_sq) - exact
            recovered = np.sqrt(np.clip(f_sq / lam, 0, None))
            f_norm = np.sqrt(np.clip(f_sq * lam, 0, None))
            max_f = float(max(np.abs(means).max(), 0.0))
        else:
            log_k = kernel_eigenvalues(kappa, np.arange(lmax + 1), d, log=True)
            exact = np.exp(0.5 * log_n + log_k - log_k[0])
            f = vmf_potential(s, beta, kappa, d)
            a = np.exp(0.5 * log_n) * ((zj * ws) @ f)
            recovered, f_norm = a / lam, np.abs(a)
            sum_floor = EPS * np.exp(0.5 * log_n) * ((np.abs(zj) * ws) @ np.abs(f)) / lam
            max_f = float(np.abs(f).max())
        floor = EPS * max_f / lam
        error = np.abs(recovered - exact)
    valid = error > 0
    ratio = float(np.median(error[valid] / floor[valid])) if valid.any() else 0.0
    return {"exact_norm": exact, "recovered_norm": np.abs(recovered), "error": error,
            "floor": floor, "f_norm": f_norm, "log_lambda": log_lam,
            "lstar_measured": measured_breakdown(error, exact),
            "lstar_predicted": predicted_breakdown(floor, exact), "floor_ratio": ratio,
            "sum_floor": sum_floor, "lstar_sum": predicted_breakdown(sum_floor, exact),
            "max_f": max_f, "lmax": lmax, "n": n}


def gegenbauer_dataset(measure: str, d: int, betas: Any, lmax: int | None = None,
                       n: int | None = None, atoms: int = 5, seed: int = 0,
                       kappa: float = 3.0) -> Any:
    """:func:`invert_gegenbauer` for every beta on a common ``degree`` axis (NaN past each
    lmax): (beta, degree) ``recovered_norm``, ``error``, ``floor``, ``f_norm``,
    ``log_lambda``, ``partial_sum_recovered``; (degree) ``exact_norm``, ``partial_sum_exact``;
    (beta) ``lstar_measured``, ``lstar_predicted`` (-1: none), ``floor_ratio``, ``max_f``,
    ``lmax``, ``n_grid``."""
    import xarray as xr

    if not 4 <= int(d) <= 1024:
        raise ValueError(f"--dim: the Gegenbauer check takes 4 <= d <= 1024 (got {d})")
    res = [invert_gegenbauer(measure, int(d), float(b), lmax, n, atoms, seed, kappa) for b in betas]
    size = max(r["lmax"] for r in res) + 1
    widest = max(res, key=lambda r: r["lmax"])
    pad = lambda v: np.concatenate([v, np.full(size - v.size, np.nan)])
    data = {k: (("beta", "degree"), np.array([pad(r[k]) for r in res]))
            for k in ("recovered_norm", "error", "floor", "sum_floor", "f_norm", "log_lambda")}
    data["partial_sum_recovered"] = (("beta", "degree"),
                                     np.array([pad(np.cumsum(r["recovered_norm"] ** 2)) for r in res]))
    data["exact_norm"] = (("degree",), widest["exact_norm"])
    data["partial_sum_exact"] = (("degree",), np.cumsum(widest["exact_norm"] ** 2))
    for k in ("lstar_measured", "lstar_predicted", "lstar_sum", "lmax", "n"):
        data["n_grid" if k == "n" else k] = (("beta",), np.array(
            [-1 if r[k] is None else r[k] for r in res], dtype=np.int32))
    for k in ("floor_ratio", "max_f"):
        data[k] = (("beta",), np.array([r[k] for r in res]))
    ds = xr.Dataset(data, coords={"beta": [float(b) for b in betas], "degree": np.arange(size)})
    label = (f"{atoms} atoms (seed {seed})" if measure == "atoms"
             else f"von Mises-Fisher density, kappa = {kappa:g}")
    ds.attrs.update({
        "title": "Lemma 5.1 check on S^(d-1) in the Gegenbauer (zonal) basis",
        "sphere": f"S^{int(d) - 1}", "dim": int(d), "measure": measure, "measure_label": label,
        "kappa": kappa, "seed": seed, "eps": EPS,
        "coefficients": ("degree norms |m_j|, normalised surface measure; atoms: addition "
                         "theorem, recovered from the zonal means of f at the atoms; vmf: zonal "
                         "coefficients about its axis"),
        "kernel_scaling": "f and lam_j for exp(beta (x.y - 1)) against dsigma / |S^(d-1)|",
        "quadrature": "Gauss-Gegenbauer, weight (1 - s^2)^((d-3)/2), n_grid nodes",
        "floor": "eps * max|f| / lam_j",
        "sum_floor": ("eps * (sum of the absolute quadrature terms) / lam_j, as an error of |m_j| "
                      "(lstar_sum: where it reaches |m_j|)"),
        "partial_sums": "sum_{l <= L} |m_l|^2",
        "lstar_measured_definition": "first j with |m_j| > 0 and error_j > |m_j| / 2 (-1: none)",
        "lstar_predicted_definition": "first j with |m_j| > 0 and floor_j >= |m_j| (-1: none)",
    })
    return describe(ds, "meanfield-spectral Lemma 5.1 report in the Gegenbauer basis")


def format_gegenbauer_report(ds: Any, per_degree: str = "short") -> str:
    """The stdout table: a summary per beta, then rows per degree (``"short"``: up to the
    predicted breakdown + 3; ``"full"``; ``"none"``)."""
    a = ds.attrs
    lines = [f"Lemma 5.1 check on {a['sphere']} (d = {a['dim']}), Gegenbauer basis: "
             f"{a['measure_label']}", f"  coefficients: {a['coefficients']}",
             f"  floor = {a['floor']}, eps = {a['eps']:.3g}; {a['quadrature']}", "",
             f"{'beta':>8} {'lmax':>5} {'nodes':>6} {'l*meas':>6} {'l*pred':>6} {'l*sum':>6} {'err/floor':>9}"
             f" {'P(lmax) exact':>14} {'P(lmax) rec':>12}  inversion"]
    for b in ds["beta"].values:
        r = ds.sel(beta=b)
        lm, ls, lp = int(r["lmax"]), int(r["lstar_measured"]), int(r["lstar_predicted"])
        lq = int(r["lstar_sum"])
        lines.append(f"{b:8.4g} {lm:5d} {int(r['n_grid']):6d} {ls if ls >= 0 else 'none':>6} "
                     f"{lp if lp >= 0 else 'none':>6} {lq if lq >= 0 else 'none':>6} "
                     f"{float(r['floor_ratio']):9.2f} "
                     f"{float(ds['partial_sum_exact'][lm]):14.6g} "
                     f"{float(r['partial_sum_recovered'][lm]):12.4g}  "
                     + (f"FAILED from degree {ls}" if ls >= 0 else f"ok up to lmax = {lm}"))
    lines.append("  l*pred: where eps max|f| / lam_j reaches |m_j|; l*sum: where the round-off bound "
                 "of the quadrature sums does (a lower floor in high d, where the weight "
                 "(1 - s^2)^((d-3)/2) sits near s = 0 and |f| there is far below max|f|); l*meas "
                 "lies near or between them")
    if per_degree == "none":
        return "\n".join(lines)
    for b in ds["beta"].values:
        r = ds.sel(beta=b)
        last = int(r["lmax"])
        if per_degree != "full" and int(r["lstar_predicted"]) >= 0:
            last = min(last, int(r["lstar_predicted"]) + 3)
        lines += ["", f"beta = {b:g}: per degree",
                  f"{'j':>4} {'|m_j| exact':>11} {'|m_j| rec':>11} {'error':>10} {'floor':>10} {'sum floor':>10} "
                  f"{'P_L exact':>11} {'P_L rec':>11} {'log lam_j':>10}"]
        for j in range(last + 1):
            lines.append(f"{j:4d} {float(ds['exact_norm'][j]):11.4e} "
                         f"{float(r['recovered_norm'][j]):11.4e} {float(r['error'][j]):10.3e} "
                         f"{float(r['floor'][j]):10.3e} {float(r['sum_floor'][j]):10.3e} "
                         f"{float(ds['partial_sum_exact'][j]):11.6g} "
                         f"{float(r['partial_sum_recovered'][j]):11.4g} "
                         f"{float(r['log_lambda'][j]):10.3f}")
    return "\n".join(lines)
