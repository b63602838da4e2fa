"""Explicit Runge-Kutta integrators as validated data.

Each scheme is a Butcher table with its order and a citation; strong-stability-preserving
(SSP) schemes also carry their Shu-Osher form, which is what is executed: every stage is a
convex combination of forward-Euler steps of size ``dt * beta_ik / alpha_ik <= dt``, so a
spatial scheme that is positive under forward Euler at a given CFL number stays positive.
The tables are checked against the order conditions (up to order 5, one per rooted tree,
:mod:`solvers.timestepping.order_conditions`) when they are built.

Embedded pairs (:class:`EmbeddedPair`, :data:`PAIRS`) carry a second weight vector ``b_hat``
of a lower order ``p_hat`` on the same stages: ``u_new - u_hat = dt sum (b - b_hat)_i k_i``
estimates the local error of the lower-order solution, which the time loop
(:mod:`solvers.timestepping.simulation`) controls while it advances with the main solution
(local extrapolation, Hairer, Norsett & Wanner, Solving ODEs I, II.4). :func:`embedded_step`
takes such a step; :func:`rk_step` takes the main solution alone (a fixed ``time.dt``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, partial
from typing import Callable

import numpy as np

from solvers.core.backend import resolve_backend
from solvers.timestepping.order_conditions import (  # noqa: F401 (the tables' checks; re-exported)
    ORDER_TOL,
    order_conditions,
    order_residuals,
    rooted_trees,
)

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is a dependency; numpy runs the stages then
    njit = None

Rhs = Callable[..., tuple[np.ndarray, float]]


@dataclass(frozen=True)
class ButcherTable:
    """Explicit RK scheme ``(A, b, c)``, optionally with Shu-Osher coefficients.

    ``alpha``, ``beta`` (stages x stages): stage ``i+1`` is
    ``sum_k alpha[i, k] u^(k) + dt beta[i, k] L(u^(k))`` (``u^(0) = u^n``); the last row gives
    ``u^{n+1}``.
    """

    name: str
    order: int
    a: np.ndarray
    b: np.ndarray
    citation: str
    alpha: np.ndarray | None = None
    beta: np.ndarray | None = None

    @property
    def c(self) -> np.ndarray:
        return self.a.sum(axis=1)

    @property
    def stages(self) -> int:
        return self.b.size

    @property
    def ssp_coefficient(self) -> float:
        """``C``: every stage is a convex combination of forward-Euler steps of size at most
        ``dt / C``, so a forward-Euler property at step ``k`` (positivity at Courant 1/2, a
        contractive relaxation) holds for steps up to ``C k``. 1 for non-SSP tables."""
        if self.alpha is None:
            return 1.0
        return float(np.min(np.diag(self.alpha) / np.diag(self.beta)))

    @cached_property
    def stage_plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """``(beta_ii, alpha_ii, alpha_ij, j)`` per stage (``j = 0``: no earlier stage) when every
        Shu-Osher stage draws on at most one earlier stage besides ``u^(0)``, else None: the
        plan of the compiled whole steps (:mod:`solvers.circle.grid.kernels_steps_numba`)."""
        if self.alpha is None:
            return None
        rows = [[j for j in range(1, i + 1) if self.alpha[i, j] != 0.0] for i in range(self.stages)]
        if any(len(r) > 1 for r in rows):
            return None
        term = np.array([r[0] if r else 0 for r in rows], dtype=np.int64)
        weight = np.array([self.alpha[i, r[0]] if r else 0.0 for i, r in enumerate(rows)])
        return (np.ascontiguousarray(np.diag(self.beta)), np.ascontiguousarray(np.diag(self.alpha)),
                weight, term)

    def order_residuals(self) -> list[float]:
        """Residuals of the order conditions up to ``self.order`` (all ~0 if valid)."""
        return order_residuals(self.a, self.b, self.order)

    def shu_osher_as_butcher(self) -> tuple[np.ndarray, np.ndarray]:
        """Butcher ``(A, b)`` implied by the Shu-Osher form (used to validate it)."""
        s = self.stages
        coef = np.zeros((s + 1, s))  # stage vectors in terms of dt L(u^(k))
        for i in range(s):
            coef[i + 1] = self.alpha[i, : i + 1] @ coef[: i + 1] + np.eye(s)[: i + 1].T @ self.beta[i, : i + 1]
        return coef[:s], coef[s]

    def validate(self) -> "ButcherTable":
        if max(self.order_residuals()) > ORDER_TOL:
            raise ValueError(f"{self.name}: order conditions fail: {self.order_residuals()}")
        if np.any(np.triu(self.a) != 0):
            raise ValueError(f"{self.name}: not explicit")
        if self.alpha is not None:
            a, b = self.shu_osher_as_butcher()
            if not (np.allclose(a, self.a, atol=1e-15) and np.allclose(b, self.b, atol=1e-15)):
                raise ValueError(f"{self.name}: Shu-Osher form does not match the Butcher table")
            if np.any(self.alpha < 0) or np.any(self.beta < 0):
                raise ValueError(f"{self.name}: Shu-Osher coefficients must be non-negative (SSP)")
            if np.any(self.beta != np.diag(np.diag(self.beta))) or np.any(np.diag(self.alpha) <= 0):
                raise ValueError(f"{self.name}: each slope must be used in one Euler sub-step only "
                                 "(diagonal beta, positive diagonal alpha)")
        return self


@dataclass(frozen=True)
class EmbeddedPair(ButcherTable):
    """An embedded pair: the scheme ``(A, b, c)`` of order ``order`` (it advances the solution)
    and on the same stages the weights ``b_hat`` of order ``order_hat < order``: the local error
    estimate of a step is ``dt sum_i (b_i - b_hat_i) k_i`` (:func:`embedded_step`), of order
    ``dt^(order_hat + 1)``, which the step-size controller uses with the exponent
    ``1 / (order_hat + 1)``. An SSP pair also carries the main scheme's Shu-Osher form
    (``alpha``, ``beta``), which is what is executed."""

    b_hat: np.ndarray | None = None
    order_hat: int = 0

    @property
    def error_weights(self) -> np.ndarray:
        """``b - b_hat``: ``err = dt sum_i e_i k_i``."""
        return self.b - self.b_hat

    def embedded_residuals(self) -> list[float]:
        """Residuals of the order conditions of ``b_hat`` up to ``order_hat``."""
        return order_residuals(self.a, self.b_hat, self.order_hat)

    def validate(self) -> "EmbeddedPair":
        super().validate()
        if self.b_hat is None or np.shape(self.b_hat) != self.b.shape:
            raise ValueError(f"{self.name}: b_hat must have one weight per stage")
        if not 1 <= self.order_hat < self.order:
            raise ValueError(f"{self.name}: the embedded order must be in [1, {self.order})")
        if max(self.embedded_residuals()) > ORDER_TOL:
            raise ValueError(f"{self.name}: the embedded weights fail their order conditions: "
                             f"{self.embedded_residuals()}")
        if not np.any(self.error_weights != 0.0):
            raise ValueError(f"{self.name}: b_hat equals b (no error estimate)")
        return self


def _t(rows: list[list[float]]) -> np.ndarray:
    return np.array(rows, dtype=float)


def _q(rows: list) -> np.ndarray:
    """Exact fractions (``"-56/15"``) to floats, correctly rounded."""
    def one(x):
        return [one(y) for y in x] if isinstance(x, list) else float(Fraction(x))
    return np.array(one(rows), dtype=float)


def ssprk_s2(stages: int) -> ButcherTable:
    """Optimal second-order SSP scheme with ``s`` stages, SSP coefficient ``s - 1``: ``s - 1``
    forward-Euler steps of ``dt / (s - 1)``, then the average of ``u^n`` (weight 1/s) and one more
    such step (Ketcheson, SIAM J. Sci. Comput. 30 (2008), eq. 3.3). The Butcher table is
    derived from the Shu-Osher form (and the order conditions checked)."""
    s = stages
    alpha, beta = np.zeros((s, s)), np.zeros((s, s))
    for i in range(s - 1):
        alpha[i, i], beta[i, i] = 1.0, 1.0 / (s - 1)
    alpha[s - 1, 0], alpha[s - 1, s - 1], beta[s - 1, s - 1] = 1.0 / s, (s - 1) / s, 1.0 / s
    shell = ButcherTable(f"ssprk{s}_2", 2, np.zeros((s, s)), np.zeros(s), "", alpha, beta)
    a, b = shell.shu_osher_as_butcher()
    return ButcherTable(shell.name, 2, a, b, f"SSP-RK({s},2), C = {s - 1}: Ketcheson, SIAM J. "
                        "Sci. Comput. 30 (2008)", alpha, beta)


INTEGRATORS: dict[str, ButcherTable] = {t.name: t.validate() for t in [
    ButcherTable("euler", 1, _t([[0]]), _t([1]), "forward Euler", _t([[1]]), _t([[1]])),
    ButcherTable("ssprk2", 2, _t([[0, 0], [1, 0]]), _t([0.5, 0.5]),
                 "Heun / SSP-RK2: Shu & Osher, J. Comput. Phys. 77 (1988)",
                 _t([[1, 0], [0.5, 0.5]]), _t([[1, 0], [0, 0.5]])),
    ButcherTable("ssprk3", 3, _t([[0, 0, 0], [1, 0, 0], [0.25, 0.25, 0]]), _t([1 / 6, 1 / 6, 2 / 3]),
                 "SSP-RK3: Shu & Osher, J. Comput. Phys. 77 (1988), eq. 2.18",
                 _t([[1, 0, 0], [0.75, 0.25, 0], [1 / 3, 0, 2 / 3]]),
                 _t([[1, 0, 0], [0, 0.25, 0], [0, 0, 2 / 3]])),
    ButcherTable("rk4", 4, _t([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]]),
                 _t([1 / 6, 1 / 3, 1 / 3, 1 / 6]), "classical RK4: Kutta, Z. Math. Phys. 46 (1901)"),
    ssprk_s2(10),
]}


# Embedded pairs: a step is error-controlled (time.rtol, time.atol) unless time.dt is fixed.
PAIRS: dict[str, EmbeddedPair] = {t.name: t.validate() for t in [
    EmbeddedPair(
        "bs32", 3, _q([[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "3/4", 0, 0], ["2/9", "1/3", "4/9", 0]]),
        _q(["2/9", "1/3", "4/9", 0]),
        "Bogacki-Shampine 3(2): Bogacki & Shampine, Appl. Math. Lett. 2 (1989) 321-325",
        b_hat=_q(["7/24", "1/4", "1/3", "1/8"]), order_hat=2),
    EmbeddedPair(
        "dopri5", 5, _q([
            [0, 0, 0, 0, 0, 0, 0],
            ["1/5", 0, 0, 0, 0, 0, 0],
            ["3/40", "9/40", 0, 0, 0, 0, 0],
            ["44/45", "-56/15", "32/9", 0, 0, 0, 0],
            ["19372/6561", "-25360/2187", "64448/6561", "-212/729", 0, 0, 0],
            ["9017/3168", "-355/33", "46732/5247", "49/176", "-5103/18656", 0, 0],
            ["35/384", 0, "500/1113", "125/192", "-2187/6784", "11/84", 0]]),
        _q(["35/384", 0, "500/1113", "125/192", "-2187/6784", "11/84", 0]),
        "Dormand-Prince 5(4): Dormand & Prince, J. Comput. Appl. Math. 6 (1980) 19-26",
        b_hat=_q(["5179/57600", 0, "7571/16695", "393/640", "-92097/339200", "187/2100", "1/40"]),
        order_hat=4),
    # SSPRK(4,3), C = 2 (four Euler sub-steps of dt/2, the third averaged with u^n), with the
    # second-order embedded weights 1/4 recommended by Fekete et al. (their SSPRK(4,3)/(4,2) pair,
    # the embedded method itself SSP): for the positivity-limited finite volumes
    EmbeddedPair(
        "ssprk3_2", 3, _q([[0, 0, 0, 0], ["1/2", 0, 0, 0], ["1/2", "1/2", 0, 0], ["1/6", "1/6", "1/6", 0]]),
        _q(["1/6", "1/6", "1/6", "1/2"]),
        "SSP-RK(4,3) with embedded order 2 (C = 2): Kraaijevanger, BIT 31 (1991); Spiteri & Ruuth, "
        "SIAM J. Numer. Anal. 40 (2002); the pair: Fekete, Conde & Shadid, J. Comput. Appl. Math. "
        "412 (2022) 114325, doi:10.1016/j.cam.2022.114325",
        _q([[1, 0, 0, 0], [0, 1, 0, 0], ["2/3", 0, "1/3", 0], [0, 0, 0, 1]]),
        _q([["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, "1/6", 0], [0, 0, 0, "1/2"]]),
        b_hat=_q(["1/4", "1/4", "1/4", "1/4"]), order_hat=2),
]}


def get_integrator(name: str) -> ButcherTable:
    """The table (or :class:`EmbeddedPair`) named ``name``."""
    table = INTEGRATORS.get(name) or PAIRS.get(name)
    if table is None:
        raise ValueError(f"time.integrator: unknown integrator {name!r}; use one of "
                         f"{', '.join([*INTEGRATORS, *PAIRS])}")
    return table


def rk_step(table: ButcherTable, rhs: Rhs, u: np.ndarray, dt: float,
            backend: str | None = None) -> tuple[np.ndarray, float]:
    """One explicit RK step of ``du/dt = rhs(u)[0]``.

    Returns the new state and the largest ``max_rate`` reported by any stage (the caller
    checks its CFL condition against it). ``backend`` (:mod:`solvers.core.backend`; None:
    the default) runs the Shu-Osher stage combinations as one compiled pass each (numba,
    for states of at least ``FUSE_MIN_SIZE`` values) or as numpy array expressions, and the
    Butcher stage sums of small flat states (:data:`BUTCHER_FUSE_MAX_SIZE`) as one compiled
    pass each (:func:`_butcher_stage`); the two give bitwise the same result.
    """
    if table.alpha is not None:
        return _shu_osher_step(table, rhs, u, dt, resolve_backend(backend))
    ks, speed, slopes = _butcher_slopes(table, rhs, u, dt, resolve_backend(backend))
    if slopes is not None:
        return _butcher_stage(u, float(dt), table.b, slopes, table.stages, False, True), speed
    return u + dt * sum(bi * k for bi, k in zip(table.b, ks)), speed


# Butcher stages of 1-D float64 states up to this size run compiled (one pass per stage instead of
# two numpy operations per term: the S^1 cells and spectral states, 7-stage dopri5); larger ones
# (S^2 grids) stay numpy, whose passes are not the cost there
BUTCHER_FUSE_MAX_SIZE = 65536


def _butcher_slopes(table: ButcherTable, rhs: Rhs, u: np.ndarray, dt: float, backend: str = "numpy"
                    ) -> tuple[list[np.ndarray], float, np.ndarray | None]:
    """The stage slopes ``k_i`` of an explicit Butcher step, the largest ``max_rate`` and, where
    the stages ran compiled (``backend`` numba, a small flat float64 state), the slopes as the
    rows of one array (stages, size), else None. Stage ``i`` is ``u + dt * (0 + a_i0 k_0 + ...)``
    over the nonzero ``a_ij`` in order (Python's ``sum``), compiled or not."""
    rhs = partial(rhs, dt=dt)
    ks, speed = [], 0.0
    slopes = None
    if (backend == "numba" and njit is not None and u.ndim == 1 and u.dtype == np.float64
            and u.size <= BUTCHER_FUSE_MAX_SIZE):
        slopes = np.empty((table.stages, u.size))
        u = np.ascontiguousarray(u)
    for i in range(table.stages):
        if slopes is not None:
            stage = _butcher_stage(u, float(dt), table.a[i], slopes, i, True, True)
        else:
            stage = u + dt * sum(table.a[i, j] * ks[j] for j in range(i) if table.a[i, j] != 0.0)
        k, s = rhs(stage)
        if slopes is not None:
            if k.shape != u.shape or k.dtype != np.float64:  # numpy from here on
                slopes = None
            else:
                slopes[i] = k
        ks.append(k)
        speed = max(speed, s)
    return ks, speed, slopes


if njit is not None:
    @njit(cache=True)
    def _butcher_stage(u, dt, weights, slopes, count, skip_zero, add):  # pragma: no cover - compiled
        """``u + dt * (0 + w_0 k_0 + ... + w_{count-1} k_{count-1})`` (``add``; else without
        ``u +``), the terms with ``w_j == 0`` left out where ``skip_zero``: the operations of the
        numpy expression (Python's ``sum`` starts from the integer 0), element by element, so
        bitwise its result. ``slopes``: (stages, size), the ``k_j`` as rows."""
        size = u.shape[0]
        acc = np.zeros(size)  # each element's sum, term after term (rows in order: SIMD lanes)
        for j in range(count):
            w = weights[j]
            if w != 0.0 or not skip_zero:
                for q in range(size):
                    acc[q] = acc[q] + w * slopes[j, q]
        out = np.empty(size)
        for q in range(size):
            out[q] = u[q] + dt * acc[q] if add else dt * acc[q]
        return out
else:  # pragma: no cover
    _butcher_stage = None


def embedded_step(pair: EmbeddedPair, rhs: Rhs, u: np.ndarray, dt: float,
                  backend: str | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """One step of an embedded pair: ``(u_new, err, max_rate)``.

    ``u_new`` is the main (order ``p``) solution, as :func:`rk_step` gives it; ``err =
    u_new - u_hat = dt sum_i (b_i - b_hat_i) k_i`` the difference to the embedded solution (the
    local error estimate). An SSP pair runs its Shu-Osher stages (each slope limited with its own
    Euler sub-step, as :func:`rk_step`) one at a time, keeping their slopes: not the compiled
    whole steps, which do not return them. No stage is reused across steps (no FSAL): the state
    may change between steps (a measure's atoms, cells).
    """
    if pair.alpha is not None:
        ks: list[np.ndarray] = []
        new, speed = _shu_osher_step(pair, rhs, u, dt, resolve_backend(backend), slopes=ks)
    else:
        ks, speed, slopes = _butcher_slopes(pair, rhs, u, dt, resolve_backend(backend))
        if slopes is not None:  # compiled: the same operations as below
            weights = pair.error_weights
            return (_butcher_stage(u, float(dt), pair.b, slopes, pair.stages, False, True),
                    _butcher_stage(u, float(dt), weights, slopes, pair.stages, True, False), speed)
        new = u + dt * sum(bi * k for bi, k in zip(pair.b, ks))
    err = dt * sum(e * k for e, k in zip(pair.error_weights, ks) if e != 0.0)
    return new, err, speed


FUSE_MIN_SIZE = 8192  # below it (S^1 grids) the compiled call's dispatch costs more than it saves


def _fusable(*arrays: np.ndarray) -> bool:
    first = arrays[0]
    return first.size >= FUSE_MIN_SIZE and all(
        a.dtype == np.float64 and a.flags.c_contiguous and a.shape == first.shape for a in arrays)


def _shu_osher_step(table: ButcherTable, rhs: Rhs, u: np.ndarray, dt: float,
                    backend: str = "numpy", slopes: list | None = None) -> tuple[np.ndarray, float]:
    """The Shu-Osher stages of ``table``; ``slopes``: a list that receives each stage's slope
    ``L(u^(i))`` (the Butcher ``k_i``: beta is diagonal), which the compiled whole steps and
    fused stages do not return, so they are not used then."""
    compiled = backend == "numba" and slopes is None
    whole = getattr(rhs, "fused_step", None) if compiled else None
    if whole is not None and table.stage_plan is not None:  # every stage in one compiled call
        return whole(u, dt, table.stage_plan)
    stages, speed = [u], 0.0
    fused = getattr(rhs, "fused_stage", None) if compiled else None
    for i in range(table.stages):
        # u^(0) + sum_j alpha_ij (u^(j) - u^(0)): the weights of a convex combination such as
        # (1/3, 2/3) do not sum to 1 in floating point, which would leak mass every step
        terms = [j for j in range(1, i + 1) if table.alpha[i, j] != 0.0]
        c = dt * table.beta[i, i]
        # stage i is forward Euler of size dt * beta/alpha from u^(i): limit fluxes with it
        euler_dt = dt * table.beta[i, i] / table.alpha[i, i]
        if fused is not None and len(terms) <= 1:  # transport and combination, one call
            j = terms[0] if terms else 0
            new, s = fused(stages[i], euler_dt, stages[0], c,
                           table.alpha[i, j] if terms else 0.0, stages[j])
        else:
            k, s = rhs(stages[i], dt=euler_dt)
            if slopes is not None:
                slopes.append(k)
            if backend == "numba" and _fusable(stages[0], k, *(stages[j] for j in terms)):
                new = _fused_stage(stages, k, c, [(table.alpha[i, j], j) for j in terms])
            else:
                new = stages[0] + c * k
                for j in terms:
                    new = new + table.alpha[i, j] * (stages[j] - stages[0])
        speed = max(speed, s)
        stages.append(new)
    return stages[-1], speed


def _fused_stage(stages: list[np.ndarray], k: np.ndarray, c: float, terms: list[tuple[float, int]]) -> np.ndarray:
    """The stage of :func:`_shu_osher_step` in compiled passes (same operations, same order)."""
    from solvers.core import kernels_stages as ks
    from solvers.core.backend import compute_threads

    threads = compute_threads(k.size) > 1
    shu_osher_stage = ks.shu_osher_stage_threads if threads else ks.shu_osher_stage
    add_scaled_difference = ks.add_scaled_difference_threads if threads else ks.add_scaled_difference
    u0 = stages[0].reshape(-1)
    alpha, j = terms[0] if terms else (0.0, 0)
    new = shu_osher_stage(u0, float(c), k.reshape(-1), float(alpha), stages[j].reshape(-1), bool(terms))
    for alpha, j in terms[1:]:
        new = add_scaled_difference(new, float(alpha), stages[j].reshape(-1), u0)
    return new.reshape(stages[0].shape)
