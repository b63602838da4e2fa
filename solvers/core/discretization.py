"""A run's spatial discretisation: grid, right-hand side and diagnostics, behind one interface.

The time loop (:mod:`solvers.timestepping.simulation`) sees only :class:`Discretization`; each manifold and
scheme provides one. ``make_discretization(config)`` picks it from the config.
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams

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
        """Bound of the nonlocal relaxation rates and of the velocity gradient (docs/math.md §6)."""

    def diagnostics(self, rho: np.ndarray, atoms: AtomParams) -> Diagnostics:
        """Snapshot diagnostics of the grid density ``rho``."""

    def spectral_tail_limit(self) -> float | None:
        """Tail-energy fraction above which the scheme is under-resolved (None: not checked)."""
