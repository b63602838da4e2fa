"""Diagnostics of a grid density on S^1 (computed at snapshots, not every step)."""

from __future__ import annotations

import numpy as np

from solvers.atoms import detect_atoms
from solvers.circle_problem import CircleProblem
from solvers.params import AtomParams
from solvers.snapshot import Diagnostics
from solvers.transport import Rhs

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
    """
    b = problem.basis
    cell_mass = rho * b.cell_weight
    mass = float(cell_mass.sum())
    rho_hat = b.forward(rho)
    drho, _ = rhs(rho)
    speed = np.abs(problem.velocity(rho_hat, "center"))
    support = rho > SUPPORT_FLOOR * abs(mass) / (2.0 * np.pi)
    found = detect_atoms(b.theta, cell_mass, problem.model.beta, atoms)
    return Diagnostics(
        mass=mass, min_rho=float(rho.min()), max_rho=float(rho.max()),
        energy=problem.energy(rho), dissipation=problem.dissipation(rho),
        transport_rate=float(np.sum(np.abs(drho)) * b.h),
        max_support_velocity=float(speed[support].max()) if support.any() else 0.0,
        tail_energy=tail_energy(rho_hat, k_max),
        n_atoms=found.count, atom_mass=found.mass, atom_position=found.position,
    )
