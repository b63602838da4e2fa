"""The time steps a run will take, counted from its config before it starts (docs/cli.md,
"Run cost"); :mod:`solvers.model.cost` turns them into seconds.

The step-size rule of :class:`~solvers.timestepping.simulation.Solver` (docs/math.md §6) is
``dt = min(C cfl / rate, C rate_factor / L)`` (fixed ``time.dt`` aside), ``C`` the
integrator's SSP coefficient (9 for ``ssprk10_2``, else 1), ``rate`` the current CFL rate of
the state and ``L`` the attention's relaxation-rate bound ``M max|K''| / beta`` (1 for softmax;
for the shifted kernel ``max|K''| = beta``, so ``L = M`` at every beta). Error-controlled
steps (an embedded pair: the S^1 default's ``dopri5``) drop the rate bound and keep the CFL
bound. Every run also ends a step on each snapshot time, so a snapshot interval ``s`` holds
``ceil(s / dt)`` steps (:func:`span_steps`). What each method takes:

- **S^2 particles** (``lagrangian``: no CFL rate): ``dt = rate_factor / (L + C_v)`` exactly,
  ``C_v = sum_j |omega_j| (Lip(sigma) |a_j|^2 + max|sigma| |a_j|)`` the perceptron's bound
  (docs/math.md §5, :func:`solvers.model.perceptron.lipschitz`).
- **S^1 Lagrangian cells** (``lagrangian``, rk4): ``dt = rate_factor / L``, the CFL bound of
  the cells rarely binding.
- **S^1 default** (``spectral+lagrangian``, dopri5): once the cells carry the mass, the CFL
  bound ``cfl / max|du/dx|`` of the cells sets the step; ``max|du/dx|`` is at most
  ``L + C_v`` and measured at ``crowding (L + C_v) / HANDOVER_FACTOR[direction]`` (the paper's
  S^1 runs at beta = 5: ``dt (L + C_v)`` = 3.6-14 under descent, 1.7-2.8 under ascent; the
  factors are their geometric means, so each run is within 3x). At larger beta more atoms form,
  closer together (a kernel width ``~ 1 / j*``), and the cells near them take rates near the
  bound: :func:`crowding` ``= j*(beta) / j*(5)`` (beta = 50: 2.56; the run's mean step 0.77
  against 0.73 counted).
- **fv grids** (S^1 fv, the S^2 default for descent): the density starts spread, where the
  CFL bound ``C cfl h / max|u|`` holds for ``GRID_START_STEPS`` per grid point of a row
  (``N`` on S^1, ``lmax + 1`` on S^2); once the mass sits in peaks or atoms the rate bound
  ``C rate_factor / L`` sets the step (S^1 fv, N = 2048, t_end = 20000: 4556 steps, 4000 of
  them at the rate bound).
- **spectral** (with noise): ``GRID_K`` times the CFL bound of the speed bound ``V``
  (:func:`speed_bound`), at most the rate bound.

A run that stops as stationary (``time.stop_when_stationary``) ends before ``t_end``. On S^2
the stop time is ``STATIONARY_SPAN[method, direction] / L`` (at most ``t_end``), measured on
the runs/ configs (beta = 1): ``t L`` = 120-165 under ascent (particles), 900-2320 under
descent on the fv grid, 7100 under descent with particles (their atoms settle later). On S^1 the stop time is left at ``t_end``: it
does not follow ``L`` (the paper's S^1 runs at beta = 5 stop at 900-2200, at beta = 50 or
with softmax attention not by t = 20000-30000), and its steps are cheap (about 1 ms), so
counting to ``t_end`` keeps the estimate of a run that stops within a few seconds of its
wall time.
"""

from __future__ import annotations

import math

import numpy as np

from spectral import kernel_bandwidth

from solvers.model.activations import get_activation
from solvers.model.kernel import kernel_log_shift, max_kernel_second_derivative
from solvers.model.method import HANDOVER, MethodPlan, plan_method
from solvers.model import perceptron
from solvers.model.params import RunConfig

SSP = {"ssprk10_2": 9.0}  # SSP coefficients above 1 (solvers.timestepping.integrators)
HANDOVER_FACTOR = {"descent": 6.0, "ascent": 2.2}  # S^1 default: dt (L + C_v) (docstring)
CROWD_BETA = 5.0  # the beta of the paper's S^1 runs that HANDOVER_FACTOR was measured on
GRID_START_STEPS = 0.3  # fv grids: CFL-bound steps per grid point of a row (docstring)
GRID_START_STEPS_S2 = 4.0  # the S^2 fv Dirac grid: per lmax + 1 (runs/s2_descent_relu.toml)
GRID_K = 15.0  # spectral grids: real steps / CFL-bound steps
# S^2: stop time x relaxation-rate bound L of the runs that stop as stationary (docstring)
STATIONARY_SPAN = {("fv", "descent"): 1500.0, ("lagrangian", "descent"): 7000.0,
                   ("lagrangian", "ascent"): 140.0, ("fv", "ascent"): 140.0}


# Sd points (dopri5, rtol 5e-7): a stationary stop by t = 725 (d = 50) ... 2870 (d = 2) on
# runs/paper_sd_descent_relu.toml; about 1.7 steps per unit time
POINTS_STOP_T, POINTS_STEPS_PER_T = 2000.0, 1.7


def relaxation_bound(config: RunConfig) -> float:
    """``L = M max|K''| / beta`` (softmax: 1), the solver's rate bound (docs/math.md §3.2, 6)."""
    model = config.model
    if model.attention == "softmax":
        return 1.0
    k2 = max_kernel_second_derivative(model.beta, kernel_log_shift(model))
    return max(config.initial.mass * k2 / model.beta, 1e-300)


def speed_bound(config: RunConfig) -> float:
    """A bound of ``|u|``: the attention's ``M max|K'| / beta`` (softmax 1) plus the
    perceptron's ``2 sum_j |omega_j| |a_j| max|sigma|`` (paper eq. 2.6, 2.7)."""
    model = config.model
    if model.attention == "softmax":
        att = 1.0
    else:
        t = np.linspace(0.0, np.pi, 2001)
        k1 = np.exp(model.beta * np.cos(t) + kernel_log_shift(model)) * model.beta * np.sin(t)
        att = config.initial.mass * float(k1.max()) / model.beta
    p = model.perceptron
    if p.activation == "none" or not p.n_units:
        return att
    act = get_activation(p.activation)
    norms = np.linalg.norm(np.asarray(p.a, float), axis=1)
    s = np.linspace(-1.0, 1.0, 201)[None, :] * norms[:, None] + np.asarray(p.b, float)[:, None]
    sig_max = np.max(np.abs(np.asarray(act.sigma(s), float)), axis=1)
    return att + float(np.sum(2 * np.abs(np.asarray(p.omega, float)) * norms * sig_max))


def crowding(config: RunConfig) -> float:
    """``max(1, j*(beta) / j*(5))`` on S^1, ``j*`` the kernel's bandwidth (docs/math.md §2): how
    many more atoms form and crowd within a kernel width than at the paper's beta = 5 (1 on
    S^2 and at beta <= 5)."""
    if config.domain.manifold != "S1":
        return 1.0
    return max(1.0, kernel_bandwidth(config.model.beta, 2) / kernel_bandwidth(CROWD_BETA, 2))


def span_steps(span: float, dt: float, interval: float) -> float:
    """Steps of size at most ``dt`` over ``span``, each snapshot time (every ``interval``)
    ending one: ``ceil(interval / dt)`` per interval."""
    if span <= 0:
        return 0.0
    dt = max(dt, 1e-300)
    if interval <= 0 or interval >= span:
        return math.ceil(span / dt)
    return math.floor(span / interval) * math.ceil(interval / dt * (1 - 1e-9)) \
        + math.ceil((span % interval) / dt)


def stop_time(config: RunConfig, t0: float = 0.0) -> float:
    """When the run is expected to end: ``t_end``, or on S^2 sooner as stationary, at
    ``STATIONARY_SPAN[method, direction] / L``, on Sd at ``POINTS_STOP_T`` (module docstring)."""
    tp = config.time
    if tp.stop_when_stationary and config.domain.manifold == "Sd":
        return min(tp.t_end, max(t0, POINTS_STOP_T))
    if not tp.stop_when_stationary or config.domain.manifold != "S2":
        return tp.t_end
    kind = "lagrangian" if plan_method(config).scheme == "lagrangian" else "fv"
    span = STATIONARY_SPAN[(kind, config.model.direction)] / relaxation_bound(config)
    return min(tp.t_end, max(t0, span))


def expected_steps(config: RunConfig, t0: float = 0.0, plan: MethodPlan | None = None) -> float:
    """Time steps from ``t0`` to the expected end (:func:`stop_time`), at most
    ``time.max_steps`` (module docstring)."""
    tp = config.time
    plan = plan_method(config) if plan is None else plan
    end = stop_time(config, t0)
    span, interval = max(end - t0, 0.0), config.output.snapshot_interval
    if tp.dt is not None:
        return min(span_steps(span, tp.dt, interval), float(tp.max_steps))
    c = SSP.get(plan.integrator, 1.0)
    lip = relaxation_bound(config)
    c_v = perceptron.lipschitz(config.model.perceptron)
    rate_dt = c * tp.rate_factor / lip
    s1 = config.domain.manifold == "S1"
    if config.domain.manifold == "Sd":  # error-controlled: steps per unit time, measured
        return min(POINTS_STEPS_PER_T * span, float(tp.max_steps))
    if plan.scheme == "lagrangian":
        dt = tp.rate_factor / (lip + c_v) if not s1 else rate_dt
        return min(span_steps(span, dt, interval), float(tp.max_steps))
    if plan.scheme == HANDOVER:
        dt = plan.cfl * HANDOVER_FACTOR[config.model.direction] / ((lip + c_v) * crowding(config))
        return min(span_steps(span, dt, interval), float(tp.max_steps))
    n = config.domain.resolution
    h = 2 * math.pi / n if s1 else math.pi / (n + 1)
    cfl_dt = c * plan.cfl * h / max(speed_bound(config), 1e-300)
    if plan.scheme == "spectral":
        dt = GRID_K * min(cfl_dt, rate_dt)
        return min(span_steps(span, dt, interval), float(tp.max_steps))
    # the start [0, t_start] at the CFL bound, from t0 (a resume past it: none)
    t_start = cfl_dt * (GRID_START_STEPS * n if s1 else GRID_START_STEPS_S2 * (n + 1))
    first = max(min(t_start, end) - t0, 0.0) / cfl_dt
    rest = span_steps(max(end - max(t_start, t0), 0.0), max(rate_dt, cfl_dt), interval)
    return min(first + rest, float(tp.max_steps))
