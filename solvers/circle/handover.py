"""The default S^1 method (``time.scheme = "auto"``): spectral while smooth, then Lagrangian cells.

A run whose config names no scheme starts pseudo-spectral (:mod:`solvers.circle.grid.spectral`,
exponentially accurate while the density is smooth and resolved: the linear growth rates of
docs/math.md §3.2 to round-off) and hands over, once the density starts to concentrate, to the
measure-valued state of moving cells and Dirac atoms (:mod:`solvers.circle.measure.lagrangian`), which
carries mass exactly, never goes negative and forms atoms where the cells' ends meet. No atom
is ever held in a fixed grid cell, so none is trapped there (the finite-volume grid's ascent
trap: an atom held in one cell pulls on both faces of its own cell and stops moving).

The hand-over happens after the first accepted step at which the spectral state

- loses resolution: the largest coefficient in the top third of the kept modes exceeds
  ``TAIL_TOL`` times the mean (``|rho_hat_k| / rho_hat_0``), or
- nears vacuum: the least point value falls below ``VACUUM_FRACTION`` of the mean density
  (a pseudo-spectral step has no positivity guarantee),

or at the start, when the initial data already fail these tests or hold Dirac atoms. The cells
then start from the exact cell averages of the trigonometric interpolant (mode ``k`` times
``sinc(k h / 2)``), so the hand-over keeps the mass to round-off. Each change of method is kept
in :attr:`SpectralToCells.history` (time, method, reason) for the archive.

The integrator sees a flat state whose last value tags the phase (0: spectral point values
``rho`` (N,); 1: the cells' ``[X, m, A, ids]``); its time derivative is 0, so every stage keeps
it, and a state kept by the snapshot queue from before the hand-over is still read right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from solvers.circle.measure import cell_energy
from solvers.circle.measure import lagrangian as lg
from solvers.circle.grid.discretization import CircleDiscretization
from solvers.circle.measure.lagrangian_discretization import LagrangianCircleDiscretization
from solvers.circle.grid.spectral import dealias_cutoff
from solvers.core.measure import DiracAtoms, MeasureDiscretization, starting_atoms
from solvers.core.snapshot import Diagnostics
from solvers.model.method import DIRAC_CFL_FLOOR
from solvers.model.params import AtomParams, RunConfig

TAIL_TOL = 1e-9  # largest |rho_hat_k| / rho_hat_0 in the top third of the kept modes
VACUUM_FRACTION = 1e-2  # least point value over the mean density
SPECTRAL, CELLS = 0.0, 1.0
# the error test leaves out cell ends whose step passes within CORNER_BAND cells of a perceptron
# corner (ReLU: a_j.x + b_j = 0): the velocity has a kink there, a step across it is first order
# whatever its size, and the controller would shrink every step to the size of one crossing (the demo:
# 3.6x the steps of the uncontrolled run); a crossing moves an end by O(dt^2) once, not
# accumulating, and the atoms themselves are always counted
CORNER_BAND = 0.25
ROUNDOFF = 1e-8  # the spectral phase's error unit is at least this fraction of the mean


class SpectralToCells(MeasureDiscretization):
    """Pseudo-spectral grid, then Lagrangian cells with Dirac atoms (module docstring; the
    :class:`~solvers.core.measure.MeasureDiscretization` contract)."""

    representation = "dirac"
    positivity_cfl = None
    restorable = True  # resume_extras, restore_state

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.smooth = CircleDiscretization(replace(config, time=replace(config.time, scheme="spectral")))
        # the cells count in their CFL condition those denser than 1% of the mean (as the S^1
        # Dirac state's default, time.cfl_floor): thinner ones are kept in order by accept()
        cells_time = replace(config.time, scheme="lagrangian", cfl_floor=DIRAC_CFL_FLOOR)
        self.cells = LagrangianCircleDiscretization(replace(config, time=cells_time))
        self.problem, self.layout = self.cells.problem, self.cells.layout
        self.shape, self.cell_weight = self.cells.shape, self.cells.cell_weight
        # error-controlled steps (time.rtol, time.atol): Dormand-Prince 5(4) in both phases
        self.default_integrator = "dopri5"
        self.citation = (f"{self.smooth.citation} while the density is smooth and resolved, then "
                         f"{self.cells.citation}")
        n = self.shape[0]
        basis = self.problem.basis
        self._k = basis.wavenumbers
        self._top = (self._k > 2 * dealias_cutoff(n) / 3) & (self._k <= dealias_cutoff(n))
        self._sinc = np.sinc(np.arange(n // 2 + 1) / n)
        self.history: list[tuple[float, str, str]] = []
        self._w = lg.gradient_weights(config.model)
        self._corners = np.ascontiguousarray(cell_energy.corners(config.model), dtype=float)  # kinks
        self._band = CORNER_BAND * self.problem.basis.h
        self._no_step = np.zeros(0)
        self.t = 0.0  # the time of the last accepted step (set by the solver: set_time)

    # -- phases -----------------------------------------------------------------------------
    def set_time(self, t: float) -> None:
        """The time of the state :meth:`after_step` sees next (the history's hand-over time)."""
        self.t = t

    @staticmethod
    def phase(state: np.ndarray) -> float:
        return float(state[-1])

    def _why_not_smooth(self, points: np.ndarray) -> str | None:
        """None while the spectral state is smooth and resolved, else why it is not."""
        hat = np.fft.rfft(points)
        mean = abs(hat[0].real)
        tail = float(np.max(np.abs(hat[self._top]))) / max(mean, 1e-300)
        if not np.isfinite(tail) or tail > TAIL_TOL:
            return f"the density concentrates (spectral tail {tail:.2g} > {TAIL_TOL:g})"
        low = float(points.min()) / max(mean / points.size, 1e-300)
        if low < VACUUM_FRACTION:
            return f"the density nears vacuum (min rho / mean = {low:.2g} < {VACUUM_FRACTION:g})"
        return None

    def averages(self, points: np.ndarray) -> np.ndarray:
        """Exact cell averages (N,) of the trigonometric interpolant of ``points`` (N,)."""
        return np.fft.irfft(np.fft.rfft(points) * self._sinc, n=points.size)

    def _to_cells(self, points: np.ndarray, reason: str, t: float) -> np.ndarray:
        avg = np.maximum(self.averages(points), 0.0)
        self.history.append((t, "lagrangian", reason))
        state = self.cells.prepare_state(avg, DiracAtoms.empty(1), fresh=False)
        return np.append(state, CELLS)

    # -- the Discretization contract ----------------------------------------------------------
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """A new run or a resume from grid cell averages ``rho0`` (N,) and atoms: spectral when
        there are no atoms and the density is smooth and resolved, else the cells."""
        atoms = starting_atoms(self.config.initial, atoms0, fresh, 1)
        if atoms.count:
            self.history.append((self.t, "lagrangian", "the initial measure holds Dirac atoms"))
            return np.append(self.cells.prepare_state(rho0, atoms, fresh=False), CELLS)
        points = self.smooth.prepare(np.asarray(rho0, float), fresh=True)
        reason = self._why_not_smooth(points)
        if reason is not None:
            self.history.append((self.t, "lagrangian", "at the start " + reason))
            return np.append(self.cells.prepare_state(rho0, atoms, fresh=False), CELLS)
        self.history.append((self.t, "spectral", "the initial density is smooth and resolved"))
        return np.append(points, SPECTRAL)

    def resume_extras(self) -> tuple[float, ...]:
        """What a resume restores besides the flat state (:meth:`restore_state`): the time of the
        last step and the cells' own (:meth:`LagrangianCircleDiscretization.resume_extras`)."""
        return (float(self.t), *self.cells.resume_extras())

    def restore_state(self, state: np.ndarray, extras: tuple) -> np.ndarray:
        """The flat state of an exact resume, in its phase, as archived (``extras``:
        :meth:`resume_extras`); the method history notes the phase it continues."""
        state = np.asarray(state, dtype=float)
        self.t = float(extras[0])
        self.cells.restore_state(state, tuple(extras[1:]))
        phase = self.phase(state)
        method = "lagrangian" if phase == CELLS else "spectral"
        self.history.append((self.t, method, f"the archived {method} state continues"))
        return state

    def total_mass(self, state: np.ndarray) -> float:
        if self.phase(state) == CELLS:
            return self.cells.total_mass(state[:-1])
        return float(np.sum(state[:-1]) * self.problem.basis.h)

    def rhs(self, state: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        if self.phase(state) == CELLS:  # the tag's derivative 0 written by the cells' own call
            return self.cells.rhs_flat(state, 1)
        d, rate = self.smooth.rhs(state[:-1], dt)
        return np.append(d, 0.0), rate

    def error_scale(self, state: np.ndarray, new: np.ndarray | None = None) -> tuple:
        """What the error test counts: the cells' positions (their own rule), or in the spectral
        phase every point value against the fluctuation ``max |rho - mean|`` with no absolute
        tolerance (floor ``ROUNDOFF`` times the mean): the fluctuation is what grows into the
        atoms, so its relative error is what the atoms inherit (a perturbation of 1e-6 of the
        mean would pass any absolute tolerance in one step)."""
        if self.phase(state) == CELLS:
            return self._cells_error_scale(state[:-1], None if new is None else new[:-1])
        values = state[:-1]
        mean = float(np.mean(values))
        return np.arange(values.size), max(float(np.max(np.abs(values - mean))), ROUNDOFF * abs(mean)), 0.0

    def _cells_error_scale(self, cells: np.ndarray, new: np.ndarray | None) -> tuple[np.ndarray, float]:
        """The points the cells' error test counts: the atoms, and the ends of the cells that
        the CFL condition counts (denser than ``time.cfl_floor`` of the mean: the cells that
        carry the mass; a thin cell's end may move fast through vacuum, and its position error
        moves almost no mass), except those whose step crossed a perceptron corner (``new``:
        the step's result), against the unit 1 rad. One compiled call where numba runs
        (:func:`~solvers.circle.measure.kernels_lagrangian_numba.counted_points`, the same indices)."""
        c = self.cells
        if c.kernels is not None:
            n = cells.size // 4
            step = new if new is not None and new.size == cells.size else self._no_step
            return c.kernels.counted_points(cells, n, step, self._corners, self._band, c.mass_floor,
                                            c.density_floor), 1.0
        st = lg.LagrangianState.unpack(cells)
        full = (st.m > c.mass_floor) & (st.m > c.density_floor * st.lengths())
        counted = full | np.roll(full, 1)
        if self._corners.size and new is not None and new.size == cells.size:
            counted &= ~self._crossing(st.X, new[:st.n])
        return np.nonzero(counted | (st.A > 0))[0], 1.0

    def _crossing(self, x_old: np.ndarray, x_new: np.ndarray) -> np.ndarray:
        """Which points (n,) passed within ``CORNER_BAND`` cells of a corner during the step
        (the corner between their old and new positions, or that close to either)."""
        lo, hi = np.minimum(x_old, x_new) - self._band, np.maximum(x_old, x_new) + self._band
        c = self._corners[None, :]
        turns = np.floor((lo[:, None] - c) / (2 * np.pi)) + 1  # first copy of c above lo
        return np.any(c + 2 * np.pi * turns <= hi[:, None], axis=1)

    def accept(self, state: np.ndarray) -> bool:
        return self.phase(state) != CELLS or self.cells.accept(state[:-1])

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        if self.phase(state) == CELLS:  # the tag carried along (the state itself when nothing happens)
            return self.cells.events_flat(state, 1)
        reason = self._why_not_smooth(state[:-1])
        if reason is None:
            return state
        return self._to_cells(state[:-1], reason, self.t)

    def lipschitz_bound(self, mass: float) -> float:
        return self.problem.lipschitz_bound(mass)

    def spectral_tail_limit(self) -> None:
        return None

    # -- what snapshots and the archive see -------------------------------------------------
    def density(self, state: np.ndarray) -> np.ndarray:
        """Cell averages (N,) of the diffuse part."""
        if self.phase(state) == CELLS:
            return self.cells.density(state[:-1])
        return self.averages(state[:-1])

    def atoms(self, state: np.ndarray) -> DiracAtoms:
        if self.phase(state) == CELLS:
            return self.cells.atoms(state[:-1])
        return DiracAtoms.empty(1)

    def dirac_state(self, state: np.ndarray) -> np.ndarray:
        """The grid Dirac state (density and atoms) of either phase."""
        return self.layout.pack(self.density(state), self.atoms(state))

    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return self.diagnostics_batch([state], atoms)[0]

    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams) -> list[Diagnostics]:
        """Both phases through the grid Dirac state's diagnostics (one atom detector), with the
        energy of the cells' measure itself (:mod:`solvers.circle.measure.cell_energy`; in the spectral
        phase, of the cells it would hand over to): monotone along the flow, where the energy of
        the grid projection was not."""
        diags = self.cells.eulerian.diagnostics_batch([self.dirac_state(s) for s in states], atoms)
        return [replace(d, energy=cell_energy.energy(self._cells_of(s), self.config.model, self._w))
                for d, s in zip(diags, states)]

    def _cells_of(self, state: np.ndarray) -> lg.LagrangianState:
        if self.phase(state) == CELLS:
            return lg.LagrangianState.unpack(state[:-1])
        return lg.from_grid(self.averages(state[:-1]), np.zeros(0), np.zeros(0), np.zeros(0, int))
