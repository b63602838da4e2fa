"""The ``[atoms] representation = "dirac"`` discretisation on S^2: density plus Dirac atoms.

The S^2 counterpart of :mod:`solvers.circle.measure.dirac_discretization`. The state the integrator sees
is the flat vector of :class:`solvers.core.measure.MeasureLayout` (``[rho (nlat nphi),
x (n, 3), m (n), ids (n)]``, positions unit vectors); the right-hand side moves the density by
finite volumes with the face velocities of the whole measure and the atoms by their velocity
(:mod:`solvers.sphere.measure.dirac`). :meth:`DiracSphereDiscretization.after_step` renormalises the
positions to unit length and applies capture, absorption and merging after every accepted step
(capture's basin detection only where
:func:`~solvers.sphere.measure.dirac_events.capture_candidates` finds a cell it could capture).

Step size (docs/math.md §6): ``max_rate`` is the larger of the fv Courant rate (over the faces
that move mass) and ``|v_i| / w_i`` over the atoms, ``w_i`` the smaller width of the atom's
finite volume (an atom must not cross more than a cell per step, so that it sees the density it
moves through); the Lipschitz bound is the density's ``M max|K''| / beta`` with ``M`` the whole
mass. A Dirac atom has no self-interaction, so no face next to it is held back by its own mass.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from solvers.core.discretization import bound_mass
from solvers.core.measure import DiracAtoms, MeasureLayout, MeasureStateAccess, starting_atoms
from solvers.core.point_atoms import AtomSystem
from solvers.core.snapshot import Diagnostics
from solvers.model import perceptron
from solvers.model.params import AtomParams, RunConfig
from solvers.sphere.atoms import SphereAtoms, detect_atoms
from solvers.sphere.measure.dirac import (
    SphereMeasureField,
    atom_widths,
    band_widths,
    cell_neighbours,
    cell_width,
    locate,
    normalise,
)
from solvers.sphere.measure.dirac_events import absorb, capture, capture_candidates, core_adjacency, merge
from solvers.sphere.grid.discretization import (
    SUPPORT_FLOOR,
    SphereDiscretization,
    degree_tail,
)

FOUR_PI = 4.0 * np.pi


class DiracSphereDiscretization(MeasureStateAccess, SphereDiscretization):
    """Grid density plus Dirac atoms on S^2 (fv scheme, unnormalized attention; the diagnostics
    also for softmax, the snapshots of :class:`~solvers.sphere.measure.lagrangian_discretization.LagrangianSphereDiscretization`)."""

    representation = "dirac"

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        if self.scheme != "fv":
            raise ValueError("atoms.representation = \"dirac\" needs time.scheme = \"fv\"")
        self.config = config
        self.fv = self.rhs
        self.field = SphereMeasureField(self.problem)
        self.layout = MeasureLayout(self.shape, 3)
        self.neighbours = cell_neighbours(self.fv)
        self._adjacency = core_adjacency(self.neighbours)  # capture_candidates' neighbour sums
        self._bands = band_widths(self.fv)  # an atom's cell width from its band (the step's rate)
        self.width = float(max(self.grid.dtheta.max(), self.grid.dphi))  # merging distance
        self.total = 1.0
        self.next_id = 0
        self.rhs = self._rhs

    @staticmethod
    def between(x_b: np.ndarray, x_a: np.ndarray, w: float) -> np.ndarray:
        """Unit vectors at ``w`` on the chord from ``x_b`` to ``x_a`` (n, 3), renormalised."""
        return normalise(x_b + w * (x_a - x_b))

    # -- the state ------------------------------------------------------------------------
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """Flat state from the grid density (averaged over merged cells when ``fresh``) and the
        atoms (None: the config's ``kind = "atoms"`` atoms for a new run, none for a resume)."""
        atoms0 = starting_atoms(self.config.initial, atoms0, fresh, 3)
        position = np.asarray(atoms0.position, dtype=float).reshape(-1, 3)
        # a resume's positions are the step state's, unit since after_step: normalising them
        # again moves their last bits, and the resumed run would not take the uninterrupted
        # run's steps bitwise
        if fresh or np.any(np.abs(np.linalg.norm(position, axis=1) - 1.0) > 1e-14):
            position = normalise(position)
        atoms0 = DiracAtoms(np.asarray(atoms0.mass, float), position, np.asarray(atoms0.ids, int))
        rho = self.prepare(rho0, fresh) if fresh else np.asarray(rho0, float)
        self.next_id = int(atoms0.ids.max()) + 1 if atoms0.count else 0
        state = self.layout.pack(rho, merge(atoms0, self.width))
        self.total = bound_mass(self.total_mass(state))
        return state

    def total_mass(self, state: np.ndarray) -> float:
        """``sum(rho area) + sum(m)``."""
        return float(np.sum(self.density(state) * self.grid.area) + np.sum(self.atoms(state).mass))

    # -- dynamics -------------------------------------------------------------------------
    def _rhs(self, state: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        """``(d state/dt, max_rate)``: fv for the density, ``s grad U(x_i)`` for the atoms."""
        layout, fv, p = self.layout, self.fv, self.problem
        rho, n, g = layout.density(state), layout.count(state), layout.grid_size
        x = normalise(state[g : g + 3 * n])
        m = state[g + 3 * n : g + 4 * n]
        f_lm = p.kernel_coefficients(rho, backend=fv.backend)
        u_t, u_p = self.field.face_velocities(f_lm, x, m, backend=fv.backend)
        mean = float(np.mean(fv.cells(rho)))
        floor = self.config.time.cfl_floor  # of M / (4 pi): faces that move mass (§8)
        fv.mass_floor = floor * self.total / FOUR_PI / mean if mean > 0 else floor
        drho, rate = fv.transport(rho, u_t, u_p, dt)
        v = p.sign * self.field.atom_gradient(rho, x, m, f_lm)
        if n:
            rate = max(rate, float(np.max(np.linalg.norm(v, axis=1) / atom_widths(*self._bands, x))))
        return np.concatenate([np.ravel(drho), v.ravel(), np.zeros(2 * n)]), rate

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """Positions back to unit length, then capture, absorption and merging.

        Capture is checked after every step. Checking it every 10 steps (until round 11) let a
        concentrated atom wait up to 10 steps on the grid: on ``runs/paper_s2_descent_relu.toml``
        at lmax 63 that moved 0.003 of mass between the two heaviest atoms at ``cfl >= 0.25``
        (docs/methods.md §6.6, the Dirac state on S^2). The basin detection runs only when
        :func:`capture_candidates` (a necessary condition: one sparse product over the finite
        volumes) finds a cell, and follows only the flow basins that hold one."""
        rho, atoms = self.density(state).copy(), self.atoms(state)
        atoms = DiracAtoms(atoms.mass, normalise(atoms.position), atoms.ids)
        x, m = atoms.position, atoms.mass
        f_lm = self.problem.kernel_coefficients(rho)
        u_t, u_p = self.field.face_velocities(f_lm, x, m)
        candidates = capture_candidates(rho, self.fv, self._adjacency, self.config.atoms)
        if candidates is not None:
            potential = self.field.flow_potential(rho, x, m, self.problem.centre_values(f_lm))
            rho, atoms = capture(rho, atoms, potential, self.fv, self.neighbours, self.config.atoms,
                                 self.next_id, candidates)
            self.reserve_ids(atoms)
        rho, atoms = absorb(rho, atoms, u_t, u_p, self.fv)
        return self.layout.pack(rho, merge(atoms, self.width))

    # -- diagnostics ----------------------------------------------------------------------
    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return measure_diagnostics(self, state, atoms)


def measure_energy(disc: DiracSphereDiscretization, rho: np.ndarray, dirac: DiracAtoms,
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


def measure_atoms(disc: DiracSphereDiscretization, rho: np.ndarray, dirac: DiracAtoms,
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


def measure_fields(disc: DiracSphereDiscretization, rho: np.ndarray, x: np.ndarray, m: np.ndarray,
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
    c, beta = p._c, p.model.beta
    f_c = fields["f"] + f.atom_potential(f.centres, x, m).reshape(p.grid.shape)
    vel = tuple((gr - w) / f_c + w for gr, w in zip(grad, (c["w_theta_c"], c["w_phi_c"])))
    v_atoms = g_atoms
    if m.size:
        hw = perceptron.half_gradient(p.model.perceptron, x)
        f_a = f.density_potential_at(rho, x) + f.atom_potential(x, x, m)
        v_atoms = (g_atoms - hw) / f_a[:, None] + hw
    potential = p.sign * (np.log(np.maximum(f_c, np.finfo(float).tiny)) / beta + 0.5 * c["v_c"])
    return {"u": softmax_face_velocities(disc, rho, x, m), "grad": grad, "vel": vel,
            "g_atoms": g_atoms, "v_atoms": v_atoms, "potential": potential}


def softmax_face_velocities(disc: DiracSphereDiscretization, rho: np.ndarray, x: np.ndarray,
                            m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The signed softmax velocities ``(u_theta (nlat+1, nphi), u_phi (nlat, nphi))`` of density
    plus atoms at the faces (paper eq. 2.9): ``s ((1/beta) grad f / f + grad v / 2)`` with the
    density's ``f`` and ``grad f`` synthesised there (as :meth:`SphereProblem.velocity`) and the
    atoms' in closed form (numpy; snapshots only)."""
    p, field, g = disc.problem, disc.field, disc.grid
    c, beta = p._c, p.model.beta
    f_lm = p.kernel_coefficients(rho)
    shift = 0.5 * g.dphi
    grad_t = c["faces"](f_lm, "dp") / beta
    grad_p = c["centres"](f_lm, "p", d_phi=True, shift=shift) / (beta * np.sin(g.theta)[:, None])
    f_t, f_p = c["faces"](f_lm, "p"), c["centres"](f_lm, "p", shift=shift)
    if m.size:
        a_t, a_p = field.face_attention(x, m)
        grad_t, grad_p = grad_t + a_t, grad_p + a_p
        f_t = f_t + field.atom_potential(field._c["theta_faces"][0], x, m).reshape(f_t.shape)
        f_p = f_p + field.atom_potential(field._c["phi_faces"][0], x, m).reshape(f_p.shape)
    return p.sign * (grad_t / f_t + c["w_theta_f"]), p.sign * (grad_p / f_p + c["w_phi_z"])


def measure_diagnostics(disc: DiracSphereDiscretization, state: np.ndarray, params: AtomParams) -> Diagnostics:
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
