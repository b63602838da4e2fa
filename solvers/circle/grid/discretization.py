"""S^1 discretisations (``fv`` and ``spectral``) behind the :class:`Discretization` interface, and
the snapshot diagnostics of an S^1 grid density (computed at snapshots, not every step)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Callable

import numpy as np

from solvers.circle.atoms import (
    Atoms,
    RingDetector,
    detect_atoms,
    ring_atoms,
    ring_detector,
)
from solvers.circle.grid.fv import fv
from solvers.circle.grid.heat import CircleHeat
from solvers.circle.problem import CircleProblem
from solvers.circle.grid.spectral import (
    averages_to_points,
    dealias_cutoff,
    project,
    spectral,
)
from solvers.core.backend import resolve_backend
from solvers.core.discretization import Discretization, Rhs
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig
from spectral import CircleBasis

SCHEMES: dict[str, tuple[Callable[..., Rhs], str, str]] = {
    # name: (factory, default integrator, citation)
    "fv": (fv, "ssprk10_2", "MUSCL upwind finite volumes, van Leer, J. Comput. Phys. 32 (1979)"),
    "spectral": (spectral, "rk4", "Fourier pseudo-spectral, 2/3 rule: Orszag, J. Atmos. Sci. 28 (1971)"),
}
POSITIVITY_CFL = 0.5  # fv + SSP: dt max|u| / h <= 1/2 keeps every cell non-negative


class CircleDiscretization(Discretization):
    """Grid, right-hand side and diagnostics on S^1 (see :class:`Discretization`)."""

    def __init__(self, config: RunConfig) -> None:
        scheme = config.time.scheme
        kinks = config.time.kink_faces  # None: on for fv without noise (the heat step needs uniform cells)
        kink_faces = scheme == "fv" and (kinks is True or (kinks is None and config.model.noise == 0))
        self.problem = CircleProblem(config.model, CircleBasis(config.domain.resolution), kink_faces)
        factory, self.default_integrator, self.citation = SCHEMES[scheme]
        self.rhs = factory(self.problem, config.time.limiter, config.time.cfl_floor) \
            if scheme == "fv" else factory(self.problem)
        self.scheme = scheme
        basis = self.problem.basis
        self.shape = (basis.n,)
        self.cell_weight = basis.cell_weight
        self.positivity_cfl = POSITIVITY_CFL if scheme == "fv" else None
        self.k_max = basis.n // 2 if scheme == "fv" else dealias_cutoff(basis.n)
        noise = config.model.noise  # the Laplacian's exact semigroup (docs/noise.md §5)
        self.heat = CircleHeat(basis, noise, scheme) if noise > 0 else None

    def prepare(self, rho: np.ndarray, fresh: bool) -> np.ndarray:
        """fv: cell averages as they are; spectral: band-limited point values, 2/3-rule projected."""
        if self.scheme == "spectral":
            return project(averages_to_points(rho) if fresh else rho, rho.size)
        return rho

    def lipschitz_bound(self, mass: float) -> float:
        return self.problem.lipschitz_bound(mass)

    def diagnostics(self, rho: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return self._noisy(compute_diagnostics(self.problem, self.rhs, rho, atoms, self.k_max), rho)

    def _noisy(self, diag: Diagnostics, rho: np.ndarray) -> Diagnostics:
        """``diag`` of the grid density ``rho`` (N,) with the noise: the free energy
        ``E - s nu int rho log rho`` and the transport rate ``||rhs(rho) + nu Delta rho||_1``."""
        if self.heat is None:
            return diag
        moved = float(np.sum(np.abs(self.rhs(rho)[0] + self.heat.diffusion(rho))) * self.problem.basis.h)
        return replace(diag, transport_rate=moved, free_energy=self.problem.free_energy(rho, diag.energy))

    def diagnostics_batch(self, states: Sequence[np.ndarray], atoms: AtomParams
                          ) -> list[Diagnostics]:
        """:meth:`diagnostics` of each grid density in ``states`` (each (N,)), the same values;
        on the compiled path one forward and one inverse transform serve them all."""
        if len(states) > 1 and _compiled(self.problem, self.rhs):
            return [self._noisy(d, rho) for d, rho in zip(_compiled_diagnostics_batch(
                self.problem, self.rhs, np.stack(states), atoms, self.k_max), states)]
        return [self.diagnostics(state, atoms) for state in states]

    def spectral_tail_limit(self) -> float | None:
        return 1e-6 if self.scheme == "spectral" else None


SUPPORT_FLOOR = 1e-8  # a cell is in the support if rho > SUPPORT_FLOOR * M / (2 pi)


def tail_energy(rho_hat: np.ndarray, k_max: int) -> float:
    """Fraction of ``sum_k |rho_k|^2`` (0 < k <= k_max) held by ``2 k_max / 3 < k <= k_max``.

    Parameters
    ----------
    rho_hat : ndarray, shape (N//2 + 1,)
    k_max : int
        Highest resolved wavenumber (N/2 for fv, the 2/3-rule cutoff for spectral).
    """
    power = np.abs(rho_hat[1 : k_max + 1]) ** 2
    total = power.sum()
    if total == 0.0:
        return 0.0
    k = np.arange(1, k_max + 1)
    return float(power[k > 2 * k_max / 3].sum() / total)


def compute_diagnostics(problem: CircleProblem, rhs: Rhs, rho: np.ndarray,
                        atoms: AtomParams, k_max: int) -> Diagnostics:
    """All snapshot diagnostics of the grid density ``rho`` (shape (N,)).

    ``transport_rate`` is ``||rhs(rho)||_1``, the mass moved per unit time by the scheme.
    Unnormalised attention with the numba backend: :func:`_compiled_diagnostics` (the same
    values to round-off); this function is its reference.
    """
    if _compiled(problem, rhs):
        return _compiled_diagnostics(problem, rhs, rho, atoms, k_max)
    b = problem.basis
    cell_mass = rho * b.cell_weight
    mass = float(cell_mass.sum())
    rho_hat = b.forward(rho)
    face = problem.velocity(rho_hat, "face")
    with_velocity = getattr(rhs, "with_velocity", None)
    drho = rhs(rho)[0] if with_velocity is None else with_velocity(rho, face)[0]
    grad_u, unsigned = problem.centre_fields(rho_hat)
    speed = np.abs(unsigned)
    support = rho > SUPPORT_FLOOR * abs(mass) / (2.0 * np.pi)
    found = detect_atoms(b.theta, cell_mass, problem.model.beta, atoms, face_velocity=face)
    return _with_atoms(
        found, mass=mass, min_rho=float(rho.min()), max_rho=float(rho.max()),
        energy=problem.energy(rho, rho_hat),
        dissipation=float(np.sum(rho * grad_u * unsigned * b.cell_weight)),
        transport_rate=float(np.sum(np.abs(drho)) * b.h),
        max_support_velocity=float(speed[support].max()) if support.any() else 0.0,
        tail_energy=tail_energy(rho_hat, k_max))


def _with_atoms(found: Atoms, **scalars: float) -> Diagnostics:
    """:class:`Diagnostics` from the scalar diagnostics and the detected atoms."""
    return Diagnostics(**scalars, n_atoms=found.count, atom_mass=found.mass,
                       atom_position=found.position, atom_core_mass=found.core_mass,
                       diffuse_mass=found.diffuse_mass, atom_labels=found.labels)


def _compiled(problem: CircleProblem, rhs: Rhs) -> bool:
    """Whether :func:`compute_diagnostics` takes the compiled path (unnormalised attention,
    an fv right-hand side, numba)."""
    return not problem.softmax and hasattr(rhs, "with_velocity") and resolve_backend(None) == "numba"


def _compiled_diagnostics(problem: CircleProblem, rhs: Rhs, rho: np.ndarray,
                          atoms: AtomParams, k_max: int) -> Diagnostics:
    """:func:`compute_diagnostics` for unnormalised attention: one forward and one batched
    inverse transform, then two compiled calls (:mod:`solvers.circle.grid.diagnostics_numba`): the
    fields, and the reductions with the atoms (:func:`solvers.circle.atoms_numba.detect_ring`)."""
    b, stack_m = problem.basis, _compiled_setup(problem)[2]
    rho_hat = b.forward(rho)
    return _compiled_from(problem, rhs, rho, rho_hat, b.backward(rho_hat * stack_m), atoms, k_max)


def _compiled_diagnostics_batch(problem: CircleProblem, rhs: Rhs, rho: np.ndarray,
                                atoms: AtomParams, k_max: int) -> list[Diagnostics]:
    """:func:`_compiled_diagnostics` of each row of ``rho`` (B, N), bitwise the same: the
    transforms of all rows in one call each (numpy transforms row by row)."""
    b, stack_m = problem.basis, _compiled_setup(problem)[2]
    rho_hat = b.forward(rho)
    stack = b.backward(rho_hat[:, None, :] * stack_m)
    return [_compiled_from(problem, rhs, rho[i], rho_hat[i], stack[i], atoms, k_max)
            for i in range(rho.shape[0])]


def _compiled_from(problem: CircleProblem, rhs: Rhs, rho: np.ndarray, rho_hat: np.ndarray,
                   stack: np.ndarray, atoms: AtomParams, k_max: int) -> Diagnostics:
    """The compiled diagnostics of ``rho`` (N,) from its coefficients ``rho_hat`` and the
    inverse transforms ``stack`` (3, N) of ``rho_hat`` times the multipliers."""
    fields, reductions_and_atoms, _, beta, sign, w_face, w_center, v_center, floor = \
        _compiled_setup(problem)
    b, corners = problem.basis, problem.moved_faces
    if corners.size:  # the attention at faces moved onto perceptron corners (kink_faces)
        stack = stack.copy()
        stack[0, corners] = problem.moved_attention(rho_hat)
    face, grad_u = fields(stack, beta, sign, w_face, w_center)
    drho = rhs.with_velocity(rho, face)[0]
    (mass, low, high, e_att, e_v, diss, moved, speed, tail), ring = reductions_and_atoms(
        rho, b.cell_weight, grad_u, stack[2], v_center, drho, rho_hat, k_max, floor, face,
        _ring_detector(problem, atoms).arguments())
    found = ring_atoms(ring)
    if found is None:  # the flow pointers form a cycle: the reference raises
        found = detect_atoms(b.theta, rho * b.cell_weight, beta, atoms, face_velocity=face,
                             backend="numpy")
    return Diagnostics(mass, low, high, e_att / (2.0 * beta) + 0.5 * e_v, diss, moved * b.h, speed,
                       tail, found.count, found.mass, found.position, found.core_mass,
                       found.diffuse_mass, atom_labels=found.labels, **_EMPTY_DIRAC)


# the Dirac fields of a grid state: empty (shared, read-only: as the defaults of Diagnostics)
_EMPTY_DIRAC = {name: np.zeros(0, dtype=dtype) for name, dtype in
                (("dirac_mass", float), ("dirac_position", float), ("dirac_id", int))}
for _empty in _EMPTY_DIRAC.values():
    _empty.flags.writeable = False


def _compiled_setup(problem: CircleProblem) -> tuple:
    """The kernels and the constant arguments of :func:`_compiled_diagnostics`, built once per
    problem: ``(fields, reductions_and_atoms, multipliers (3, N//2 + 1), beta, sign, w_face, w_center,
    v_center, support floor)``; the multipliers stack ``d_face``, ``d_center`` and ``kernel``."""
    cache = problem._cache
    if "diagnostic_setup" not in cache:
        from solvers.circle.grid.diagnostics_numba import fields, reductions_and_atoms

        c = problem.multipliers
        cache["diagnostic_setup"] = (
            fields, reductions_and_atoms, _diagnostic_multipliers(problem), float(problem.model.beta),
            float(problem.sign), c("w_face"), c("w_center"), c("v_center"),
            SUPPORT_FLOOR / (2.0 * np.pi))
    return cache["diagnostic_setup"]


def _ring_detector(problem: CircleProblem, atoms: AtomParams) -> RingDetector:
    """The compiled atom detector of the problem's grid for ``atoms`` (kept for the last
    parameters used)."""
    cache = problem._cache
    last = cache.get("ring_detector")
    if last is None or (last[0] is not atoms and last[0] != atoms):
        last = cache["ring_detector"] = (atoms, ring_detector(problem.basis.theta,
                                                              problem.model.beta, atoms))
    return last[1]


def _diagnostic_multipliers(problem: CircleProblem) -> np.ndarray:
    """``(d_face, d_center, kernel)`` stacked (3, N//2 + 1), built once per problem."""
    cache = problem._cache
    if "diagnostic_stack" not in cache:
        cache["diagnostic_stack"] = np.stack([cache["d_face"], cache["d_center"], cache["kernel"]])
    return cache["diagnostic_stack"]
