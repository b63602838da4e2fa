"""The demo continued in noise towards nu = 0: the stationary states' atoms against the flow's.

    .venv/bin/python benchmarks/noise_to_atoms.py [CONFIG] [--start 1] [--radius 0.15]
        [--segments 1e-2:512,1e-3:1024,1e-4:2048] [--figure output/noise_to_atoms.png]

``CONFIG`` (default ``runs/demo.toml``: S^1, beta = 5, descent, the paper's ReLU perceptron,
shifted kernel) with ``model.noise = --start`` is continued in ``model.noise`` down to the
last segment's ``NU`` (``continue_states``, docs/noise.md §4), segment by segment on finer
grids (``NU:N``: down to ``NU`` on ``N`` points), since a peak of ``rho = M exp(-U/nu)/Z`` is about ``sqrt(nu/|U''|)`` wide.
Descent has one stationary state per ``nu`` (docs/noise.md §1), so one branch. At every
continuation point the density is evaluated on a fine grid (``--fine`` points, from the same
coefficients: ``U`` lies in the kernel's bandwidth, ``exp(-U/nu)`` is evaluated pointwise) and
each local maximum of prominence above ``--prominence`` times the largest value gets the mass
within ``--radius`` rad of it that lies nearer to it than to any other maximum. The deterministic
flow's atoms come from running the config without noise (``simulate``, the default method: a few
seconds for the demo). Prints the table of masses against ``nu`` at the half-decades, the
potential ``U`` at the last state's maxima and at the flow's atoms with the energy ``E`` of both,
and writes the figure (masses against ``nu`` on a log axis, the flow's atoms beside as stars).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.signal import find_peaks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solvers.model.config import load_config  # noqa: E402
from solvers.studies.continuation_run import continue_states  # noqa: E402
from solvers.model.perceptron import potential  # noqa: E402
from solvers.studies.stationary import build_problem  # noqa: E402


def parse_segments(text: str) -> list[tuple[float, int]]:
    """``"1e-2:512,1e-3:2048"`` -> ``[(0.01, 512), (0.001, 2048)]`` (decreasing ``nu``)."""
    out = [(float(a), int(b)) for a, b in (part.split(":") for part in text.split(","))]
    if any(n1 <= n2 for (n1, _), (n2, _) in zip(out, out[1:])):
        raise ValueError(f"--segments: the NU values must decrease (got {text})")
    return out


def continue_down(path: Path, overrides: list[str], segments: list[tuple[float, int]],
                  start: float, at: tuple[float, ...]) -> list[tuple]:
    """``(nu, x, kind, resolution)`` of every point, segment by segment, each from the last
    state of the one before (same basis: the kernel's bandwidth, below every grid's Nyquist)."""
    config = load_config(path, overrides + [f"model.noise={start}"])
    degree = int(build_problem(config, resolution=segments[0][1]).basis.degree.max())
    points, x0, nu0 = [], None, start
    for nu_end, n in segments:
        t0 = time.perf_counter()
        cfg = load_config(path, overrides + [f"model.noise={nu0}"])
        res = continue_states(cfg, "model.noise", nu_end, at=tuple(v for v in at if nu_end < v < nu0),
                              depth=0, max_points=4000, degree=degree, resolution=n, x0=x0)
        recs = [r for r in res.records if r.branch == 0]
        print(f"segment nu {nu0:.1e} -> {nu_end:.1e} on N = {n}: {len(recs)} points, "
              f"{time.perf_counter() - t0:.1f} s; {res.stops[0]}")
        points += [(r.value, r.x, r.kind, n) for r in (recs if not points else recs[1:])]
        if not np.isclose(recs[-1].value, nu_end, rtol=1e-9):
            print(f"  stopped at nu = {recs[-1].value:.3e}")
            break
        x0, nu0 = recs[-1].x, nu_end
    return points


def peaks(theta: np.ndarray, rho: np.ndarray, radius: float, prominence: float) -> list[tuple]:
    """``(angle, mass)`` of each local maximum of the periodic grid density ``rho`` (n,) on the
    uniform angles ``theta`` (n,) with prominence above ``prominence * max``: the mass within
    ``radius`` of it that lies nearer to it than to any other maximum (no mass counted twice)."""
    n, h = rho.size, 2 * np.pi / rho.size
    idx, _ = find_peaks(np.concatenate([rho, rho, rho]), prominence=prominence * rho.max())
    tops = np.array(sorted({int(j) % n for j in idx}), dtype=int)
    if tops.size == 0:
        return []
    d = np.abs((theta[:, None] - theta[tops][None, :] + np.pi) % (2 * np.pi) - np.pi)
    owner = np.argmin(d, axis=1)
    return [(float(theta[i]), float(h * rho[(owner == k) & (d[:, k] <= radius)].sum()))
            for k, i in enumerate(tops)]


def atoms_of_states(path: Path, overrides: list[str], points: list[tuple], degree: int, fine: int,
                    radius: float, prominence: float) -> list[tuple[float, list[tuple]]]:
    """``(nu, peaks)`` of every point, each density evaluated on ``fine`` uniform points."""
    cfg = load_config(path, overrides + [f"model.noise={points[0][0]}"])
    problem = build_problem(cfg, degree=degree, resolution=fine)
    theta = np.arctan2(problem.basis.points[:, 1], problem.basis.points[:, 0]) % (2 * np.pi)
    order = np.argsort(theta)
    out = []
    for nu, x, _, _ in points:
        rho = problem.at("model.noise", nu).density(x)[order]
        out.append((nu, peaks(theta[order], rho, radius, prominence)))
    return out


def flow_atoms(path: Path, overrides: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Masses and angles (rad) of the deterministic flow's atoms (the config without noise)."""
    from solvers.io.state import initial_state
    from solvers.timestepping.loop import simulate

    cfg = load_config(path, overrides + ["model.noise=0", "output.progress=false"])
    rho0, atoms0 = initial_state(cfg)
    diag = simulate(cfg, rho0, atoms0=atoms0).final.diagnostics
    mass, pos = np.asarray(diag.atom_mass, float).ravel(), np.asarray(diag.atom_position, float).ravel()
    keep = np.isfinite(mass)
    return mass[keep], pos[keep] % (2 * np.pi)


def potential_at_atoms(path: Path, overrides: list[str], point: tuple, degree: int, fine: int,
                       peaks_: list[tuple], flow: tuple[np.ndarray, np.ndarray]) -> dict:
    """``U = (1/beta) K*rho + v/2`` at the maxima of the state ``point`` and at the flow's atoms,
    and the energy ``E = (1/2) int (U + v/2) rho`` of both (docs/noise.md §1)."""
    nu, x = point[0], point[1]
    problem = build_problem(load_config(path, overrides + [f"model.noise={nu}"]), degree=degree,
                            resolution=fine)
    theta = np.arctan2(problem.basis.points[:, 1], problem.basis.points[:, 0]) % (2 * np.pi)
    u, rho, half_v = problem.potential(x), problem.density(x), problem.half_v
    at = [int(np.argmin(np.abs((theta - a + np.pi) % (2 * np.pi) - np.pi))) for a, _ in peaks_]
    model = problem.config.model
    mass, pos = flow
    shift = model.beta if model.kernel == "exp_shifted" else 0.0
    pts = np.stack([np.cos(pos), np.sin(pos)], axis=1)
    u_flow = (np.exp(model.beta * (pts @ pts.T) - shift) @ mass) / model.beta \
        + 0.5 * potential(model.perceptron, pts)
    half_v_flow = 0.5 * potential(model.perceptron, pts)
    return {"nu": nu, "u_state": u[at], "u_flow": u_flow,
            "e_state": 0.5 * problem.basis.integrate(rho * (u + half_v)),
            "e_flow": 0.5 * float(mass @ (u_flow + half_v_flow))}


def print_potentials(info: dict) -> None:
    """U at the atoms and E, stationary state against flow."""
    us, uf = info["u_state"], info["u_flow"]
    print(f"U at the maxima, nu = {info['nu']:.1e}: " + " ".join(f"{v:.6f}" for v in us)
          + f"  (spread {us.max() - us.min():.2e} = {(us.max() - us.min()) / info['nu']:.1f} nu)")
    print("U at the flow's atoms:       " + " ".join(f"{v:.6f}" for v in uf)
          + f"  (spread {uf.max() - uf.min():.2e})")
    print(f"energy E: stationary state {info['e_state']:.6f}, flow {info['e_flow']:.6f}")


def print_table(states: list[tuple], flow: tuple[np.ndarray, np.ndarray], every: list[float]) -> None:
    """The peaks (degrees: mass) at the points nearest to the values ``every``."""
    nus = np.array([s[0] for s in states])
    print(f"{'nu':>9}  {'total':>6}  local maxima (angle in degrees: mass within the radius)")
    for v in every:
        nu, pk = states[int(np.argmin(np.abs(np.log(nus / v))))]
        cells = "  ".join(f"{np.degrees(a):5.1f}: {m:.6f}" for a, m in pk)
        print(f"{nu:9.2e}  {sum(m for _, m in pk):6.4f}  {cells}")
    cells = "  ".join(f"{np.degrees(a):5.1f}: {m:.6f}" for m, a in zip(*flow))
    print(f"{'flow':>9}  {flow[0].sum():6.4f}  {cells}")


def nearest_atom(angle: float, flow_pos: np.ndarray, radius: float) -> int:
    """Index of the flow atom within ``2 radius`` of ``angle`` (-1 if none)."""
    d = np.abs((flow_pos - angle + np.pi) % (2 * np.pi) - np.pi)
    return int(np.argmin(d)) if d.min() <= 2 * radius else -1


def draw(states: list[tuple], flow: tuple[np.ndarray, np.ndarray], radius: float, out: Path) -> None:
    """Masses against nu (log), coloured by the nearest flow atom; the flow's atoms at the left."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from solvers.plots.save import save_figure
    from solvers.plots.style import COLORS, CYCLE, figsize, style_context

    nu_min = min(s[0] for s in states)
    flow_x = nu_min / 4

    def write(tmp: Path) -> None:
        with style_context("screen"):
            fig = Figure(figsize=figsize("screen", 0.5))
            FigureCanvasAgg(fig)
            ax = fig.subplots()
            for k, (m, a) in enumerate(zip(*flow)):
                colour = COLORS[CYCLE[k % len(CYCLE)]]
                pts = [(nu, mass) for nu, pk in states for ang, mass in pk
                       if nearest_atom(ang, flow[1], radius) == k]
                if pts:
                    ax.plot(*zip(*pts), ".", ms=3, color=colour)
                ax.plot([flow_x * 1.3 ** (k % 2)], [m], "*", ms=10, color=colour,
                        label=f"flow atom {np.degrees(a):.1f} deg: {m:.4f}")
            other = [(nu, mass) for nu, pk in states for ang, mass in pk
                     if nearest_atom(ang, flow[1], radius) < 0]
            if other:
                ax.plot(*zip(*other), "x", ms=3, color="grey", label="other maxima")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(r"noise $\nu$ (stars: the flow without noise)")
            ax.set_ylabel(f"mass within {radius:g} rad of a maximum")
            ax.legend(fontsize="small", loc="lower right")
            ax.set_title("demo (S^1 descent, beta = 5, ReLU perceptron): stationary states "
                         "continued in noise", fontsize="medium")
            fig.tight_layout()
            fig.savefig(tmp)
    save_figure(out, write, option="--figure")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config", nargs="?", type=Path, default=ROOT / "runs" / "demo.toml")
    ap.add_argument("--start", type=float, default=1.0, help="first noise value (1)")
    ap.add_argument("--segments", default="1e-2:512,1e-3:1024,1e-4:2048",
                    help="NU:N,... the grid N down to NU (default 1e-2:512,1e-3:1024,1e-4:2048)")
    ap.add_argument("--radius", type=float, default=0.15, help="window radius in rad (0.15)")
    ap.add_argument("--prominence", type=float, default=1e-3,
                    help="smallest prominence of a maximum, times the largest value (1e-3)")
    ap.add_argument("--fine", type=int, default=1 << 16, help="evaluation grid (65536)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    ap.add_argument("--figure", default="output/noise_to_atoms.png", help="figure ('' for none)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    segments = parse_segments(args.segments)
    every = [v for v in 10.0 ** np.arange(0, -12.01, -0.5) if segments[-1][0] <= v <= args.start]
    points = continue_down(args.config, args.set, segments, args.start, tuple(every))
    degree = int(points[0][1].size // 2)  # the basis 1, cos k, sin k (k <= degree)
    states = atoms_of_states(args.config, args.set, points, degree, args.fine, args.radius,
                             args.prominence)
    flow = flow_atoms(args.config, args.set)
    print_table(states, flow, every)
    print_potentials(potential_at_atoms(args.config, args.set, points[-1], degree, args.fine,
                                        states[-1][1], flow))
    if args.figure:
        draw(states, flow, args.radius, Path(args.figure))
        print(f"wrote {args.figure}")
    print(f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
