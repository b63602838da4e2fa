"""The Sd method: the measure on ``S^{d-1}`` as weighted points that move with the exact velocity.

The integrator sees the flat state ``[x (n, d), w (n), ids (n)]`` (a
:class:`~solvers.core.measure.MeasureLayout` with no grid part). Only the positions move
(:mod:`solvers.hypersphere.points`), so the mass is conserved exactly (up to the order of
summation in merges) and no mass is ever negative. A fresh run starts from the sample of
:mod:`solvers.hypersphere.initial`. After every accepted step (:meth:`after_step`) the positions
are renormalised and points closer than :func:`merge_radius` merge (mass and first moment kept:
:func:`solvers.core.point_merge.merge_close`); a point of at least ``atoms.min_mass`` is a Dirac
atom with an identity (the archive's ``dirac_*``), a lighter one is diffuse.

Steps are error-controlled (``dopri5`` by default, ``time.rtol``/``time.atol`` on the
positions): the Lipschitz bound of ``d`` drawn units is far above the rates the points feel.

The stop rule's transport rate is the larger of the largest speed of a diffuse point and the
Dirac atoms' mass-weighted mean speed: a run is stationary once every point has merged into an
atom or stopped (so the clusters hold their final mass) and the atoms barely move.

What the pipeline's grid sees: one cell, the whole sphere, holding the diffuse points' mass as
its mean density (``rho = M_diffuse / |S^{d-1}|``); the snapshot's atoms are the paper's
clusters (all points grouped by single linkage within ``atoms.radius``, default
``min(1/(2 beta), pi/(2 d))``, paper section 4) of at least ``atoms.min_mass``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.core.measure import DiracAtoms, MeasureDiscretization, MeasureLayout, PointState
from solvers.core.point_merge import merge_close, new_atom_ids
from solvers.core.snapshot import Diagnostics
from solvers.hypersphere import points as pts
from solvers.hypersphere.initial import initial_points
from solvers.model.kernel import kernel_log_shift
from solvers.model.params import AtomParams, RunConfig

MERGE_RADIUS = 1e-3  # points closer than this (chord) merge into one ...
MERGE_FRACTION = 0.05  # ... or than this fraction of the starting sample's spacing, if smaller


def merge_radius(n: int, d: int, surface: float) -> float:
    """The merging distance of ``n`` points on ``S^{d-1}``: ``MERGE_RADIUS``, or
    ``MERGE_FRACTION`` of the sample's spacing ``(|S^{d-1}| / n)^{1/(d-1)}`` where that is smaller
    (no two points of the starting sample merge)."""
    return float(min(MERGE_RADIUS, MERGE_FRACTION * (surface / max(n, 1)) ** (1.0 / (d - 1))))


class PointsDiscretization(PointState, MeasureDiscretization):
    """Weighted points and Dirac atoms on ``S^{d-1}`` (module docstring; the
    :class:`~solvers.core.measure.MeasureDiscretization` contract)."""

    representation = "dirac"
    positivity_cfl = None  # no grid to keep positive
    default_integrator = "dopri5"
    citation = ("weighted points moved by the exact velocity of their empirical measure "
                "(Lagrangian particles), merged into Dirac atoms")

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.d = config.domain.d
        self.surface = pts.sphere_area(self.d)
        self.problem = None  # no grid problem: the model is read from the config
        self.shape = (1,)
        self.cell_weight = np.array([self.surface])
        self.layout = MeasureLayout((0,), self.d)
        self.log_c = kernel_log_shift(config.model)
        self.merge_radius = merge_radius(config.domain.resolution, self.d, self.surface)
        self.next_id = 0

    # -- the state ------------------------------------------------------------------------
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """The flat state of a new run: the sample of ``[initial]`` (``rho0`` and ``atoms0``
        are the pipeline's one-cell placeholders). A resume is not available on Sd (the
        archive keeps atoms and the diffuse mass, not every point)."""
        if not fresh:
            raise ValueError("resume: an Sd run keeps its atoms and diffuse mass in the archive, "
                             "not every point, so it cannot be continued; run it again with a "
                             "later time.t_end")
        p = initial_points(self.config.initial, self.config.domain.resolution, self.d)
        self.next_id = int(p.ids.max()) + 1 if p.count else 0
        return self._merged(p.position, p.mass, p.ids)

    def _merged(self, x: np.ndarray, w: np.ndarray, ids: np.ndarray) -> np.ndarray:
        x, w, ids = merge_close(pts.normalise(x), w, self.merge_radius, ids)
        ids, self.next_id = new_atom_ids(w, ids, self.config.atoms.min_mass, self.next_id)
        return self.layout.pack(np.zeros(0), DiracAtoms(w, x, ids))

    def density(self, state: np.ndarray) -> np.ndarray:
        """The one cell's density: the diffuse points' mass over ``|S^{d-1}|``, shape (1,)."""
        p = self.particles(state)
        return np.array([float(np.sum(p.mass[p.ids < 0])) / self.surface])

    def atoms(self, state: np.ndarray) -> DiracAtoms:
        p = self.particles(state)
        has = p.ids >= 0
        return DiracAtoms(p.mass[has], p.position[has], p.ids[has])

    @staticmethod
    def between(x_b: np.ndarray, x_a: np.ndarray, w: float) -> np.ndarray:
        return pts.normalise(x_b + w * (x_a - x_b))

    def lipschitz_bound(self, mass: float) -> float:
        return pts.lipschitz_bound(mass, self.config.model, self.log_c)

    # -- dynamics -------------------------------------------------------------------------
    def rhs(self, state: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        """``(d state/dt, 0)``: the points' velocities at their normalised positions (the flow
        of ``y' = V(y/|y|)`` keeps ``|y|``), masses and identities constant; no CFL rate."""
        p = self.particles(state)
        v = pts.velocity(pts.normalise(p.position), p.mass, self.config.model, self.log_c)
        return np.concatenate([v.ravel(), np.zeros(2 * p.count)]), 0.0

    def error_scale(self, state: np.ndarray, new: np.ndarray | None = None) -> tuple[slice, float]:
        """The positions count (unit vectors: the tolerance ``atol + rtol`` in every coordinate)."""
        return slice(0, self.d * (state.size // (self.d + 2))), 1.0

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """Positions back to unit length; points closer than ``merge_radius`` merge."""
        p = self.particles(state)
        return self._merged(p.position, p.mass, p.ids)

    # -- diagnostics ----------------------------------------------------------------------
    def clusters(self, x: np.ndarray, w: np.ndarray, atoms: AtomParams
                 ) -> tuple[np.ndarray, np.ndarray]:
        """``(mass (k,), position (k, d))`` of the paper's clusters of at least
        ``atoms.min_mass`` (module docstring), heaviest first."""
        beta = self.config.model.beta
        radius = atoms.radius if atoms.radius is not None else pts.cluster_radius(beta, self.d)
        chord = 2.0 * np.sin(0.5 * min(radius, np.pi))
        k, label = pts.groups(x, chord)
        mass = np.bincount(label, weights=w, minlength=k)
        moment = np.zeros((k, self.d))
        np.add.at(moment, label, w[:, None] * x)
        keep = np.flatnonzero(mass >= atoms.min_mass)
        keep = keep[np.argsort(-mass[keep], kind="stable")]
        return mass[keep], pts.normalise(moment[keep]) if keep.size else np.zeros((0, self.d))

    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        """Mass, energy, dissipation and transport of the points, the clusters as atoms and the
        Dirac atoms (module docstring)."""
        p = self.particles(state)
        x = pts.normalise(p.position)
        e, diss, speeds = pts.energy_and_dissipation(x, p.mass, self.config.model, self.log_c)
        free = p.ids < 0
        transport = max(float(speeds[free].max(initial=0.0)),
                        float(p.mass[~free] @ speeds[~free]) / max(float(p.mass.sum()), 1e-300))
        mass, position = self.clusters(x, p.mass, atoms)
        rho = self.density(state)
        dirac = self.atoms(state)
        total = float(np.sum(p.mass))
        return Diagnostics(mass=total, min_rho=float(rho[0]), max_rho=float(rho[0]), energy=e,
                           dissipation=diss, transport_rate=transport,
                           max_support_velocity=float(speeds.max(initial=0.0)),
                           tail_energy=float("nan"),
                           n_atoms=int(mass.size), atom_mass=mass, atom_position=position,
                           atom_core_mass=mass.copy(),
                           diffuse_mass=max(0.0, total - float(mass.sum())),
                           dirac_mass=dirac.mass, dirac_position=dirac.position,
                           dirac_id=dirac.ids)

    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams
                          ) -> list[Diagnostics]:
        return [self.diagnostics(s, atoms) for s in states]
