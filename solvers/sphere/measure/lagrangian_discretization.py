"""``time.scheme = "lagrangian"`` on S^2: the measure as weighted particles (:mod:`solvers.sphere.measure.lagrangian`).

The integrator sees the flat state ``[x (n, 3), w (n), ids (n)]`` (a
:class:`~solvers.core.measure.MeasureLayout` with no grid part); only the positions move, so
mass is conserved exactly (up to the order of summation in merges) and no density is ever
negative. A fresh run starts from one particle per fine Gauss cell holding mass (at its centre,
with its mass, docs/methods.md §6.5) plus the config's Dirac atoms. After every accepted step
(:meth:`after_step`) the positions are renormalised and particles closer than ``MERGE`` grid
widths merge (:func:`~solvers.core.point_merge.merge_close`); a particle of at least
``atoms.min_mass`` is a Dirac atom with an identity (the archive's ``dirac_*``), a lighter one is
diffuse density (the archive's ``rho``, in its fine cell).

Step size: the Lipschitz bound of the attention (``M max|K''| / beta``, as the grid schemes) plus
the perceptron's (docs/math.md §5), times ``time.rate_factor``: RK4 is stable for steps up to
2.79 / L. There is no CFL condition: a particle may cross cells in a step. A step that crosses a
ReLU unit's switching set is first order there (for that particle); on
``runs/paper_s2_descent_relu_particles.toml`` at lmax 31, steps of 0.5, 0.25 and 0.1 give the
same atoms to 1e-6 in mass and 1e-4 degrees (docs/methods.md §6.7). Mass pressed onto a switching
set from both sides (a sink corner) would chatter across it by ``dt |v|``; fix ``time.dt`` there.

Snapshots, diagnostics and the archive see the measure as the fv Dirac state does: the diffuse
particles' exact mass in their fine cells (``rho``) and the Dirac atoms (energy and dissipation
are the particles' own); a resume starts from
those (each cell's mass becomes a particle at its centre again), so it is not bitwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from solvers.model.kernel import kernel_log_shift
from solvers.core.measure import (DiracAtoms, MeasureDiscretization, MeasureLayout, PointState,
                                  starting_atoms)
from solvers.core.point_merge import merge_close, new_atom_ids
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig
from solvers.sphere.measure import lagrangian as lg
from solvers.sphere.measure.dirac import normalise
from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization
from solvers.sphere.measure.lagrangian_refine import refined_particles
from solvers.model.perceptron import lipschitz as perceptron_lipschitz


class LagrangianSphereDiscretization(PointState, MeasureDiscretization):
    """Weighted particles and Dirac atoms on S^2 (module docstring; the
    :class:`~solvers.core.measure.MeasureDiscretization` contract, as
    :class:`LagrangianCircleDiscretization`)."""

    representation = "dirac"
    positivity_cfl = None  # no grid to keep positive
    default_integrator = "rk4"
    citation = ("Lagrangian particles (the exact flow of a weighted empirical measure, one particle "
                "per Gauss cell), merged into Dirac atoms")

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.eulerian = DiracSphereDiscretization(replace(config, time=replace(config.time, scheme="fv")))
        self.problem, self.grid = self.eulerian.problem, self.eulerian.grid
        self.shape, self.cell_weight = self.eulerian.shape, self.eulerian.cell_weight
        self.layout = MeasureLayout((0,), 3)
        self.width = self.eulerian.width  # the largest cell width (rad)
        self.log_c = kernel_log_shift(config.model)
        g = self.grid
        self._centres = g.points(g.theta, g.phi).reshape(-1, 3)
        self.next_id = 0

    # -- the state ------------------------------------------------------------------------
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """The flat state from a fine-grid density ``rho0`` (nlat, nphi) and atoms (None: the
        config's ``kind = "atoms"`` atoms for a new run, none for a resume)."""
        atoms0 = starting_atoms(self.config.initial, atoms0, fresh, 3)
        self.next_id = int(atoms0.ids.max()) + 1 if atoms0.count else 0
        if fresh and self.config.time.basin_refine > 1:
            p = self._refined(rho0, atoms0)
        else:
            p = lg.from_grid(rho0, self._centres, self.grid.area, atoms0)
        return self._merged(p.position, p.mass, p.ids)

    def _refined(self, rho0: np.ndarray, atoms0: DiracAtoms) -> DiracAtoms:
        """The particles of ``rho0`` with its basin-boundary cells refined ``time.basin_refine``
        times in each direction (:mod:`solvers.sphere.measure.lagrangian_refine`; the scout run moves
        them with ``atoms0``), then ``atoms0``."""
        t = self.config.time
        a, at = np.asarray(atoms0.mass, float), normalise(atoms0.position).reshape(-1, 3)
        mass = float(np.sum(rho0 * self.grid.area) + np.sum(a))
        dt = t.dt if t.dt is not None else t.rate_factor / self.lipschitz_bound(mass)
        x, w = refined_particles(self.grid, rho0, t.basin_refine, self._velocity, t.t_end, dt,
                                 lg.MERGE * self.width, atoms=(at, a),
                                 still=t.stationary_tol if t.stop_when_stationary else 0.0)
        return DiracAtoms(np.concatenate([w, a]), np.concatenate([x, at]),
                          np.concatenate([np.full(w.size, -1), np.asarray(atoms0.ids, int)]))

    def _velocity(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        return lg.velocity(x, w, self.config.model, self.log_c)

    def _merged(self, x: np.ndarray, w: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Merge close particles; a particle of at least ``atoms.min_mass`` without an identity
        becomes a Dirac atom (gets one); lighter merged particles stay diffuse."""
        x, w, ids = merge_close(lg.normalise(x), w, lg.MERGE * self.width, ids)
        ids, self.next_id = new_atom_ids(w, ids, self.config.atoms.min_mass, self.next_id)
        return self.layout.pack(np.zeros(0), DiracAtoms(w, x, ids))

    def density(self, state: np.ndarray) -> np.ndarray:
        """The diffuse particles' masses in their fine cells over the areas (nlat, nphi)."""
        return lg.deposit(self.particles(state), self.grid.fine_cell, self.grid.area)

    def atoms(self, state: np.ndarray) -> DiracAtoms:
        p = self.particles(state)
        has = p.ids >= 0
        return DiracAtoms(p.mass[has], p.position[has], p.ids[has])

    def lipschitz_bound(self, mass: float) -> float:
        return self.problem.lipschitz_bound(mass) + perceptron_lipschitz(self.config.model.perceptron)

    def spectral_tail_limit(self) -> None:
        return None

    # -- dynamics -------------------------------------------------------------------------
    def rhs(self, state: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        """``(d state/dt, 0)``: the particles' velocities at their normalised positions (the flow
        of ``y' = v(y/|y|)`` keeps ``|y|``), masses and identities constant; no CFL rate."""
        p = self.particles(state)
        x = lg.normalise(p.position)
        v = lg.velocity(x, p.mass, self.config.model, self.log_c)
        return np.concatenate([v.ravel(), np.zeros(2 * p.count)]), 0.0

    def error_scale(self, state: np.ndarray, new: np.ndarray | None = None) -> tuple[slice, float]:
        """What an embedded pair's error test counts of ``[x (n, 3), w, ids]``: the positions
        (nothing else changes in a step), against the unit 1 (unit vectors: the tolerance
        ``atol + rtol`` in every coordinate)."""
        return slice(0, 3 * (state.size // 5)), 1.0

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """Positions back to unit length; particles closer than ``MERGE`` widths merge."""
        p = self.particles(state)
        return self._merged(p.position, p.mass, p.ids)

    # -- diagnostics ----------------------------------------------------------------------
    def dirac_state(self, state: np.ndarray) -> np.ndarray:
        """The fv Dirac state (:class:`DiracSphereDiscretization`'s flat layout) of ``state``."""
        return self.eulerian.layout.pack(self.density(state), self.atoms(state))

    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        """The fv Dirac state's diagnostics (basins, atoms, masses) with the particles' own
        energy and dissipation (the deposit moves diffuse particles to cell centres, which
        changes ``E`` by O(h))."""
        p = self.particles(state)  # unit positions: after_step renormalised them
        e, diss = lg.energy_and_dissipation(p.position, p.mass, self.config.model, self.log_c)
        return replace(self.eulerian.diagnostics(self.dirac_state(state), atoms), energy=e, dissipation=diss)

    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams) -> list[Diagnostics]:
        return [self.diagnostics(s, atoms) for s in states]
