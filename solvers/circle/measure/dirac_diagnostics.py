"""Snapshot diagnostics of the S^1 Dirac state ``mu = rho dtheta + sum_i m_i delta_{x_i}``.

Mass, energy (paper eq. 2.7), dissipation and transport rate include the atoms; the atoms of a
snapshot are the basin atoms of the density with the Dirac masses deposited in their cells, a
basin holding Dirac atoms placed at their mass-weighted exact position. With softmax attention
(paper eq. 2.9; the state of ``time.scheme = "lagrangian"``) the velocity is ``f'/(beta f) + v'/2``
with ``f = K*mu`` of the whole measure (:func:`softmax_fields`), and the dissipation
``int grad U . V dmu`` (docs/math.md §1); those snapshots take the numpy path.

:func:`measure_diagnostics` is the numpy reference, one state at a time (a dozen array passes
and transforms, 0.3 ms at N = 512). :func:`compiled_diagnostics` gives the same values to
round-off for a batch of states: one forward and one inverse transform for all of them, then
per state one compiled call for the fields and reductions
(:func:`solvers.circle.grid.diagnostics_numba.measure_reductions`) and one for the basins
(:func:`solvers.circle.atoms_numba.detect_ring`); tests/circle/test_dirac_diagnostics.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from solvers.circle.atoms import Atoms, detect_atoms, relabel, ring_atoms
from solvers.circle.grid.discretization import (
    SUPPORT_FLOOR,
    CircleDiscretization,
    _diagnostic_multipliers,
    _ring_detector,
    tail_energy,
)
from solvers.circle.grid.fv import transport
from solvers.core.measure import DiracAtoms
from solvers.core.point_atoms import AtomSystem
from solvers.core.snapshot import Diagnostics
from solvers.model import perceptron
from solvers.model.params import AtomParams, ModelParams

# ``disc`` below is a solvers.circle.measure.dirac_discretization.DiracCircleDiscretization (which imports
# this module): its problem, compiled fields, limiter and flat-state access are what is used

def measure_energy(disc: CircleDiscretization, rho: np.ndarray, dirac: DiracAtoms,
                   rho_hat: np.ndarray | None = None) -> float:
    """``E[mu]`` (paper eq. 2.7) of density plus atoms: the density's own energy (spectral),
    the cross term ``(1/beta) sum_i m_i (K*rho)(x_i)`` and the atoms' closed form.
    ``rho_hat``: ``forward(rho)`` when already known."""
    p = disc.problem
    rho_hat = p.basis.forward(rho) if rho_hat is None else rho_hat
    return p.energy(rho, rho_hat) + atom_energy(disc, rho_hat, dirac.position, dirac.mass)


def atom_energy(disc: CircleDiscretization, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> float:
    """The atoms' part of ``E[mu]``: the cross term ``(1/beta) sum_i m_i (K*rho)(x_i)`` and the
    atoms' closed form (0 without atoms)."""
    if not m.size:
        return 0.0
    p = disc.problem
    cross = float(m @ disc.fields.density_potential_at(rho_hat, x)) / p.model.beta
    return cross + AtomSystem(energy_model(p.model), m).energy(np.stack([np.cos(x), np.sin(x)], axis=1))


def energy_model(model: ModelParams) -> ModelParams:
    """``model`` with unnormalized attention: the energy ``E_beta + (1/2) int v dmu`` is the same
    formula for softmax (paper eqs. 2.7, 2.9), and :class:`AtomSystem` (whose velocities are the
    unnormalized ones) refuses softmax models."""
    return model if model.attention == "unnormalized" else replace(model, attention="unnormalized")


def measure_atoms(disc: CircleDiscretization, rho: np.ndarray, dirac: DiracAtoms,
                  u: np.ndarray, params: AtomParams) -> Atoms:
    """Basin atoms of the measure (Dirac masses deposited in their cells); a basin holding Dirac
    atoms takes their mass-weighted exact position; a Dirac atom in no basin is an atom of its
    own. ``labels``: the atom of every cell (-1: diffuse), as for a grid density."""
    b = disc.problem.basis
    cells = disc.problem.cell_of(dirac.position)
    deposit = np.bincount(cells, weights=dirac.mass, minlength=b.n)
    found = detect_atoms(b.theta, rho * b.h + deposit, disc.problem.model.beta, params, face_velocity=u)
    return with_dirac(found, dirac, cells)


def with_dirac(found: Atoms, dirac: DiracAtoms, cells: np.ndarray) -> Atoms:
    """The basin atoms ``found`` of the deposited measure with the Dirac atoms (in ``cells``
    (n,)) put in: see :func:`measure_atoms`."""
    lab = found.labels[cells] if found.labels is not None else np.full(dirac.count, -1)
    held, alone = lab[lab >= 0], lab < 0  # a Dirac atom in no basin (e.g. moving: its cell is no
    pos, mass, core = found.position.copy(), found.mass, found.core_mass  # sink) is an atom itself
    if held.size:  # the mass-weighted mean direction of the basin's Dirac atoms
        x, m = dirac.position[lab >= 0], dirac.mass[lab >= 0]
        re = np.bincount(held, weights=m * np.cos(x), minlength=pos.size)
        im = np.bincount(held, weights=m * np.sin(x), minlength=pos.size)
        k = np.unique(held)
        pos[k] = np.mod(np.arctan2(im[k], re[k]), 2 * np.pi)
    diffuse = found.diffuse_mass - float(dirac.mass[alone].sum())
    if alone.any():
        pos, mass = np.append(pos, dirac.position[alone]), np.append(mass, dirac.mass[alone])
        core = np.append(core, dirac.mass[alone])
    order = np.argsort(pos)
    labels = found.labels  # relabelled only when the order changes (a pass over the cells)
    if labels is not None and np.any(order != np.arange(order.size)):
        labels = relabel(labels, order)
    return Atoms(mass[order], pos[order], core[order], max(diffuse, 0.0), labels)


def _with_dirac_compiled(found: Atoms, dirac: DiracAtoms, cells: np.ndarray) -> Atoms:
    """:func:`with_dirac` by one compiled call
    (:func:`solvers.circle.measure.kernels_dirac_numba.dirac_atoms_table`; the same to round-off)."""
    from solvers.circle.measure.kernels_dirac_numba import dirac_atoms_table

    lab = found.labels[cells] if found.labels is not None else np.full(dirac.count, -1)
    mass, pos, core, alone, order, moved = dirac_atoms_table(
        found.position, found.mass, found.core_mass, lab.astype(np.int64), dirac.position, dirac.mass)
    labels = relabel(found.labels, order) if moved else found.labels
    return Atoms(mass, pos, core, max(found.diffuse_mass - alone, 0.0), labels)


def measure_fields(disc: CircleDiscretization, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(u (N,), grad U (N,), V (N,), grad U (n,), V (n,))``: the signed face velocity, and
    ``grad U = d/dtheta ((1/beta) K*mu + v/2)`` and the unsigned velocity ``V`` at the cell
    centres and at the atoms (each atom's own mass exerts no force). Unnormalized attention: ``V
    = grad U``. Softmax (paper eq. 2.9): ``V = f'/(beta f) + v'/2``, ``f = K*mu`` of the whole
    measure, its own mass in an atom's ``f`` (numpy, :func:`softmax_fields`)."""
    f = disc.fields
    if disc.problem.softmax:
        return softmax_fields(disc, rho_hat, x, m)
    grad, g_atoms = f.center_gradient(rho_hat, x, m), f.atom_gradient(rho_hat, x, m)
    return f.face_velocity(rho_hat, x, m), grad, grad, g_atoms, g_atoms


def softmax_fields(disc: CircleDiscretization, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`measure_fields` for softmax attention, by the numpy reference field
    (:class:`~solvers.circle.measure.dirac.CircleMeasureField`): ``f`` and ``(1/beta) f'`` are the
    density's (spectral, as :meth:`CircleProblem.attention_field`) plus the atoms' closed forms."""
    p, field = disc.problem, disc.field
    b, beta = p.basis, p.model.beta
    both = b.backward(np.stack([rho_hat * p.multipliers("d_face"), rho_hat * p.multipliers("f_face")]))
    if p.moved_faces.size:
        both[:, p.moved_faces] = [p.moved_attention(rho_hat), p.moved_attention(rho_hat, "kernel")]
    faces = p.faces
    ratio = (both[0] / beta + field.atom_attention(faces, x, m)) / (both[1] + field.atom_potential(faces, x, m))
    u = p.sign * (ratio + p.multipliers("w_face"))
    w_c = p.multipliers("w_center")
    grad = field.center_gradient(rho_hat, x, m)
    f_c = b.backward(rho_hat * p.multipliers("kernel")) + field.atom_potential(b.theta, x, m)
    g_atoms = field.atom_gradient(rho_hat, x, m)
    if not m.size:
        return u, grad, (grad - w_c) / f_c + w_c, g_atoms, g_atoms
    w_a = perceptron.circle_velocity(p.model.perceptron, x)
    f_a = field.density_potential_at(rho_hat, x) + field.atom_potential(x, x, m)
    return u, grad, (grad - w_c) / f_c + w_c, g_atoms, (g_atoms - w_a) / f_a + w_a


def measure_diagnostics(disc: CircleDiscretization, state: np.ndarray, params: AtomParams) -> Diagnostics:
    """Snapshot diagnostics of the measure (mass, energy and dissipation include the atoms).

    ``dissipation = int grad U . V dmu`` (``dE/dt = s`` times it; unnormalized: ``int |grad U|^2
    dmu``; softmax, pure attention: ``int |f'|^2 / (beta^2 f) dmu``, docs/math.md §1); the
    transport rate and the largest speed are those of the velocity ``V`` that moves the measure."""
    b = disc.problem.basis
    rho, dirac = disc.density(state), disc.atoms(state)
    x, m = dirac.position, dirac.mass
    rho_hat = b.forward(rho)
    mass = float(rho.sum() * b.h + m.sum())
    u, grad, vel, g_atoms, v_atoms = measure_fields(disc, rho_hat, x, m)
    drho, _ = transport(rho, u, b.h, disc.limiter, scale=disc.problem.cell_scale, kinks=disc.problem.kinks)
    support = rho > SUPPORT_FLOOR * abs(mass) / (2.0 * np.pi)
    speeds = np.concatenate([np.abs(vel[support]), np.abs(v_atoms)])
    found = measure_atoms(disc, rho, dirac, u, params)
    return Diagnostics(
        mass=mass, min_rho=float(rho.min()), max_rho=float(rho.max()),
        energy=measure_energy(disc, rho, dirac, rho_hat),
        dissipation=float(np.sum(rho * grad * vel) * b.h + m @ (g_atoms * v_atoms)),
        transport_rate=float(np.sum(np.abs(drho)) * b.h + 2.0 * (m @ np.abs(v_atoms)) / b.h),
        max_support_velocity=float(speeds.max()) if speeds.size else 0.0,
        tail_energy=tail_energy(rho_hat, disc.k_max),
        n_atoms=found.count, atom_mass=found.mass, atom_position=found.position,
        atom_core_mass=found.core_mass, diffuse_mass=found.diffuse_mass,
        atom_labels=None,  # no per-atom mass budget: Dirac masses move between atoms without cells
        dirac_mass=m.copy(), dirac_position=x.copy(), dirac_id=dirac.ids.copy(),
    )


def compiled_diagnostics(disc: CircleDiscretization, states: Sequence[np.ndarray],
                         params: AtomParams) -> list[Diagnostics]:
    """:func:`measure_diagnostics` of each flat state in ``states``, compiled (``disc.compiled``
    set; unnormalized attention): the same values to round-off."""
    b, p = disc.problem.basis, disc.problem
    rho = np.stack([disc.density(s) for s in states])
    rho_hat = b.forward(rho)
    stack = b.backward(rho_hat[:, None, :] * _diagnostic_multipliers(p))
    if p.moved_faces.size:  # the attention at faces moved onto perceptron corners (kink_faces)
        for i in range(len(states)):
            stack[i, 0, p.moved_faces] = p.moved_attention(rho_hat[i])
    return [_compiled_one(disc, rho[i], rho_hat[i], stack[i], disc.atoms(s), params)
            for i, s in enumerate(states)]


def _compiled_one(disc: CircleDiscretization, rho: np.ndarray, rho_hat: np.ndarray,
                  stack: np.ndarray, dirac: DiracAtoms, params: AtomParams) -> Diagnostics:
    """One state of :func:`compiled_diagnostics`: ``stack`` (3, N) the inverse transforms of
    ``rho_hat`` times the face derivative, the centre derivative and the kernel."""
    from solvers.circle.atoms_numba import detect_ring
    from solvers.circle.grid.diagnostics_numba import measure_reductions
    from solvers.core.kernels_numba import LIMITER_CODES

    p, f = disc.problem, disc.compiled
    b, beta = p.basis, float(p.model.beta)
    x, m = np.ascontiguousarray(dirac.position, dtype=float), np.ascontiguousarray(dirac.mass, dtype=float)
    g_atoms = f.atom_gradient(rho_hat, x, m)
    face, (mass, low, high, e_att, e_v, diss, rate, speed, tail) = measure_reductions(
        rho, b.h, stack, x, m, f.faces, f.consts, p.multipliers("w_center"), p.multipliers("v_center"),
        (LIMITER_CODES[disc.limiter], p.cell_scale, p.kinks), rho_hat, disc.k_max, SUPPORT_FLOOR / (2.0 * np.pi),
        g_atoms)
    cells = f.cell_of(x)
    cell_mass = rho * b.h + np.bincount(cells, weights=m, minlength=b.n)
    found = ring_atoms(detect_ring(face, cell_mass, *_ring_detector(p, params).arguments()))
    if found is None:  # the flow pointers form a cycle: the reference path raises
        found = detect_atoms(b.theta, cell_mass, beta, params, face_velocity=face, backend="numpy")
    atoms = _with_dirac_compiled(found, dirac, cells)
    energy = e_att / (2.0 * beta) + 0.5 * e_v + f.atom_energy(rho_hat, x, m)
    return Diagnostics(
        mass=mass, min_rho=low, max_rho=high, energy=energy, dissipation=diss, transport_rate=rate,
        max_support_velocity=speed, tail_energy=tail, n_atoms=atoms.count, atom_mass=atoms.mass,
        atom_position=atoms.position, atom_core_mass=atoms.core_mass, diffuse_mass=atoms.diffuse_mass,
        atom_labels=None, dirac_mass=m.copy(), dirac_position=x.copy(), dirac_id=dirac.ids.copy())
