"""Snapshot diagnostics of the S^2 Dirac state ``mu = rho dsigma + sum_i m_i delta_{x_i}``.

The S^2 counterpart of :mod:`solvers.circle.measure.dirac_diagnostics`. Mass, energy (paper eq.
2.7), dissipation and transport rate include the atoms; the atoms of a snapshot are the basin
atoms of the measure with the Dirac masses deposited in their cells, a basin holding Dirac atoms
placed at their normalised mass-weighted position. With softmax attention (paper eq. 2.9; the
snapshots of ``time.scheme = "lagrangian"``) the velocity is ``grad f / (beta f) + grad v / 2``
with ``f = K*mu`` of the whole measure (:func:`measure_fields`). One numpy path (the circle also
has a compiled batch).

``disc`` below is a :class:`~solvers.sphere.measure.dirac_discretization.DiracSphereDiscretization`
(which imports this module): its problem, grid, finite volumes, field and flat-state access are
what is used.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from solvers.core.measure import DiracAtoms
from solvers.core.point_atoms import AtomSystem
from solvers.core.snapshot import Diagnostics
from solvers.model import perceptron
from solvers.model.params import AtomParams
from solvers.sphere.atoms import SphereAtoms, detect_atoms
from solvers.sphere.grid.discretization import SUPPORT_FLOOR, SphereDiscretization, degree_tail
from solvers.sphere.measure.dirac import cell_width, locate, normalise

FOUR_PI = 4.0 * np.pi


def measure_energy(disc: SphereDiscretization, rho: np.ndarray, dirac: DiracAtoms,
                   fields: dict | None = None) -> float:
    """``E[mu]`` (paper eq. 2.7) of density plus atoms: the density's own energy (spectral, cells
    as point masses), the cross term ``(1/beta) sum_i m_i (K*rho)(x_i)`` and the atoms' closed
    form (self-energy ``c_K m_i^2 e^beta / (2 beta)`` included, docs/math.md §1)."""
    p, x = disc.problem, dirac.position
    e = p.energy(rho, fields)
    if dirac.count:
        e += float(dirac.mass @ disc.field.density_potential_at(rho, x)) / p.model.beta
        # the same formula for softmax (paper eq. 2.9); AtomSystem refuses softmax models
        model = p.model if p.model.attention == "unnormalized" else replace(p.model, attention="unnormalized")
        e += AtomSystem(model, dirac.mass).energy(x)
    return e


def measure_atoms(disc: SphereDiscretization, rho: np.ndarray, dirac: DiracAtoms,
                  potential: np.ndarray, params: AtomParams) -> SphereAtoms:
    """Basin atoms of the measure (Dirac masses deposited in their cells), heaviest first; a
    basin holding Dirac atoms takes their normalised mass-weighted position; a Dirac atom in no
    basin is an atom of its own (labels: fine cells, as :func:`detect_atoms`)."""
    g, f = disc.grid, disc.field
    area = g.area.ravel()
    fine, _ = locate(disc.fv, dirac.position)
    deposit = np.bincount(fine, weights=dirac.mass, minlength=area.size)
    found = detect_atoms(f.centres, rho.ravel() * area + deposit, g.area, disc.problem.model.beta,
                         params, cell=disc.width, potential=potential)
    pos, mass, core = found.position.copy(), found.mass.copy(), found.core_mass.copy()
    labels = found.labels if found.labels is not None else np.full(area.size, -1)
    lab = labels[fine]
    for k in np.unique(lab[lab >= 0]):
        pos[k] = normalise(dirac.mass[lab == k] @ dirac.position[lab == k])[0]
    alone = lab < 0  # a Dirac atom in no basin (e.g. its cell is no sink) is an atom itself
    diffuse = found.diffuse_mass - float(dirac.mass[alone].sum())
    pos = np.concatenate([pos.reshape(-1, 3), dirac.position[alone]])
    mass = np.append(mass, dirac.mass[alone])
    core = np.append(core, dirac.mass[alone])
    order = np.argsort(-mass, kind="stable")
    rank = np.empty(order.size, dtype=int)
    rank[order] = np.arange(order.size)
    labels = np.where(labels >= 0, rank[np.maximum(labels, 0)] if order.size else -1, -1)
    return SphereAtoms(mass[order], pos[order], core[order], max(diffuse, 0.0), labels)


def measure_fields(disc: SphereDiscretization, rho: np.ndarray, x: np.ndarray, m: np.ndarray,
                   fields: dict) -> dict[str, tuple | np.ndarray]:
    """The velocities of the measure for its snapshot diagnostics: ``u`` (the signed face
    velocities ``(u_theta, u_phi)``), ``grad`` and ``vel`` (``grad U`` and the unsigned velocity
    ``V`` at the cell centres, (theta, phi) components each (nlat, nphi)), ``g_atoms`` and
    ``v_atoms`` (the same at the atoms, (n, 3), each atom's own mass exerting no force) and
    ``potential`` (nlat, nphi), whose gradient is the flow ``s V`` (the basins).

    Unnormalized attention: ``V = grad U``, potential ``s U``. Softmax (paper eq. 2.9): ``V =
    grad f / (beta f) + grad v / 2`` with ``f = K*mu`` of the whole measure (an atom's own mass in
    its ``f``), potential ``s (log f / beta + v / 2)``. ``fields``: ``problem.centre_fields(rho)``.
    """
    p, f = disc.problem, disc.field
    a_t, a_p = f.centre_attention(x, m)
    grad = (fields["grad_theta"] + a_t, fields["grad_phi"] + a_p)
    g_atoms = f.atom_gradient(rho, x, m)
    if p.model.attention != "softmax":
        u = f.face_velocities(p.kernel_coefficients(rho), x, m)
        return {"u": u, "grad": grad, "vel": grad, "g_atoms": g_atoms, "v_atoms": g_atoms,
                "potential": f.flow_potential(rho, x, m, fields["f"])}
    beta, (w_theta, w_phi, v_c) = p.model.beta, p.perceptron_centres
    f_c = fields["f"] + f.atom_potential(f.centres, x, m).reshape(p.grid.shape)
    vel = tuple((gr - w) / f_c + w for gr, w in zip(grad, (w_theta, w_phi)))
    v_atoms = g_atoms
    if m.size:
        hw = perceptron.half_gradient(p.model.perceptron, x)
        f_a = f.density_potential_at(rho, x) + f.atom_potential(x, x, m)
        v_atoms = (g_atoms - hw) / f_a[:, None] + hw
    potential = p.sign * (np.log(np.maximum(f_c, np.finfo(float).tiny)) / beta + 0.5 * v_c)
    return {"u": softmax_face_velocities(disc, rho, x, m), "grad": grad, "vel": vel,
            "g_atoms": g_atoms, "v_atoms": v_atoms, "potential": potential}


def softmax_face_velocities(disc: SphereDiscretization, rho: np.ndarray, x: np.ndarray,
                            m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The signed softmax velocities ``(u_theta (nlat+1, nphi), u_phi (nlat, nphi))`` of density
    plus atoms at the faces (paper eq. 2.9): ``s ((1/beta) grad f / f + grad v / 2)`` with the
    density's ``f`` and ``grad f`` synthesised there (as :meth:`SphereProblem.velocity`) and the
    atoms' in closed form (numpy; snapshots only)."""
    p, field = disc.problem, disc.field
    grad_t, grad_p, f_t, f_p = p.face_kernel_fields(p.kernel_coefficients(rho))
    if m.size:
        a_t, a_p = field.face_attention(x, m)
        grad_t, grad_p = grad_t + a_t, grad_p + a_p
        theta_faces, phi_faces = field.face_points
        f_t = f_t + field.atom_potential(theta_faces, x, m).reshape(f_t.shape)
        f_p = f_p + field.atom_potential(phi_faces, x, m).reshape(f_p.shape)
    w_theta, w_phi = p.perceptron_faces
    return p.sign * (grad_t / f_t + w_theta), p.sign * (grad_p / f_p + w_phi)


def measure_diagnostics(disc: SphereDiscretization, state: np.ndarray, params: AtomParams) -> Diagnostics:
    """Snapshot diagnostics of the measure (mass, energy and dissipation include the atoms).

    ``dissipation = int grad U . V dmu`` (``dE/dt = s`` times it; docs/math.md §1), the transport
    rate and the largest speed those of the velocity ``V`` that moves the measure
    (:func:`measure_fields`)."""
    g, p = disc.grid, disc.problem
    rho, dirac = disc.density(state), disc.atoms(state)
    x, m = dirac.position, dirac.mass
    mass = float(np.sum(rho * g.area) + m.sum())
    fields = p.centre_fields(rho)
    mf = measure_fields(disc, rho, x, m, fields)
    (grad_t, grad_p), (vel_t, vel_p) = mf["grad"], mf["vel"]
    speed_atoms = np.linalg.norm(mf["v_atoms"], axis=1)
    drho, _ = disc.fv.transport(rho, *mf["u"])
    _, cells = locate(disc.fv, x)
    support = rho > SUPPORT_FLOOR * abs(mass) / FOUR_PI
    speeds = np.concatenate([np.hypot(vel_t, vel_p)[support], speed_atoms])
    found = measure_atoms(disc, rho, dirac, mf["potential"], params)
    b = g.basis
    return Diagnostics(
        mass=mass, min_rho=float(rho.min()), max_rho=float(rho.max()),
        energy=measure_energy(disc, rho, dirac, fields),
        dissipation=float(np.sum(rho * (grad_t * vel_t + grad_p * vel_p) * g.area)
                          + m @ np.sum(mf["g_atoms"] * mf["v_atoms"], axis=1)),
        transport_rate=float(np.sum(np.abs(drho) * g.area)
                             + 2.0 * (m @ (speed_atoms / cell_width(disc.fv, cells)))),
        max_support_velocity=float(speeds.max()) if speeds.size else 0.0,
        tail_energy=degree_tail(b.forward(rho), b.degrees, b.orders, b.lmax),
        n_atoms=found.count, atom_mass=found.mass, atom_position=found.position,
        atom_core_mass=found.core_mass, diffuse_mass=found.diffuse_mass,
        atom_labels=found.labels,
        dirac_mass=m.copy(), dirac_position=x.copy(), dirac_id=dirac.ids.copy(),
    )
