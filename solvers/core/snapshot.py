"""What the time loop hands to trackers (archive, progress bar) at each snapshot, and the
:class:`Tracker` contract of what it hands them to."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Diagnostics:
    """Diagnostics of one grid state (docs/math.md §1, paper section 4).

    Attributes
    ----------
    mass : float
        ``int rho dsigma`` (sum of cell averages times cell weights).
    min_rho, max_rho : float
        Extremes of the grid density.
    energy : float
        ``E = (1/(2 beta)) iint K drho drho + (1/2) int v drho`` with the run's kernel convention.
    dissipation : float
        ``int |g|^2 drho`` (``dE/dt = s * dissipation``).
    transport_rate : float
        ``||d rho/dt||_1`` of the discrete scheme: how much mass moves per unit time.
    max_support_velocity : float
        max |velocity| over cells holding mass (density above ``1e-8 M/|S|``), the paper's rule.
    tail_energy : float
        Fraction of ``sum |rho_k|^2`` in the top third of the resolved modes.
    n_atoms : int
        Number of detected atoms (clusters).
    atom_mass : ndarray, shape (n_atoms,)
        Masses of the whole atoms (basins, :mod:`solvers.core.atoms`); S^1: sorted by position.
    atom_position : ndarray, shape (n_atoms,) on S^1, (n_atoms, 3) on S^2
        S^1: angle in [0, 2 pi); S^2: unit vector (centre of mass of the atom's core).
    atom_core_mass : ndarray, shape (n_atoms,)
        Mass within the core radius (default ``1/(2 beta)``, Theorem 3.5) of the position.
    diffuse_mass : float
        Mass in no atom.
    theorem_3_5_bound : float
        ``16/(16 + 3 e^{11/8})`` (paper Theorem 3.5, docs/math.md §5), stored beside ``max_atom_mass``.
    dirac_mass, dirac_position, dirac_id : ndarray, shape (n_dirac,), (n_dirac,) or (n_dirac, 3), (n_dirac,)
        The Dirac atoms of a measure-valued state (``[atoms] representation = "dirac"``; empty
        otherwise): exact masses, positions and identities (birth order, never reused). With
        Dirac atoms ``mass`` and ``energy`` are those of the whole measure, and ``atom_mass`` the
        basins of the measure (a Dirac atom plus the density draining into it).
    atom_labels : ndarray of int, shape (cells,), optional
        The atom (index into ``atom_mass``) each grid cell belongs to, -1 for diffuse cells,
        cells flattened in the order of ``rho.ravel()`` (the archive's mass budget per atom).
    free_energy : float
        ``F = E - s nu int rho log rho`` with noise ``nu = model.noise`` (docs/noise.md §1);
        not given (NaN): ``energy`` (``F = E`` without noise).
    """

    mass: float
    min_rho: float
    max_rho: float
    energy: float
    dissipation: float
    transport_rate: float
    max_support_velocity: float
    tail_energy: float
    n_atoms: int
    atom_mass: np.ndarray
    atom_position: np.ndarray
    atom_core_mass: np.ndarray = field(default_factory=lambda: np.zeros(0))
    diffuse_mass: float = float("nan")
    theorem_3_5_bound: float = 16.0 / (16.0 + 3.0 * float(np.exp(11.0 / 8.0)))
    dirac_mass: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dirac_position: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dirac_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    atom_labels: np.ndarray | None = None
    free_energy: float = float("nan")

    def __post_init__(self) -> None:
        if self.free_energy != self.free_energy:  # NaN: not given, F = E without noise
            object.__setattr__(self, "free_energy", float(self.energy))

    @property
    def max_atom_mass(self) -> float:
        return float(self.atom_mass.max()) if self.atom_mass.size else 0.0


@dataclass(frozen=True)
class Stationarity:
    """Which stop criteria held at a snapshot, over the window ``stationary_window_time``
    before it (see :class:`solvers.model.params.TimeParams`).

    window : the snapshots span the whole window; transport : the stationarity measure stayed
    under ``stationary_tol``; atoms : same atom identities throughout; masses : every atom's
    mass and the diffuse mass changed by at most ``stationary_mass_rate`` per unit time.
    """

    window: bool = False
    transport: bool = False
    atoms: bool = False
    masses: bool = False

    @property
    def held(self) -> bool:
        return self.window and self.transport and self.atoms and self.masses


@dataclass(frozen=True)
class Snapshot:
    """One saved state.

    Attributes
    ----------
    t : float
        Time.
    step : int
        Number of accepted steps since t = 0 (continues across --resume); for a snapshot
        interpolated between two steps, the steps taken so far (the one that crossed ``t``
        included).
    dt : float
        The step the controller proposes next (a resume from a step state starts with it;
        an interpolated snapshot's resume uses ``position.dt``).
    rho : ndarray, shape (N,)
        Grid density (S^1: cell averages at cell centres ``theta_i = 2 pi i / N``).
    diagnostics : Diagnostics
    stationarity : Stationarity or None
        The stop criteria at this snapshot (None: not evaluated).
    n_rejected : int
        Steps the solver refused and retried shorter so far (the error test of an embedded
        pair, the CFL condition, Lagrangian points out of order), counted from the solver's start.
    time_error : float
        Sum over the accepted steps so far of the local time error estimate ``max_i |err_i|``
        of an embedded pair (the state's units; 0 with other integrators).
    position : RunState or None
        The step state a resume from this snapshot continues from: the state behind ``rho``
        itself, or for a snapshot interpolated between two steps (``output.snapshot_mode =
        "interpolate"``) the state at the start of the step that crossed ``t`` (its ``density``
        and ``atoms`` given). None: not known (a snapshot made outside the time loop).
    """

    t: float
    step: int
    dt: float
    rho: np.ndarray
    diagnostics: Diagnostics
    stationarity: Stationarity | None = None
    n_rejected: int = 0
    time_error: float = 0.0
    position: RunState | None = None

    @property
    def restart(self) -> RunState | None:
        """The step state behind an interpolated snapshot (``position`` when its time is not
        ``t``); None: ``rho`` is a step state."""
        p = self.position
        return p if p is not None and p.t != self.t else None

    @property
    def resume(self) -> RunState | None:
        """``position`` where a resume can continue from it exactly (``position.exact``)."""
        p = self.position
        return p if p is not None and p.exact else None


@dataclass(frozen=True)
class RunState:
    """Where a run is: a state of the time loop with everything a resume needs to take bitwise
    the uninterrupted run's steps from it.

    The solver gives its current one (:attr:`solvers.timestepping.simulation.Solver.position`);
    the time loop queues one per output time; a :class:`Snapshot` carries the step state behind
    it (``position``); the archive writes it (``restart_rho`` and its description,
    :mod:`solvers.io.restart`; the resume slots, :mod:`solvers.io.resume_slots`) and reads it
    back.

    Attributes
    ----------
    t, step, dt : float, int, float
        Time, accepted steps and the step the solver proposes next.
    state : ndarray, shape (L,) or the grid's shape
        The solver's state as it steps (a grid density; a measure-valued or default-method
        state: its flat array, e.g. the cells ``[X, m, A, ids]`` and the phase tag). Never
        written in place (each step makes a new one).
    n_rejected, time_error : int, float
        The solver's bookkeeping at this state (steps refused, the summed time error estimate).
    dt_next : float
        The error controller's next step (NaN: not chosen yet).
    mass : float
        The whole mass the step bounds use (:func:`solvers.core.discretization.bound_mass`,
        computed once at the start of the run).
    extras : tuple of float
        The discretisation's own state (``resume_extras()``: e.g. the next atom identity, the
        mass floors, the time of the last step), restored by ``restore_state(state, extras)``.
    rule : tuple or ndarray or None
        The stop rule's state once it judged the snapshot (its window of records, the atom
        identities it links; :meth:`solvers.timestepping.stop_rule.StopRule.state`, packed by
        :func:`~solvers.timestepping.stop_rule.pack_state` as an archive keeps it).
    density : ndarray, grid shape, or None
        The grid density of a measure-valued ``state`` (None: ``state`` is the grid density).
    atoms : DiracAtoms or None
        The Dirac atoms of a measure-valued state (:class:`solvers.core.measure.DiracAtoms`,
        identities included); None for a grid state (or not read out).
    phase : float or None
        The hand-over's phase of ``state`` (the default S^1 method: 0 spectral, 1 cells);
        None: one method throughout.
    exact : bool
        Whether the discretisation can restore ``state`` exactly (``restorable``, as the solver
        sets it); else a resume starts from the archived density and atoms.
    behind : RunState or None
        For a state between two steps (an interpolated output time): the step state a resume
        continues from. None: this is a step state.
    """

    t: float
    step: int
    dt: float
    state: np.ndarray
    n_rejected: int = 0
    time_error: float = 0.0
    dt_next: float = float("nan")
    mass: float = float("nan")
    extras: tuple = ()
    rule: Any = None
    density: np.ndarray | None = None
    atoms: Any = None
    phase: float | None = None
    exact: bool = False
    behind: RunState | None = None

    @property
    def rho(self) -> np.ndarray:
        """The grid density: ``density``, or ``state`` for a grid state."""
        return self.state if self.density is None else self.density


class Tracker:
    """What the time loop hands snapshots to (the archive writer, a progress line, a list).

    A subclass implements ``__call__(snapshot)``; :meth:`track_many` gets the snapshots the loop
    made together, in time order, and calls it on each unless a subclass does better (the
    archive writer decides once per batch whether to write a block). A plain callable is wrapped
    by :func:`as_tracker`.
    """

    def __call__(self, snapshot: Snapshot) -> object:
        raise NotImplementedError

    def track_many(self, snapshots: Sequence[Snapshot]) -> None:
        """Track ``snapshots`` (in time order): each in turn."""
        for snapshot in snapshots:
            self(snapshot)


class CallTracker(Tracker):
    """A plain callable ``f(snapshot)`` as a :class:`Tracker`."""

    def __init__(self, call: Callable[[Snapshot], object]) -> None:
        self.call = call

    def __call__(self, snapshot: Snapshot) -> object:
        return self.call(snapshot)


def as_tracker(tracker: Tracker | Callable[[Snapshot], object]) -> Tracker:
    """``tracker`` itself when it is a :class:`Tracker`, else wrapped in :class:`CallTracker`."""
    return tracker if isinstance(tracker, Tracker) else CallTracker(tracker)
