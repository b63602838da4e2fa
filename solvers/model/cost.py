"""The cost of a run, estimated from its config before it starts; runs above a budget are refused
unless forced (``meanfield run --force``, ``solvers.run(..., force=True)``).

The estimate is ``steps x seconds per step + snapshots x seconds per snapshot + syncs x seconds
per sync`` (docs/cli.md, "Run cost"):

- **steps**: ``t_end / dt`` (at most ``time.max_steps``), ``dt`` the fixed ``time.dt``, else
  the step the bound of the scheme that runs allows (:func:`solvers.model.method.plan_method`).
  Grid schemes (fv, spectral: the default method's S^2 fv grid, its spectral grid with noise):
  ``dt = K_GRID (cfl / 0.4) h / V``, ``h`` the cell width (S^1 ``2 pi / N``; S^2
  ``pi / (lmax + 1)``), ``V`` a bound of the speed (attention ``M`` for the shifted kernel,
  ``M e^beta`` for ``exp``, 1 for softmax; perceptron ``2 sum |omega_j| |a_j| max|sigma|`` on
  ``|a_j.x + b_j| <= |a_j| + |b_j|``, paper eq. 2.7). Cells and particles (the default method
  on S^1, ``lagrangian``): ``dt = K_CELLS min(cfl, rate_factor) / L``, ``L`` a bound of the
  velocity's Lipschitz constant (``M beta``, ``M beta e^beta`` for ``exp``; perceptron ``2 sum
  |omega_j| (|a_j|^2 max|sigma'| + |a_j| max|sigma|)``). Grid steps are also at most
  ``K_GRID rate_factor / L``. The default method on S^1 counts as cells (its pseudo-spectral
  start, until the density concentrates, is short at the usual resolutions).
  ``K_GRID``, ``K_CELLS`` were measured (paper S^1 and S^2 descent, N = 256, lmax = 63: the
  real steps are 10-26 and 2.4 times these bounds). The S^2 fv grid with Dirac atoms (the
  default on S^2 for descent) with its default integrator takes these grid steps only at its
  start, about ``DIRAC_CFL_STEPS (lmax + 1)`` of them, while the density is spread; once its
  mass sits in atoms the step is the rate bound ``9 rate_factor beta / (M max|K''|)`` (the SSP
  coefficient 9 of ``ssprk10_2`` times the attention's relaxation-rate bound, docs/math.md §6),
  which does not depend on the grid. A run that stops as stationary takes fewer.
- **seconds per step**: S^1 ``0.5 ms + 3.7 us N``; S^2 ``1 ms + 0.95 us P max(1, (lmax+1)/128)``
  with ``P = (lmax + 1)(2 lmax + 2)`` grid points (the transforms' ``lmax^3``), measured on the
  2-core machine of benchmarks/README.md; the verdict's half-resolution run adds a third on a
  single core (with two or more, ``meanfield run`` runs it beside the main run).
- **writing**: each snapshot ``0.2 ms + 0.2 us`` per grid point; each sync of the archive 5 ms
  (NetCDF) or 0.35 s (zarr: every array's metadata rewritten), a sync per snapshot with
  ``output.sync_interval = 0``.

The estimate is an order of magnitude (within about 10x either way), enough to stop a run of
days before it starts.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from solvers.model.activations import get_activation
from solvers.model.kernel import kernel_log_shift, max_kernel_second_derivative
from solvers.model.method import GRID_SCHEMES, MethodPlan, plan_method
from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError

BUDGET_S = 3600.0  # refused above this (one hour on this machine) unless forced
REPORT_S = 120.0  # the estimate is printed above this
K_GRID, K_CELLS = 15.0, 2.4  # measured steps / bound steps (module docstring)
SYNC_S = {"nc": 5e-3, "zarr": 0.35}
RECHECK = 4.0 / 3.0  # the verdict's half-resolution companion run
DIRAC_CFL_STEPS = 4.0  # S^2 fv with Dirac atoms: grid-bound steps per (lmax + 1) (docstring)
DIRAC_SSP = 9.0  # SSP coefficient of ssprk10_2, the fv grid's default integrator (s - 1)


@dataclass(frozen=True)
class CostEstimate:
    """An estimated run cost: ``steps`` of ``step_s`` seconds, ``snapshots`` written with
    ``syncs`` syncs of the archive costing ``write_s`` in all."""

    steps: float
    step_s: float
    snapshots: int
    syncs: int
    write_s: float
    what: str

    @property
    def total_s(self) -> float:
        return self.steps * self.step_s + self.write_s

    def describe(self) -> str:
        """``"about 3.2 h (1.2e+06 steps x 9.4 ms: S1, N = 4096, fv; 500 snapshots, 500 syncs:
        0.2 s)"``."""
        return (f"about {duration(self.total_s)} ({self.steps:.3g} steps x "
                f"{self.step_s * 1e3:.3g} ms: {self.what}; {self.snapshots} snapshots, "
                f"{self.syncs} syncs: {duration(self.write_s)})")


def duration(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds > 3.15e9:
        return "more than 100 years"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s"


def _perceptron_bounds(config: RunConfig) -> tuple[float, float]:
    """``(speed, Lipschitz)`` bounds of the perceptron velocity (paper eq. 2.7)."""
    p = config.model.perceptron
    if p.activation == "none" or not p.n_units:
        return 0.0, 0.0
    act = get_activation(p.activation)
    speed = lip = 0.0
    for a, omega, b in zip(np.asarray(p.a, float), np.asarray(p.omega, float),
                           np.asarray(p.b, float)):
        norm = float(np.linalg.norm(a))
        s = np.linspace(-(norm + abs(b)), norm + abs(b), 201)
        sigma = np.abs(np.asarray(act.sigma(s), float))
        slope = np.abs(np.diff(np.asarray(act.sigma(s), float)) / max(s[1] - s[0], 1e-300))
        speed += 2 * abs(omega) * norm * float(sigma.max())
        lip += 2 * abs(omega) * (norm**2 * float(slope.max(initial=0.0)) + norm * float(sigma.max()))
    return speed, lip


def _attention_bounds(config: RunConfig) -> tuple[float, float]:
    """``(speed, Lipschitz)`` bounds of the attention velocity (paper eq. 2.6, 2.9)."""
    beta, mass = config.model.beta, config.initial.mass
    if config.model.attention == "softmax":
        return 1.0, beta
    grow = math.exp(min(beta, 700.0)) if config.model.kernel == "exp" else 1.0
    return mass * grow, mass * beta * grow


def estimated_steps(config: RunConfig, t0: float = 0.0) -> float:
    """Time steps from ``t0`` to ``t_end`` (module docstring)."""
    tp, s1 = config.time, config.domain.manifold == "S1"
    span = max(tp.t_end - t0, 0.0)
    if tp.dt is not None:
        return min(span / tp.dt, tp.max_steps)
    v_att, l_att = _attention_bounds(config)
    v_perc, l_perc = _perceptron_bounds(config)
    speed, lip = max(v_att + v_perc, 1e-300), max(l_att + l_perc, 1e-300)
    n = config.domain.resolution
    plan = plan_method(config)
    grid = plan.scheme in GRID_SCHEMES
    h = 2 * math.pi / n if s1 else math.pi / (n + 1)
    grid_dt = K_GRID * min(plan.cfl / 0.4 * h / speed, tp.rate_factor / lip)
    cells_dt = K_CELLS * min(plan.cfl, tp.rate_factor) / lip
    dt = grid_dt if grid else cells_dt  # S^1 default: its short pseudo-spectral start aside
    if grid and _dirac_grid(config, plan):
        return min(_two_phase_steps(config, span, grid_dt), float(tp.max_steps))
    return min(span / dt, float(tp.max_steps))


def _dirac_grid(config: RunConfig, plan: MethodPlan) -> bool:
    """The S^2 fv grid with Dirac atoms and its default integrator (module docstring)."""
    return (config.domain.manifold == "S2" and plan.representation == "dirac"
            and plan.scheme == "fv" and plan.integrator == "ssprk10_2"
            and config.model.attention == "unnormalized")


def _two_phase_steps(config: RunConfig, span: float, grid_dt: float) -> float:
    """Steps of the S^2 fv Dirac state: at most ``DIRAC_CFL_STEPS (lmax + 1)`` grid steps of
    ``grid_dt``, the rest of ``span`` at the rate bound (module docstring)."""
    model, tp = config.model, config.time
    k2 = max_kernel_second_derivative(model.beta, kernel_log_shift(model))
    rate_dt = DIRAC_SSP * tp.rate_factor * model.beta / max(config.initial.mass * k2, 1e-300)
    first = min(span / grid_dt, DIRAC_CFL_STEPS * (config.domain.resolution + 1))
    return first + max(span - first * grid_dt, 0.0) / max(rate_dt, grid_dt)


def _points(config: RunConfig) -> int:
    n = config.domain.resolution
    return n if config.domain.manifold == "S1" else (n + 1) * (2 * n + 2)


def step_seconds(config: RunConfig) -> float:
    """Seconds per time step on this machine (module docstring)."""
    n = config.domain.resolution
    if config.domain.manifold == "S1":
        return 5e-4 + 3.7e-6 * n
    return 1e-3 + 0.95e-6 * _points(config) * max(1.0, (n + 1) / 128)


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def estimate_cost(config: RunConfig, check_resolution: bool = True,
                  t0: float = 0.0) -> CostEstimate:
    """The estimated cost of ``config`` from ``t0`` (a resume) to ``t_end`` (module
    docstring); ``check_resolution``: the verdict's half-resolution run is counted too."""
    steps, step_s = estimated_steps(config, t0), step_seconds(config)
    out = config.output
    span = max(config.time.t_end - t0, 0.0)
    snapshots = int(min(span / out.snapshot_interval, 1e12)) + 1
    compute = steps * step_s
    kind = "zarr" if str(out.path).rstrip("/").endswith(".zarr") else "nc"
    syncs = snapshots if out.sync_interval == 0 else int(min(snapshots, compute / out.sync_interval + 1))
    write_s = snapshots * (2e-4 + 2e-7 * _points(config)) + syncs * SYNC_S[kind]
    factor = RECHECK if check_resolution and usable_cores() < 2 else 1.0
    what = (f"{config.domain.manifold}, {'N' if config.domain.manifold == 'S1' else 'lmax'} = "
            f"{config.domain.resolution}, {plan_method(config).scheme}")
    return CostEstimate(steps * factor, step_s, snapshots, syncs, write_s, what)


def check_cost(config: RunConfig, force: bool = False, check_resolution: bool = True,
               t0: float = 0.0, budget_s: float = BUDGET_S) -> CostEstimate:
    """The estimate of ``config`` (from ``t0``); :class:`ConfigError` when it exceeds
    ``budget_s`` and the run is not forced."""
    estimate = estimate_cost(config, check_resolution, t0)
    if estimate.total_s > budget_s and not force:
        raise ConfigError("estimated cost", f"{estimate.describe()} exceeds the budget of "
                          f"{duration(budget_s)} on this machine: lower time.t_end, "
                          "domain.resolution or the snapshot count, raise output.sync_interval, "
                          "or run it anyway with --force (CLI) / force=True (API)")
    return estimate
