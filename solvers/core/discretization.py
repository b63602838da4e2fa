"""A run's spatial discretisation: grid, right-hand side and diagnostics, behind one interface.

The time loop (:mod:`solvers.simulation`) sees only :class:`Discretization`; each manifold and
scheme provides one. ``make_discretization(config)`` picks it from the config.
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from solvers.params import AtomParams, RunConfig
from solvers.snapshot import Diagnostics

Rhs = Callable[..., tuple[np.ndarray, float]]


class Discretization(Protocol):
    """What the time loop needs from a spatial discretisation.

    Attributes
    ----------
    shape : tuple of int
        Shape of the grid density ``rho`` (S^1: (N,); S^2: (nlat, nphi)).
    cell_weight : ndarray, shape ``shape``
        ``mass = sum(rho * cell_weight)``.
    rhs : callable
        ``rhs(rho, dt=None) -> (drho_dt, max_rate)``; ``max_rate`` is the largest
        ``|u| / cell width`` over faces that move mass (a Courant number per unit time).
    positivity_cfl : float or None
        Largest ``dt * max_rate`` for which a step is guaranteed non-negative (None: no
        guarantee, e.g. pseudo-spectral).
    """

    shape: tuple[int, ...]
    cell_weight: np.ndarray
    rhs: Rhs
    positivity_cfl: float | None
    default_integrator: str
    citation: str

    def prepare(self, rho: np.ndarray, fresh: bool) -> np.ndarray:
        """Initial state from cell averages (``fresh``) or from an archived state (resume)."""

    def lipschitz_bound(self, mass: float) -> float:
        """Bound of the nonlocal relaxation rates and of the velocity gradient (MATH.md 6)."""

    def diagnostics(self, rho: np.ndarray, atoms: AtomParams) -> Diagnostics:
        """Snapshot diagnostics of the grid density ``rho``."""

    def spectral_tail_limit(self) -> float | None:
        """Tail-energy fraction above which the scheme is under-resolved (None: not checked)."""


def make_discretization(config: RunConfig) -> Discretization:
    """The discretisation for ``config.domain.manifold`` and ``config.time.scheme``."""
    if config.domain.manifold == "S1":
        from solvers.circle_discretization import CircleDiscretization

        return CircleDiscretization(config)
    if config.domain.manifold == "S2":
        from solvers.sphere_discretization import SphereDiscretization

        return SphereDiscretization(config)
    raise ValueError(f"domain.manifold: unknown manifold {config.domain.manifold!r}; use S1 or S2")
