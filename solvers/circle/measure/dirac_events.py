"""Capture on S^1: a concentrated basin atom of the density becomes a Dirac atom.

:func:`capture` runs the basin detector (:func:`solvers.circle.atoms.detect_atoms`) on the density
with the Dirac masses deposited in their cells and turns each basin atom that is concentrated
(its core holds ``capture_fraction`` of it) and held together by the flow (:func:`forms_atom`)
into a Dirac atom, conserving mass and first moment. :func:`may_capture` is a necessary
condition for that, checked first: it costs a pass over the faces instead of a basin detection,
and once every atom is a Dirac mass (the thin stream of density that still flows into them
cannot form a new one) it rules every check out (docs/methods.md §6.2, the
Dirac state's capture).
"""

from __future__ import annotations

import numpy as np

from solvers.circle.atoms import detect_atoms
from solvers.circle.measure.dirac import CORE_CELLS, TWO_PI, merge
from solvers.circle.cells import holds_together
from solvers.circle.problem import CircleProblem
from solvers.core.backend import resolve_backend
from solvers.core.measure import DiracAtoms
from solvers.model.params import AtomParams

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
