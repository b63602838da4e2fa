"""Branches of noisy stationary states in one parameter: the driver of ``meanfield continue`` (docs/noise.md §3).

:func:`continue_states` solves the stationary problem of a config at its parameter value
(:mod:`solvers.studies.stationary`), follows the branch to the target value with
:mod:`solvers.studies.continuation`, locates folds and branch points, switches at each simple
branch point (both directions of the new branch, down to ``depth`` generations) and adds points
at the requested parameter values. Positive parameters (noise, beta, mass) are continued in
their logarithm, ``perceptron.scale`` as it is; the unknowns are the basis coefficients over the
uniform density ``rho_0``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from solvers.model.limits import BETA_RANGE, MASS_RANGE, NOISE_MAX
from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError
from solvers.studies.continuation import (Equation, Steps, locate, solve_at, step, switch_direction,
                                          tangent, correct, bp_test)
from solvers.studies.stationary import (PARAMETERS, StationaryProblem, build_problem, newton,
                                        rotation_invariant, uniform_state)

log = logging.getLogger(__name__)
SCALE_MAX = 1e6  # perceptron.scale: a factor on omega

LOG_PARAMETERS = ("model.noise", "model.beta", "initial.mass")
VALID_RANGES = {"model.noise": (0.0, NOISE_MAX), "model.beta": BETA_RANGE,
                "initial.mass": MASS_RANGE, "perceptron.scale": (-SCALE_MAX, SCALE_MAX)}


@dataclass
class Record:
    """One point of a branch: parameter ``value``, coefficients ``x``, arclength ``s``;
    ``kind``: ``""``, ``"requested"`` (an ``--at`` value or an end), ``"branch_point"``, ``"fold"``."""

    branch: int
    s: float
    value: float
    x: np.ndarray
    kind: str = ""


@dataclass
class Result:
    """Everything :func:`continue_states` found (records ordered by branch, then arclength)."""

    problem: StationaryProblem
    key: str
    records: list[Record] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # per branch: the branch it left (-1)
    stops: list[str] = field(default_factory=list)  # per branch: why it ended


class Mapping:
    """The equation in scaled variables ``u = x / rho_0``, ``q = log p`` (or ``p``)."""

    def __init__(self, problem: StationaryProblem, key: str) -> None:
        self.problem, self.key = problem, key
        self.log = key in LOG_PARAMETERS
        self.ref = problem.rho0
        self._cache: tuple[float, StationaryProblem] | None = None

    def q(self, p: float) -> float:
        return float(np.log(p)) if self.log else float(p)

    def p(self, q: float) -> float:
        return float(np.exp(q)) if self.log else float(q)

    def at(self, q: float) -> StationaryProblem:
        if self._cache is None or self._cache[0] != q:
            self._cache = (q, self.problem.at(self.key, self.p(q)))
        return self._cache[1]

    def equation(self, fd_step: float) -> Equation:
        def derivative(u: np.ndarray, q: float) -> np.ndarray:
            dp = self.p(q) if self.log else 1.0  # dp/dq
            return self.at(q).parameter_derivative(self.key, self.ref * u) * dp / self.ref

        return Equation(lambda u, q: self.at(q).residual(self.ref * u) / self.ref,
                        lambda u, q: self.at(q).jacobian(self.ref * u), fd_step, derivative)


def start_state(problem: StationaryProblem) -> np.ndarray:
    """Coefficients of a stationary state at the problem's own parameters: Newton from the
    uniform density (exact for pure attention), else down a ladder of noise values from 100x."""
    x0 = uniform_state(problem)
    try:
        return newton(problem, x0)[0]
    except RuntimeError:
        if rotation_invariant(problem.config):
            raise
    nu = problem.noise
    x = x0
    for value in nu * np.logspace(2, 0, 41):
        x = newton(problem.at("model.noise", value), x)[0]
    return x


def archive_start(problem: StationaryProblem) -> np.ndarray | None:
    """Coefficients of the density of ``initial.path`` (``initial.kind = "archive"``) as
    Newton's start, None for another kind or where the problem's grid is not the run's.

    Raises
    ------
    ConfigError
        (naming ``initial.path``) for a missing archive or one of another manifold.
    """
    config = problem.config
    if config.initial.kind != "archive":
        return None
    from solvers.io.state import initial_density

    rho = np.asarray(initial_density(config), dtype=float).reshape(-1)
    return problem.basis.project(rho) if rho.size == problem.basis.phi.shape[0] else None


def _newton_or_none(problem: StationaryProblem, x: np.ndarray) -> np.ndarray | None:
    try:
        return newton(problem, x)[0]
    except RuntimeError:
        log.warning("Newton from initial.path did not converge: starting from the uniform density")
        return None


@dataclass
class Job:
    """A branch to follow: start point, tangent, the branch it leaves, its generation."""

    z: np.ndarray
    t: np.ndarray
    parent: int
    depth: int
    first: Record | None = None


class Continuer:
    """State of one continuation (see :func:`continue_states`)."""

    def __init__(self, problem: StationaryProblem, key: str, to: float, at: tuple[float, ...],
                 steps: Steps, max_points: int, max_branches: int, depth: int) -> None:
        self.map = Mapping(problem, key)
        self.eq = self.map.equation(steps.fd_step)
        self.steps, self.max_points, self.max_branches, self.depth = steps, max_points, max_branches, depth
        q0, q1 = self.map.q(problem.value(key)), self.map.q(to)
        self.q0, self.q1 = q0, q1
        self.lo, self.hi = min(q0, q1), max(q0, q1)
        self.at_q = sorted(self.map.q(v) for v in at)
        self.result = Result(problem, key)
        self.jobs: list[Job] = []

    def record(self, branch: int, s: float, z: np.ndarray, kind: str = "") -> Record:
        rec = Record(branch, s, self.map.p(z[-1]), self.map.ref * z[:-1], kind)
        self.result.records.append(rec)
        return rec

    def _crossings(self, branch: int, s: float, z: np.ndarray, z_new: np.ndarray, ds: float) -> bool:
        """Requested values and the interval's ends crossed by the step; True at an end."""
        qa, qb = float(z[-1]), float(z_new[-1])
        for v in self.at_q + [self.lo, self.hi]:
            end = v in (self.lo, self.hi)
            if (qa - v) * (qb - v) < 0 or (qb == v and qa != v):
                frac = (v - qa) / (qb - qa)
                u = solve_at(self.eq, z[:-1] + frac * (z_new[:-1] - z[:-1]), v, self.steps)
                if u is not None:
                    self.record(branch, s + frac * ds, np.append(u, v), "requested")
                if end:
                    return True
        return False

    def _tests(self, branch: int, s: float, z: np.ndarray, t: np.ndarray, z_new: np.ndarray,
               t_new: np.ndarray, ds: float, depth: int) -> None:
        if t[-1] * t_new[-1] < 0:
            found = locate(self.eq, "fold", z, t, ds, self.steps)
            if found is not None and self.lo <= found.z[-1] <= self.hi:
                rec = self.record(branch, s + float(t @ (found.z - z)), found.z, "fold")
                log.info("fold at %s = %.12g", self.map.key, rec.value)
        if bp_test(self.eq, z, t)[0] * bp_test(self.eq, z_new, t_new)[0] < 0:
            found = locate(self.eq, "branch_point", z, t, ds, self.steps)
            if found is not None and self.lo <= found.z[-1] <= self.hi:
                rec = self.record(branch, s + float(t @ (found.z - z)), found.z, "branch_point")
                log.info("branch point at %s = %.12g", self.map.key, rec.value)
                if depth < self.depth:
                    self._switch(found.z, found.t, branch, depth + 1)

    def _switch(self, z: np.ndarray, t: np.ndarray, parent: int, depth: int) -> None:
        """Queue both directions of the new branch at the branch point ``z``."""
        w = switch_direction(self.eq, z, t)
        for sign in (1.0, -1.0):
            h = self.steps.ds
            while h >= 1e3 * self.steps.ds_min:
                z1, _ = correct(self.eq, z + sign * h * w, z, sign * w, h, self.steps)
                if z1 is not None:
                    self.jobs.append(Job(z1, tangent(self.eq, z1, sign * w), parent, depth,
                                         Record(-1, h, 0.0, z)))
                    break
                h *= 0.5

    def follow(self, job: Job) -> None:
        """Follow one branch from ``job`` until it leaves the interval or ``max_points``."""
        branch = len(self.result.parents)
        self.result.parents.append(job.parent)
        z, t, s, ds = job.z, job.t, 0.0, self.steps.ds
        if job.first is not None:  # a new branch starts at its branch point
            self.record(branch, 0.0, job.first.x, "branch_point")
            s = job.first.s
        self.record(branch, s, z)
        reason = f"{self.max_points} points (--max-points)"
        for _ in range(self.max_points):
            try:
                z_new, t_new, ds_taken, ds = step(self.eq, z, t, ds, self.steps)
            except RuntimeError as err:
                reason = str(err)
                break
            self._tests(branch, s, z, t, z_new, t_new, ds_taken, job.depth)
            if self._crossings(branch, s, z, z_new, ds_taken):
                reason = "reached the end of the parameter interval"
                break
            s += ds_taken
            z, t = z_new, t_new
            self.record(branch, s, z)
        self.result.stops.append(reason)
        log.debug("branch %d: %s", branch, reason)

    def run(self, x0: np.ndarray) -> Result:
        z0 = np.append(x0 / self.map.ref, self.q0)
        e = np.zeros(z0.size)
        e[-1] = 1.0 if self.q1 >= self.q0 else -1.0
        t0 = tangent(self.eq, z0, e)
        if t0[-1] * e[-1] < 0:
            t0 = -t0
        self.jobs.append(Job(z0, t0, -1, 0))
        if self.q0 in self.at_q:
            self.record(0, 0.0, z0, "requested")
        while self.jobs and len(self.result.parents) < self.max_branches:
            self.follow(self.jobs.pop(0))
        self.result.records.sort(key=lambda r: (r.branch, r.s))
        return self.result


def continue_states(config: RunConfig, key: str, to: float, at: tuple[float, ...] = (),
                    steps: Steps = Steps(), max_points: int = 400, max_branches: int = 12,
                    depth: int = 1, degree: int | None = None, resolution: int | None = None,
                    x0: np.ndarray | None = None) -> Result:
    """Continue the stationary states of ``config`` in parameter ``key`` from its value to ``to``.

    Parameters
    ----------
    key : str
        One of :data:`solvers.studies.stationary.PARAMETERS`.
    to : float
        The other end of the parameter interval.
    at : tuple of float
        Parameter values where every branch gets a point (solved at exactly that value).
    depth : int
        Generations of branch switching (0: the starting branch only).
    degree, resolution : int, optional
        Unknowns' largest degree and the grid (:func:`~solvers.studies.stationary.build_problem`).
    x0 : ndarray, optional
        Starting coefficients (default: :func:`start_state`).
    """
    if key not in PARAMETERS:
        raise ConfigError("--param", f"must be one of {', '.join(PARAMETERS)} (got {key!r})")
    problem = build_problem(config, degree=degree, resolution=resolution)
    p0 = problem.value(key)
    lo, hi = VALID_RANGES[key]
    for name, value in [("--to", to)] + [("--at", v) for v in at]:
        if key in LOG_PARAMETERS and not value > 0:
            raise ConfigError(name, f"{key} must stay > 0 (got {value:g})")
        if not (np.isfinite(value) and lo <= value <= hi):
            raise ConfigError(name, f"{key} must be finite and in [{lo:g}, {hi:g}] (got {value:g})")
    if to == p0:
        raise ConfigError("--to", f"equals the config's {key} = {p0:g}: choose another end")
    outside = [v for v in at if not min(p0, to) <= v <= max(p0, to)]
    if outside:
        raise ConfigError("--at", f"{outside[0]:g} is outside the interval from the config's "
                          f"{key} = {p0:g} to --to {to:g}: give values inside it")
    start = archive_start(problem) if x0 is None else None
    with threadpool_limits(1):  # small dense matrices: threaded BLAS only waits (pyproject.toml)
        x = np.asarray(x0, dtype=float) if x0 is not None else \
            _newton_or_none(problem, start) if start is not None else None
        x = start_state(problem) if x is None else x
        return Continuer(problem, key, float(to), tuple(float(v) for v in at), steps, max_points,
                         max_branches, depth).run(x)
