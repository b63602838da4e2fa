"""The ``[atoms] representation = "dirac"`` discretisation on S^1: density plus Dirac atoms.

The state the integrator sees is the flat vector of :class:`solvers.core.measure.MeasureLayout`
(``[rho (N), x (n), m (n), ids (n)]``); the right-hand side moves the density by finite volumes
and the atoms by their velocity (:mod:`solvers.circle.measure.dirac`); the events between steps
(capture every 10 steps, absorption and merging after every step) are those of
:class:`~solvers.circle.measure.dirac_events.CircleDiracState`. With numba
(:class:`solvers.circle.measure.dirac.CompiledCircleField`) a Runge-Kutta stage is two FFTs
and one compiled call, and a step's bookkeeping two FFTs and one call (capture steps aside);
the numpy methods (``_rhs``, the state's event sequence) are the reference.

Step size (docs/math.md §6): ``max_rate`` is the largest ``|u|/h`` over the faces that move mass
and over the atoms (an atom must not cross more than a cell per step, so that it sees the
density it moves through); the Lipschitz bound of the atom-atom and atom-density interaction is
the same ``M max|K''| / beta`` as the density's, with ``M`` the whole mass. A Dirac atom has no
self-interaction, so no face next to it is held back by its own mass.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.circle.measure.dirac import CircleMeasureField, CompiledCircleField, wrap_difference
from solvers.circle.measure.dirac_events import CircleDiracState
from solvers.circle.measure.dirac_diagnostics import compiled_diagnostics, measure_diagnostics
from solvers.circle.grid.discretization import CircleDiscretization
from solvers.circle.grid.fv import transport
from solvers.core.measure import MeasureLayout
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig


class DiracCircleDiscretization(CircleDiracState, CircleDiscretization):
    """Grid density plus Dirac atoms on S^1 (fv scheme, unnormalized attention; the diagnostics
    also for softmax, the snapshots of :class:`~solvers.circle.measure.lagrangian_discretization.LagrangianCircleDiscretization`)."""

    representation = "dirac"

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self.start_dirac_state(config, MeasureLayout(self.shape, 1))
        self.field = CircleMeasureField(self.problem)
        self.limiter = config.time.limiter
        # numba: one compiled call per stage (rhs.fused_stage); numpy: the reference _rhs
        self.compiled = CompiledCircleField(self.problem, self.limiter) \
            if CompiledCircleField.available(self.problem) else None
        self.rhs = self._rhs if self.compiled is None else self.compiled
        self.set_total(self.total)

    @staticmethod
    def between(x_b: np.ndarray, x_a: np.ndarray, w: float) -> np.ndarray:
        """Angles at ``w`` on the shorter arc from ``x_b`` to ``x_a``, in ``[0, 2 pi)``."""
        return np.mod(x_b + w * wrap_difference(x_a, x_b), 2 * np.pi)

    @property
    def fields(self) -> CircleMeasureField | CompiledCircleField:
        """The measure's fields: compiled when available, else the numpy reference ``field``."""
        return self.field if self.compiled is None else self.compiled

    # -- the state ------------------------------------------------------------------------
    def total_mass(self, state: np.ndarray) -> float:
        """``sum(rho) h + sum(m)``."""
        return float(np.sum(self.density(state)) * self.problem.basis.h + np.sum(self.atoms(state).mass))

    # -- dynamics -------------------------------------------------------------------------
    def _rhs(self, state: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        """``(d state/dt, max_rate)``: fv for the density, ``s dU/dx(x_i)`` for the atoms."""
        b, layout = self.problem.basis, self.layout
        rho, n = layout.density(state), layout.count(state)
        g = layout.grid_size
        x, m = state[g : g + n], state[g + n : g + 2 * n]
        rho_hat = b.forward(rho)
        u = self.field.face_velocity(rho_hat, x, m)
        mean = max(float(np.mean(rho)), 1e-300)
        floor = self.config.time.cfl_floor * self.total / (2 * np.pi) / mean
        drho, rate = transport(rho, u, b.h, self.limiter, dt, floor, scale=self.problem.cell_scale,
                               kinks=self.problem.kinks)
        vx = self.problem.sign * self.field.atom_gradient(rho_hat, x, m)
        if n:
            rate = max(rate, float(np.max(np.abs(vx))) / b.h)
        return np.concatenate([drho, vx, np.zeros(2 * n)]), rate

    # -- diagnostics ----------------------------------------------------------------------
    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return self.diagnostics_batch([state], atoms)[0]

    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams
                          ) -> list[Diagnostics]:
        """:meth:`diagnostics` of each measure state (not the grid path of the base class):
        compiled when the fields are (:func:`~solvers.circle.measure.dirac_diagnostics.compiled_diagnostics`),
        else (and for softmax attention, the Lagrangian state's) the numpy reference
        :func:`~solvers.circle.measure.dirac_diagnostics.measure_diagnostics`."""
        if self.compiled is not None and not self.problem.softmax:
            return compiled_diagnostics(self, states, atoms)
        return [measure_diagnostics(self, state, atoms) for state in states]
