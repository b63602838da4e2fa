"""Refinement ladders: ``meanfield converge CONFIG --resolutions 64,128,256 [--dts ...]``.

The space ladder runs the config at each ``domain.resolution`` with its own time settings
(adaptive, or ``--set time.dt=...``); the time ladder runs it at the finest resolution with each
fixed ``time.dt``. All runs go to ``T`` (``stop_when_stationary = false``, one snapshot at T).
Errors are against the finest run of the ladder (docs/math.md §3.4: never the sup norm):

- S^1: Wasserstein-1, ``min_c int |F_a - F_b - c|``, CDFs sampled at common points (the grids
  ``theta_i = 2 pi i / N`` are not nested). fv cell averages: CDF piecewise linear through the
  exact face values. Spectral point values: the trigonometric polynomial integrated mode by mode
  (at the faces: the cell averages, mode k times ``sinc(k/N)``), keeping spectral accuracy.
- S^2: ``||mu - nu||_K = sqrt(sum_l lambda_l sum_m |mu_lm - nu_lm|^2)`` (docs/math.md §2, the run's
  kernel convention) from the moments ``SphereBasis(lmax).forward(rho)`` of each grid measure
  (cell mass at the cell centre, area = quadrature weight), ``l <= min(lmax_a, lmax_b, j*)``.
- ``|E - E_ref|`` and the atom masses, matched to the reference atoms by position.

Orders: ``log(e_k / e_{k+1}) / log(r)``. Against the finest run the last pair over-estimates an
order p by ``log_r(1 + r^-p)`` (0.32 for p = 2, r = 2); column ``succ`` uses the successive
distances ``d(u_k, u_{k+1})``, unbiased for a clean power law.

Honesty (:mod:`solvers.studies.orders`): the design order comes from the scheme and the data
(a ReLU perceptron or a concentrated density is never "exponential"); orders are flagged ``E``
(erratic) and ``P`` (pre-asymptotic), on the successive orders only (against the finest run
the last order is biased); atom masses are compared between successive runs, atoms matched by
position, and flagged ``D`` (detector) where the mass change ``dm`` times the grouping radius
exceeds the W1 distance of the two runs: mass ``dm`` that lay farther than the radius from the
atom in one run would cost at least ``dm * radius`` in W1, so such a change is mass inside the
atom's neighbourhood that the detector's threshold counts in one run and not in the other, not
a discretisation error of the measure. Richardson estimates of
the limit (energy, atom masses) and of the finest run's error are given where the finest three
levels are in the asymptotic range (NaN elsewhere).
"""

from __future__ import annotations

import math
import time as wallclock
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from solvers.model.kernel import kernel_log_shift
from solvers.core.measure import dirac_of
from solvers.io.state import initial_density
from solvers.model.config import ConfigError, check_resolution, load_config
from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.studies.orders import (
    ORDER_TOL,
    DesignOrder,
    design_order,
    in_asymptotic_range,
    is_concentrated,
    order_flags,
    richardson,
    tail_error,
)
from solvers.timestepping.integrators import get_integrator
from solvers.timestepping.loop import simulate
from solvers.timestepping.manifolds import manifold_of
from solvers.studies.distances import (  # noqa: F401  (re-exported: cv.s1_cdf, ...)
    kernel_distance_s2,
    s1_cdf,
    sphere_moments,
    w1_s1,
)

TWO_PI = 2.0 * np.pi
DEFAULT_INTEGRATOR = {"fv": "ssprk10_2", "spectral": "rk4", "lagrangian": "rk4", "auto": "dopri5"}  # docs/methods.md
DETECTOR_FACTOR = 1.0  # flag D: dm * radius > DETECTOR_FACTOR * W1 (module docstring)
# reference slopes drawn on the space panel (the cells: second order, as the fv grid)
SPACE_SLOPES = {"fv": (1, 2), "spectral": (2, 4), "lagrangian": (1, 2), "auto": (1, 2)}


def match_atoms(ref_mass: np.ndarray, ref_pos: np.ndarray, mass: np.ndarray, pos: np.ndarray,
                radius: float) -> tuple[np.ndarray, float]:
    """Masses of the atoms nearest to each reference atom (0 if none within ``radius``), and the
    largest mass difference (unmatched atoms count in full; NaN when neither has atoms).
    Positions: S^1 angles (n,), S^2 unit vectors (n, 3)."""
    matched, used = np.zeros(ref_mass.size), np.zeros(mass.size, dtype=bool)
    if ref_mass.size == 0 and mass.size == 0:
        return matched, float("nan")
    for i in np.argsort(-ref_mass):
        if mass.size == 0:
            break
        if np.ndim(pos) == 1:
            gap = np.abs(np.angle(np.exp(1j * (pos - ref_pos[i]))))
        else:
            gap = np.arccos(np.clip(pos @ ref_pos[i], -1.0, 1.0))
        gap[used] = np.inf
        j = int(np.argmin(gap))
        if gap[j] <= radius:
            matched[i], used[j] = mass[j], True
    errors = np.concatenate([np.abs(matched - ref_mass), mass[~used]])
    return matched, float(errors.max(initial=0.0))


def observed_orders(errors: Sequence[float], ratio: float) -> np.ndarray:
    """``log(e_{k-1} / e_k) / log(ratio)`` at index k (NaN where undefined)."""
    e = np.asarray(errors, dtype=float)
    out = np.full(e.shape, np.nan)
    with np.errstate(all="ignore"):
        r = np.log(e[:-1] / e[1:]) / math.log(ratio)
    ok = np.isfinite(r) & (e[:-1] > 0) & (e[1:] > 0)
    out[1:][ok] = r[ok]
    return out


def parse_ladder(text: str | Sequence[float], option: str, integer: bool, offset: int = 0) -> list[float]:
    """Values of ``--resolutions`` / ``--dts`` (text or sequence), coarse to fine, checked for a
    constant factor of ``value + offset`` (S^2: ``offset = 1``, the grid has lmax + 1 latitudes:
    ``31,63,127``, not ``64,128,256``)."""
    example = ("31,63,127" if offset else "64,128,256") if integer else "0.02,0.01,0.005"
    items = text.split(",") if isinstance(text, str) else list(text)
    try:
        values = [(int if integer else float)(v) for v in items if str(v).strip()]
    except ValueError:
        raise ConfigError(option, f"expected comma-separated {'integers' if integer else 'numbers'}"
                          f", e.g. {option} {example} (got {text!r})") from None
    if len(values) < 3:
        raise ConfigError(option, f"needs at least 3 values (errors are against the finest, an "
                          f"order needs two errors), e.g. {option} {example} (got {text!r})")
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise ConfigError(option, f"values must be positive, e.g. {option} {example} (got {text!r})")
    values = sorted(values, reverse=not integer)
    ratios = [(a + offset) / (b + offset) if not integer else (b + offset) / (a + offset)
              for a, b in pairwise(values)]
    if min(ratios) <= 1.0 or max(ratios) > min(ratios) * (1 + 1e-9):
        what = f"resolution + {offset} (the grid's latitudes)" if offset else "the values"
        raise ConfigError(option, f"{what} must refine by a constant factor > 1 (got ratios "
                          f"{', '.join(f'{r:.4g}' for r in ratios)}), e.g. {option} {example}")
    return values


@dataclass(frozen=True)
class Run:
    """One finished run of a ladder: its config, final state and diagnostics."""

    value: float
    config: RunConfig
    rho: np.ndarray
    diagnostics: Any
    steps: int
    wall: float

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(masses, positions)`` of the final state's Dirac atoms (measure-valued runs), or None."""
        if plan_method(self.config).representation != "dirac":
            return None
        atoms = dirac_of(self.diagnostics)
        return atoms.mass, atoms.position


@dataclass(frozen=True)
class Ladder:
    """A refinement ladder, coarse to fine; the last run is the reference."""

    name: str  # "space" or "time"
    dim: str  # "resolution" or "dt"
    runs: tuple[Run, ...]
    offset: int = 0  # S^2 space ladder: the factor is that of lmax + 1

    @property
    def values(self) -> np.ndarray:
        return np.array([r.value for r in self.runs])

    @property
    def ratio(self) -> float:
        return float(np.exp(abs(np.log((self.values[1] + self.offset) / (self.values[0] + self.offset)))))

    @property
    def design_order(self) -> int | None:
        """The scheme's order on smooth data: 2 for fv in space, None (exponential) for
        spectral in space, else the integrator's. See :attr:`design` for this ladder's data."""
        tp = self.runs[-1].config.time
        if self.dim == "resolution":
            return 2 if tp.scheme == "fv" else None
        return get_integrator(tp.integrator or DEFAULT_INTEGRATOR[tp.scheme]).order

    @property
    def design(self) -> DesignOrder:
        """The order this ladder should show: the scheme's, unless the perceptron is ReLU or
        the density concentrated (:func:`solvers.studies.orders.design_order`)."""
        cfg = self.runs[-1].config
        tp = cfg.time
        integ = get_integrator(tp.integrator or DEFAULT_INTEGRATOR[tp.scheme]).order
        finest = self.runs[-1].diagnostics
        return design_order(self.dim == "resolution", tp.scheme, integ,
                            cfg.model.perceptron.activation,
                            is_concentrated(finest.n_atoms, finest.tail_energy))

    @property
    def radius(self) -> float:
        """The atom grouping radius of the reference run (docs/math.md §5)."""
        cfg = self.runs[-1].config
        return cfg.atoms.radius or manifold_of(cfg).atom_radius(cfg.model.beta)

    @property
    def slopes(self) -> tuple[int, ...]:
        """Reference slopes of the plot."""
        scheme = self.runs[-1].config.time.scheme
        return SPACE_SLOPES[scheme] if self.dim == "resolution" else (self.design_order,)

    def distance(self, a: Run, b: Run) -> float:
        """W1 (on an ordered manifold: S^1) or the kernel norm (S^2) between two runs' final
        states."""
        cfg = b.config
        if manifold_of(cfg).ordered:
            return w1_s1(a.rho, b.rho, cfg.time.scheme, a.atoms, b.atoms)
        return kernel_distance_s2(a.rho, a.config.domain.resolution, b.rho, cfg.domain.resolution,
                                  cfg.model.beta, kernel_log_shift(cfg.model), a.atoms, b.atoms)

    def metric(self) -> str:
        return "W1" if manifold_of(self.runs[-1].config).ordered else "kernel_norm"

    def table(self, tol: float = ORDER_TOL) -> dict[str, np.ndarray]:
        """Errors against the reference, successive distances, energies, atoms, orders, their
        flags (``tol``: :func:`solvers.studies.orders.order_flags`) and Richardson estimates."""
        ref, n = self.runs[-1], len(self.runs)
        out: dict[str, Any] = {"distance": np.full(n, np.nan), "successive": np.full(n, np.nan)}
        for k, run in enumerate(self.runs[:-1]):
            out["distance"][k] = self.distance(run, ref)
            out["successive"][k] = self.distance(run, self.runs[k + 1])
        out["energy"] = np.array([r.diagnostics.energy for r in self.runs])
        out["energy_error"] = np.abs(out["energy"] - out["energy"][-1])
        out["energy_error"][-1] = np.nan
        out["energy_change"] = np.append(np.abs(np.diff(out["energy"])), np.nan)
        out.update(self._atoms())
        for key, src in (("order", "distance"), ("successive_order", "successive"),
                         ("energy_order", "energy_error"), ("energy_change_order", "energy_change"),
                         ("atom_mass_change_order", "atom_mass_change")):
            out[key] = observed_orders(out[src], self.ratio)
            if key not in ("order", "energy_order"):  # against the finest: biased (docstring)
                out[f"{key}_flag"] = np.array(order_flags(out[key], self.design, tol), dtype="U2")
        out["atom_mass_change_detector"] = self._detector_flags(out)
        out.update(self._richardson(out, tol))
        out.update(steps=np.array([r.steps for r in self.runs]),
                   wall_time=np.array([r.wall for r in self.runs]))
        return out

    def _atoms(self) -> dict[str, np.ndarray]:
        """Atoms matched to the reference's, and to the next run's (``atom_mass_change[k]``:
        largest mass difference of runs k and k + 1, matched by position)."""
        ref, radius = self.runs[-1].diagnostics, self.radius
        pairs = [match_atoms(ref.atom_mass, ref.atom_position, r.diagnostics.atom_mass,
                             r.diagnostics.atom_position, radius) for r in self.runs]
        masses, errors = [p[0] for p in pairs], [p[1] for p in pairs[:-1]] + [np.nan]
        change = [match_atoms(b.atom_mass, b.atom_position, a.atom_mass, a.atom_position,
                              radius)[1] for a, b in pairwise(r.diagnostics for r in self.runs)]
        return {"n_atoms": np.array([r.diagnostics.n_atoms for r in self.runs]),
                "atom_mass": np.array(masses).reshape(len(self.runs), ref.atom_mass.size),
                "atom_mass_error": np.array(errors),
                "atom_mass_change": np.array(change + [np.nan])}

    def _detector_flags(self, out: dict[str, np.ndarray]) -> np.ndarray:
        """``D`` where ``dm * radius > DETECTOR_FACTOR * W1`` of the same pair (S^1 only)."""
        dm, w1 = out["atom_mass_change"], out["successive"]
        with np.errstate(invalid="ignore"):
            hit = (dm * self.radius > DETECTOR_FACTOR * w1) & (dm > 0)
        hit &= self.metric() == "W1"
        return np.where(hit, "D", "").astype("U2")

    def _richardson(self, out: dict[str, np.ndarray], tol: float) -> dict[str, Any]:
        """Richardson limits and finest-run errors where the finest three levels are in the
        asymptotic range (NaN elsewhere; module docstring of :mod:`solvers.studies.orders`)."""
        design, nan = self.design, float("nan")
        res: dict[str, Any] = {}
        w1_ok = in_asymptotic_range(out["successive_order"], out["successive_order_flag"], design, tol)
        last = np.flatnonzero(np.isfinite(out["successive_order"]))
        res["distance_finest_error"] = tail_error(out["successive"][-2], out["successive_order"][
            last[-1]], self.ratio) if w1_ok and last.size else nan
        e_ok = in_asymptotic_range(out["energy_change_order"], out["energy_change_order_flag"],
                                   design, tol)
        limit, err, _ = richardson(out["energy"], self.ratio) if e_ok else (nan, nan, nan)
        res.update(energy_limit=limit, energy_finest_error=err)
        res["atom_mass_limit"], res["atom_mass_finest_error"] = self._atom_richardson(out, tol)
        return res

    def _atom_richardson(self, out: dict[str, np.ndarray], tol: float
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Per reference atom: Richardson on its matched masses (all runs matched)."""
        masses = out["atom_mass"]
        limit, error = np.full(masses.shape[1], np.nan), np.full(masses.shape[1], np.nan)
        for i in range(masses.shape[1]):
            m = masses[:, i]
            if len(m) < 3 or np.any(m[-3:] <= 0):
                continue
            orders = observed_orders(np.abs(np.diff(m)), self.ratio)
            flags = order_flags(orders, self.design, tol)
            if in_asymptotic_range(orders, flags, self.design, tol):
                limit[i], error[i], _ = richardson(m, self.ratio)
        return limit, error


def _configs(path: str | Path, overrides: Sequence[str], t_end: float, option: str,
             ladder: Sequence[tuple[float, list[str]]]) -> list[tuple[float, RunConfig]]:
    """Every run's config (validated before anything runs); errors name ``option``."""
    fixed = [f"time.t_end={t_end!r}", "time.stop_when_stationary=false",  # states of the
             f"output.snapshot_interval={t_end!r}", "output.progress=false",  # scheme at T,
             'output.snapshot_mode="land"']  # not interpolated between steps
    out = []
    for value, extra in ladder:
        try:
            config = load_config(path, list(overrides) + fixed + extra)
            check_resolution(config)
        except ConfigError as err:
            raise ConfigError(option, f"{value:g}: {err}") from None
        out.append((value, config))
    return out


def _run(value: float, config: RunConfig) -> Run:
    start = wallclock.perf_counter()
    result = simulate(config, initial_density(config))
    return Run(value, config, result.final.rho, result.final.diagnostics, result.n_steps,
               wallclock.perf_counter() - start)


def converge(path: str | Path, resolutions: str | Sequence[int] = (), dts: str | Sequence[float] = (),
             t_end: float | None = None, overrides: Sequence[str] = (),
             progress: Callable[[int, int, str, float], None] | None = None) -> list[Ladder]:
    """Run the space ladder (``resolutions``) and the time ladder (``dts``) of a config to T.

    ``resolutions``, ``dts``: strings ``"64,128,256"`` or sequences (see :func:`parse_ladder`),
    either may be empty. ``t_end``: T (default ``time.t_end``). ``overrides``: ``--set`` items,
    applied before the ladder's own. ``progress(done, total, label, seconds)``: called after
    each run. Returns the requested ladders (space, then time).
    """
    base = load_config(path, overrides)
    t_end = base.time.t_end if t_end is None else t_end
    if not (isinstance(t_end, (int, float)) and math.isfinite(t_end) and t_end > 0):
        raise ConfigError("--t", f"must be a positive number, e.g. --t 1.0 (got {t_end!r})")
    if len(resolutions) == 0 and len(dts) == 0:
        raise ConfigError("--resolutions", "give --resolutions 64,128,256 and/or --dts 0.02,0.01,0.005")
    offset = manifold_of(base).resolution_offset
    resolutions = parse_ladder(resolutions, "--resolutions", True, offset) if len(resolutions) else []
    dts = parse_ladder(dts, "--dts", False) if len(dts) else []
    _check_dts(dts, t_end)
    finest = max(resolutions, default=base.domain.resolution)
    plans = [("space", "resolution", "--resolutions",
              [(n, [f"domain.resolution={int(n)}"]) for n in resolutions]),
             ("time", "dt", "--dts",
              [(dt, [f"domain.resolution={finest}", f"time.dt={dt!r}"]) for dt in dts])]
    configs = [(name, dim, _configs(path, overrides, t_end, opt, plan))
               for name, dim, opt, plan in plans if plan]
    total, done = sum(len(runs) for _, _, runs in configs), []

    def run(name: str, dim: str, value: float, config: RunConfig) -> Run:
        result = _run(value, config)
        done.append(result)
        if progress is not None:
            progress(len(done), total, f"{name} {dim}={value:g}", result.wall)
        return result

    return [Ladder(name, dim, tuple(run(name, dim, v, c) for v, c in runs),
                   offset * (dim == "resolution")) for name, dim, runs in configs]


def _check_dts(dts: Sequence[float], t_end: float) -> None:
    for dt in dts:
        steps = t_end / dt
        if dt > t_end or abs(steps - round(steps)) > 1e-9 * steps:
            raise ConfigError("--dts", f"T / dt must be a whole number of steps (T = {t_end:g}, "
                              f"dt = {dt:g}); e.g. --dts {t_end / 10:g},{t_end / 20:g},{t_end / 40:g}")
