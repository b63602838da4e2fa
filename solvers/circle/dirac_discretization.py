"""The ``[atoms] representation = "dirac"`` discretisation on S^1: density plus Dirac atoms.

The state the integrator sees is the flat vector of :class:`solvers.core.measure.MeasureLayout`
(``[rho (N), x (n), m (n), ids (n)]``); the right-hand side moves the density by finite volumes
and the atoms by their velocity (:mod:`solvers.circle.dirac`), and :meth:`after_step` applies
absorption and merging after every accepted step and capture every ``CAPTURE_EVERY`` steps.
With numba (:class:`solvers.circle.dirac.CompiledCircleField`) a Runge-Kutta stage is two FFTs
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

from solvers.circle.atoms import Atoms, detect_atoms, relabel
from solvers.circle.dirac import (
    CircleMeasureField,
    CompiledCircleField,
    absorb,
    capture,
    merge,
    wrap_difference,
)
from solvers.circle.discretization import (
    SUPPORT_FLOOR,
    CircleDiscretization,
    tail_energy,
)
from solvers.circle.fv import transport
from solvers.core.discretization import bound_mass
from solvers.core.measure import DiracAtoms, MeasureLayout, MeasureStateAccess
from solvers.core.point_atoms import AtomSystem
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig

CAPTURE_EVERY = 10  # steps between two capture checks (the basin detector is the costly part)


class DiracCircleDiscretization(MeasureStateAccess, CircleDiscretization):
    """Grid density plus Dirac atoms on S^1 (fv scheme, unnormalized attention)."""

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
        if atoms0 is None:
            init = self.config.initial
            if fresh and init.kind == "atoms":
                atoms0 = DiracAtoms(np.asarray(init.weights, float),
                                    np.mod(np.asarray(init.centers, float), 2 * np.pi),
                                    np.arange(len(init.weights)))
            else:
                atoms0 = DiracAtoms.empty(1)
        self.next_id = int(atoms0.ids.max()) + 1 if atoms0.count else 0
        state = self.layout.pack(rho0, merge(atoms0, self.problem.basis.h))
        self._set_total(bound_mass(self.total_mass(state)))
        return state

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
        drho, rate = transport(rho, u, b.h, self.limiter, dt, floor, scale=self.problem.cell_scale)
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
        new state and the atoms' smallest separation."""
        rho, atoms, u = self._captured(state, self.compiled, capture_now=True)
        new = self.layout.pack(rho, atoms)
        return new, self.compiled.absorb(new, u)

    def _captured(self, state: np.ndarray, field: CircleMeasureField | CompiledCircleField,
                  capture_now: bool) -> tuple[np.ndarray, DiracAtoms, np.ndarray]:
        """``(rho, atoms, u)``: the density (a copy), the atoms (positions mod 2 pi) and the face
        velocity ``u`` (N,) by ``field``, after :func:`capture` when ``capture_now``."""
        rho, atoms = self.density(state).copy(), self.atoms(state)
        atoms = DiracAtoms(atoms.mass, np.mod(atoms.position, 2 * np.pi), atoms.ids)
        u = field.face_velocity(self.problem.basis.forward(rho), atoms.position, atoms.mass)
        if capture_now:
            rho, atoms = capture(rho, atoms, u, self.problem, self.config.atoms, self.next_id)
            self.next_id = max(self.next_id, int(atoms.ids.max()) + 1 if atoms.count else 0)
        return rho, atoms, u

    def _after_step_reference(self, state: np.ndarray, step: int) -> np.ndarray:
        """:meth:`after_step` by :func:`capture`, :func:`absorb` and :func:`merge` (numpy)."""
        b = self.problem.basis
        rho, atoms, u = self._captured(state, self.field, step % CAPTURE_EVERY == 0)
        rho, atoms = absorb(rho, atoms, u, b.h, self.problem.cell_of(atoms.position))
        return self.layout.pack(rho, merge(atoms, b.h))

    # -- diagnostics ----------------------------------------------------------------------
    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return measure_diagnostics(self, state, atoms)

    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams
                          ) -> list[Diagnostics]:
        """:meth:`diagnostics` of each measure state (not the grid path of the base class)."""
        return [measure_diagnostics(self, state, atoms) for state in states]


def measure_energy(disc: DiracCircleDiscretization, rho: np.ndarray, dirac: DiracAtoms,
                   rho_hat: np.ndarray | None = None) -> float:
    """``E[mu]`` (paper eq. 2.7) of density plus atoms: the density's own energy (spectral),
    the cross term ``(1/beta) sum_i m_i (K*rho)(x_i)`` and the atoms' closed form.
    ``rho_hat``: ``forward(rho)`` when already known."""
    p, x = disc.problem, dirac.position
    rho_hat = p.basis.forward(rho) if rho_hat is None else rho_hat
    e = p.energy(rho, rho_hat)
    if dirac.count:
        e += float(dirac.mass @ disc.fields.density_potential_at(rho_hat, x)) / p.model.beta
        unit = np.stack([np.cos(x), np.sin(x)], axis=1)
        e += AtomSystem(p.model, dirac.mass).energy(unit)
    return e


def measure_atoms(disc: DiracCircleDiscretization, rho: np.ndarray, dirac: DiracAtoms,
                  u: np.ndarray, params: AtomParams) -> Atoms:
    """Basin atoms of the measure (Dirac masses deposited in their cells); a basin holding Dirac
    atoms takes their mass-weighted exact position; a Dirac atom in no basin is an atom of its
    own. ``labels``: the atom of every cell (-1: diffuse), as for a grid density."""
    b = disc.problem.basis
    cells = disc.problem.cell_of(dirac.position)
    deposit = np.bincount(cells, weights=dirac.mass, minlength=b.n)
    found = detect_atoms(b.theta, rho * b.h + deposit, disc.problem.model.beta, params, face_velocity=u)
    pos, mass, core = found.position.copy(), found.mass.copy(), found.core_mass.copy()
    lab = found.labels[cells] if found.labels is not None else np.full(dirac.count, -1)
    for k in np.unique(lab[lab >= 0]):
        z = dirac.mass[lab == k] @ np.exp(1j * dirac.position[lab == k])
        pos[k] = float(np.mod(np.angle(z), 2 * np.pi))
    alone = lab < 0  # a Dirac atom in no basin (e.g. moving: its cell is no sink) is an atom itself
    diffuse = found.diffuse_mass - float(dirac.mass[alone].sum())
    pos, mass = np.append(pos, dirac.position[alone]), np.append(mass, dirac.mass[alone])
    order = np.argsort(pos)
    labels = None if found.labels is None else relabel(found.labels, order)
    return Atoms(mass[order], pos[order], np.append(core, dirac.mass[alone])[order], max(diffuse, 0.0),
                 labels)


def measure_diagnostics(disc: DiracCircleDiscretization, state: np.ndarray, params: AtomParams) -> Diagnostics:
    """Snapshot diagnostics of the measure (mass, energy and dissipation include the atoms)."""
    b, f = disc.problem.basis, disc.fields
    rho, dirac = disc.density(state), disc.atoms(state)
    x, m = dirac.position, dirac.mass
    rho_hat = b.forward(rho)
    mass = float(rho.sum() * b.h + m.sum())
    u = f.face_velocity(rho_hat, x, m)
    grad = f.center_gradient(rho_hat, x, m)  # dU/dtheta: the perceptron term is in it
    g_atoms = f.atom_gradient(rho_hat, x, m)
    drho, _ = transport(rho, u, b.h, disc.limiter, scale=disc.problem.cell_scale)
    support = rho > SUPPORT_FLOOR * abs(mass) / (2.0 * np.pi)
    speeds = np.concatenate([np.abs(grad[support]), np.abs(g_atoms)])
    found = measure_atoms(disc, rho, dirac, u, params)
    return Diagnostics(
        mass=mass, min_rho=float(rho.min()), max_rho=float(rho.max()),
        energy=measure_energy(disc, rho, dirac, rho_hat),
        dissipation=float(np.sum(rho * grad**2) * b.h + m @ g_atoms**2),
        transport_rate=float(np.sum(np.abs(drho)) * b.h + 2.0 * (m @ np.abs(g_atoms)) / b.h),
        max_support_velocity=float(speeds.max()) if speeds.size else 0.0,
        tail_energy=tail_energy(rho_hat, disc.k_max),
        n_atoms=found.count, atom_mass=found.mass, atom_position=found.position,
        atom_core_mass=found.core_mass, diffuse_mass=found.diffuse_mass,
        atom_labels=None,  # no per-atom mass budget: Dirac masses move between atoms without cells
        dirac_mass=m.copy(), dirac_position=x.copy(), dirac_id=dirac.ids.copy(),
    )
