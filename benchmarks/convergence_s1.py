"""Grid convergence of the S^1 schemes at a fixed time before concentration.

Run: ``.venv/bin/python benchmarks/convergence_s1.py``

Both schemes start from the same smooth density and run to ``T``; the error is the L1 distance
of cell averages to a reference (spectral, N_ref = 2048, RK4 with a small step) for the smooth
case, and the Wasserstein-1 distance (L1 of the cumulative distributions) to fv at N = 8192 for
the ReLU case. Observed orders are
``log2(e_N / e_2N)``. (The cell-centred grids are not nested, so the reference's coarse-cell
averages are computed from its Fourier series.) Two setups: a smooth (GeLU) perceptron, where the spectral scheme should
converge exponentially and fv at second order, and the paper's ReLU perceptron, whose
velocity has kinks (the density develops kinks too: both schemes drop in order).

The fv runs use uniform faces (``time.kink_faces = false``): this is the study of the uniform
scheme's order. With the default kink faces (docs/methods.md §6.2) the ReLU W1 errors at t = 2 are
7.2e-4, 2.4e-4, 4.8e-5, 2.7e-5 at N = 128 ... 1024 (uniform: 7.5e-4, 2.1e-4, 5.0e-5, 1.6e-5;
both against their own N = 8192 reference, the kink-face CDF on the moved faces): no longer a
clean second order, the price of the cells of width ``h +- delta`` next to the corners.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.model.config import load_config  # noqa: E402
from solvers.model.params import RunConfig  # noqa: E402
from solvers.timestepping.loop import simulate  # noqa: E402

RUN = ROOT / "runs" / "paper_s1_descent.toml"  # beta = 5, the paper's two units, exp_shifted
N_REF = 2048


def config(activation: str, n: int, scheme: str, t_end: float) -> RunConfig:
    """``RUN`` with ``activation`` at ``n`` cells, one snapshot at ``t_end``, no stationary stop;
    spectral at dt = 2e-3, fv with uniform faces (cfl 0.2 both)."""
    sets = [f"domain.resolution={n}", f'perceptron.activation="{activation}"', f'time.scheme="{scheme}"',
            f"time.t_end={t_end}", "time.cfl=0.2", "time.stop_when_stationary=false",
            f"output.snapshot_interval={t_end}", "output.progress=false"]
    return load_config(RUN, sets + (["time.dt=2e-3"] if scheme == "spectral" else ["time.kink_faces=false"]))


def initial(n: int) -> np.ndarray:
    """Exact cell averages of (1 + 0.5 cos(t - 1) + 0.3 cos(3 t)) / (2 pi)."""
    theta = 2 * np.pi * np.arange(n) / n
    sinc = lambda k: np.sinc(k / n)  # noqa: E731  (cell average of cos(k t): factor sin(k h/2)/(k h/2))
    return (1 + 0.5 * sinc(1) * np.cos(theta - 1) + 0.3 * sinc(3) * np.cos(3 * theta)) / (2 * np.pi)


def cell_averages(rho: np.ndarray, scheme: str) -> np.ndarray:
    """The spectral scheme holds point values: convert to cell averages (mode k times sinc)."""
    if scheme == "fv":
        return rho
    n = rho.size
    return np.fft.irfft(np.fft.rfft(rho) * np.sinc(np.arange(n // 2 + 1) / n), n=n)


def solve(activation: str, n: int, scheme: str, t_end: float) -> np.ndarray:
    result = simulate(config(activation, n, scheme, t_end), initial(n))
    return cell_averages(result.final.rho, scheme)


def restrict(ref_points: np.ndarray, n: int) -> np.ndarray:
    """Exact averages of the band-limited reference over the coarse cells (grids are not nested).

    ``avg_i = sum_k c_k sinc(k H / 2) e^{i k theta_i}``, H = 2 pi / n, over all reference modes.
    """
    m = ref_points.size
    c = np.fft.rfft(ref_points) / m
    k = np.arange(c.size)
    weight = np.where((k == 0) | (k == m // 2), 1.0, 2.0) * np.sinc(k / n)
    theta = 2 * np.pi * np.arange(n) / n
    return np.real(np.exp(1j * np.outer(theta, k)) @ (weight * c))


def cdf(rho_avg: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``F(x) = int_0^x rho`` of the piecewise-constant density with cell averages ``rho_avg``."""
    n = rho_avg.size
    h = 2 * np.pi / n
    m = rho_avg * h
    faces = (np.arange(n) + 0.5) * h
    xp = np.concatenate([[0.0], faces, [2 * np.pi]])
    fp = np.concatenate([[0.0], np.cumsum(m) - 0.5 * m[0], [m.sum()]])
    return np.interp(x, xp, fp)


def w1(rho_a: np.ndarray, rho_b: np.ndarray, samples: int = 1 << 16) -> float:
    """Wasserstein-1 distance on the circle: ``min_c int |F_a - F_b - c|`` (c = the median)."""
    x = (np.arange(samples) + 0.5) * 2 * np.pi / samples
    d = cdf(rho_a, x) - cdf(rho_b, x)
    return float(np.mean(np.abs(d - np.median(d))) * 2 * np.pi)


def table(activation: str, t_end: float, sizes: list[int]) -> dict[str, list[float]]:
    """Errors per scheme and N against the reference.

    Smooth case (gelu): L1 of cell averages against spectral N_REF. Kinked case (relu): W1 against
    fv at 4 N_REF (the spectral reference is not converged there).
    """
    errors: dict[str, list[float]] = {}
    if activation == "gelu":
        ref = simulate(config(activation, N_REF, "spectral", t_end), initial(N_REF)).final.rho
        dist = lambda rho, n: float(np.sum(np.abs(rho - restrict(ref, n))) * 2 * np.pi / n)  # noqa: E731
    else:
        ref = solve(activation, 4 * N_REF, "fv", t_end)
        dist = lambda rho, n: w1(rho, ref)  # noqa: E731
    for scheme in ("fv", "spectral"):
        errors[scheme] = [dist(solve(activation, n, scheme, t_end), n) for n in sizes]
    return errors


def main() -> None:
    sizes = [64, 128, 256, 512, 1024]
    for activation, t_end in (("gelu", 2.0), ("relu", 2.0)):
        errors = table(activation, t_end, sizes)
        what = (f"L1 error of cell averages vs spectral N = {N_REF}" if activation == "gelu"
                else f"W1 distance to fv N = {4 * N_REF}")
        print(f"\n# {activation} perceptron, beta = 5 descent (exp_shifted), T = {t_end}; {what}")
        print(f"{'N':>6} {'fv error':>10} {'order':>6} {'spectral error':>15} {'order':>6}")
        for i, n in enumerate(sizes):
            orders = ["" if i == 0 else f"{np.log2(errors[s][i - 1] / errors[s][i]):.2f}" for s in ("fv", "spectral")]
            print(f"{n:>6} {errors['fv'][i]:10.3e} {orders[0]:>6} {errors['spectral'][i]:15.3e} {orders[1]:>6}")


if __name__ == "__main__":
    main()
