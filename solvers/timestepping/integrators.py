"""Explicit Runge-Kutta integrators as validated data.

Each scheme is a Butcher table with its order and a citation; strong-stability-preserving
(SSP) schemes also carry their Shu-Osher form, which is what is executed: every stage is a
convex combination of forward-Euler steps of size ``dt * beta_ik / alpha_ik <= dt``, so a
spatial scheme that is positive under forward Euler at a given CFL number stays positive.
The tables are checked against the order conditions (up to order 4) when they are built.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial
from typing import Callable

import numpy as np

from solvers.core.backend import resolve_backend

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
        plan of the compiled whole steps (:mod:`solvers.core.kernels_circle_steps_numba`)."""
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
        a, b, c = self.a, self.b, self.c
        conds = [(b.sum(), 1.0), (b @ c, 1 / 2), (b @ c**2, 1 / 3), (b @ a @ c, 1 / 6),
                 (b @ c**3, 1 / 4), (b @ (c * (a @ c)), 1 / 8), (b @ a @ c**2, 1 / 12),
                 (b @ a @ a @ c, 1 / 24)]
        n_conds = {1: 1, 2: 2, 3: 4, 4: 8}[self.order]
        return [abs(lhs - rhs) for lhs, rhs in conds[:n_conds]]

    def shu_osher_as_butcher(self) -> tuple[np.ndarray, np.ndarray]:
        """Butcher ``(A, b)`` implied by the Shu-Osher form (used to validate it)."""
        s = self.stages
        coef = np.zeros((s + 1, s))  # stage vectors in terms of dt L(u^(k))
        for i in range(s):
            coef[i + 1] = self.alpha[i, : i + 1] @ coef[: i + 1] + np.eye(s)[: i + 1].T @ self.beta[i, : i + 1]
        return coef[:s], coef[s]

    def validate(self) -> "ButcherTable":
        if max(self.order_residuals()) > 1e-14:
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


def _t(rows: list[list[float]]) -> np.ndarray:
    return np.array(rows, dtype=float)


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


def get_integrator(name: str) -> ButcherTable:
    try:
        return INTEGRATORS[name]
    except KeyError:
        raise ValueError(f"time.integrator: unknown integrator {name!r}; use one of "
                         f"{', '.join(INTEGRATORS)}") from None


def rk_step(table: ButcherTable, rhs: Rhs, u: np.ndarray, dt: float,
            backend: str | None = None) -> tuple[np.ndarray, float]:
    """One explicit RK step of ``du/dt = rhs(u)[0]``.

    Returns the new state and the largest ``max_rate`` reported by any stage (the caller
    checks its CFL condition against it). ``backend`` (:mod:`solvers.core.backend`; None:
    the default) runs the Shu-Osher stage combinations as one compiled pass each (numba,
    for states of at least ``FUSE_MIN_SIZE`` values) or as numpy array expressions; the two
    give bitwise the same result.
    """
    if table.alpha is not None:
        return _shu_osher_step(table, rhs, u, dt, resolve_backend(backend))
    rhs = partial(rhs, dt=dt)
    ks, speed = [], 0.0
    for i in range(table.stages):
        stage = u + dt * sum(table.a[i, j] * ks[j] for j in range(i) if table.a[i, j] != 0.0)
        k, s = rhs(stage)
        ks.append(k)
        speed = max(speed, s)
    return u + dt * sum(bi * k for bi, k in zip(table.b, ks)), speed


FUSE_MIN_SIZE = 8192  # below it (S^1 grids) the compiled call's dispatch costs more than it saves


def _fusable(*arrays: np.ndarray) -> bool:
    first = arrays[0]
    return first.size >= FUSE_MIN_SIZE and all(
        a.dtype == np.float64 and a.flags.c_contiguous and a.shape == first.shape for a in arrays)


def _shu_osher_step(table: ButcherTable, rhs: Rhs, u: np.ndarray, dt: float,
                    backend: str = "numpy") -> tuple[np.ndarray, float]:
    whole = getattr(rhs, "fused_step", None) if backend == "numba" else None
    if whole is not None and table.stage_plan is not None:  # every stage in one compiled call
        return whole(u, dt, table.stage_plan)
    stages, speed = [u], 0.0
    fused = getattr(rhs, "fused_stage", None) if backend == "numba" else None
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
