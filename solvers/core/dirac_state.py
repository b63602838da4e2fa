"""The Dirac state: a grid density plus Dirac atoms, and what happens to them between steps.

A measure ``mu = rho dsigma + sum_i m_i delta_{x_i}`` moves by a Runge-Kutta step of its
right-hand side (the density by finite volumes, the atoms by their velocity); between two
accepted steps, never inside one, :meth:`DiracState.after_step` runs the events that change the
atoms, each conserving the whole mass to round-off and keeping ``rho >= 0``:

1. :meth:`~DiracState.settle`: the density (a copy), the atoms with their positions put back on
   the manifold, and the flow at the faces that the events read;
2. every ``capture_every`` steps, :meth:`~DiracState.capture_atoms`: a concentrated basin of the
   density becomes a new Dirac atom (identities ``next_id, next_id + 1, ...``);
3. :meth:`~DiracState.absorb_density`: the density in an atom's cell joins the atom when that
   cell has no outflow;
4. :meth:`~DiracState.merge_atoms`: atoms closer than a cell become one.

The base holds what every manifold shares: that sequence, the capture cadence, the atom
identities (``next_id``, never reused), the whole mass ``total`` of the CFL floor and the
starting state (:meth:`~DiracState.prepare_state`). A manifold implements the abstract methods
(its geometry, its cells) and names its cadence in the class statement::

    class RingDiracState(DiracState, capture_every=10):
        ...

The implementer's instance also sets, before :meth:`prepare_state` runs, ``config``
(:class:`solvers.model.params.RunConfig`) and ``layout`` (:class:`~solvers.core.measure.MeasureLayout`)
through :meth:`start_dirac_state`. A compiled fast path may override :meth:`after_step`, asking
:meth:`capture_due` for the cadence; :meth:`resume_extras` and :meth:`restore_state` keep
``next_id`` and ``total`` for an exact resume, which a subclass turns on with ``restorable``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from solvers.core.discretization import bound_mass
from solvers.core.measure import DiracAtoms, MeasureDiscretization, MeasureLayout
from solvers.model.params import RunConfig


class DiracState(MeasureDiscretization):
    """Grid density plus Dirac atoms in one flat state, with the events between steps
    (a :class:`~solvers.core.measure.MeasureDiscretization`).

    Parameters
    ----------
    capture_every : int
        A class parameter, given in the subclass statement (``class X(DiracState,
        capture_every=10)``): the steps between two capture checks (``after_step(state, step)``
        captures when ``step % capture_every == 0``). Absorption and merging run after every step.

    Attributes
    ----------
    config : RunConfig
    layout : MeasureLayout
        The flat state's layout ``[rho, positions, masses, ids]``.
    next_id : int
        The identity of the next new atom (above every identity the run has used).
    total : float
        The whole mass ``M`` (:func:`~solvers.core.discretization.bound_mass`) that the CFL floor
        scales with: a face moves mass when its upwind density exceeds ``time.cfl_floor`` of the
        mean ``M / |manifold|``.
    """

    capture_every: ClassVar[int]
    config: RunConfig
    total: float

    def __init_subclass__(cls, capture_every: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if capture_every is not None:
            if int(capture_every) < 1:
                raise ValueError(f"capture_every: a positive number of steps (got {capture_every})")
            cls.capture_every = int(capture_every)

    def start_dirac_state(self, config: RunConfig, layout: MeasureLayout) -> None:
        """The counters of a new state: ``config``, ``layout``, ``total = 1``, ``next_id = 0``
        (:meth:`prepare_state` or :meth:`restore_state` sets them for the run)."""
        self.config, self.layout = config, layout
        self.total, self.next_id = 1.0, 0

    # -- the state --------------------------------------------------------------------------
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """The flat state from a grid density and atoms (:meth:`starting_state`), atoms closer
        than a cell merged; sets ``next_id`` past the atoms' identities and ``total``."""
        rho, atoms = self.starting_state(rho0, atoms0, fresh)
        self.next_id = int(atoms.ids.max()) + 1 if atoms.count else 0
        state = self.layout.pack(rho, self.merge_atoms(atoms))
        self.set_total(bound_mass(self.total_mass(state)))
        return state

    def set_total(self, total: float) -> None:
        """The whole mass ``M`` of the CFL floor (a subclass passes it on to compiled kernels)."""
        self.total = total

    def resume_extras(self) -> tuple[float, float]:
        """``(next_id, total)``: what continues a run bitwise besides the flat state
        (:meth:`restore_state`; used where the subclass sets ``restorable``)."""
        return float(self.next_id), float(self.total)

    def restore_state(self, state: np.ndarray, extras: tuple) -> np.ndarray:
        """The flat state of an exact resume, as archived; ``next_id`` and ``total`` from
        :meth:`resume_extras` ``extras``."""
        self.next_id = int(extras[0])
        self.set_total(float(extras[1]))
        return np.asarray(state, dtype=float)

    def capture_due(self, step: int) -> bool:
        """Whether the events after step ``step`` (counted from 1) check for capture."""
        return step % self.capture_every == 0

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """The events after accepted step ``step`` (the module docstring's order): the new flat
        state, with ``next_id`` past any new atom's identity."""
        rho, atoms, flow = self.settle(state)
        if self.capture_due(step):
            rho, atoms = self.capture_atoms(rho, atoms, flow)
            self.reserve_ids(atoms)
        rho, atoms = self.absorb_density(rho, atoms, flow)
        return self.layout.pack(rho, self.merge_atoms(atoms))

    # -- what a manifold provides (and total_mass, between of the measure's contract) -------
    @abstractmethod
    def starting_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None,
                       fresh: bool) -> tuple[np.ndarray, DiracAtoms]:
        """``(rho, atoms)`` a run starts from: the grid density (cell averages when ``fresh``)
        and ``atoms0`` (None: the config's ``kind = "atoms"`` atoms when ``fresh``, else none),
        positions on the manifold."""

    @abstractmethod
    def settle(self, state: np.ndarray) -> tuple[np.ndarray, DiracAtoms, Any]:
        """``(rho, atoms, flow)`` of a flat state after a step: the density (a copy, shape
        ``layout.grid_shape``), the atoms with positions put back on the manifold, and the
        flow of the whole measure at the faces as the events read it."""

    @abstractmethod
    def capture_atoms(self, rho: np.ndarray, atoms: DiracAtoms, flow: Any) -> tuple[np.ndarray, DiracAtoms]:
        """Concentrated basins of ``rho`` turned into new atoms (identities from ``next_id``)
        appended to ``atoms``; ``(rho, atoms)`` unchanged when there are none."""

    @abstractmethod
    def absorb_density(self, rho: np.ndarray, atoms: DiracAtoms, flow: Any) -> tuple[np.ndarray, DiracAtoms]:
        """The density of each atom's cell added to the atom where that cell has no outflow."""

    @abstractmethod
    def merge_atoms(self, atoms: DiracAtoms) -> DiracAtoms:
        """Atoms closer than a cell merged (mass summed, the heavier one's identity)."""
