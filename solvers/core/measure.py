"""A measure-valued state ``mu = rho dsigma + sum_i m_i delta_{x_i}`` as one flat vector.

The time integrator sees a flat float vector ``[rho.ravel(), positions.ravel(), masses, ids]``:
the grid density, then the Dirac atoms' positions (S^1: angles, shape (n,); S^2: unit vectors,
(n, 3)), masses (n,) and identities (n,) stored as floats. Masses and identities have a zero
time derivative, so every Shu-Osher stage ``u0 + c L(u) + sum_j alpha_j (u_j - u0)`` keeps them
bitwise (``alpha_j (m - m) = 0``); capture, absorption and merges change them between steps only.

:class:`MeasureDiscretization` is the contract of a discretisation with such a state: the
:class:`~solvers.core.discretization.Discretization` base with the density, mass, clip and resume
of a flat state.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.core.discretization import Discretization
from solvers.core.snapshot import Diagnostics


@dataclass(frozen=True)
class DiracAtoms:
    """Dirac atoms: ``mass`` (n,), ``position`` (n,) angles or (n, 3) unit vectors, ``ids`` (n,) int."""

    mass: np.ndarray
    position: np.ndarray
    ids: np.ndarray

    @property
    def count(self) -> int:
        return int(self.mass.size)

    @staticmethod
    def empty(dim: int) -> "DiracAtoms":
        """No atoms; ``dim`` = 1 (angles) or d >= 3 (unit vectors of R^d)."""
        return DiracAtoms(np.zeros(0), np.zeros((0,) if dim == 1 else (0, dim)), np.zeros(0, dtype=int))


@dataclass(frozen=True)
class MeasureLayout:
    """How a flat state vector splits: ``grid_shape`` of rho, ``dim`` coordinates per position."""

    grid_shape: tuple[int, ...]
    dim: int  # 1 on S^1 (an angle), 3 on S^2 (a unit vector), d on Sd (a unit vector of R^d)
    grid_size: int = field(init=False, repr=False, compare=False)  # prod(grid_shape), read on every right-hand side

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid_size", int(math.prod(self.grid_shape)))

    def count(self, state: np.ndarray) -> int:
        """Number of atoms in a flat state."""
        return (state.size - self.grid_size) // (self.dim + 2)

    def pack(self, rho: np.ndarray, atoms: DiracAtoms) -> np.ndarray:
        """Flat state ``[rho, positions, masses, ids]``, shape (grid_size + n (dim + 2),)."""
        return np.concatenate([np.asarray(rho, float).ravel(), np.asarray(atoms.position, float).ravel(),
                               np.asarray(atoms.mass, float), np.asarray(atoms.ids, float)])

    def density(self, state: np.ndarray) -> np.ndarray:
        """The grid density (a view), shape ``grid_shape``."""
        return state[: self.grid_size].reshape(self.grid_shape)

    def atoms(self, state: np.ndarray) -> DiracAtoms:
        """The Dirac atoms of a flat state (copies)."""
        n, g = self.count(state), self.grid_size
        pos = state[g : g + n * self.dim].copy()
        rest = state[g + n * self.dim :]
        return DiracAtoms(rest[:n].copy(), pos if self.dim == 1 else pos.reshape(n, self.dim),
                          np.rint(rest[n:]).astype(int))


def starting_atoms(initial: Any, atoms0: DiracAtoms | None, fresh: bool, dim: int,
                   place: Callable[[np.ndarray], np.ndarray] = np.asarray) -> DiracAtoms:
    """The Dirac atoms a measure-valued run starts from: ``atoms0`` (a resume's, or an archive's),
    else for a new run the config's ``[initial] kind = "atoms"`` atoms (``initial``:
    :class:`solvers.model.params.InitialParams`; positions through ``place``, identities
    ``0 .. n-1``), else none (``dim`` 1: angles, 3: unit vectors)."""
    if atoms0 is not None:
        return atoms0
    if fresh and initial.kind == "atoms":
        return DiracAtoms(np.asarray(initial.weights, float), place(np.asarray(initial.centers, float)),
                          np.arange(len(initial.weights)))
    return DiracAtoms.empty(dim)


def dirac_of(diagnostics: Any) -> DiracAtoms:
    """The Dirac atoms of a measure-valued snapshot's diagnostics
    (:class:`solvers.core.snapshot.Diagnostics`: ``dirac_mass``, ``dirac_position``, ``dirac_id``)."""
    d = diagnostics
    return DiracAtoms(np.asarray(d.dirac_mass, float), np.asarray(d.dirac_position, float),
                      np.asarray(d.dirac_id, int))


def interpolate_measure(layout: MeasureLayout, rho_b: np.ndarray, atoms_b: DiracAtoms,
                        state_a: np.ndarray, w: float,
                        between: Callable[[np.ndarray, np.ndarray, float], np.ndarray]) -> np.ndarray:
    """The flat state at ``w`` in (0, 1) on the step from ``(rho_b, atoms_b)`` to ``state_a``.

    The density and the masses on straight lines, ``b + w (a - b)``; an atom in both states
    moves on ``between(x_b, x_a, w)`` (S^1: the shorter arc; S^2: the chord, renormalised).
    When the step captured or merged atoms (the identities differ), an atom only in ``a`` has
    mass ``w m_a`` at ``x_a`` and one only in ``b`` keeps ``(1 - w) m_b`` at ``x_b``: the mass
    is ``(1 - w) M_b + w M_a`` to round-off and every mass and density value is nonnegative.
    """
    rho_a, atoms_a = layout.density(state_a), layout.atoms(state_a)
    rho = rho_b + w * (rho_a - rho_b)
    if np.array_equal(atoms_a.ids, atoms_b.ids):
        mass = atoms_b.mass + w * (atoms_a.mass - atoms_b.mass)
        return layout.pack(rho, DiracAtoms(mass, between(atoms_b.position, atoms_a.position, w), atoms_a.ids))
    _, ia, ib = np.intersect1d(atoms_a.ids, atoms_b.ids, assume_unique=True, return_indices=True)
    mass, pos = w * atoms_a.mass, atoms_a.position.copy()
    mass[ia] = atoms_b.mass[ib] + w * (atoms_a.mass[ia] - atoms_b.mass[ib])
    pos[ia] = between(atoms_b.position[ib], atoms_a.position[ia], w)
    gone = np.setdiff1d(np.arange(atoms_b.count), ib)  # merged into another atom during the step
    atoms = DiracAtoms(np.concatenate([mass, (1.0 - w) * atoms_b.mass[gone]]),
                       np.concatenate([pos, atoms_b.position[gone]]),
                       np.concatenate([atoms_a.ids, atoms_b.ids[gone]]))
    return layout.pack(rho, atoms)


class MeasureStateAccess:
    """The flat-state accessors of a measure-valued state (S^1 and S^2): a subclass sets
    ``layout`` (:class:`MeasureLayout`) and ``next_id`` (the identity of the next new atom)."""

    layout: MeasureLayout
    next_id: int

    def reserve_ids(self, atoms: DiracAtoms) -> None:
        """Keep ``next_id`` past every identity of ``atoms`` (a new atom never reuses one)."""
        self.next_id = max(self.next_id, int(atoms.ids.max()) + 1 if atoms.count else 0)

    def density(self, state: np.ndarray) -> np.ndarray:
        """The grid density of a flat state (a view), shape ``layout.grid_shape``."""
        return self.layout.density(state)

    def atoms(self, state: np.ndarray) -> DiracAtoms:
        """The Dirac atoms of a flat state (copies)."""
        return self.layout.atoms(state)

    def interpolate(self, rho_b: np.ndarray, atoms_b: DiracAtoms, state_a: np.ndarray,
                    w: float) -> np.ndarray:
        """:func:`interpolate_measure` with this manifold's :meth:`between` for positions."""
        return interpolate_measure(self.layout, rho_b, atoms_b, state_a, w, self.between)

    @staticmethod
    def between(x_b: np.ndarray, x_a: np.ndarray, w: float) -> np.ndarray:
        """Positions at ``w`` on the way from ``x_b`` to ``x_a`` (a subclass's geometry)."""
        raise NotImplementedError


class PointState:
    """The accessors of a measure held as weighted points only (a ``layout`` with no grid part:
    the S^2 particles, the Sd points): every point with its identity, -1 for a diffuse one."""

    layout: MeasureLayout

    def particles(self, state: np.ndarray) -> DiracAtoms:
        """Every point (identity -1: diffuse) of a flat state."""
        return self.layout.atoms(state)

    def total_mass(self, state: np.ndarray) -> float:
        """The points' mass."""
        return float(np.sum(self.particles(state).mass))


class MeasureDiscretization(MeasureStateAccess, Discretization):
    """A discretisation whose state carries Dirac atoms: a flat vector (the grid density, then
    the atoms; :class:`MeasureLayout`), the contract of
    :class:`~solvers.core.discretization.Discretization` with these differences:

    - :meth:`prepare_state` (required) builds the flat state from the grid density and the atoms
      (None: the config's ``kind = "atoms"`` atoms for a new run, none for a resume);
      :meth:`total_mass` (required) is the mass of density and atoms together.
    - :meth:`density` and :meth:`atoms` read the flat state through ``layout``
      (:class:`MeasureLayout`); :meth:`interpolate` moves the atoms by :meth:`between` (a
      subclass's geometry).
    - The solver's round-off clip sees the density part only (:meth:`density_size`,
      :meth:`clip_density`); a snapshot keeps a copy of the density (:meth:`snapshot_density`)
      and checks its largest value itself (:meth:`peak`).
    - An exact resume needs the subclass's own state: ``restorable`` is False unless a subclass
      gives :meth:`resume_extras` and :meth:`restore_state`.

    A subclass sets ``layout`` and ``next_id`` (the identity of the next new atom).
    """

    layout: MeasureLayout
    next_id: int
    restorable = False

    @abc.abstractmethod
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """The flat state from the grid density ``rho0`` and the Dirac atoms ``atoms0``."""

    @abc.abstractmethod
    def total_mass(self, state: np.ndarray) -> float:
        """The mass of the density and the atoms of ``state``."""

    def restore_state(self, state: np.ndarray, extras: tuple) -> np.ndarray:
        """An exact resume: not restorable (ValueError; a subclass with its own state overrides)."""
        raise ValueError(f"{type(self).__name__} cannot restore an exact resume state")

    def density_size(self, state: np.ndarray) -> int:
        """The grid density's values at the head of the flat state: ``layout.grid_size``."""
        return self.layout.grid_size

    def clip_density(self, state: np.ndarray,
                     clip: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """``state`` with its density part through ``clip``; the atoms as they are."""
        grid = self.layout.grid_size
        density = state[:grid]
        clipped = clip(density)
        return state if clipped is density else np.concatenate([clipped, state[grid:]])

    def peak(self, rho: np.ndarray, diagnostics: Diagnostics) -> float:
        """The largest ``|rho|`` of the snapshot's density (the diagnostics' extremes are the
        measure's)."""
        return float(np.max(np.abs(rho))) if rho.size else 0.0

    def snapshot_density(self, state: np.ndarray, live: np.ndarray) -> np.ndarray:
        """A copy of the grid density of ``state`` (not a view into a flat state)."""
        return self.density(state).copy()
