"""The cost of a run, estimated from its config before it starts; runs above a budget are refused
unless forced (``meanfield run --force``, ``solvers.run(..., force=True)``).

The estimate (docs/cli.md, "Run cost") is the wall time of the whole ``meanfield run``:

    START_S + max(main, checks..., (main + sum(checks)) / cores)    (two or more cores)
    START_S + main + sum(checks)                                    (one core)

``main = steps x seconds per step + writing``; ``checks`` are the verdict's check runs, each
counted as a run of its own config (the caller passes them:
:func:`solvers.studies.verdict_runs.check_runs`, the resolution check at half the resolution
(at twice it where half is too coarse), the ladder's third level at a quarter and, for steps
that are not error-controlled, the time check, whose halved step bounds double its steps).
On two or more cores ``meanfield run`` runs them in child processes beside the main run
(:mod:`solvers.studies.companion`) when they cost :data:`CHILD_MIN_S` or more in all, else
after it.

- **steps**: :func:`solvers.model.step_count.expected_steps`, the steps the step-size rule
  takes (its docstring gives the model and the measurements behind it).
- **seconds per step**: the step of the config timed on this machine at first use and cached
  (:mod:`solvers.studies.step_timing`, keyed by :func:`step_key` in :func:`timing_file`), times
  :data:`STEP_FACTOR` of its method (a run's mean step over the probe's median: the events,
  hand-overs and diagnostics the probe leaves out); without a timing, :func:`fallback_step_seconds`
  (constants measured on the 2-core machine of the table in docs/cli.md, "Run cost").
- **writing**: each snapshot ``0.2 ms + 0.2 us`` per grid point; each sync of the archive 5 ms
  (NetCDF) or 0.35 s (zarr: every array's metadata rewritten), a sync per snapshot with
  ``output.sync_interval = 0``.
- ``START_S``: the command's start (imports, compiled kernels loaded, the initial state, the
  verdict's report), measured.

On the runs/ configs and a long S^1 fv run (N = 2048 to t = 20000) the estimate is within 3x of the wall
time (docs/cli.md, "Run cost": 0.86-1.79 for the runs over 5 s); its purpose is to stop a run
of days before it starts, and to refuse none that ends within minutes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
import os
from dataclasses import dataclass
from pathlib import Path

from solvers.model.method import HANDOVER, plan_method
from solvers.model.params import RunConfig
from solvers.model.step_count import crowding, expected_steps, stop_time
from solvers.model.validators import ConfigError

BUDGET_S = 3600.0  # refused above this (one hour on this machine) unless forced
REPORT_S = 120.0  # the estimate is printed above this
START_S = 1.0  # the command's start and end around the steps (module docstring)
# check runs estimated under this in all run after the main run, in its process: a child
# process's start (an interpreter and the solver's imports) costs about a second
CHILD_MIN_S = 2.0
PROBE_MAX_RATIO = 10.0  # a step timing this many times the constants' is not used
SYNC_S = {"nc": 5e-3, "zarr": 0.35}
TIMING_FILE = "step_timing.json"  # the cache of :mod:`solvers.studies.step_timing`
# a run's mean step over the probe's median step, by manifold and method (module docstring;
# S^2 particles: over their first steps, compute_seconds). A probe on an idle machine runs
# faster than the run's steps beside its companions (on the 2-core machine of the table in
# docs/cli.md, S^2 particles at lmax 63: 0.063 s a step alone, 0.2 s, wall and CPU time
# alike, beside another busy process)
STEP_FACTOR = {("S1", HANDOVER): 2.0, ("S1", "lagrangian"): 3.0, ("S1", "fv"): 2.5,
               ("S1", "spectral"): 1.3, ("S2", "lagrangian"): 2.5, ("S2", "fv"): 4.0,
               ("S2", "spectral"): 1.3, ("Sd", "lagrangian"): 1.0}
PARTICLE_FULL_STEPS, PARTICLE_MERGED = 55.0, 0.033  # S^2 particles (compute_seconds)
# Sd points (compute_seconds): a new run's first POINTS_FULL_STEPS steps carry (nearly) every
# point, each later one costs POINTS_MERGED of the first step plus POINTS_STEP_S (the points
# merge into atoms; fitted on runs/paper_sd_descent_relu.toml at d = 50 and N = 2000, 10^4);
# in d <= 3 every step counts as a first one
POINTS_FULL_STEPS, POINTS_MERGED, POINTS_STEP_S = 200.0, 0.02, 2e-3
# Sd pair sums: seconds per pair and per component of a right-hand side (two matrix products
# and an exponential), the circle's Fourier series per point and mode, S^2's series per point
# and term; dopri5 evaluates it six times a step, and the merging of close points once more
PAIR_S, FOURIER_S, SERIES_S, POINT_EVALS = 4.5e-11, 2e-8, 5e-9, 7.0


@dataclass(frozen=True)
class CostEstimate:
    """An estimated run cost: ``steps`` of ``step_s`` seconds and ``snapshots`` written with
    ``syncs`` syncs of the archive costing ``write_s`` in all (the main run), ``checks_s``
    the verdict's companion runs' seconds each, ``cores`` the cores they share, ``end`` the
    expected final time (``t_end`` or an earlier stationary stop), ``timed`` whether the
    seconds per step come from a step timed on this machine (else the constants)."""

    steps: float
    step_s: float
    snapshots: int
    syncs: int
    write_s: float
    what: str
    checks_s: tuple[float, ...] = ()
    cores: int = 1
    end: float = math.inf
    timed: bool = False

    @property
    def main_s(self) -> float:
        return self.steps * self.step_s + self.write_s

    @property
    def parallel_checks(self) -> bool:
        """Whether the check runs go to child processes beside the main run (two or more
        cores, and checks of :data:`CHILD_MIN_S` or more in all), else after it."""
        return self.cores >= 2 and sum(self.checks_s) >= CHILD_MIN_S

    @property
    def total_s(self) -> float:
        """The whole command's wall time (module docstring)."""
        if self.parallel_checks:
            busy = max(self.main_s, *self.checks_s,
                       (self.main_s + sum(self.checks_s)) / self.cores)
        else:
            busy = self.main_s + sum(self.checks_s)
        return START_S + busy

    def describe(self) -> str:
        """``"about 3.2 h (1.2e+06 steps x 9.4 ms: S1, N = 4096, fv; 500 snapshots, 500 syncs:
        0.2 s; checks 1.1 h)"``."""
        checks = f"; checks {duration(sum(self.checks_s))}" if self.checks_s else ""
        return (f"about {duration(self.total_s)} ({self.steps:.3g} steps x "
                f"{self.step_s * 1e3:.3g} ms: {self.what}; {self.snapshots} snapshots, "
                f"{self.syncs} syncs: {duration(self.write_s)}{checks})")


def duration(seconds: float) -> str:
    """``"3.2 h"``, ``"12 s"``: ``seconds`` in the largest unit that fits."""
    if not math.isfinite(seconds) or seconds > 3.15e9:
        return "more than 100 years"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s"


def estimated_steps(config: RunConfig, t0: float = 0.0) -> float:
    """Time steps from ``t0`` to the expected end
    (:func:`solvers.model.step_count.expected_steps`)."""
    return expected_steps(config, t0)


def points(config: RunConfig) -> int:
    """Grid points: ``N`` on S^1, ``(lmax + 1)(2 lmax + 2)`` on S^2, the one cell of Sd."""
    n = config.domain.resolution
    if config.domain.manifold == "Sd":
        return 1
    return n if config.domain.manifold == "S1" else (n + 1) * (2 * n + 2)


def points_step_seconds(config: RunConfig) -> float:
    """Sd: seconds of a step with all ``N`` points (module constants): the attention sums
    by the Fourier series (d = 2), the multinomial series (d = 3, when shorter than the pair
    sums) or the pair sums, ``POINT_EVALS`` times."""
    from spectral.kernel_series import series_terms

    n, d, beta = config.domain.resolution, config.domain.d, config.model.beta
    if d == 2:
        one = FOURIER_S * n * (2 * (int(beta) + 30) + 1)
    elif d == 3 and series_terms(beta) < n:
        one = SERIES_S * n * series_terms(beta)
    else:
        one = PAIR_S * n * n * (2 * d + 1)
    return POINT_EVALS * one


def step_key(config: RunConfig) -> str:
    """``"S1/spectral+lagrangian/dirac/dopri5/512/uniform/unnormalized"``: what a step's time
    depends on (the initial kind sets how many particles or atoms the first steps carry; softmax
    attention costs more per step)."""
    plan = plan_method(config)
    manifold = config.domain.manifold + (f"{config.domain.d}" if config.domain.manifold == "Sd" else "")
    return "/".join((manifold, plan.scheme, plan.representation, plan.integrator,
                     str(config.domain.resolution), config.initial.kind, config.model.attention))


def timing_file() -> Path:
    """The step timing cache: ``step_timing.json`` in the numba cache folder of the current
    kernel sources (``NUMBA_CACHE_DIR``, set when ``solvers`` is imported:
    :mod:`solvers.core.numba_cache`), else in ``$XDG_CACHE_HOME/meanfield-spectral``."""
    folder = os.environ.get("NUMBA_CACHE_DIR")
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = str(Path(base) / "meanfield-spectral")
    return Path(folder) / TIMING_FILE


def read_timings(path: Path) -> dict[str, float]:
    """The cached ``{key: seconds}`` of ``path`` (empty when missing or unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items()
            if isinstance(v, (int, float)) and math.isfinite(v) and v > 0}


def cached_step_seconds(config: RunConfig, path: Path | None = None) -> float | None:
    """The probe's seconds per step of ``config`` cached at ``path`` (default
    :func:`timing_file`); None when not timed yet, or when the timing is more than
    :data:`PROBE_MAX_RATIO` times the constants' (a probe that met a compilation or a machine
    busy with other work: it is timed again)."""
    found = read_timings(timing_file() if path is None else path).get(step_key(config))
    if found is not None and found > PROBE_MAX_RATIO * fallback_step_seconds(config):
        return None
    return found


def fallback_step_seconds(config: RunConfig) -> float:
    """Seconds per step without a timing (the 2-core machine of docs/cli.md, "Run cost"): S^1
    ``(0.5 ms + 1 us N)`` times the atoms' crowding; S^2 grids ``1 ms + 0.95 us P max(1, (lmax + 1) / 128)``, S^2 particles
    ``0.17 s (P / 8192)^0.8`` (their pair sums, a particle per grid point at the start), ``P``
    the grid points."""
    n = config.domain.resolution
    if config.domain.manifold == "Sd":
        return points_step_seconds(config)
    if config.domain.manifold == "S1":
        return (5e-4 + 1e-6 * n) * crowding(config)
    if plan_method(config).scheme == "lagrangian":
        return 0.17 * (points(config) / 8192) ** 0.8
    return 1e-3 + 0.95e-6 * points(config) * max(1.0, (n + 1) / 128)


def step_seconds(config: RunConfig, path: Path | None = None) -> tuple[float, bool]:
    """``(seconds per step, timed)``: the cached probe times :data:`STEP_FACTOR` and the S^1
    atoms' :func:`~solvers.model.step_count.crowding` (beta = 50: 2.6 ms a step against 1 ms
    at beta = 5, N = 512), else :func:`fallback_step_seconds` (timed False)."""
    probe = cached_step_seconds(config, path)
    if probe is None:
        return fallback_step_seconds(config), False
    factor = STEP_FACTOR[(config.domain.manifold, plan_method(config).scheme)]
    return probe * factor * crowding(config), True


def compute_seconds(config: RunConfig, steps: float, step_s: float, t0: float = 0.0) -> float:
    """Seconds of ``steps`` steps whose first costs ``step_s``: ``steps x step_s``, except S^2
    particles, which merge into atoms: a new run's first :data:`PARTICLE_FULL_STEPS` steps
    cost ``step_s`` each, every later one ``PARTICLE_MERGED x step_s`` (fitted at 0.2 s a step,
    lmax 63, beside the companions: paper_s2_ascent_attention took 165 steps in the time of
    58 such steps, paper_s2_ascent_relu_seed111 864 in that of 81, the particle descent 14200
    in that of 430, counted 520)."""
    if config.domain.manifold == "Sd":
        # on S^1 and S^2 the points merge only within 5 % of the sample's spacing: late
        first = steps if config.domain.d <= 3 else POINTS_FULL_STEPS
        full = 0.0 if t0 > 0 else min(steps, first)
        return full * step_s + (steps - full) * (POINTS_MERGED * step_s + POINTS_STEP_S)
    if config.domain.manifold != "S2" or plan_method(config).scheme != "lagrangian":
        return steps * step_s
    full = 0.0 if t0 > 0 else min(steps, PARTICLE_FULL_STEPS)  # a resume: merged already
    return (full + PARTICLE_MERGED * (steps - full)) * step_s


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _writing(config: RunConfig, span: float, compute_s: float) -> tuple[int, int, float]:
    """``(snapshots, syncs, seconds)`` of the archive over ``span``."""
    out = config.output
    snapshots = int(min(span / out.snapshot_interval, 1e12)) + 1
    kind = "zarr" if str(out.path).rstrip("/").endswith(".zarr") else "nc"
    syncs = snapshots if out.sync_interval == 0 else int(min(snapshots, compute_s / out.sync_interval + 1))
    return snapshots, syncs, snapshots * (2e-4 + 2e-7 * points(config)) + syncs * SYNC_S[kind]


def estimate_cost(config: RunConfig, checks: Sequence[RunConfig] = (), t0: float = 0.0,
                  timings: Path | None = None) -> CostEstimate:
    """The estimated cost of ``config`` from ``t0`` (a resume) to its expected end (module
    docstring).

    Parameters
    ----------
    config : RunConfig
        A validated config.
    checks : sequence of RunConfig
        The verdict's check runs (:func:`solvers.studies.verdict_runs.check_runs`; none with
        ``--no-check``), each counted as a run of its own config.
    t0 : float
        The start time (a resume's last record).
    timings : Path, optional
        The step timing cache (default :func:`timing_file`).
    """
    steps = expected_steps(config, t0)
    first_s, timed = step_seconds(config, timings)
    compute = compute_seconds(config, steps, first_s, t0)
    step_s = compute / steps if steps > 0 else first_s  # the mean step
    end = stop_time(config, t0)
    snapshots, syncs, write_s = _writing(config, max(end - t0, 0.0), compute)
    check_s: tuple[float, ...] = ()
    if config.time.t_end > 0:
        ratio = first_s / fallback_step_seconds(config)  # this machine against the constants
        check_s = tuple(compute_seconds(check, expected_steps(check, t0),
                                        fallback_step_seconds(check) * ratio, t0)
                        for check in checks)
    dom = config.domain
    what = (f"Sd, d = {dom.d}, N = {dom.resolution} points" if dom.manifold == "Sd" else
            f"{dom.manifold}, {'N' if dom.manifold == 'S1' else 'lmax'} = {dom.resolution}")
    what += f", {plan_method(config).scheme}"
    return CostEstimate(steps, step_s, snapshots, syncs, write_s, what, check_s, usable_cores(),
                        end, timed)


def output_bytes(config: RunConfig, t0: float = 0.0) -> float:
    """The archive's expected size: ``64 kB + snapshots x (8.8 bytes per grid point + 1.5
    kB)`` (the density and the diagnostics per record; measured on the runs/ archives)."""
    snapshots = _writing(config, max(stop_time(config, t0) - t0, 0.0), 0.0)[0]
    return 64e3 + snapshots * (8.8 * points(config) + 1.5e3)


def check_cost(config: RunConfig, force: bool = False, checks: Sequence[RunConfig] = (),
               t0: float = 0.0, budget_s: float = BUDGET_S) -> CostEstimate:
    """The estimate of ``config`` (from ``t0``); :class:`ConfigError` when it exceeds
    ``budget_s`` and the run is not forced."""
    estimate = estimate_cost(config, checks, t0)
    if estimate.total_s > budget_s and not force:
        raise ConfigError("estimated cost", f"{estimate.describe()} exceeds the budget of "
                          f"{duration(budget_s)} on this machine: lower time.t_end, "
                          "domain.resolution or the snapshot count, raise output.sync_interval, "
                          "or run it anyway with --force (CLI) / force=True (API)")
    return estimate
