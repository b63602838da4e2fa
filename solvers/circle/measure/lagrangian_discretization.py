"""``time.scheme = "lagrangian"`` on S^1: moving finite volumes plus Dirac atoms (the measure-valued
state, ``[atoms] representation = "dirac"``), :mod:`solvers.circle.measure.lagrangian`.

The integrator sees the flat state ``[X, m, A, ids]``; only the points move
(``dX_k/dt = s dU/dx(X_k)``), so mass is conserved exactly by construction and the density
``m_k / (X_{k+1} - X_k)`` is never negative. Between steps (:meth:`after_step`), in this order:

- collapse (:func:`~solvers.circle.measure.lagrangian.short_cells`): a cell shorter than
  ``COLLAPSE h`` becomes a Dirac atom (the flow concentrated it by a factor of at least
  ``1 / COLLAPSE``) when the flow holds its run of short cells together
  (:func:`~solvers.circle.measure.lagrangian.held_runs`, the fv Dirac state's capture rule), and in any
  case once it is shorter than ``MET h`` (its ends have met: a cluster carried along while it
  collapses; below that, round-off in the positions could turn cells inside out). Under
  descent a cluster pressed together by a passing wave otherwise became an atom that kept its
  mass for ever (beta = 50: .0352 at N = 256, .0222 at N = 1024; docs/methods.md §6.2,
  the Dirac state's capture). A cell beside an atom shorter than ``ABSORB h`` joins the atom;
  atoms closer than a grid cell ``h`` merge, with what lies between them. Mass and first moment
  are kept;
- refinement: a cell longer than ``REFINE h`` that holds mass is split in two, so that a
  watershed inside a stretched cell sends each half its own way. The split assumes the cell's
  density is (nearly) uniform, so it must come before the flow has deformed the cell much:
  with ``REFINE = 2`` the demo's heaviest atom depended on where the initial points sat
  relative to a watershed, by up to half a cell's mass (0.5/N: .5877 / .5858 / .5838 at
  N = 128 for points offset by h/2, h/4, 0); with ``REFINE = 1.1`` it reads .58380 / .58381 /
  .58382 at N = 128 / 256 / 512 (t = 300).

Step size: ``max_rate`` is the largest ``|u_{k+1} - u_k| / L_k`` over cells that move mass
(their rate of stretching or compression; cells thinner than ``time.cfl_floor`` of the mean
density are left out, as the fv Dirac state leaves out their faces) and ``|du/dx|`` at the
atoms (finite differences): ``dt * max_rate <= cfl`` keeps the points in order, and a step
whose points cross is rejected (:meth:`accept`) and retried at half the size. The nonlocal rate
bound ``C / L(M)`` applies as for the grid schemes (docs/math.md §6).

Where numba runs, a right-hand side is one compiled call, and so are the bookkeeping after a
step (which hands back the state itself when nothing happens) and the order check
(:mod:`solvers.circle.measure.kernels_lagrangian_numba`): the operations of the numpy code below, which
stays the reference (``MEANFIELD_NUMPY=1``) and runs where the kernels cannot (a softmax point
far from all the mass, every cell met in one point); the two take bitwise the same steps
(tests/circle/test_lagrangian_kernels.py).

Snapshots, diagnostics and the archive see the measure as the grid scheme's Dirac state does:
the diffuse part's exact mass in each uniform cell (``rho``) and the Dirac atoms. The archive
also keeps the cells themselves behind its last record (:mod:`solvers.io.resume_slots`), and a
resume continues from them (:meth:`LagrangianCircleDiscretization.restore_state`): bitwise the
uninterrupted run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from solvers.circle.measure import lagrangian as lg
from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization
from solvers.core.backend import default_backend
from solvers.model.kernel import kernel_log_shift
from solvers.core.measure import DiracAtoms, MeasureDiscretization, starting_atoms
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig

COLLAPSE = 1e-3  # a cell shorter than COLLAPSE h becomes an atom, if the flow holds it together
MET = 1e-6  # ... and a cell shorter than MET h in any case (its ends have met)
ABSORB = 0.05  # a cell beside an atom and shorter than ABSORB h joins it
MERGE = 1.0  # atoms closer than MERGE h merge
REFINE = 1.1  # a cell longer than REFINE h that holds mass is split
MASS_FLOOR = 1e-14  # relative to the whole mass: lighter cells are not split nor counted in the rate
FD_STEP = 1e-7  # the finite-difference step of du/dx at the atoms (rad)


def eulerian_config(config: RunConfig) -> RunConfig:
    """The same run on the grid (``time.scheme = "fv"``): the Dirac state that a Lagrangian run's
    archive holds (grid cell averages plus Dirac atoms), for its diagnostics and for the
    commands that read an archive (``meanfield polish``)."""
    if config.time.scheme not in ("lagrangian", "auto"):  # auto: the cells of the default method
        return config
    return replace(config, time=replace(config.time, scheme="fv"))


class LagrangianCircleDiscretization(MeasureDiscretization):
    """Moving cells and Dirac atoms on S^1 (see the module docstring and
    :class:`~solvers.core.measure.MeasureDiscretization`)."""

    representation = "dirac"
    restorable = True  # resume_extras, restore_state
    positivity_cfl = None  # no grid to keep positive: crossing points are rejected by accept()
    default_integrator = "rk4"
    citation = ("Lagrangian finite volumes (evolving diffeomorphisms): Carrillo & Moll, SIAM J. "
                "Sci. Comput. 31 (2009); with Dirac atoms")

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        # the grid Dirac state of the same run: diagnostics, snapshots and the archive's grid
        self.eulerian = DiracCircleDiscretization(eulerian_config(config))
        self.problem = self.eulerian.problem
        self.shape, self.cell_weight = self.eulerian.shape, self.eulerian.cell_weight
        self.layout = self.eulerian.layout
        self.h = self.problem.basis.h
        self.weights = lg.gradient_weights(config.model)
        self.compiled = default_backend() == "numba"
        fields = self.eulerian.compiled  # the compiled perceptron velocity, where it compiles
        self._perceptron = fields.perceptron_velocity if self.compiled and fields is not None else None
        self.next_id = 0
        self.mass_floor = MASS_FLOOR
        self.density_floor = 0.0
        # the compiled right-hand side and bookkeeping (kernels_lagrangian_numba), with the
        # perceptron's units: numba and a compiled activation; else the numpy code below
        self.kernels = None
        if self._perceptron is not None:
            from solvers.circle.measure import kernels_lagrangian_events_numba as kle
            from solvers.circle.measure import kernels_lagrangian_numba as kl

            model = config.model
            self.kernels, self.event_kernels = kl, kle
            self._units, self._sinks = fields.units, np.ascontiguousarray(self.problem.sink_corners, dtype=float)
            # (beta, s, softmax, K(0) = e^{beta + log c_K}, activation code): kl.BETA, ...
            self._consts = np.array([model.beta, model.sign, float(model.attention == "softmax"),
                                     np.exp(model.beta + kernel_log_shift(model)), fields.code], dtype=float)
            self._lengths = np.array([COLLAPSE * self.h, MET * self.h, ABSORB * self.h, MERGE * self.h,
                                      REFINE * self.h])

    # -- the state ------------------------------------------------------------------------
    def prepare_state(self, rho0: np.ndarray, atoms0: DiracAtoms | None, fresh: bool) -> np.ndarray:
        """The flat state from grid densities ``rho0`` (N,) and atoms (None: the config's
        ``kind = "atoms"`` atoms for a new run, none for a resume)."""
        atoms0 = starting_atoms(self.config.initial, atoms0, fresh, 1)
        self.next_id = int(atoms0.ids.max()) + 1 if atoms0.count else 0
        state = lg.from_grid(np.asarray(rho0, float), atoms0.mass, atoms0.position, atoms0.ids)
        total = max(self.total_mass(state.pack()), 1e-300)
        self.mass_floor = MASS_FLOOR * total
        self.density_floor = self.config.time.cfl_floor * total / (2 * np.pi)
        return self._events(state).pack()

    def resume_extras(self) -> tuple[float, float, float]:
        """What a resume restores besides ``[X, m, A, ids]`` (:meth:`restore_state`): the next
        atom identity and the mass and density floors (set from the mass at the start)."""
        return float(self.next_id), float(self.mass_floor), float(self.density_floor)

    def restore_state(self, state: np.ndarray, extras: tuple) -> np.ndarray:
        """The flat state of an exact resume, as archived: the cells as they were (not rebuilt
        from the grid), with :meth:`resume_extras` ``extras``."""
        self.next_id, self.mass_floor, self.density_floor = int(extras[0]), *map(float, extras[1:3])
        return np.asarray(state, dtype=float)

    def total_mass(self, state: np.ndarray) -> float:
        """``sum(m) + sum(A)``: the cells' and the atoms' mass."""
        st = lg.LagrangianState.unpack(state)
        return float(np.sum(st.m) + np.sum(st.A))

    def density(self, state: np.ndarray) -> np.ndarray:
        """The diffuse part's average over each uniform grid cell (N,) (exact cell masses / h)."""
        return lg.cell_masses(lg.LagrangianState.unpack(state), self.shape[0]) / self.h

    def atoms(self, state: np.ndarray) -> DiracAtoms:
        """The Dirac atoms (positions in ``[0, 2 pi)``)."""
        st = lg.LagrangianState.unpack(state)
        has = st.ids >= 0
        return DiracAtoms(st.A[has].copy(), np.mod(st.X[has], 2 * np.pi), st.ids[has].copy())

    def lipschitz_bound(self, mass: float) -> float:
        return self.problem.lipschitz_bound(mass)

    def spectral_tail_limit(self) -> None:
        return None

    # -- dynamics -------------------------------------------------------------------------
    def rhs(self, state: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        """``(d state/dt, max_rate)``: the points' velocities (the rest is constant)."""
        return self.rhs_flat(state, 0)

    def rhs_flat(self, state: np.ndarray, tail: int) -> tuple[np.ndarray, float]:
        """:meth:`rhs` of ``[X, m, A, ids]`` followed by ``tail`` values (their derivative 0): one
        compiled call (:func:`~solvers.circle.measure.kernels_lagrangian_numba.cells_rhs`, bitwise the
        numpy code's result), or :meth:`rhs_reference` (numpy backend; a softmax point far from
        the mass, whose ``f'/f`` comes from the direct sums)."""
        n = (state.size - tail) // 4
        if self.kernels is not None:
            d, rate, low = self.kernels.cells_rhs(state, n, self.weights, self._units, self._consts,
                                                  self.mass_floor, self.density_floor, FD_STEP)
            if not low:
                return d, rate
        d, rate = self.rhs_reference(state[:4 * n] if tail else state)
        return (np.concatenate([d, np.zeros(tail)]) if tail else d), rate

    def rhs_reference(self, state: np.ndarray) -> tuple[np.ndarray, float]:
        """:meth:`rhs` by the numpy code (the compiled fields inside it where numba runs)."""
        st = lg.LagrangianState.unpack(state)
        at = np.nonzero(st.A > 0)[0]
        points = np.concatenate([st.X, st.X[at] - FD_STEP, st.X[at] + FD_STEP])
        u = lg.velocity(st, self.config.model, self.weights, points, self.compiled, self._perceptron)
        n = st.n
        rate = self.stretch_rate(st, u[:n])
        if at.size:
            slope = (u[n + at.size:] - u[n:n + at.size]) / (2 * FD_STEP)
            rate = max(rate, float(np.max(np.abs(slope))))
        return np.concatenate([u[:n], np.zeros(3 * n)]), rate

    def stretch_rate(self, st: lg.LagrangianState, u: np.ndarray) -> float:
        """Largest ``|u_{k+1} - u_k| / L_k`` over the cells that move mass: those holding more
        than the mass floor whose density exceeds ``time.cfl_floor M / (2 pi)`` (as the fv
        Dirac state counts its faces; a thinner cell that turns inside out is caught by
        :meth:`accept`)."""
        L = st.lengths()
        full = (st.m > self.mass_floor) & (st.m > self.density_floor * L)
        if not full.any():
            return 0.0
        du = np.abs(lg.following(u) - u) / L
        return float(np.max(du[full]))

    def error_scale(self, state: np.ndarray, new: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """What an embedded pair's error test counts of ``[X, m, A, ids]``: the points that carry
        mass (atoms, and the ends of cells above the mass floor; nothing but ``X`` changes in a
        step, and an empty cell's ends move no mass), against the unit 1 rad (the tolerance
        ``atol + rtol`` rad wherever a point is on the circle)."""
        n = state.size // 4
        full = state[n:2 * n] > self.mass_floor  # cell k spans [X_k, X_k+1]
        return np.nonzero(full | np.roll(full, 1) | (state[2 * n:3 * n] > 0))[0], 1.0

    def accept(self, state: np.ndarray) -> bool:
        """A step is accepted when its points are still in order (no cell turned inside out)."""
        if self.kernels is not None:
            return bool(self.event_kernels.in_order(state, state.size // 4))
        return bool(np.all(lg.LagrangianState.unpack(state).lengths() > 0))

    def after_step(self, state: np.ndarray, step: int) -> np.ndarray:
        """Collapse, absorption, merging and refinement (module docstring), every step."""
        return self.events_flat(state, 0)

    def events_flat(self, state: np.ndarray, tail: int) -> np.ndarray:
        """:meth:`after_step` of ``[X, m, A, ids]`` followed by ``tail`` values (kept as they are):
        one compiled call (:func:`~solvers.circle.measure.kernels_lagrangian_events_numba.events`, bitwise the
        numpy code's result; ``state`` itself when nothing happens), else :meth:`_events`."""
        n = (state.size - tail) // 4
        if self.kernels is not None:
            status, new, next_id = self.event_kernels.events(state, n, self._lengths, self.mass_floor, self.next_id,
                                                       self._sinks, self.weights, self._units, self._consts)
            if status != self.event_kernels.NUMPY:
                self.next_id = int(next_id)
                return new
        cells = self._events(lg.LagrangianState.unpack(state[:4 * n])).pack()
        return np.concatenate([cells, state[4 * n:]]) if tail else cells

    def _events(self, st: lg.LagrangianState) -> lg.LagrangianState:
        st = lg.normalise(st)
        short = lg.short_cells(st, COLLAPSE * self.h, ABSORB * self.h, MERGE * self.h)
        if short.any():
            short = self._held(st, short)
        st, self.next_id = lg.collapse(st, short, self.next_id, self.mass_floor)
        return lg.refine(st, REFINE * self.h, self.mass_floor)

    def _held(self, st: lg.LagrangianState, short: np.ndarray) -> np.ndarray:
        """``short`` (n,) without the runs of new atoms whose cells the flow does not hold
        together (:func:`lagrangian.held_runs`), except cells shorter than ``MET h``."""
        L = st.lengths()
        at = st.A > 0
        fresh = (L < COLLAPSE * self.h) & ~(at | lg.following(at))
        if not fresh.any() or short.all():
            return short
        model = self.config.model
        held = lg.held_runs(st, short, self.problem.sink_corners,
                            lambda x: lg.velocity(st, model, self.weights, x, self.compiled, self._perceptron))
        return held | (short & (L < MET * self.h))

    # -- diagnostics ----------------------------------------------------------------------
    def dirac_state(self, state: np.ndarray) -> np.ndarray:
        """The grid Dirac state (:class:`DiracCircleDiscretization`'s flat layout) of ``state``."""
        return self.layout.pack(self.density(state), self.atoms(state))

    def diagnostics(self, state: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return self.diagnostics_batch([state], atoms)[0]

    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams) -> list[Diagnostics]:
        """The grid Dirac state's diagnostics of each state (energy, basins, atoms, masses)."""
        return self.eulerian.diagnostics_batch([self.dirac_state(s) for s in states], atoms)
