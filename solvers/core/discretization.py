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

BOUND_DIGITS = 10  # significant digits of the whole mass in the step bounds


def bound_mass(mass: float) -> float:
    """The whole mass ``M`` as the step bounds use it (the rate bound ``C / L(M)``, the Dirac
    states' CFL floor): rounded to ``BOUND_DIGITS`` significant digits.

    Mass is conserved to round-off, not bitwise: a resume recomputes ``M`` from the archived
    state and gets the run's mass within a few ulps. Unrounded, that moved the rate bound in
    its last bits (9.000000000000002 against 9.000000000000012), and a resumed run at the rate
    bound then took other steps than the uninterrupted one. Rounded, both propose bitwise the
    same steps (unless ``M`` lies within an ulp of a rounding boundary); the bounds change by
    at most ``5e-10`` relative.
    """
    return float(f"{float(mass):.{BOUND_DIGITS}g}")


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
