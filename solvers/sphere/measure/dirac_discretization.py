"""The ``[atoms] representation = "dirac"`` discretisation on S^2: density plus Dirac atoms.

The S^2 counterpart of :mod:`solvers.circle.measure.dirac_discretization`. The state the integrator sees
is the flat vector of :class:`solvers.core.measure.MeasureLayout` (``[rho (nlat nphi),
x (n, 3), m (n), ids (n)]``, positions unit vectors); the right-hand side moves the density by
finite volumes with the face velocities of the whole measure and the atoms by their velocity
(:mod:`solvers.sphere.measure.dirac`); the events between steps (positions back to unit length,
then capture, absorption and merging, all after every step) are those of
:class:`~solvers.sphere.measure.dirac_events.SphereDiracState`, the snapshot diagnostics those of
:mod:`solvers.sphere.measure.dirac_diagnostics`.

Step size (docs/math.md §6): ``max_rate`` is the larger of the fv Courant rate (over the faces
that move mass) and ``|v_i| / w_i`` over the atoms, ``w_i`` the smaller width of the atom's
finite volume (an atom must not cross more than a cell per step, so that it sees the density it
moves through); the Lipschitz bound is the density's ``M max|K''| / beta`` with ``M`` the whole
mass. A Dirac atom has no self-interaction, so no face next to it is held back by its own mass.
"""

from __future__ import annotations

import numpy as np

from solvers.core.measure import MeasureLayout
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig
from solvers.sphere.measure.dirac import SphereMeasureField, atom_widths, band_widths, cell_neighbours, normalise
from solvers.sphere.measure.dirac_diagnostics import measure_diagnostics
from solvers.sphere.measure.dirac_events import SphereDiracState, core_adjacency
from solvers.sphere.grid.discretization import SphereDiscretization

FOUR_PI = 4.0 * np.pi


class DiracSphereDiscretization(SphereDiracState, SphereDiscretization):
    """Grid density plus Dirac atoms on S^2 (fv scheme, unnormalized attention; the diagnostics
    also for softmax, the snapshots of :class:`~solvers.sphere.measure.lagrangian_discretization.LagrangianSphereDiscretization`)."""

    representation = "dirac"

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        if self.scheme != "fv":
            raise ValueError("atoms.representation = \"dirac\" needs time.scheme = \"fv\"")
        self.start_dirac_state(config, MeasureLayout(self.shape, 3))
        self.fv = self.rhs
        self.field = SphereMeasureField(self.problem)
        self.neighbours = cell_neighbours(self.fv)
        self.adjacency = core_adjacency(self.neighbours)  # capture_candidates' neighbour sums
        self._bands = band_widths(self.fv)  # an atom's cell width from its band (the step's rate)
        self.width = float(max(self.grid.dtheta.max(), self.grid.dphi))  # merging distance
        self.rhs = self._rhs

    @staticmethod
    def between(x_b: np.ndarray, x_a: np.ndarray, w: float) -> np.ndarray:
        """Unit vectors at ``w`` on the chord from ``x_b`` to ``x_a`` (n, 3), renormalised."""
        return normalise(x_b + w * (x_a - x_b))

    # -- the state ------------------------------------------------------------------------
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

    # -- diagnostics ----------------------------------------------------------------------
    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return measure_diagnostics(self, state, atoms)
