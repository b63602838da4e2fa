"""What changes the S^1 Dirac atoms between steps: capture, absorption and merging, and the
S^1 Dirac state that runs them (:class:`CircleDiracState`, capture every 10 steps).

Never inside a Runge-Kutta step. :func:`capture`, :func:`absorb` and :func:`merge` each conserve
the total mass (``sum rho h + sum m``) to round-off and keep ``rho >= 0``:

- capture: a basin atom of the density (:func:`solvers.circle.atoms.detect_atoms`, the Dirac
  masses deposited in their cells) whose core (peak and neighbours) holds at least
  ``capture_fraction`` of its basin mass, and which the flow holds together (:func:`forms_atom`),
  becomes a Dirac atom at the core's centre of mass (mass and angular first moment conserved).
  :func:`may_capture` is a necessary condition for that, checked first: it costs a pass over the
  faces instead of a basin detection, and once every atom is a Dirac mass (the thin stream of
  density that still flows into them cannot form a new one) it rules every check out
  (docs/methods.md §6.2, the Dirac state's capture);
- absorption: the density in an atom's cell is added to the atom when that cell has no outflow
  (both faces point into it), at the atom's position;
- merging: atoms closer than a cell become one, at the mass-weighted mean angle.
"""

from __future__ import annotations

import numpy as np

from solvers.circle.atoms import detect_atoms
from solvers.circle.cells import holds_together
from solvers.circle.measure.dirac import TWO_PI, CircleMeasureField, CompiledCircleField, wrap_difference
from solvers.circle.problem import CircleProblem
from solvers.core.backend import resolve_backend
from solvers.core.dirac_state import DiracState
from solvers.core.measure import DiracAtoms, starting_atoms
from solvers.model.params import AtomParams

CORE_CELLS = 1  # the core of a captured atom: the peak cell and CORE_CELLS cells on each side
SUM_SLACK = 1e-9  # may_capture's bound is relaxed by this (relative): another summation order


def forms_atom(core: np.ndarray, u_face: np.ndarray, problem: CircleProblem) -> bool:
    """Whether the concentrated mass in ``core`` (contiguous cells, left to right) is held
    together, so that it is becoming a Dirac mass.

    The velocity is Lipschitz (a ReLU unit's velocity has a corner, not a jump), and under
    descent the attention of a small concentration of mass ``m`` moves it apart at the rate
    ``c_K e^beta m``. So a concentration becomes a Dirac mass only where something holds it in:

    - *trapped*: the flow velocity of the whole measure points into the core at both outer
      faces, ``u_face[first - 1] >= 0 >= u_face[last]``;
    - *at a sink corner* of the perceptron (:meth:`CircleProblem.sink_corners`): it drives mass
      into the corner from one side, while on the other side, where every unit is off, the
      concentration's own attention may push some out (the paper's S^1 descent corner atom).

    A concentration pressed together only while a wave of mass passes (descent, the
    perceptron-free arc at beta = 50) spreads again and stays density; so does one carried
    along by the flow, until it comes to rest. Capture cannot be undone, so the test is
    conservative (docs/methods.md §6.2, the Dirac state's capture).

    Parameters
    ----------
    core : ndarray of int, shape (k,)
        Cell indices, consecutive modulo N.
    u_face : ndarray, shape (N,)
        Signed flow velocity at the right faces.
    problem : CircleProblem
    """
    n = u_face.size
    left, right = (int(core[0]) - 1) % n, int(core[-1])  # the core's outer faces
    faces = problem.faces
    return bool(holds_together(faces[[left]], faces[[right]], u_face[[left]], u_face[[right]],
                               problem.sink_corners)[0])


def may_capture(rho: np.ndarray, cells: np.ndarray, u_face: np.ndarray, problem: CircleProblem,
                params: AtomParams, backend: str | None = None) -> bool:
    """Whether :func:`capture` could capture anything: a necessary condition (never a guess).

    A capture needs a core (at most ``2 CORE_CELLS + 1`` cells) of density mass at least
    ``capture_fraction * min_mass`` (it holds that fraction of a basin of at least ``min_mass``)
    that :func:`forms_atom` holds together, in a basin holding no Dirac atom. Held together means
    the velocity points into the core at both outer faces, so the faces change sign from
    ``>= 0`` to ``<= 0`` inside it: the core contains a *sink cell* ``c``
    (``u_face[c - 1] >= 0 >= u_face[c]``), or it contains a sink corner of the perceptron. A
    core containing a Dirac atom's cell lies in that atom's (held) basin. So some sink cell or
    corner cell (the corner's cell and its two neighbours) that is no Dirac atom's cell must
    have at least the bound within ``2 CORE_CELLS`` cells on each side.

    Parameters
    ----------
    rho : ndarray, shape (N,)
        The density (without the Dirac masses).
    cells : ndarray of int, shape (n,)
        The Dirac atoms' cells (:meth:`CircleProblem.cell_of`).
    u_face : ndarray, shape (N,)
        Signed flow velocity at the right faces.
    problem : CircleProblem
    params : AtomParams
    backend : {"numba", "numpy"}, optional
        :mod:`solvers.core.backend` (None: the default); the two agree but for cores within
        ``SUM_SLACK`` of the bound (another order of summation).
    """
    bound = (1.0 - SUM_SLACK) * params.capture_fraction * params.min_mass
    corner_cells = problem.sink_corner_cells
    if resolve_backend(backend) == "numba":  # one compiled pass (the numpy below: 50 us at N = 256)
        from solvers.circle.measure.kernels_dirac_numba import may_capture as compiled

        return bool(compiled(np.ascontiguousarray(rho, dtype=float), np.asarray(cells, dtype=np.int64),
                             np.ascontiguousarray(u_face, dtype=float), corner_cells,
                             problem.basis.h, 2 * CORE_CELLS, bound))
    n = rho.size
    candidate = (np.roll(u_face, 1) >= 0.0) & (u_face <= 0.0)
    for shift in (-1, 0, 1):
        candidate[(corner_cells + shift) % n] = True
    candidate[cells] = False
    if not candidate.any():
        return False
    mass = rho * problem.basis.h
    window = mass.copy()
    for shift in range(1, 2 * CORE_CELLS + 1):
        window += np.roll(mass, shift) + np.roll(mass, -shift)
    return bool(window[candidate].max() >= bound)


def capture(rho: np.ndarray, atoms: DiracAtoms, u_face: np.ndarray, problem: CircleProblem,
            params: AtomParams, next_id: int) -> tuple[np.ndarray, DiracAtoms]:
    """Turn concentrated basin atoms of the density into Dirac atoms.

    A basin (detected on the density with the Dirac masses deposited in their cells, so that a
    basin already holding a Dirac atom is skipped) is captured when its core (the peak cell
    and those of its two neighbours in the basin) holds at least ``params.capture_fraction`` of
    its mass, it has at least ``params.min_mass`` and the flow holds the core together
    (:func:`forms_atom`). A neighbour outside the basin (a source
    cell, beside a sink born on a ReLU corner) keeps its mass: part of it flows away. The
    core's mass goes to a new atom at the core's centre of mass: mass and the angular first
    moment (about the peak) are conserved exactly.

    Returns
    -------
    (rho, atoms) with the new atoms appended (ids ``next_id, next_id + 1, ...``).
    """
    b = problem.basis
    h, n = b.h, b.n
    cells = problem.cell_of(atoms.position)
    if not may_capture(rho, cells, u_face, problem, params):
        return rho, atoms
    deposit = np.bincount(cells, weights=atoms.mass, minlength=n)
    found = detect_atoms(b.theta, rho * h + deposit, problem.model.beta, params, face_velocity=u_face)
    if found.labels is None or found.count == 0:
        return rho, atoms
    rho = rho.copy()
    new_m, new_x = [], []
    held = np.zeros(found.count, bool)
    held[np.unique(found.labels[cells[found.labels[cells] >= 0]])] = True
    for k in np.flatnonzero(~held):
        basin = np.flatnonzero(found.labels == k)
        peak = basin[np.argmax(rho[basin])]
        # the core's cells in the basin only: beside a sink born on a ReLU corner the next cell
        # can be a source, whose mass partly flows away (capturing it whole made the beta = 50
        # corner atom 8e-3 too heavy at every N, docs/methods.md §6.2)
        core = (peak + np.arange(-CORE_CELLS, CORE_CELLS + 1)) % n
        core = core[found.labels[core] == k]
        core_mass = float(rho[core].sum() * h)
        if core_mass < params.capture_fraction * found.mass[k] or found.mass[k] < params.min_mass:
            continue
        if not forms_atom(core, u_face, problem):
            continue
        # the cells' own centres: with time.kink_faces a core cell beside a moved face is off
        # the uniform grid by up to h/4, and the atoms born on ReLU corners have such cores
        offset = np.mod(problem.cell_centres[core] - b.theta[peak] + np.pi, TWO_PI) - np.pi
        new_x.append(float(np.mod(b.theta[peak] + rho[core] @ offset * h / core_mass, TWO_PI)))
        new_m.append(core_mass)
        rho[core] = 0.0
    if not new_m:
        return rho, atoms
    # one concentration split into neighbouring basins is one atom: merge new atoms whose cores touch
    new = merge(DiracAtoms(np.asarray(new_m), np.asarray(new_x), np.arange(len(new_m))),
                (2 * CORE_CELLS + 1) * h)
    ids = np.arange(next_id, next_id + new.count)
    return rho, DiracAtoms(np.append(atoms.mass, new.mass), np.append(atoms.position, new.position),
                           np.append(atoms.ids, ids).astype(int))


def absorb(rho: np.ndarray, atoms: DiracAtoms, u_face: np.ndarray, h: float,
           cells: np.ndarray | None = None) -> tuple[np.ndarray, DiracAtoms]:
    """Add the density of every atom's cell to the atom when that cell has no outflow.

    Parameters
    ----------
    rho : ndarray, shape (N,)
    atoms : DiracAtoms
    u_face : ndarray, shape (N,)
        Signed velocity at the right faces.
    h : float
    cells : ndarray of int, shape (n,), optional
        The finite volume of each atom (:meth:`CircleProblem.cell_of`, which knows moved
        faces); None: ``rint(x / h) mod N``, the uniform grid's cell.

    Returns
    -------
    (rho, atoms) : the new density (a copy) and atoms; ``sum(rho) h + sum(m)`` is unchanged.
    """
    rho, mass = rho.copy(), atoms.mass.copy()
    n = rho.size
    if cells is None:
        cells = np.rint(atoms.position / h).astype(int) % n
    for i, c in enumerate(cells):
        if u_face[c] <= 0.0 and u_face[c - 1] >= 0.0 and rho[c] > 0.0:
            mass[i] += rho[c] * h
            rho[c] = 0.0
    return rho, DiracAtoms(mass, atoms.position, atoms.ids)


def merge(atoms: DiracAtoms, h: float) -> DiracAtoms:
    """Merge atoms closer than ``h`` (closest pair first): mass summed, angle the mass-weighted
    mean (first moment conserved), identity of the heavier atom."""
    m, x, ids = list(atoms.mass), list(atoms.position), list(atoms.ids)
    while len(m) > 1:
        xs = np.asarray(x)
        dist = np.abs(wrap_difference(xs[:, None], xs[None, :]))
        np.fill_diagonal(dist, np.inf)
        i, j = np.unravel_index(np.argmin(dist), dist.shape)
        if dist[i, j] >= h:
            break
        i, j = (i, j) if m[i] >= m[j] else (j, i)
        total = m[i] + m[j]
        x[i] = float(np.mod(x[i] + m[j] * wrap_difference(x[j], x[i]) / total, TWO_PI))
        m[i] = total
        for seq in (m, x, ids):
            del seq[j]
    return DiracAtoms(np.asarray(m, float), np.asarray(x, float), np.asarray(ids, int))


class CircleDiracState(DiracState, capture_every=10):
    """The S^1 Dirac state's events between steps (:class:`~solvers.core.dirac_state.DiracState`):
    capture every 10 steps (the basin detector is the costly part), absorption and merging after
    every step.

    The implementer (:class:`~solvers.circle.measure.dirac_discretization.DiracCircleDiscretization`)
    sets ``problem``, the numpy reference ``field`` and ``compiled`` (the compiled fields, or None),
    and calls :meth:`start_dirac_state`. With ``compiled`` the events after a step are two FFTs
    and one compiled call (:meth:`CompiledCircleField.absorb_step`; after :func:`capture` on its
    steps); the template of the base with the methods below is the numpy reference.
    """

    problem: CircleProblem
    field: CircleMeasureField
    compiled: CompiledCircleField | None
    restorable = True  # resume_extras, restore_state: next_id and total

    def set_total(self, total: float) -> None:
        """The whole mass ``M``: a face moves mass when its upwind density exceeds
        ``time.cfl_floor M / (2 pi)``."""
        self.total = total
        if self.compiled is not None:
            self.compiled.set_mass_floor(self.config.time.cfl_floor * total / (2 * np.pi))

    def starting_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None,
                       fresh: bool) -> tuple[np.ndarray, DiracAtoms]:
        """The grid density as given and the atoms (angles mod 2 pi for the config's atoms)."""
        return rho0, starting_atoms(self.config.initial, atoms0, fresh, 1, place=lambda c: np.mod(c, TWO_PI))

    def settle(self, state: np.ndarray) -> tuple[np.ndarray, DiracAtoms, np.ndarray]:
        """``(rho, atoms, u)`` by the numpy reference field: the face velocity ``u`` (N,)."""
        return self._settled(state, self.field)

    def _settled(self, state: np.ndarray, field: CircleMeasureField | CompiledCircleField
                 ) -> tuple[np.ndarray, DiracAtoms, np.ndarray]:
        """The density (a copy), the atoms (positions mod 2 pi) and the face velocity ``u`` (N,)
        of the whole measure by ``field``."""
        rho, atoms = self.density(state).copy(), self.atoms(state)
        atoms = DiracAtoms(atoms.mass, np.mod(atoms.position, TWO_PI), atoms.ids)
        return rho, atoms, field.density_face_velocity(rho, atoms.position, atoms.mass)

    def capture_atoms(self, rho: np.ndarray, atoms: DiracAtoms, u: np.ndarray) -> tuple[np.ndarray, DiracAtoms]:
        """:func:`capture` with the face velocity ``u``."""
        return capture(rho, atoms, u, self.problem, self.config.atoms, self.next_id)

    def absorb_density(self, rho: np.ndarray, atoms: DiracAtoms, u: np.ndarray) -> tuple[np.ndarray, DiracAtoms]:
        """:func:`absorb` with the face velocity ``u``, each atom in its finite volume."""
        return absorb(rho, atoms, u, self.problem.basis.h, self.problem.cell_of(atoms.position))

    def merge_atoms(self, atoms: DiracAtoms) -> DiracAtoms:
        """:func:`merge` of atoms closer than a cell ``h``."""
        return merge(atoms, self.problem.basis.h)

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """Absorption and merging (every step) and capture (every ``capture_every`` steps).

        Compiled path: positions mod 2 pi, the face velocity and the absorption in one call
        (:meth:`CompiledCircleField.absorb_step`; after :func:`capture` on its steps), nothing
        without atoms; :func:`merge` only when two atoms are closer than a cell (it would change
        nothing otherwise). numpy: the base's sequence
        (:meth:`solvers.core.dirac_state.DiracState.after_step`).
        """
        if self.compiled is None:
            return super().after_step(state, step)
        h = self.problem.basis.h
        if self.capture_due(step):
            new, closest = self._capture_step(state, self.compiled)
        elif self.layout.count(state) == 0:
            return state  # no atom to move, absorb into or merge
        else:
            new, _, closest = self.compiled.absorb_step(state)
        return new if closest >= h else self.layout.pack(self.density(new), self.merge_atoms(self.atoms(new)))

    def _capture_step(self, state: np.ndarray, compiled: CompiledCircleField) -> tuple[np.ndarray, float]:
        """Compiled path, capture steps: :func:`capture` then the compiled absorption; returns the
        new state and the atoms' smallest separation. Where :func:`may_capture` rules a capture
        out this is the absorption step alone (the same face velocity, the same result)."""
        new, u, closest = compiled.absorb_step(state)
        atoms = self.atoms(new)  # absorption moves no atom
        if not may_capture(self.density(state), compiled.cell_of(atoms.position), u, self.problem,
                           self.config.atoms):
            self.reserve_ids(atoms)  # as after a capture
            return new, closest
        rho, atoms, u = self._settled(state, compiled)
        rho, atoms = self.capture_atoms(rho, atoms, u)
        self.reserve_ids(atoms)
        new = self.layout.pack(rho, atoms)
        return new, compiled.absorb(new, u)
