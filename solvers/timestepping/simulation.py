"""The solver contract: one :class:`Solver` advances a discretisation's state by steps.

``Solver.step`` does the bookkeeping (step-size proposal, CFL and rate bounds, the error test of
the embedded pairs, rejections, hand-overs of the default method, the checks after each step);
``Solver._step_impl`` does the numerics (one Runge-Kutta step of the discretisation's
right-hand side). The time loop around it (snapshots, trackers, stopping) is
:func:`solvers.timestepping.loop.simulate`; the discretisation of a config comes from
:func:`solvers.timestepping.registry.make_discretization`.

Safety (the same for the Python API as for the command line): a step below
``DT_MIN_FRACTION * t_end`` stops with :class:`StepUnderflowError`; a snapshot that is not
finite or exceeds ``BLOWUP_FACTOR`` times the largest density the mass allows on the grid
raises :class:`BlowUpError` *before* the trackers see it, so archives end with the last good
state.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import NoReturn

import numpy as np

from solvers.core.backend import default_backend
from solvers.core.discretization import bound_mass
from solvers.core.snapshot import Diagnostics, RunState, Snapshot
from solvers.model.config import DT_MIN_FRACTION
from solvers.model.method import MethodPlan, plan_method
from solvers.model.params import RunConfig
from solvers.timestepping.integrators import EmbeddedPair, embedded_step, get_integrator, rk_step
from solvers.timestepping.lawson import lawson_step, noise_semigroup
from solvers.timestepping.registry import make_discretization

BLOWUP_FACTOR = 10.0  # a density above 10 * mass / (smallest cell) cannot be a probability's
SNAP_FRACTION = 1e-6  # a step within this fraction of dt of an output time lands on it
# the step-size controller of the embedded pairs (Hairer, Norsett & Wanner, Solving ODEs I,
# 2nd ed., II.4, eq. 4.13): dt_new = dt min(GROW, max(SHRINK, SAFETY err^(-1/(p_hat + 1)))),
# no growth right after a rejection
SAFETY, SHRINK, GROW = 0.9, 0.2, 5.0
# fv densities below this fraction of the largest are set to 0 after each step: vacuum cells
# decay towards subnormal numbers, whose arithmetic is 2-3x slower on x86 (measured: the S^1
# grid step at N = 640, beta = 25, 140 -> 350 us once 250 cells are subnormal); the mass
# removed is below 1e-95 of the total, far under round-off
FLUSH_FRACTION = 1e-100


class StepUnderflowError(RuntimeError):
    """The step size fell below ``DT_MIN_FRACTION * t_end`` (the run would never end)."""


class BlowUpError(FloatingPointError):
    """The density is not finite, or too large to be a probability density on the grid."""


class Solver:
    """Explicit solver for ``d_t rho = -s div(rho g) + nu Laplacian rho`` (paper eq. 2.6; noise
    ``nu = model.noise``: Lawson steps, :mod:`solvers.timestepping.lawson`) on S^1 or S^2.

    Contract
    --------
    - State: ``rho`` (grid array, shape (N,)), ``t``, ``n_steps``, ``dt`` (the step the
      controller proposes next).
    - ``step(t_stop)`` does the bookkeeping: picks ``dt`` (fixed ``time.dt``, or adaptive:
      ``C min(cfl / max(|u|/width), rate_factor / L)``, C the integrator's SSP coefficient,
      docs/math.md §6), never steps past ``t_stop``,
      calls ``_step_impl(dt)``, and on rejection halves ``dt`` and retries.
    - Error control (``time.integrator`` an embedded pair, :class:`EmbeddedPair`, and ``time.dt``
      not fixed): the step is the controller's, at most the CFL bound ``C cfl / max_rate`` (the
      rate bound ``rate_factor / L`` is dropped: the controller keeps the step stable, an
      unstable one fails its error test); a step whose error ratio
      ``max_i |err_i| / (atol + rtol max(|y_i|, |y_new_i|))`` exceeds 1 (or is not finite) is
      rejected and retried at ``dt max(0.2, 0.9 err^(-1/(p_hat+1)))``; an accepted one proposes
      ``dt min(5, max(0.2, 0.9 err^(-1/(p_hat+1))))`` (no growth right after a rejection;
      Hairer, Norsett & Wanner I, II.4). A discretisation may name the components that count
      and their unit, ``error_scale(state) -> (index, unit)``, which then replaces
      ``max(|y_i|, |y_new_i|)``: a Lagrangian state's positions, against 1 rad. No stage is
      reused across steps (``after_step`` may change the state).
    - Bookkeeping: ``n_accepted`` (steps accepted by this solver), ``n_rejected`` (steps refused,
      for any reason), ``time_error`` (with a pair: the sum over accepted steps of the estimate's
      max-norm ``max_i |err_i|`` over the counted components, in the state's units: to first
      order a bound of the global time error while the flow does not amplify errors),
      ``error_ratio`` (the last accepted step's). Every snapshot carries ``n_rejected`` and
      ``time_error``.
    - ``_step_impl(dt) -> (rho_new, ok)`` does the numerics only and must not change state.
    - Mass is conserved to round-off by every scheme; ``fv`` keeps ``rho >= 0``.
    - A discretisation with ``accept(state)`` may refuse a step (the Lagrangian cells: points out
      of order); it is retried at half the size.
    """

    def __init__(self, config: RunConfig, rho0: np.ndarray, t0: float = 0.0, step0: int = 0,
                 dt0: float | None = None, atoms0: object | None = None,
                 fresh: bool | None = None, rejected0: int = 0, time_error0: float = 0.0,
                 exact: RunState | None = None, plan: MethodPlan | None = None) -> None:
        self.plan = plan_method(config) if plan is None else plan  # the method, resolved once
        config = self.plan.discretization_config(config)  # its scheme, cfl and cfl_floor
        tp = config.time
        self.config = config
        # bookkeeping (a resume may pass the archived counts on: rejected0, time_error0)
        self.n_accepted, self.n_rejected = 0, int(rejected0)
        self.rejections = {"error": 0, "refused": 0}  # by this solver: error test; CFL or accept()
        self.time_error, self.error_ratio = float(time_error0), 0.0
        self._dt_next: float | None = None  # the controller's next step (None: not yet chosen)
        self.disc = make_discretization(config, self.plan)
        self.citation = self.disc.citation
        self.rhs = self.disc.rhs
        self.table = get_integrator(self.plan.integrator)
        self.heat = noise_semigroup(config, self.disc, self.table)  # None: no noise
        self.backend = default_backend()  # read once: MEANFIELD_NUMPY is not looked up every step
        self._extremes_kernel = None
        if self.backend == "numba":
            from solvers.core.kernels_numba import extremes

            self._extremes_kernel = extremes
        rho0 = np.asarray(rho0, dtype=float)
        if rho0.shape != self.disc.shape:
            raise ValueError(f"rho0: expected shape {self.disc.shape} for this grid (got {rho0.shape})")
        fresh = step0 == 0 if fresh is None else fresh  # a new run's initial data, not a state
        self.disc.set_time(float(t0))  # a resume's hand-over is dated t0, not 0
        # what a resume needs to continue bitwise (RunState): the solver's state as it is
        self.exact_resume = self.disc.restorable
        if exact is not None:  # an archived RunState, continued as it was
            self.rho = self.disc.restore_state(np.asarray(exact.state, dtype=float), tuple(exact.extras))
            self.t, self.n_steps, mass = float(exact.t), int(exact.step), float(exact.mass)
            self.n_rejected, self.time_error = int(exact.n_rejected), float(exact.time_error)
        else:
            self.rho = self.disc.prepare_state(rho0, atoms0, fresh=fresh)
            self.t, self.n_steps = float(t0), int(step0)
            mass = bound_mass(self.disc.total_mass(self.rho))
        self._mass = mass  # (the step bounds': a resume keeps it)
        self.dt_min = DT_MIN_FRACTION * tp.t_end
        self.density_cap = BLOWUP_FACTOR * abs(mass) / float(np.min(self.disc.cell_weight))
        self._step_bounds(mass)
        if exact is not None and math.isfinite(exact.dt_next):
            self._dt_next = float(exact.dt_next)
        self._resumed_dt = float(dt0) if dt0 else None  # a resume's first step: the archived one
        self.dt = self._propose(peek=True)
        self._warned: set[str] = set()

    def _step_bounds(self, mass: float) -> None:
        """The integrator's SSP coefficient, the rate bound and the current rate of ``self.disc``."""
        # an SSP table's stages are Euler steps of dt / C: the Euler bounds scale by C
        self.ssp = self.table.ssp_coefficient
        self.pair = self.table if isinstance(self.table, EmbeddedPair) else None
        self.controlled = self.pair is not None and self.config.time.dt is None
        self._dt_next = None  # (a hand-over: a new state, a new first step)
        bound = max(self.disc.lipschitz_bound(abs(mass)), 1e-300)
        self.rate_dt = self.ssp * self.config.time.rate_factor / bound
        self._rate = self.rhs(self.rho)[1]

    @property
    def problem(self):
        """The manifold's model/grid object (S^1: :class:`CircleProblem`)."""
        return self.disc.problem

    def _propose(self, peek: bool = False) -> float:
        """The next step: fixed ``time.dt``, the archived step of a resume, or adaptive."""
        if self._resumed_dt is not None:
            dt = self._resumed_dt
            self._resumed_dt = self._resumed_dt if peek else None
            return dt
        if self.config.time.dt is not None:
            return float(self.config.time.dt)
        cfl = self.ssp * self.config.time.cfl / max(self._rate, 1e-300)
        if self.controlled:
            if self._dt_next is None:
                self._dt_next = self._initial_step()
            return min(self._dt_next, cfl)
        return min(cfl, self.rate_dt)

    def _initial_step(self) -> float:
        """The first step of an error-controlled run: Hairer, Norsett & Wanner I, II.4
        ("Starting step size"), in the max-norm scaled by the tolerances: ``h0 = 0.01 |y| / |f|``,
        then ``h1 = (0.01 / max(|f|, |f(y + h0 f) - f| / h0))^(1/(p_hat + 1))``, the step
        ``min(100 h0, h1, t_end)``; two right-hand sides."""
        tp, y0 = self.config.time, self.rho
        f0 = self.rhs(y0)[0]
        mask, unit, atol = self._error_scale(y0)
        y, f = y0.reshape(-1)[mask], f0.reshape(-1)[mask]
        scale = atol + tp.rtol * (np.abs(y) if unit is None else unit)
        d0 = float(np.max(np.abs(y) / scale, initial=0.0))
        d1 = float(np.max(np.abs(f) / scale, initial=0.0))
        h0 = min(0.01 * d0 / d1 if d0 >= 1e-5 and d1 >= 1e-5 else 1e-6 * tp.t_end, tp.t_end)
        f1 = self.rhs(y0 + h0 * f0)[0].reshape(-1)[mask]
        d2 = float(np.max(np.abs(f1 - f) / scale, initial=0.0)) / h0
        top = max(d1, d2)
        h1 = (0.01 / top) ** (1.0 / (self.pair.order_hat + 1)) if top > 1e-15 else max(1e-6, 1e-3 * h0)
        h = min(100.0 * h0, h1, tp.t_end)
        return h if math.isfinite(h) and h > 0.0 else 1e-6 * tp.t_end

    def _error_scale(self, state: np.ndarray, new: np.ndarray | None = None
                     ) -> tuple[slice | np.ndarray, float | np.ndarray | None, float]:
        """The components of the flattened state that the error test counts, their unit and the
        absolute tolerance: the discretisation's ``error_scale(state)`` (``(index, unit)``, or
        ``(index, unit, atol)`` where an absolute tolerance in the state's units would be
        meaningless, e.g. a small fluctuation about a uniform density), else all of them, each
        against its size (unit None), with ``time.atol``."""
        found = self.disc.error_scale(state, new)
        return found if len(found) == 3 else (*found, self.config.time.atol)

    def _error_norm(self, old: np.ndarray, new: np.ndarray, err: np.ndarray) -> tuple[float, float]:
        """``(max_i |err_i| / (atol + rtol max(|old_i|, |new_i|)), max_i |err_i|)`` over the
        counted components (the discretisation's unit in place of the max, where it gives
        one; ``(inf, inf)`` when not finite)."""
        tp = self.config.time
        mask, unit, atol = self._error_scale(old, new)
        e = np.abs(err.reshape(-1)[mask])
        if not e.size:
            return 0.0, 0.0
        size = unit if unit is not None else \
            np.maximum(np.abs(old.reshape(-1)[mask]), np.abs(new.reshape(-1)[mask]))
        ratio = float(np.max(e / (atol + tp.rtol * size)))
        size = float(np.max(e))
        if not (math.isfinite(ratio) and math.isfinite(size)):
            return math.inf, math.inf
        return ratio, size

    def _factor(self, ratio: float) -> float:
        """The controller's step factor ``min(5, max(0.2, 0.9 ratio^(-1/(p_hat + 1))))``."""
        if ratio <= 0.0:
            return GROW
        if not math.isfinite(ratio):
            return SHRINK
        return min(GROW, max(SHRINK, SAFETY * ratio ** (-1.0 / (self.pair.order_hat + 1))))

    def step(self, t_stop: float) -> float:
        """Advance one accepted step, not past ``t_stop``; return the step taken.

        A step within ``SNAP_FRACTION * dt`` of ``t_stop`` lands exactly on it (no sliver
        steps, no near-duplicate output times). Raises :class:`StepUnderflowError` when the
        step falls below ``DT_MIN_FRACTION * t_end``.
        """
        dt = self._propose()
        rejected = False
        for _ in range(60):
            remaining = t_stop - self.t
            h = remaining if remaining <= dt * (1 + SNAP_FRACTION) else dt
            if h < self.dt_min and h < remaining:
                self._underflow(h)
            self._refused = "step"
            rho_new, ok = self._step_impl(h)
            if ok:
                if self.pair is not None:
                    ratio, size = self._error
                    self.time_error += size
                    self.error_ratio = ratio
                    if self.controlled:
                        # no growth right after a rejection (HNW II.4); a step shortened to land
                        # on t_stop keeps at least the step proposed before it
                        grow = min(1.0, self._factor(ratio)) if rejected else self._factor(ratio)
                        self._dt_next = max(h * grow, dt) if h < dt and grow >= 1.0 else h * grow
                self.n_accepted += 1
                t_new = t_stop if h == remaining else self.t + h
                self.disc.set_time(t_new)  # (the hand-over's record)
                rho_new = self.disc.after_step(rho_new, self.n_steps + 1)
                self.rho, self.n_steps = rho_new, self.n_steps + 1
                self.t = t_new
                self.dt = self._propose(peek=True)  # archived: a resume continues with it
                return h
            self.n_rejected += 1
            self.rejections["error" if self._refused == "error" else "refused"] += 1
            rejected = True
            if self._refused == "error":  # the controller's shorter step
                dt = h * min(1.0, self._factor(self._error[0]))
            else:  # points out of order, CFL: half the step
                dt = 0.5 * h
        self._underflow(dt)

    def _underflow(self, h: float) -> NoReturn:
        fixed = self.config.time.dt is not None
        why = ("the tolerances time.rtol, time.atol cannot be met (below round-off, or the solution "
               "is not smooth in time here) or the CFL condition" if self.controlled
               else "the CFL or rate condition cannot be met")
        raise StepUnderflowError(
            f"step size underflow at t={self.t:.6g}: dt = {h:.3g} < {DT_MIN_FRACTION:g} * "
            f"t_end; " + ("time.dt is too small" if fixed and h == self.config.time.dt else
                          f"{why} (is domain.resolution too coarse for model.beta, or "
                          "initial.mass too large?)"))

    def check_state(self, snap: Snapshot) -> None:
        """Raise :class:`BlowUpError` unless the snapshot is finite and bounded."""
        d = snap.diagnostics
        top = self.disc.peak(snap.rho, d)
        if not (math.isfinite(d.mass) and math.isfinite(d.energy) and math.isfinite(d.dissipation)):
            top = math.inf  # the density is finite but the model overflows on it
        if not math.isfinite(top) or top > self.density_cap:
            knob = "time.dt" if self.config.time.dt is not None else "time.cfl"
            raise BlowUpError(f"the density blew up at t={snap.t:.6g} (max |rho| = {top:.3g} > "
                              f"{self.density_cap:.3g}); the step is unstable: lower {knob}")

    def _step_impl(self, dt: float) -> tuple[np.ndarray, bool]:
        """One step of size ``dt`` from the current state: ``(new state, accepted)``. With an
        embedded pair it also leaves ``self._error = (ratio, max |err|)``; a step refused by the
        error test sets ``self._refused = "error"`` (the controller picks the retry)."""
        if self.heat is not None:  # noise: the Laplacian through its exact semigroup
            rho_new, err, rate = lawson_step(self.table, self.rhs, self.heat, self.rho, dt)
        if self.pair is not None:
            if self.heat is None:
                rho_new, err, rate = embedded_step(self.pair, self.rhs, self.rho, dt, self.backend)
            self._error = self._error_norm(self.rho, rho_new, err)
            if self.controlled and not self._error[0] <= 1.0:  # (too large, or not finite)
                self._refused = "error"
                return rho_new, False
        elif self.heat is None:
            rho_new, rate = rk_step(self.table, self.rhs, self.rho, dt, self.backend)
        if not self.disc.accept(rho_new):  # (the Lagrangian scheme: points in order)
            return rho_new, False
        courant, limit = rate * dt / self.ssp, self.disc.positivity_cfl  # per Euler sub-step
        if limit is not None and courant > limit * (1 + 1e-12):
            if self.config.time.dt is None:
                return rho_new, False
            self._warn_once("cfl", f"fixed dt gives Courant number {courant:.3g} > {limit:g} where "
                                   "mass moves: the outflow limiter keeps positivity, not accuracy")
        self._rate = rate
        return self._checked(rho_new, dt, clip=limit is not None), True

    def _checked(self, state: np.ndarray, dt: float, clip: bool) -> np.ndarray:
        """``state`` after a step, checked: :class:`BlowUpError` unless every value is finite;
        with ``clip`` (the fv schemes) its density through :meth:`_clip_roundoff`."""
        grid = self.disc.density_size(state) if clip else 0
        low, top, positive, finite = self._extremes(state, grid)
        if not finite:
            knob = "time.dt" if self.config.time.dt is not None else "time.cfl"
            raise BlowUpError(f"non-finite density at t={self.t + dt:.6g}; lower {knob}")
        if not clip:
            return state
        return self.disc.clip_density(state, lambda rho: self._clip_roundoff(rho, low, top, positive))

    def _extremes(self, state: np.ndarray, grid: int) -> tuple[float, float, float, bool]:
        """``(min, max, smallest positive)`` of the first ``grid`` values of ``state`` (flattened)
        and whether all of it is finite: one compiled pass
        (:func:`solvers.core.kernels_numba.extremes`) or numpy."""
        flat = state.reshape(-1)
        if self._extremes_kernel is not None:
            return self._extremes_kernel(flat, grid)
        finite = bool(np.isfinite(flat).all())
        d = flat[:grid]
        if not d.size or not finite:
            return math.inf, -math.inf, math.inf, finite
        above = d[d > 0.0]
        return float(d.min()), float(d.max()), float(above.min()) if above.size else math.inf, finite

    def _clip_roundoff(self, rho: np.ndarray, low: float, top: float, positive: float) -> np.ndarray:
        """Set round-off negatives (a cell emptied exactly by the outflow limiter) and densities
        below ``FLUSH_FRACTION * max(rho)`` to 0 (``low``, ``top``, ``positive``: the least, the
        largest and the least positive value of ``rho``).

        The limited Euler sub-steps are non-negative in exact arithmetic; the subtraction
        ``rho - outflow`` may leave ``-eps * |flux|``. Anything larger is a bug: raise.
        """
        if low < -1e-12 * max(top, 1e-300):
            raise FloatingPointError(f"fv density went negative (min {low:.3g}) at t={self.t}")
        floor = FLUSH_FRACTION * top
        if low >= 0.0 and positive >= floor:  # nothing negative, nothing to flush
            return rho
        return np.where(rho < floor, 0.0, rho)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    def snapshot(self) -> Snapshot:
        """The snapshot of the current state; warns once if the density goes negative."""
        position = self.position
        return self._snapshot(position, self.disc.diagnostics(position.state, self.config.atoms))

    def snapshots(self, records: Sequence[RunState]) -> list[Snapshot]:
        """The snapshots of ``records`` (kept by the time loop as it stepped on), their
        diagnostics computed together where the discretisation can (``diagnostics_batch``)."""
        diags = self.disc.diagnostics_batch([p.state for p in records], self.config.atoms)
        return [self._snapshot(p, d) for p, d in zip(records, diags)]

    def _snapshot(self, p: RunState, diag: Diagnostics) -> Snapshot:
        if diag.min_rho < 0:
            self._warn_once("negative", f"density negative at t={p.t:.6g} (min rho = "
                                        f"{diag.min_rho:.3g}); use time.scheme = \"fv\"")
        tail_limit = self.disc.spectral_tail_limit()
        if tail_limit is not None and diag.tail_energy > tail_limit:
            self._warn_once("tail", f"under-resolved at t={p.t:.6g}: top third of the modes "
                                    f"holds {diag.tail_energy:.2g} of the power")
        rho = self.disc.snapshot_density(p.state, self.rho)  # (a copy of the live state)
        return Snapshot(p.t, p.step, p.dt, rho, diag, n_rejected=p.n_rejected,
                        time_error=p.time_error, position=p if p.behind is None else p.behind)

    @property
    def position(self) -> RunState:
        """Where the run is now: the current step state with the solver's bookkeeping and the
        discretisation's own state (the state array is replaced by each step, never changed in
        place); its density and atoms are read out by :meth:`with_density` where needed."""
        rho = self.rho
        return RunState(self.t, self.n_steps, self.dt, rho, self.n_rejected, self.time_error,
                        math.nan if self._dt_next is None else float(self._dt_next), self._mass,
                        self.disc.resume_extras(), phase=self.disc.phase(rho),
                        exact=self.exact_resume and rho.dtype.kind == "f")

    def with_density(self, position: RunState) -> RunState:
        """``position`` (taken since the last hand-over) with the grid density and the Dirac
        atoms of its state, as the archive keeps a step state behind an interpolated record."""
        return replace(position, density=self.disc.density(position.state),
                       atoms=self.disc.atoms(position.state))

    def between(self, before: RunState, t: float) -> np.ndarray:
        """The state at ``t`` in ``(before.t, self.t]`` on the step from ``before`` to the current
        state (``before`` with its density: :meth:`with_density`), by the discretisation's
        ``interpolate`` (density on straight lines; a measure's masses too, atoms along their
        path)."""
        if t >= self.t:
            return self.rho
        w = (t - before.t) / (self.t - before.t)
        return self.disc.interpolate(before.rho, before.atoms, self.rho, w)
