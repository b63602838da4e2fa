"""Lemma 5.1 checker: invert ``f = K * mu`` spectrally, and show where floating point stops it.

Paper Lemma 5.1 (docs/math.md sections 2 and 4): ``mu -> f(x) = int exp(beta x.y) dmu(y)`` is
injective because every Funk-Hecke eigenvalue ``lambda_l(beta)`` is positive, ``f_l = lambda_l m_l``
degree by degree; ``mu`` has an L^2 density iff ``sum_l |f_l / lambda_l|^2 < inf``; ``f`` is even
iff ``mu`` is symmetric. In floating point the recovered ``m_l = f_l / lambda_l`` carries the
round-off of ``f_l`` (about ``eps max|f|``) amplified by ``1 / lambda_l`` (docs/math.md §4).

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

Modules
-------
- :mod:`solvers.studies.lemma51_measures`: test measures, ``int rho^2``, scaled eigenvalues, samples of
  ``f``, exact coefficients, degree norms.
- :mod:`solvers.studies.lemma51_inversion`: grids, inversion, floors, ``l*``, parity, injectivity, and the
  S^1 precision study (mpmath).
- :mod:`solvers.plots.lemma51`: the figure.
- here: the dataset (:func:`lemma51_dataset`, :func:`run_lemma51`), the stdout report and the
  ``meanfield lemma51`` command; the names above are re-exported from this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from solvers.io.cf import describe
from solvers.studies.lemma51_inversion import (
    ALIAS_TOL,
    AUTO_LMAX_MARGIN,
    GUARD_DIGITS,
    _check_betas,
    _pad,
    auto_lmax,
    grid_size,
    invert,
    measured_breakdown,
    precision_study,
    predicted_breakdown,
)
from solvers.studies.lemma51_measures import (
    EPS,
    MEASURES,
    Measure,
    as_manifold,
    degree_norms,
    density_l2,
    exact_coefficients,
    make_measure,
    potential,
    scaled_eigenvalues,
    snapshot_measure,
)

if TYPE_CHECKING:  # xarray is imported where datasets are built (keeps `meanfield --help` fast)
    import xarray as xr

__all__ = [
    "ALIAS_TOL", "AUTO_LMAX_MARGIN", "EPS", "GUARD_DIGITS", "MEASURES",
    "Measure", "as_manifold", "auto_lmax", "degree_norms",
    "density_l2", "exact_coefficients", "format_report", "grid_size", "invert", "lemma51_dataset",
    "make_measure", "measured_breakdown", "potential", "precision_study", "predicted_breakdown",
    "run_lemma51", "scaled_eigenvalues", "snapshot_measure",
]


# =========================================================================== dataset

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
    c = measure.manifold.parseval_factor
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
    describe(ds, "meanfield-spectral Lemma 5.1 report: spectral inversion of f = K*mu")
    return ds


def _attributes(measure: Measure, perturbation: float) -> dict[str, Any]:
    manifold = measure.manifold
    return {
        "title": "Lemma 5.1 check: spectral inversion of f = K * mu (docs/math.md §2, 4)",
        "sphere": measure.sphere, "measure": measure.kind, "measure_label": measure.label,
        "kappa": measure.kappa, "mass": measure.mass, "density_l2": density_l2(measure),
        "eps": EPS, "perturbation": perturbation,
        "perturbation_atom": str(manifold.check_atom),
        "coefficients": manifold.coefficient_convention,
        "kernel_scaling": "f and lambda for exp(beta (x.y - 1)) = exp(-beta) K; m = f / lambda",
        "partial_sums": manifold.partial_sum_convention,
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
    """Full report: :func:`lemma51_dataset`, plus :func:`precision_study` when ``digits`` (on a
    manifold with a ``precision_study``: S^1)."""
    ds = lemma51_dataset(measure, betas, lmax, n, perturbation)
    if digits:
        study = precision_study(measure, betas, digits, lmax, n)
        import xarray as xr

        ds = describe(xr.merge([ds, study], join="outer", combine_attrs="override"),
                      "meanfield-spectral Lemma 5.1 report: spectral inversion of f = K*mu")
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
              f"{'err/floor':>9} {'odd(f)':>9} {'P(l*-1)':>12} {'P(lmax) rec':>12} {'inj.vis':>7}"
              "  inversion")
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
                     f"{int(r['injectivity_visible']):7d}  "
                     + (f"FAILED from degree {ls}" if ls >= 0 else f"ok up to lmax = {lm}"))
    lines += ["  l*meas: first degree where the inversion fails (error > |m_l| / 2; none: it "
              "never does up to lmax); P(l*-1): the exact partial sum before it; P(lmax) rec: the "
              "partial sum of the recovered coefficients up to lmax (int rho^2 when the inversion "
              "holds); inj.vis: the largest degree at which mu and a nearby measure (mu mixed with "
              "a point mass) still differ in f above round-off (-1: none)"]
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
