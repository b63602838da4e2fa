"""Exponential Runge-Kutta steps for the noisy dynamics (docs/noise.md §5).

With noise the equation is ``du/dt = F(u) + nu Delta u``: the transport ``F`` of the scheme's
right-hand side and a Laplacian that is diagonal in the grid's basis, whose semigroup
``E(tau) = exp(tau nu Delta)`` and ``phi`` functions the discretisation gives exactly
(``disc.heat``: :mod:`solvers.circle.grid.heat`, :mod:`solvers.sphere.grid.heat`). The Laplacian
is integrated exactly: the step is limited by the transport alone, never by ``nu N^2``.

- ``rk4`` (the spectral schemes' integrator) becomes its exponential counterpart ETDRK4 (Cox &
  Matthews 2002, :func:`etdrk4_step`): fourth order, and every stationary state of the
  semi-discrete equation is a fixed point of the step, so a run settles on it to round-off.
- Every other table runs as a Lawson method: the table applied to ``v = E(-t) u`` (Lawson, SIAM
  J. Numer. Anal. 4 (1967) 372-380), which in ``u`` reads

      Y_i     = E(c_i h) u_n + h sum_j a_ij E((c_i - c_j) h) F(Y_j),
      u_{n+1} = E(h) u_n     + h sum_j b_j  E((1 - c_j) h) F(Y_j),

  and for an embedded pair ``err = h sum_j (b_j - b_hat_j) E((1 - c_j) h) F(Y_j)``; the table's
  order for the transport, but its fixed points miss the stationary states by ``O(h^p)`` (in the
  stiff modes most). Only non-negative times ``c_i - c_j`` may appear (``E`` of a negative time
  is the backward heat equation): :func:`check_abscissae`.

SSP tables run in their Shu-Osher form (Isherwood, Grant & Gottlieb, SIAM J. Numer. Anal. 56
(2018) 3276-3307: "integrating factor SSP methods"): stage ``i + 1`` is
``sum_k alpha_ik E((c_{i+1} - c_k) h) u^(k) + h beta_ii E((c_{i+1} - c_i) h) F(u^(i))``, a sum of
``E`` of non-negative times applied to non-negative multiples of forward-Euler steps. ``E`` is a
positive, mass-preserving matrix (the fv Laplacian's exponential), so wherever the Euler steps
keep ``u >= 0`` (the fv scheme under its CFL condition) so does the Lawson step, and the mass is
kept because both parts keep it.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from typing import Callable

import numpy as np

from solvers.core.discretization import Discretization
from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError
from solvers.timestepping.integrators import ButcherTable, EmbeddedPair, Rhs

Heat = Callable[[np.ndarray, float], np.ndarray]
ABSCISSA_TOL = 1e-14


def stage_times(table: ButcherTable) -> np.ndarray:
    """The times (in steps) of ``u^(0) .. u^(s)``: ``c_0 .. c_{s-1}`` and 1 for the new state."""
    return np.append(table.c, 1.0)


def check_abscissae(table: ButcherTable) -> None:
    """Raise :class:`ConfigError` if the Lawson form of ``table`` needs the heat semigroup at a
    negative time: a stage that draws on a later stage (``c_i < c_j`` with ``a_ij != 0``, or in
    the Shu-Osher form ``alpha_ik != 0`` for a later ``u^(k)``)."""
    times = stage_times(table)
    coupling = np.vstack([table.a, table.b])[1:] if table.alpha is None else table.alpha
    for i, row in enumerate(coupling):
        later = [k for k in np.flatnonzero(row) if times[i + 1] < times[k] - ABSCISSA_TOL]
        if later:
            raise ConfigError("time.integrator", f"\"{table.name}\" with model.noise > 0: its stage "
                              f"at time {times[i + 1]:.3g} draws on the stage at {times[later[0]]:.3g}, "
                              "which would run the heat equation backwards; use ssprk10_2 or "
                              "ssprk2 (fv), rk4, bs32 or dopri5")


def noise_semigroup(config: RunConfig, disc: Discretization, table: ButcherTable) -> Heat | None:
    """The heat semigroup ``disc.heat`` the solver steps with (None without noise); raises
    :class:`ConfigError` for a scheme without one or a table that :func:`check_abscissae` refuses."""
    if config.model.noise == 0.0:
        return None
    heat = disc.heat
    if heat is None:
        raise ConfigError("time.scheme", f"\"{config.time.scheme}\" has no heat step for model.noise "
                          "> 0; use \"spectral\" (or leave time.scheme out), or \"fv\" on S1")
    check_abscissae(table)
    return heat


def lawson_step(table: ButcherTable, rhs: Rhs, heat: Heat, u: np.ndarray, dt: float
                ) -> tuple[np.ndarray, np.ndarray | None, float]:
    """One Lawson step: ``(u_new, err, max_rate)``; ``err`` is None unless ``table`` is an
    :class:`EmbeddedPair`. Shu-Osher form for SSP tables without an embedded pair."""
    if table.name == "rk4":  # its exponential counterpart: stationary states kept exactly
        new, speed = etdrk4_step(rhs, heat, u, dt)
        return new, None, speed
    if table.alpha is not None and not isinstance(table, EmbeddedPair):
        new, speed = _shu_osher(table, rhs, heat, u, dt)
        return new, None, speed
    return _butcher(table, rhs, heat, u, dt)


def _combine(heat: Heat, groups: dict[float, np.ndarray], dt: float) -> np.ndarray:
    """``sum over shifts d of E(d dt) groups[d]`` (one semigroup application per shift)."""
    out = None
    for shift, part in groups.items():
        term = heat(part, max(shift, 0.0) * dt) if shift > ABSCISSA_TOL else part
        out = term if out is None else out + term
    return out


def _butcher(table: ButcherTable, rhs: Rhs, heat: Heat, u: np.ndarray, dt: float
             ) -> tuple[np.ndarray, np.ndarray | None, float]:
    """The Butcher form (module docstring), the terms of equal time shift summed first."""
    rhs, c, ks, speed = partial(rhs, dt=dt), table.c, [], 0.0
    for i in range(table.stages):
        stage = _weighted(heat, u, c[i], ks, table.a[i, :i], c[i] - c[:i], dt) if i else u
        k, s = rhs(stage)
        ks.append(k)
        speed = max(speed, s)
    new = _weighted(heat, u, 1.0, ks, table.b, 1.0 - c, dt)
    if not isinstance(table, EmbeddedPair):
        return new, None, speed
    return new, _weighted(heat, None, 1.0, ks, table.error_weights, 1.0 - c, dt), speed


def _weighted(heat: Heat, u: np.ndarray | None, time: float, ks: list[np.ndarray],
              weights: np.ndarray, shifts: np.ndarray, dt: float) -> np.ndarray:
    """``E(time dt) u + dt sum_j w_j E(shift_j dt) k_j`` (without ``u`` when it is None), one
    semigroup application per distinct shift."""
    groups: dict[float, np.ndarray] = defaultdict(lambda: 0.0)
    if u is not None:
        groups[float(time)] = u
    for w, shift, k in zip(weights, shifts, ks):
        if w != 0.0:
            groups[float(shift)] = groups[float(shift)] + (dt * w) * k
    return _combine(heat, groups, dt)


def etdrk4_step(rhs: Rhs, heat: object, u: np.ndarray, dt: float) -> tuple[np.ndarray, float]:
    """One step of Cox & Matthews' ETDRK4 (J. Comput. Phys. 176 (2002) 430-455, eq. 26-29), the
    exponential counterpart of the classical RK4: ``(u_new, max_rate)``. With ``L = nu Delta``
    and ``N`` the transport (``rhs``), ``phi_k = phi_k(h L)``, ``E = exp(h L / 2)``:

        a = E u + (h/2) phi_1(hL/2) N(u),     b = E u + (h/2) phi_1(hL/2) N(a),
        c = E a + (h/2) phi_1(hL/2) (2 N(b) - N(u)),
        u_new = exp(hL) u + h [f_1 N(u) + 2 f_2 (N(a) + N(b)) + f_3 N(c)],

    ``f_1 = phi_1 - 3 phi_2 + 4 phi_3``, ``f_2 = phi_2 - 2 phi_3``, ``f_3 = 4 phi_3 - phi_2``. A
    stationary state (``L u + N(u) = 0``) is a fixed point of the step, for any ``h``:
    ``(h/2) phi_1(hL/2) L = E - 1`` and ``f_1 + 4 f_2 + f_3 = phi_1``."""
    rhs, half = partial(rhs, dt=dt), 0.5 * dt
    nu_, s0 = rhs(u)
    eu = heat(u, half)
    a = eu + half * heat.phi(nu_, half, 1)
    na, s1 = rhs(a)
    b = eu + half * heat.phi(na, half, 1)
    nb, s2 = rhs(b)
    c = heat(a, half) + half * heat.phi(2.0 * nb - nu_, half, 1)
    nc, s3 = rhs(c)
    nab = na + nb
    new = heat(u, dt) + dt * (heat.phi(nu_, dt, 1) + heat.phi(-3.0 * nu_ + 2.0 * nab - nc, dt, 2)
                              + heat.phi(4.0 * (nu_ - nab + nc), dt, 3))
    return new, max(s0, s1, s2, s3)


def _shu_osher(table: ButcherTable, rhs: Rhs, heat: Heat, u: np.ndarray, dt: float
               ) -> tuple[np.ndarray, float]:
    """The Shu-Osher form (module docstring): stage ``i + 1`` from ``u^(0)`` and the earlier
    stages in differences ``alpha_ij (E u^(j) - E u^(0))`` (weights that do not sum to 1 in
    floating point would leak mass, as in :func:`solvers.timestepping.integrators.rk_step`); each
    slope limited with its own Euler sub-step ``dt beta_ii / alpha_ii``."""
    times, stages, speed = stage_times(table), [u], 0.0
    for i in range(table.stages):
        target = times[i + 1]
        k, s = rhs(stages[i], dt=dt * table.beta[i, i] / table.alpha[i, i])
        speed = max(speed, s)
        groups: dict[float, np.ndarray] = defaultdict(lambda: 0.0)
        groups[float(target)] = u
        groups[float(target - times[i])] = groups[float(target - times[i])] + (dt * table.beta[i, i]) * k
        for j in range(1, i + 1):
            a = table.alpha[i, j]
            if a != 0.0:
                groups[float(target - times[j])] = groups[float(target - times[j])] + a * stages[j]
                groups[float(target)] = groups[float(target)] - a * u
        stages.append(_combine(heat, groups, dt))
    return stages[-1], speed
