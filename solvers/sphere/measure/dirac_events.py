"""What changes the S^2 Dirac atoms between steps: capture, absorption and merging, and the
S^2 Dirac state that runs them (:class:`SphereDiracState`, capture after every step).

Never inside a Runge-Kutta step. :func:`capture`, :func:`absorb` and :func:`merge` each conserve
the total mass (``sum rho area + sum m``) to round-off and keep ``rho >= 0``. A finite volume is a
merged polar cell where the grid merges cells (:class:`~solvers.sphere.cells.SphereGrid`): they are
emptied whole, so the density stays constant over its fine cells. :func:`capture_candidates` is
the cheap necessary condition that lets capture be checked after every step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from solvers.core.dirac_state import DiracState
from solvers.core.measure import DiracAtoms, starting_atoms
from solvers.model.params import AtomParams
from solvers.sphere.atoms import detect_atoms
from solvers.sphere.grid.fv import SphereFV
from solvers.sphere.measure.dirac import SphereMeasureField, fine_cells, locate, normalise
from solvers.sphere.problem import SphereProblem


def absorb(rho: np.ndarray, atoms: DiracAtoms, u_theta: np.ndarray, u_phi: np.ndarray,
           fv: SphereFV) -> tuple[np.ndarray, DiracAtoms]:
    """Add the density of every atom's finite volume to the atom when that volume has no outflow.

    Parameters
    ----------
    rho : ndarray, shape (nlat, nphi)
    atoms : DiracAtoms
    u_theta, u_phi : ndarray, shapes (nlat+1, nphi), (nlat, nphi)
        Signed face velocities of the whole measure (southward, eastward positive).
    fv : SphereFV

    Returns
    -------
    (rho, atoms) : the new density (a copy) and atoms; ``sum(rho area) + sum(m)`` is unchanged.
    """
    rho, mass = rho.copy(), atoms.mass.copy()
    flat, m, nlat = rho.reshape(-1), fv.maps, rho.shape[0]
    area = fv.problem.grid.area.ravel()
    _, cells = locate(fv, atoms.position)
    for i, c in enumerate(cells):
        j, fine = int(m.band[c]), fine_cells(fv, int(c))
        ks = fine - j * rho.shape[1]
        inward = m.right[c] == c or (u_phi.ravel()[m.right_face[c]] <= 0.0
                                     and u_phi.ravel()[m.right_face[m.left[c]]] >= 0.0)
        inward = inward and (j == 0 or bool(np.all(u_theta[j, ks] >= 0.0)))
        inward = inward and (j == nlat - 1 or bool(np.all(u_theta[j + 1, ks] <= 0.0)))
        if inward and flat[fine[0]] > 0.0:
            mass[i] += float(flat[fine] @ area[fine])
            flat[fine] = 0.0
    return rho, DiracAtoms(mass, atoms.position, atoms.ids)


def merge(atoms: DiracAtoms, width: float) -> DiracAtoms:
    """Merge atoms closer than ``width`` (geodesic, closest pair first): mass summed, position the
    normalised mass-weighted mean, identity of the heavier atom."""
    m, x, ids = list(atoms.mass), [np.asarray(p, float) for p in atoms.position], list(atoms.ids)
    while len(m) > 1:
        xs = np.asarray(x)
        cross = np.linalg.norm(np.cross(xs[:, None, :], xs[None, :, :]), axis=-1)
        dist = np.arctan2(cross, xs @ xs.T)
        np.fill_diagonal(dist, np.inf)
        i, j = np.unravel_index(np.argmin(dist), dist.shape)
        if dist[i, j] >= width:
            break
        i, j = (i, j) if m[i] >= m[j] else (j, i)
        mean = m[i] * x[i] + m[j] * x[j]
        x[i], m[i] = mean / np.linalg.norm(mean), m[i] + m[j]
        for seq in (m, x, ids):
            del seq[j]
    return DiracAtoms(np.asarray(m, float), np.asarray(x, float).reshape(-1, 3), np.asarray(ids, int))


def core_adjacency(neighbours: tuple[np.ndarray, np.ndarray]) -> sparse.csr_matrix:
    """The finite volumes' adjacency (:func:`cell_neighbours`) as a sparse 0/1 matrix
    (n_cells, n_cells): ``A @ m`` sums every finite volume's neighbours' masses."""
    start, adjacent = neighbours
    n = start.size - 1
    return sparse.csr_matrix((np.ones(adjacent.size), adjacent, start), shape=(n, n))


def capture_candidates(rho: np.ndarray, fv: SphereFV, adjacency: sparse.csr_matrix,
                       params: AtomParams) -> np.ndarray | None:
    """Where :func:`capture` could capture in ``rho`` (nlat, nphi): the fine cells (bool, shape
    (nlat * nphi,)) of the finite volumes whose core holds ``capture_fraction * min_mass``, None
    where there are none; one sparse product instead of a basin detection.

    :func:`capture` needs a basin of at least ``params.min_mass`` whose core (its peak's finite
    volume and the finite volumes adjacent to it) holds ``params.capture_fraction`` of it, so the
    peak's finite volume with its neighbours (``adjacency``: :func:`core_adjacency`) must hold
    ``capture_fraction * min_mass``: a captured basin's peak is a candidate. The bound is
    relaxed by 1e-9 relative so that a different order of summation cannot skip a capture.
    """
    volume = fv.cells(rho) * fv.maps.area
    core = volume + adjacency @ volume
    hit = core >= (1.0 - 1e-9) * params.capture_fraction * params.min_mass
    if not hit.any():
        return None
    return hit[fv.maps.cell_id.ravel()]


def capture(rho: np.ndarray, atoms: DiracAtoms, potential: np.ndarray, fv: SphereFV,
            neighbours: tuple[np.ndarray, np.ndarray], params: AtomParams, next_id: int,
            candidates: np.ndarray | None = None) -> tuple[np.ndarray, DiracAtoms]:
    """Turn concentrated basin atoms of the density into Dirac atoms.

    A basin (detected on the density with the Dirac masses deposited in their cells, so that a
    basin already holding a Dirac atom is skipped) is captured when its core (the finite volume
    of its densest cell and the finite volumes adjacent to it) holds at least
    ``params.capture_fraction`` of its mass and it has at least ``params.min_mass``. The core's
    mass goes to a new atom at the normalised centre of mass of the core (fine cell centres);
    the core is emptied: the total mass is conserved to round-off.

    Parameters
    ----------
    rho : ndarray, shape (nlat, nphi)
    atoms : DiracAtoms
    potential : ndarray, shape (nlat, nphi)
        ``s U`` of the whole measure at the centres (:meth:`SphereMeasureField.flow_potential`).
    fv : SphereFV
    neighbours : tuple
        :func:`cell_neighbours` of ``fv``.
    params : AtomParams
    next_id : int
    candidates : ndarray of bool, shape (nlat * nphi,), optional
        :func:`capture_candidates` of ``rho``: the detection then looks only at the basins of
        the flow that hold one (a basin without one has no captured peak: the same captures).

    Returns
    -------
    (rho, atoms) with the new atoms appended (ids ``next_id, next_id + 1, ...``).
    """
    g = fv.problem.grid
    area, points = g.area.ravel(), g.centres
    fine_at, _ = locate(fv, atoms.position)
    deposit = np.bincount(fine_at, weights=atoms.mass, minlength=area.size)
    cell = float(max(fv.dtheta.max(), g.dphi))
    found = detect_atoms(points, rho.ravel() * area + deposit, g.area, fv.problem.model.beta, params,
                         cell=cell, potential=potential, candidates=candidates, centres=False)
    if found.labels is None or found.count == 0:
        return rho, atoms
    rho = rho.copy()
    flat, ids = rho.reshape(-1), fv.maps.cell_id.ravel()
    held = np.zeros(found.count, bool)
    lab = found.labels[fine_at]
    held[np.unique(lab[lab >= 0])] = True
    start, adjacent = neighbours
    new_m, new_x = [], []
    for k in np.flatnonzero(~held):
        if found.mass[k] < params.min_mass:
            continue
        basin = np.flatnonzero(found.labels == k)
        peak = int(ids[basin[np.argmax(flat[basin])]])
        core = np.concatenate([[peak], adjacent[start[peak]:start[peak + 1]]])
        fine = np.concatenate([fine_cells(fv, int(c)) for c in core])
        w = flat[fine] * area[fine]
        core_mass = float(w.sum())
        if core_mass < params.capture_fraction * found.mass[k] or core_mass <= 0.0:
            continue
        new_x.append(normalise(w @ points[fine])[0])
        new_m.append(core_mass)
        flat[fine] = 0.0
    if not new_m:
        return rho, atoms
    # one concentration split into neighbouring basins is one atom: merge new atoms whose cores touch
    new = merge(DiracAtoms(np.asarray(new_m), np.asarray(new_x), np.arange(len(new_m))), 3.0 * cell)
    new_ids = np.arange(next_id, next_id + new.count)
    return rho, DiracAtoms(np.append(atoms.mass, new.mass),
                           np.concatenate([atoms.position.reshape(-1, 3), new.position]),
                           np.append(atoms.ids, new_ids).astype(int))


class SphereDiracState(DiracState, capture_every=1):
    """The S^2 Dirac state's events between steps (:class:`~solvers.core.dirac_state.DiracState`):
    positions back to unit length, then capture, absorption and merging, all after every step.

    Capture every step: a concentrated atom that waits on the grid for a capture check keeps
    moving mass as density; with a check every 10 steps, 0.003 of mass went from one of the two
    heaviest atoms to the other on ``runs/paper_s2_descent_relu.toml`` at lmax 63 and ``cfl >=
    0.25`` (docs/methods.md §6.6, the Dirac state on S^2). The basin detection runs only when
    :func:`capture_candidates` (a necessary condition: one sparse product over the finite
    volumes) finds a cell, and follows only the flow basins that hold one.

    The implementer (:class:`~solvers.sphere.measure.dirac_discretization.DiracSphereDiscretization`)
    sets ``problem``, ``field``, ``fv`` (the finite volumes), ``neighbours``
    (:func:`~solvers.sphere.measure.dirac.cell_neighbours`), ``adjacency``
    (:func:`core_adjacency` of them) and ``width`` (the merging distance, the largest cell width),
    and calls :meth:`start_dirac_state`.

    Not ``restorable``: a resume starts from the archived atoms (:meth:`starting_state`), with
    ``next_id`` past their identities and ``total`` from their mass, and the archive keeps no
    exact resume state for it.
    """

    problem: SphereProblem
    field: SphereMeasureField
    fv: SphereFV
    neighbours: tuple[np.ndarray, np.ndarray]
    adjacency: sparse.csr_matrix
    width: float

    def starting_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None,
                       fresh: bool) -> tuple[np.ndarray, DiracAtoms]:
        """The grid density (averaged over merged cells when ``fresh``) and the atoms, positions
        of unit length."""
        atoms0 = starting_atoms(self.config.initial, atoms0, fresh, 3)
        position = np.asarray(atoms0.position, dtype=float).reshape(-1, 3)
        # a resume's positions are the step state's, unit since after_step: normalising them
        # again moves their last bits, and the resumed run would not take the uninterrupted
        # run's steps bitwise
        if fresh or np.any(np.abs(np.linalg.norm(position, axis=1) - 1.0) > 1e-14):
            position = normalise(position)
        atoms0 = DiracAtoms(np.asarray(atoms0.mass, float), position, np.asarray(atoms0.ids, int))
        rho = self.prepare(rho0, fresh) if fresh else np.asarray(rho0, float)
        return rho, atoms0

    def settle(self, state: np.ndarray) -> tuple[np.ndarray, DiracAtoms, Any]:
        """``(rho, atoms, flow)``: positions back to unit length; ``flow = (f_lm, u_theta,
        u_phi)``, the density's ``(K*rho)_lm`` and the signed face velocities of the whole
        measure ((nlat+1, nphi), (nlat, nphi))."""
        rho, atoms = self.density(state).copy(), self.atoms(state)
        atoms = DiracAtoms(atoms.mass, normalise(atoms.position), atoms.ids)
        f_lm = self.problem.kernel_coefficients(rho)
        u_t, u_p = self.field.face_velocities(f_lm, atoms.position, atoms.mass)
        return rho, atoms, (f_lm, u_t, u_p)

    def capture_atoms(self, rho: np.ndarray, atoms: DiracAtoms, flow: Any) -> tuple[np.ndarray, DiracAtoms]:
        """:func:`capture` where :func:`capture_candidates` finds a cell, the basins those of the
        flow potential :meth:`SphereMeasureField.flow_potential`."""
        candidates = capture_candidates(rho, self.fv, self.adjacency, self.config.atoms)
        if candidates is None:
            return rho, atoms
        potential = self.field.flow_potential(rho, atoms.position, atoms.mass,
                                              self.problem.centre_values(flow[0]))
        return capture(rho, atoms, potential, self.fv, self.neighbours, self.config.atoms, self.next_id,
                       candidates)

    def absorb_density(self, rho: np.ndarray, atoms: DiracAtoms, flow: Any) -> tuple[np.ndarray, DiracAtoms]:
        """:func:`absorb` with the face velocities of ``flow``."""
        return absorb(rho, atoms, flow[1], flow[2], self.fv)

    def merge_atoms(self, atoms: DiracAtoms) -> DiracAtoms:
        """:func:`merge` of atoms closer than ``width``."""
        return merge(atoms, self.width)
