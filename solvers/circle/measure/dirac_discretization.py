"""The ``[atoms] representation = "dirac"`` discretisation on S^1: density plus Dirac atoms.

The state the integrator sees is the flat vector of :class:`solvers.core.measure.MeasureLayout`
(``[rho (N), x (n), m (n), ids (n)]``); the right-hand side moves the density by finite volumes
and the atoms by their velocity (:mod:`solvers.circle.measure.dirac`), and :meth:`after_step` applies
absorption and merging after every accepted step and capture every ``CAPTURE_EVERY`` steps.
With numba (:class:`solvers.circle.measure.dirac.CompiledCircleField`) a Runge-Kutta stage is two FFTs
and one compiled call, and a step's bookkeeping two FFTs and one call (capture steps aside);
the numpy methods (``_rhs``, ``_after_step_reference``) are the reference.

Step size (docs/math.md §6): ``max_rate`` is the largest ``|u|/h`` over the faces that move mass
and over the atoms (an atom must not cross more than a cell per step, so that it sees the
density it moves through); the Lipschitz bound of the atom-atom and atom-density interaction is
the same ``M max|K''| / beta`` as the density's, with ``M`` the whole mass. A Dirac atom has no
self-interaction, so no face next to it is held back by its own mass.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.circle.measure.dirac import (
    CircleMeasureField,
    CompiledCircleField,
    absorb,
    merge,
    wrap_difference,
)
from solvers.circle.measure.dirac_events import capture, may_capture
from solvers.circle.measure.dirac_diagnostics import compiled_diagnostics, measure_diagnostics
from solvers.circle.grid.discretization import CircleDiscretization
from solvers.circle.grid.fv import transport
from solvers.core.discretization import bound_mass
from solvers.core.measure import DiracAtoms, MeasureLayout, MeasureStateAccess, starting_atoms
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig

CAPTURE_EVERY = 10  # steps between two capture checks (the basin detector is the costly part)


class DiracCircleDiscretization(MeasureStateAccess, CircleDiscretization):
    """Grid density plus Dirac atoms on S^1 (fv scheme, unnormalized attention; the diagnostics
    also for softmax, the snapshots of :class:`~solvers.circle.measure.lagrangian_discretization.LagrangianCircleDiscretization`)."""

    representation = "dirac"

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self.config = config
        self.field = CircleMeasureField(self.problem)
        self.layout = MeasureLayout(self.shape, 1)
        self.limiter = config.time.limiter
        self.total = 1.0
        self.next_id = 0
        # numba: one compiled call per stage (rhs.fused_stage); numpy: the reference _rhs
        self.compiled = CompiledCircleField(self.problem, self.limiter) \
            if CompiledCircleField.available(self.problem) else None
        self.rhs = self._rhs if self.compiled is None else self.compiled
        self._set_total(self.total)

    @staticmethod
    def between(x_b: np.ndarray, x_a: np.ndarray, w: float) -> np.ndarray:
        """Angles at ``w`` on the shorter arc from ``x_b`` to ``x_a``, in ``[0, 2 pi)``."""
        return np.mod(x_b + w * wrap_difference(x_a, x_b), 2 * np.pi)

    @property
    def fields(self) -> CircleMeasureField | CompiledCircleField:
        """The measure's fields: compiled when available, else the numpy reference ``field``."""
        return self.field if self.compiled is None else self.compiled

    # -- the state ------------------------------------------------------------------------
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """Flat state from the grid density and the atoms (None: the config's ``kind = "atoms"``
        atoms for a new run, none for a resume)."""
        atoms0 = starting_atoms(self.config.initial, atoms0, fresh, 1,
                                place=lambda c: np.mod(c, 2 * np.pi))
        self.next_id = int(atoms0.ids.max()) + 1 if atoms0.count else 0
        state = self.layout.pack(rho0, merge(atoms0, self.problem.basis.h))
        self._set_total(bound_mass(self.total_mass(state)))
        return state

    def resume_extras(self) -> tuple[float, float]:
        """What a resume restores besides the flat state (:meth:`restore_state`): the next atom
        identity and the whole mass ``M`` of the CFL floor."""
        return float(self.next_id), float(self.total)

    def restore_state(self, state: np.ndarray, extras: tuple) -> np.ndarray:
        """The flat state of an exact resume, as archived (:meth:`resume_extras`: ``extras``)."""
        self.next_id = int(extras[0])
        self._set_total(float(extras[1]))
        return np.asarray(state, dtype=float)

    def _set_total(self, total: float) -> None:
        """The whole mass ``M``: a face moves mass when its upwind density exceeds
        ``time.cfl_floor M / (2 pi)``."""
        self.total = total
        if self.compiled is not None:
            self.compiled.set_mass_floor(self.config.time.cfl_floor * total / (2 * np.pi))

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

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """Absorption and merging (every step) and capture (every ``CAPTURE_EVERY`` steps).

        Compiled path: positions mod 2 pi, the face velocity and the absorption in one call
        (:meth:`CompiledCircleField.absorb_step`; after :func:`capture` on its steps), nothing
        without atoms; :func:`merge` only when two atoms are closer than a cell (it would change
        nothing otherwise). numpy: :meth:`_after_step_reference`.
        """
        if self.compiled is None:
            return self._after_step_reference(state, step)
        h = self.problem.basis.h
        if step % CAPTURE_EVERY == 0:
            new, closest = self._capture_step(state)
        elif self.layout.count(state) == 0:
            return state  # no atom to move, absorb into or merge
        else:
            new, _, closest = self.compiled.absorb_step(state)
        return new if closest >= h else self.layout.pack(self.density(new), merge(self.atoms(new), h))

    def _capture_step(self, state: np.ndarray) -> tuple[np.ndarray, float]:
        """Compiled path, capture steps: :func:`capture` then the compiled absorption; returns the
        new state and the atoms' smallest separation. Where :func:`may_capture` rules a capture
        out this is the absorption step alone (the same face velocity, the same result)."""
        new, u, closest = self.compiled.absorb_step(state)
        atoms = self.atoms(new)  # absorption moves no atom
        if not may_capture(self.density(state), self.compiled.cell_of(atoms.position), u, self.problem,
                           self.config.atoms):
            self.reserve_ids(atoms)  # as _captured
            return new, closest
        rho, atoms, u = self._captured(state, self.compiled, capture_now=True)
        new = self.layout.pack(rho, atoms)
        return new, self.compiled.absorb(new, u)

    def _captured(self, state: np.ndarray, field: CircleMeasureField | CompiledCircleField,
                  capture_now: bool) -> tuple[np.ndarray, DiracAtoms, np.ndarray]:
        """``(rho, atoms, u)``: the density (a copy), the atoms (positions mod 2 pi) and the face
        velocity ``u`` (N,) by ``field``, after :func:`capture` when ``capture_now``."""
        rho, atoms = self.density(state).copy(), self.atoms(state)
        atoms = DiracAtoms(atoms.mass, np.mod(atoms.position, 2 * np.pi), atoms.ids)
        u = field.density_face_velocity(rho, atoms.position, atoms.mass)
        if capture_now:
            rho, atoms = capture(rho, atoms, u, self.problem, self.config.atoms, self.next_id)
            self.reserve_ids(atoms)
        return rho, atoms, u

    def _after_step_reference(self, state: np.ndarray, step: int) -> np.ndarray:
        """:meth:`after_step` by :func:`capture`, :func:`absorb` and :func:`merge` (numpy)."""
        b = self.problem.basis
        rho, atoms, u = self._captured(state, self.field, step % CAPTURE_EVERY == 0)
        rho, atoms = absorb(rho, atoms, u, b.h, self.problem.cell_of(atoms.position))
        return self.layout.pack(rho, merge(atoms, b.h))

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
