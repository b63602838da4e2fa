"""S^1 discretisations (``fv`` and ``spectral``) behind the :class:`Discretization` interface."""

from __future__ import annotations

import numpy as np

from solvers.circle_problem import CircleProblem
from solvers.diagnostics import compute_diagnostics
from solvers.params import AtomParams, RunConfig
from solvers.snapshot import Diagnostics
from solvers.transport import SCHEMES, averages_to_points, dealias_cutoff, project
from spectral import CircleBasis

POSITIVITY_CFL = 0.5  # fv + SSP: dt max|u| / h <= 1/2 keeps every cell non-negative


class CircleDiscretization:
    """Grid, right-hand side and diagnostics on S^1 (see :class:`Discretization`)."""

    def __init__(self, config: RunConfig) -> None:
        scheme = config.time.scheme
        self.problem = CircleProblem(config.model, CircleBasis(config.domain.resolution))
        factory, self.default_integrator, self.citation = SCHEMES[scheme]
        self.rhs = factory(self.problem, config.time.limiter) if scheme == "fv" else factory(self.problem)
        self.scheme = scheme
        basis = self.problem.basis
        self.shape = (basis.n,)
        self.cell_weight = basis.cell_weight
        self.positivity_cfl = POSITIVITY_CFL if scheme == "fv" else None
        self.k_max = basis.n // 2 if scheme == "fv" else dealias_cutoff(basis.n)

    def prepare(self, rho: np.ndarray, fresh: bool) -> np.ndarray:
        """fv: cell averages as they are; spectral: band-limited point values, 2/3-rule projected."""
        if self.scheme == "spectral":
            return project(averages_to_points(rho) if fresh else rho, rho.size)
        return rho

    def lipschitz_bound(self, mass: float) -> float:
        return self.problem.lipschitz_bound(mass)

    def diagnostics(self, rho: np.ndarray, atoms: AtomParams) -> Diagnostics:
        return compute_diagnostics(self.problem, self.rhs, rho, atoms, self.k_max)

    def spectral_tail_limit(self) -> float | None:
        return 1e-6 if self.scheme == "spectral" else None
