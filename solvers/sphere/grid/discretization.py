"""S^2 discretisations behind the :class:`~solvers.core.discretization.Discretization` interface."""

from __future__ import annotations

import numpy as np

from solvers.core.discretization import Discretization
from solvers.core.snapshot import Diagnostics
from solvers.model.params import AtomParams, RunConfig
from solvers.sphere.atoms import detect_atoms
from solvers.sphere.grid.fv import SphereFV
from solvers.sphere.cells import SphereGrid
from solvers.sphere.problem import SphereProblem

SUPPORT_FLOOR = 1e-8  # support: rho > SUPPORT_FLOOR * M / (4 pi)
CITATIONS = {
    "fv": "MUSCL upwind finite volumes (van Leer 1979) on a Gauss grid with merged polar cells",
    "spectral": "spherical-harmonic pseudo-spectral (shtns: Schaeffer, G3 14 (2013)), 2/3 rule",
}


def degree_tail(rho_lm: np.ndarray, degrees: np.ndarray, orders: np.ndarray, l_max: int) -> float:
    """Fraction of ``sum_{0<l<=l_max} |rho_l|^2`` held by degrees ``l > 2 l_max / 3``."""
    power = np.abs(rho_lm) ** 2 * np.where(orders == 0, 1.0, 2.0)
    band = (degrees > 0) & (degrees <= l_max)
    total = power[band].sum()
    return float(power[band & (degrees > 2 * l_max / 3)].sum() / total) if total > 0 else 0.0


class SphereDiscretization(Discretization):
    """Grid, right-hand side and diagnostics on S^2."""

    positivity_cfl = 0.5
    heat = None  # the noise's semigroup (spectral scheme, model.noise > 0)

    def __init__(self, config: RunConfig) -> None:
        self.scheme = config.time.scheme
        self.grid = SphereGrid(config.domain.resolution, merge_ratio=0.5 if self.scheme == "fv" else 0.0)
        self.problem = SphereProblem(config.model, self.grid)
        if self.scheme == "fv":
            self.rhs = SphereFV(self.problem, config.time.limiter, config.time.cfl_floor)
            self.default_integrator = "ssprk10_2"
        else:
            from solvers.sphere.grid.spectral import SphereSpectral

            from solvers.sphere.grid.heat import SphereHeat

            self.rhs = SphereSpectral(self.problem)
            self.default_integrator = "rk4"
            self.positivity_cfl = None
            noise = config.model.noise  # the Laplacian's exact semigroup (docs/noise.md §5)
            self.heat = SphereHeat(self.grid.basis, noise) if noise > 0 else None
        self.citation = CITATIONS[self.scheme]
        self.shape = self.grid.shape
        self.cell_weight = self.grid.area
        self._points = self.grid.points(self.grid.theta, self.grid.phi).reshape(-1, 3)

    def prepare(self, rho: np.ndarray, fresh: bool) -> np.ndarray:
        """fv: average over merged polar cells (mass-preserving); spectral: as given, projected.

        A resumed fv state (``fresh`` False) that is already constant over its merged cells to
        round-off is used as it is, so that a resume takes bitwise the uninterrupted steps
        (averaging equal values again can move their last bit)."""
        if self.scheme == "fv":
            averaged = self.grid.to_fine(self.grid.to_cells(rho))
            if not fresh and np.allclose(averaged, rho, rtol=1e-12, atol=0.0):
                return np.array(rho, dtype=float)
            return averaged
        return self.rhs.project(rho)

    def lipschitz_bound(self, mass: float) -> float:
        return self.problem.lipschitz_bound(mass)

    def spectral_tail_limit(self) -> float | None:
        return 1e-6 if self.scheme == "spectral" else None

    def diagnostics(self, rho: np.ndarray, atoms: AtomParams) -> Diagnostics:
        g, p = self.grid, self.problem
        cell_mass = rho * g.area
        mass = float(cell_mass.sum())
        fields = p.centre_fields(rho)
        drho, _ = self.rhs(rho)
        energy = p.energy(rho, fields)
        if self.heat is not None:  # noise: d rho/dt = rhs + nu Delta rho
            drho = drho + self.heat.diffusion(rho)
        speed = np.hypot(fields["vel_theta"], fields["vel_phi"])
        support = rho > SUPPORT_FLOOR * abs(mass) / (4 * np.pi)
        b = g.basis
        l_max = b.lmax if self.scheme == "fv" else self.rhs.cutoff
        found = detect_atoms(self._points, cell_mass, g.area, p.model.beta, atoms,
                             cell=float(max(g.dtheta.max(), g.dphi)),
                             potential=self.flow_potential(fields))
        return Diagnostics(
            mass=mass, min_rho=float(rho.min()), max_rho=float(rho.max()),
            energy=energy, dissipation=p.dissipation(rho, fields),
            transport_rate=float(np.sum(np.abs(drho) * g.area)),
            max_support_velocity=float(speed[support].max()) if support.any() else 0.0,
            tail_energy=degree_tail(b.forward(rho), b.degrees, b.orders, l_max),
            n_atoms=found.count, atom_mass=found.mass, atom_position=found.position,
            atom_core_mass=found.core_mass, diffuse_mass=found.diffuse_mass,
            atom_labels=found.labels, free_energy=p.free_energy(rho, energy),
        )

    def flow_potential(self, fields: dict[str, np.ndarray]) -> np.ndarray:
        """``s U`` at the cell centres, shape (nlat, nphi): the velocity is its gradient
        (``U = K*rho/beta + v/2``, softmax ``log(K*rho)/beta + v/2``; docs/math.md §1)."""
        p = self.problem
        f = fields["f"]
        attention = np.log(np.maximum(f, 1e-300)) if p.model.attention == "softmax" else f
        return p.sign * (attention / p.model.beta + 0.5 * p.perceptron_centres[2])
