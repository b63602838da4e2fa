"""The (beta, nu) phase diagram of pure attention on S^1 (kernel exp, ascent, M = 1), by continuation.

    .venv/bin/python benchmarks/phase_diagram.py [--betas 0.5:5:0.1] [--resolution 64]
                                                 [--figure output/phase_diagram.png]

For each beta, ``continue_states`` follows the uniform state in ``model.noise`` from
``1.3 nu_1`` to ``0.7 nu_1`` and the branch that leaves it at the first branch point
``nu_1 = M I_1(beta)/beta`` (docs/noise.md §2). The branch's side of ``nu_1`` gives the type of
the transition: below (supercritical: continuous) or above with a fold ``nu_f > nu_1``
(subcritical: discontinuous, docs/noise.md §3). The branch's curvature at the branch point,
``a_2 = lim (nu/nu_1 - 1) / r_1^2`` (``r_1 = |rho_hat_1|/rho_hat_0``), fitted on its first
points, is printed beside the third-order coefficient ``c_3 = (2 k - 1) / (2 (1 - k))``,
``k = I_2/I_1`` of the expansion; the computed boundary ``beta_c`` is the zero of ``a_2(beta)``
(Brent), against ``I_2(beta_c)/I_1(beta_c) = 1/2`` derived. Prints the table and writes the
figure: ``nu_1(beta)`` (continuous part solid, discontinuous part dashed), the fold curve
``nu_f(beta)``, both boundaries.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.special import iv

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.model.config import load_config  # noqa: E402
from solvers.studies.continuation import Steps  # noqa: E402
from solvers.studies.continuation_run import continue_states  # noqa: E402

STEPS = Steps(ds=0.005)  # small first steps: several points with r_1 < 0.03 for the fit
FIT_RADIUS = 0.03  # points of the new branch with r_1 below this enter the fit of a_2


def nu1_of(beta: float) -> float:
    """The first branch point ``M I_1(beta)/beta`` (M = 1; scipy's Bessel function)."""
    return float(iv(1, beta) / beta)


def c3_of(beta: float) -> float:
    """Third-order coefficient of the expansion (docs/noise.md §3): ``nu/nu_1 - 1 = c_3 r_1^2``."""
    k = iv(2, beta) / iv(1, beta)
    return float((2 * k - 1) / (2 * (1 - k)))


def beta_c_derived() -> float:
    """``I_2(beta)/I_1(beta) = 1/2``."""
    return float(brentq(lambda b: iv(2, b) / iv(1, b) - 0.5, 1.0, 4.0, xtol=1e-14))


def first_branch(beta: float, resolution: int) -> dict:
    """Continue through ``nu_1`` and describe the new branch: the side it leaves on, ``a_2``,
    the fold (NaN without one) and the stability of the states below ``nu_1``."""
    nu1 = nu1_of(beta)
    cfg = load_config(f'[domain]\nmanifold = "S1"\nresolution = {resolution}\n[model]\n'
                      f'beta = {beta}\ndirection = "ascent"\nkernel = "exp"\nnoise = {1.3 * nu1}\n')
    result = continue_states(cfg, "model.noise", 0.7 * nu1, depth=1, max_branches=2, steps=STEPS)
    bps = [r.value for r in result.records if r.kind == "branch_point" and r.branch == 0]
    new = [r for r in result.records if r.branch == 1 and r.kind != "branch_point"]
    r1 = np.array([result.problem.moments(r.x, 1)[0] for r in new])
    rel = np.array([r.value / nu1 - 1 for r in new])
    near = r1 < FIT_RADIUS
    if near.sum() < 3:
        raise RuntimeError(f"beta = {beta}: fewer than 3 points with r_1 < {FIT_RADIUS}")
    # (nu/nu_1 - 1)/r_1^2 = a_2 + a_4 r_1^2 + a_6 r_1^4
    coef = np.polyfit(r1[near] ** 2, rel[near] / r1[near] ** 2, min(2, int(near.sum()) - 1))
    folds = [r.value for r in result.records if r.branch == 1 and r.kind == "fold"]
    return {"beta": beta, "nu1": nu1, "nu1_computed": bps[0] if bps else np.nan,
            "side": "above" if rel[0] > 0 else "below", "a2": float(coef[-1]),
            "c3": c3_of(beta), "fold": max(folds) if folds else np.nan}


def parse_betas(text: str) -> np.ndarray:
    lo, hi, step = (float(v) for v in text.split(":"))
    return np.round(np.arange(lo, hi + step / 2, step), 10)


def computed_boundary(rows: list[dict], resolution: int) -> float:
    """The zero of ``a_2(beta)`` between the two grid betas where its sign changes."""
    a2 = np.array([r["a2"] for r in rows])
    idx = np.nonzero(np.sign(a2[:-1]) != np.sign(a2[1:]))[0]
    if idx.size == 0:
        return float("nan")
    lo, hi = rows[idx[0]]["beta"], rows[idx[0] + 1]["beta"]
    return float(brentq(lambda b: first_branch(b, resolution)["a2"], lo, hi, xtol=1e-9))


def print_table(rows: list[dict]) -> None:
    print(f"{'beta':>6} {'nu_1 = I1/beta':>16} {'computed':>16} {'I2/I1':>7} {'side':>6} "
          f"{'a_2 computed':>13} {'c_3 derived':>12} {'nu_fold':>10} {'nu_f/nu_1':>9}  transition")
    for r in rows:
        kind = "continuous" if r["side"] == "below" else "discontinuous"
        print(f"{r['beta']:6.2f} {r['nu1']:16.12f} {r['nu1_computed']:16.12f} "
              f"{iv(2, r['beta']) / iv(1, r['beta']):7.4f} {r['side']:>6} {r['a2']:13.6e} "
              f"{r['c3']:12.6e} {r['fold']:10.6f} {r['fold'] / r['nu1']:9.6f}  {kind}")


def draw(rows: list[dict], beta_c: float, beta_comp: float, out: Path) -> None:
    """nu_1(beta) and the fold curve; the boundaries as vertical lines."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from solvers.plots.save import save_figure
    from solvers.plots.style import COLORS, figsize, style_context

    b = np.array([r["beta"] for r in rows])
    fine = np.linspace(b.min(), b.max(), 400)
    cont = fine <= beta_c
    nu_f = np.array([r["fold"] for r in rows])
    a2, c3 = np.array([r["a2"] for r in rows]), np.array([r["c3"] for r in rows])

    def write(tmp: Path) -> None:
        with style_context("screen"):
            fig = Figure(figsize=figsize("screen", 0.42))
            FigureCanvasAgg(fig)
            left, right = fig.subplots(1, 2)
            nu1 = np.array([nu1_of(x) for x in fine])
            left.plot(fine[cont], nu1[cont], "-", color=COLORS["blue"],
                      label=r"$\nu_1 = I_1(\beta)/\beta$: continuous")
            left.plot(fine[~cont], nu1[~cont], "--", color=COLORS["vermillion"],
                      label=r"$\nu_1$: discontinuous (uniform still stable above)")
            left.plot(b, [r["nu1_computed"] for r in rows], ".", color="black", ms=3,
                      label=r"branch points (continue)")
            left.plot(b[np.isfinite(nu_f)], nu_f[np.isfinite(nu_f)], "^-", color=COLORS["orange"],
                      ms=3, lw=1, label=r"fold $\nu_f$ (continue)")
            left.axvline(beta_c, color="grey", lw=0.8, ls=":")
            left.set_xlabel(r"$\beta$")
            left.set_ylabel(r"noise $\nu$")
            left.set_title(rf"$\beta_c$ derived {beta_c:.6f}, computed {beta_comp:.6f}",
                           fontsize="medium")
            left.legend(fontsize="small")
            right.plot(b, a2, "o", ms=3, color="black", label=r"$a_2$ (continue)")
            right.plot(b, c3, "-", color=COLORS["blue"], label=r"$c_3 = (2k-1)/(2(1-k))$")
            right.axhline(0, color="grey", lw=0.6)
            right.axvline(beta_c, color="grey", lw=0.8, ls=":")
            right.set_xlabel(r"$\beta$")
            right.set_ylabel(r"$(\nu/\nu_1 - 1)/r_1^2$ at the branch point")
            right.legend(fontsize="small")
            fig.suptitle("S^1 pure attention, ascent, kernel exp, M = 1: the first transition",
                         fontsize="medium")
            fig.tight_layout()
            fig.savefig(tmp)
    save_figure(out, write, option="--figure")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--betas", default="0.5:5:0.1", help="LO:HI:STEP (default 0.5:5:0.1)")
    ap.add_argument("--resolution", type=int, default=64, help="grid points (64)")
    ap.add_argument("--figure", default="output/phase_diagram.png", help="figure path ('' for none)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    rows = [first_branch(float(b), args.resolution) for b in parse_betas(args.betas)]
    print_table(rows)
    derived, computed = beta_c_derived(), computed_boundary(rows, args.resolution)
    print(f"beta_c: derived {derived:.9f} (I_2/I_1 = 1/2), computed {computed:.9f} (a_2 = 0); "
          f"difference {computed - derived:.2e}")
    err = max(abs(r["nu1_computed"] / r["nu1"] - 1) for r in rows)
    gap = max(abs(r["a2"] - r["c3"]) for r in rows)
    print(f"a_2 (continue) against c_3 (expansion): largest difference {gap:.1e}")
    print(f"branch points against I_1(beta)/beta: largest relative difference {err:.1e}")
    if args.figure:
        draw(rows, derived, computed, Path(args.figure))
        print(f"wrote {args.figure}")
    print(f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
