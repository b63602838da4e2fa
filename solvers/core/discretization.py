"""A run's spatial discretisation: the contract between a scheme and the solver.

The solver (:mod:`solvers.timestepping.simulation`) and the time loop see only
:class:`Discretization`; each manifold and scheme provides a subclass, and a state that carries
Dirac atoms subclasses :class:`solvers.core.measure.MeasureDiscretization`.
``make_discretization(config)`` picks the class from the config.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams

Rhs = Callable[..., tuple[np.ndarray, float]]
Heat = Callable[[np.ndarray, float], np.ndarray]

BOUND_DIGITS = 10  # significant digits of the whole mass in the step bounds


def bound_mass(mass: float) -> float:
    """The whole mass ``M`` as the step bounds use it (the rate bound ``C / L(M)``, the Dirac
    states' CFL floor): rounded to ``BOUND_DIGITS`` significant digits.

    Mass is conserved to round-off, not bitwise: a resume recomputes ``M`` from the archived
    state and gets the run's mass within a few ulps. Unrounded, that moved the rate bound in
    its last bits (9.000000000000002 against 9.000000000000012), and a resumed run at the rate
    bound then took other steps than the uninterrupted one. Rounded, both propose bitwise the
    same steps (unless ``M`` lies within an ulp of a rounding boundary); the bounds change by
    at most ``5e-10`` relative.
    """
    return float(f"{float(mass):.{BOUND_DIGITS}g}")


class Discretization(abc.ABC):
    """What the solver and the time loop need from a spatial discretisation.

    A subclass moves a *state*: the array the integrator steps. For a grid scheme it is the
    grid density ``rho`` itself (shape :attr:`shape`); a measure-valued scheme steps a flat
    vector (:class:`solvers.core.measure.MeasureDiscretization`) whose grid density and Dirac
    atoms :meth:`density` and :meth:`atoms` read. The solver calls every member below directly.

    A subclass must set, in ``__init__`` or on the class:

    - ``shape`` (tuple of int): shape of the grid density (S^1: (N,); S^2: (nlat, nphi)).
    - ``cell_weight`` (ndarray, shape ``shape``): ``mass = sum(rho * cell_weight)``.
    - ``rhs(state, dt=None) -> (dstate_dt, max_rate)``: the semi-discrete right-hand side;
      ``max_rate`` is the largest ``|u| / cell width`` over faces that move mass (a Courant
      number per unit time; 0 where the scheme has no CFL condition).
    - ``positivity_cfl`` (float or None): largest ``dt * max_rate`` for which an Euler step is
      guaranteed non-negative (None: no guarantee, and no clipping of round-off negatives).
    - ``default_integrator`` (str): the Butcher table when ``time.integrator`` names none.
    - ``citation`` (str): where the scheme comes from (the archive's provenance).
    - ``problem``: the manifold's model and grid object (S^1: ``CircleProblem``).

    and implement:

    - :meth:`lipschitz_bound`: the rate bound's Lipschitz constant.
    - :meth:`diagnostics`: the snapshot diagnostics of a state.

    Optional hooks, with the defaults of a grid scheme (override where the scheme differs):

    - ``heat`` (None): the noise's exact heat semigroup ``heat(u, tau)`` with ``phi`` functions
      (:mod:`solvers.timestepping.lawson`); None: no noise step.
    - ``history`` (()): ``(t, method, reason)`` of each method that ran (a hand-over's record).
    - ``restorable`` (True): whether :meth:`restore_state` continues a run exactly.
    - :meth:`prepare` / :meth:`prepare_state`: the state of a new run or a resume.
    - :meth:`restore_state` / :meth:`resume_extras`: an exact resume, the scheme's own state.
    - :meth:`set_time`: the time of each accepted step, before :meth:`after_step`.
    - :meth:`after_step`: events between steps (capture, merging, a hand-over); unchanged.
    - :meth:`accept`: whether a step's result is admissible (else retried at half the step).
    - :meth:`error_scale`: which components an embedded pair's error test counts.
    - :meth:`diagnostics_batch`: :meth:`diagnostics` of many states at once.
    - :meth:`spectral_tail_limit`: the under-resolution threshold (None: not checked).
    - :meth:`total_mass`, :meth:`density`, :meth:`atoms`, :meth:`phase`: what a state holds.
    - :meth:`interpolate`: the state between two step states (dense output).
    - :meth:`clip_density`, :meth:`density_size`, :meth:`peak`, :meth:`snapshot_density`: how
      the solver checks, clips and keeps the density part of a state.
    """

    shape: tuple[int, ...]
    cell_weight: np.ndarray
    rhs: Rhs
    positivity_cfl: float | None
    default_integrator: str
    citation: str
    problem: Any
    heat: Heat | None = None
    history: Sequence[tuple[float, str, str]] = ()
    restorable: bool = True

    # -- required ---------------------------------------------------------------------------
    @abc.abstractmethod
    def lipschitz_bound(self, mass: float) -> float:
        """Bound of the nonlocal relaxation rates and of the velocity gradient at whole mass
        ``mass`` (docs/math.md §6)."""

    @abc.abstractmethod
    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        """Snapshot diagnostics of ``state`` (atom detection with ``atoms``)."""

    # -- the state --------------------------------------------------------------------------
    def prepare(self, rho: np.ndarray, fresh: bool) -> np.ndarray:
        """The grid state from cell averages (``fresh``: a new run) or from an archived state
        (a resume); as given."""
        return rho

    def prepare_state(self, rho0: np.ndarray, atoms0: Any, fresh: bool) -> np.ndarray:
        """The state the solver starts from: the grid density ``rho0`` through :meth:`prepare`
        (``atoms0``, the Dirac atoms of a measure-valued state, has no place in a grid state)."""
        return self.prepare(rho0, fresh=fresh)

    def resume_extras(self) -> tuple[float, ...]:
        """The scheme's own state besides the state array that an exact resume restores
        (:meth:`restore_state`); none."""
        return ()

    def restore_state(self, state: np.ndarray, extras: tuple) -> np.ndarray:
        """The state of an exact resume from the archived ``state`` (flat) and ``extras``: the
        grid density as it was (ValueError when it does not fit the grid)."""
        if state.size != int(np.prod(self.shape)):
            raise ValueError(f"resume state: expected {self.shape} values for this grid (got "
                             f"{state.size})")
        return state.reshape(self.shape)

    def total_mass(self, state: np.ndarray) -> float:
        """``sum(rho * cell_weight)``."""
        return float(np.sum(state * self.cell_weight))

    def density(self, state: np.ndarray) -> np.ndarray:
        """The grid density of ``state`` (shape ``shape``): the state itself."""
        return state

    def atoms(self, state: np.ndarray) -> Any:
        """The Dirac atoms of ``state`` (:class:`solvers.core.measure.DiracAtoms`); None: a grid
        state has none."""
        return None

    def phase(self, state: np.ndarray) -> float | None:
        """Which of a hand-over's methods ``state`` belongs to (None: one method throughout)."""
        return None

    # -- the steps --------------------------------------------------------------------------
    def set_time(self, t: float) -> None:
        """The time of the state :meth:`after_step` is about to see (and of a resumed one);
        ignored."""

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """The state after accepted step number ``step`` (events between steps): unchanged."""
        return state

    def accept(self, state: np.ndarray) -> bool:
        """Whether the result ``state`` of a step is admissible: always."""
        return True

    def error_scale(self, state: np.ndarray, new: np.ndarray | None = None) -> tuple:
        """What an embedded pair's error test counts of the flattened ``state`` (``new``: the
        step's result): ``(index, unit)`` or ``(index, unit, atol)``; ``unit`` None: each
        component against its own size. Every component, each against its size."""
        return slice(None), None

    def interpolate(self, rho_b: np.ndarray, atoms_b: Any, state_a: np.ndarray,
                    w: float) -> np.ndarray:
        """The state at ``w`` in (0, 1] on the step from the grid density ``rho_b`` to
        ``state_a``: ``rho_b + w (state_a - rho_b)`` (``atoms_b``: None for a grid state).

        The mass is the two states' mass to round-off, and for non-negative states every value
        is non-negative exactly (each rounding is monotone and bounded by ``-rho_b``). It is
        the dense output of a second-order step to second order (docs/methods.md §6.8)."""
        return rho_b + w * (state_a - rho_b)

    # -- what the solver checks and keeps ----------------------------------------------------
    def density_size(self, state: np.ndarray) -> int:
        """How many leading values of the flattened ``state`` are the grid density: all."""
        return state.size

    def clip_density(self, state: np.ndarray,
                     clip: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """``state`` with its density part through ``clip`` (the fv schemes' round-off clip)."""
        return clip(state)

    def peak(self, rho: np.ndarray, diagnostics: Diagnostics) -> float:
        """The largest ``|rho|`` of a snapshot's density ``rho`` (its ``diagnostics`` hold the
        extremes; a NaN makes the mass NaN)."""
        return max(abs(diagnostics.min_rho), abs(diagnostics.max_rho)) if rho.size else 0.0

    def snapshot_density(self, state: np.ndarray, live: np.ndarray) -> np.ndarray:
        """The grid density a snapshot keeps of ``state``: a copy when ``state`` is the solver's
        ``live`` state, else ``state`` itself (a step state is never written again)."""
        return state.copy() if state is live else state

    # -- diagnostics ------------------------------------------------------------------------
    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams
                          ) -> list[Diagnostics]:
        """:meth:`diagnostics` of each state in ``states``."""
        return [self.diagnostics(state, atoms) for state in states]

    def spectral_tail_limit(self) -> float | None:
        """Tail-energy fraction above which the scheme is under-resolved (None: not checked)."""
        return None
