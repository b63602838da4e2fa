"""Stationary states of the noisy mean-field dynamics and Newton's method for them (docs/noise.md).

With noise ``nu > 0`` the dynamics ``d_t rho = -s div(rho grad U[rho]) + nu Laplacian rho``
(paper eq. 2.6 plus diffusion; ``U = (1/beta) K*rho + v/2``, docs/math.md §1) have the zero-flux
stationary states

    rho = M exp(s U[rho] / nu) / Z,    Z = int exp(s U[rho] / nu)          (docs/noise.md §1)

(unnormalized attention). ``U[rho]`` depends on ``rho`` only through its low modes: the kernel's
eigenvalues ``lambda_j / lambda_0`` fall below 1e-16 past the bandwidth ``j*`` (docs/math.md §2).
The unknowns are therefore the coefficients ``x`` of ``rho`` in a real basis of degree ``<= J``
(:mod:`solvers.studies.stationary_basis`), ``J`` the bandwidth capped by the grid, and the
equation is the fixed point ``G(x) = x - P rho(x) = 0``, ``rho(x) = M exp(s U(x)/nu) / Z`` on the
quadrature grid, ``P`` the projection on the basis. ``G`` and ``I - G`` have the same nonzero
spectrum as the full problem's ``rho - R(P rho)`` (Sylvester's determinant identity), so folds
and branch points coincide. The Jacobian is analytic and dense:

    dG = I - (s / nu) P [rho (B - <B>_rho)],    B = dU/dx = phi diag(lambda_i / beta)

(``<.>_rho`` the mean under ``rho / M``).

Continuation parameters (:data:`PARAMETERS`): ``model.noise``, ``model.beta``,
``initial.mass`` and ``perceptron.scale`` (a factor on the output weights ``omega``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from solvers.model.params import RunConfig
from solvers.model.perceptron import potential
from solvers.model.validators import ConfigError
from solvers.studies.stationary_basis import RealBasis, make_basis
from solvers.timestepping.manifolds import manifold_of
from spectral.eigenvalues import kernel_bandwidth, kernel_eigenvalues

log = logging.getLogger(__name__)

PARAMETERS = ("model.noise", "model.beta", "initial.mass", "perceptron.scale")
NEWTON_TOL = 1e-13  # |G|_inf / rho_0 at convergence


def kernel_multipliers(beta: float, kernel: str, degrees: np.ndarray, dim: int) -> np.ndarray:
    """``lambda_j(beta) / beta`` (times ``exp(-beta)`` for the shifted kernel) per degree:
    ``U_att = (1/beta) K*rho`` acts on a degree-j function by this factor (docs/math.md §2)."""
    log_lam = kernel_eigenvalues(beta, degrees, dim, log=True) - np.log(beta)
    if kernel == "exp_shifted":
        log_lam = log_lam - beta
    return np.exp(log_lam)


@dataclass(frozen=True, eq=False)
class StationaryProblem:
    """The fixed-point equation ``G(x) = 0`` at one parameter point.

    Attributes
    ----------
    basis : RealBasis
        Unknowns' basis (degrees ``<= J``) and quadrature grid.
    config : RunConfig
        The model (its ``beta``, ``noise``, ``initial.mass`` are the values in use).
    scale : float
        Factor on the perceptron potential (``perceptron.scale``).
    eig : ndarray, shape (n,)
        ``lambda / beta`` of each basis function.
    half_v : ndarray, shape (n_grid,)
        ``scale * v / 2`` on the grid.
    """

    basis: RealBasis
    config: RunConfig
    scale: float
    eig: np.ndarray
    half_v: np.ndarray

    @property
    def sign(self) -> float:
        return self.config.model.sign

    @property
    def noise(self) -> float:
        return self.config.model.noise

    @property
    def mass(self) -> float:
        return self.config.initial.mass

    @property
    def rho0(self) -> float:
        """The uniform density ``M / |S|`` (the coefficient of the constant function)."""
        return self.mass / self.basis.area

    def value(self, key: str) -> float:
        """The current value of a continuation parameter."""
        return {"model.noise": self.noise, "model.beta": self.config.model.beta,
                "initial.mass": self.mass, "perceptron.scale": self.scale}[key]

    def at(self, key: str, value: float) -> "StationaryProblem":
        """The same problem with parameter ``key`` set to ``value``."""
        cfg, scale = self.config, self.scale
        if key == "model.noise":
            cfg = replace(cfg, model=replace(cfg.model, noise=float(value)))
        elif key == "model.beta":
            cfg = replace(cfg, model=replace(cfg.model, beta=float(value)))
        elif key == "initial.mass":
            cfg = replace(cfg, initial=replace(cfg.initial, mass=float(value)))
        else:
            scale = float(value)
        eig = self.eig
        if key == "model.beta":
            eig = kernel_multipliers(value, cfg.model.kernel, self.basis.degree, self.dim)
        half_v = self.half_v * (scale / self.scale) if self.scale else self.half_v
        return StationaryProblem(self.basis, cfg, scale, eig, half_v)

    @property
    def dim(self) -> int:
        return self.basis.manifold.dimension

    # ---------------------------------------------------------------- the equation
    def potential(self, x: np.ndarray) -> np.ndarray:
        """Grid values of ``U = (1/beta) K*rho + v/2`` for coefficients ``x`` (n,)."""
        return self.basis.phi @ (self.eig * x) + self.half_v

    def density(self, x: np.ndarray) -> np.ndarray:
        """Grid ``rho = M exp(s U / nu) / Z`` (n_grid,), evaluated without overflow."""
        a = self.sign * self.potential(x) / self.noise
        e = np.exp(a - a.max())
        return self.mass * e / self.basis.integrate(e)

    def residual(self, x: np.ndarray) -> np.ndarray:
        """``G(x) = x - P rho(x)``, shape (n,)."""
        return x - self.basis.project(self.density(x))

    def jacobian(self, x: np.ndarray, rho: np.ndarray | None = None) -> np.ndarray:
        """Analytic ``dG/dx`` (n, n) (module docstring)."""
        rho = self.density(x) if rho is None else rho
        b = self.basis
        dU = b.phi * self.eig  # (n_grid, n)
        mean = ((b.weights * rho) @ dU) / self.mass
        dR = (self.sign / self.noise) * rho[:, None] * (dU - mean)
        return np.eye(b.size) - (b.phi.T @ (b.weights[:, None] * dR)) / b.norm2[:, None]

    def parameter_derivative(self, key: str, x: np.ndarray) -> np.ndarray:
        """Analytic ``dG/dp`` (n,) for the continuation parameter ``key``: with
        ``rho = M exp(a) / Z``, ``a = s U / nu``, ``d rho = rho (da - <da>_rho)`` (+ ``rho / M``
        for the mass), and ``dG = -P d rho``. Exact zero on the uniform branch of pure attention."""
        rho, b = self.density(x), self.basis
        if key == "initial.mass":
            return -b.project(rho / self.mass)
        if key == "model.noise":
            da = -self.sign * self.potential(x) / self.noise**2
        elif key == "model.beta":
            beta, h = self.config.model.beta, 1e-5 * self.config.model.beta
            dim, kernel = self.dim, self.config.model.kernel
            deig = (kernel_multipliers(beta + h, kernel, b.degree, dim)
                    - kernel_multipliers(beta - h, kernel, b.degree, dim)) / (2 * h)
            da = self.sign * (b.phi @ (deig * x)) / self.noise
        else:
            da = self.sign * self.half_v / (self.scale * self.noise) if self.scale else 0 * rho
        mean = b.integrate(rho * da) / self.mass
        return -b.project(rho * (da - mean))

    # ---------------------------------------------------------------- diagnostics
    def free_energy(self, rho: np.ndarray) -> float:
        """``E - s nu int rho log rho``, ``E = (1/(2 beta)) <rho, K rho> + (1/2) int v rho``
        (docs/noise.md §1), for grid values ``rho`` whose kernel part lies in the basis."""
        b = self.basis
        u_att = b.phi @ (self.eig * b.project(rho))
        energy = b.integrate(rho * (0.5 * u_att + self.half_v))
        entropy = b.integrate(np.where(rho > 0, rho * np.log(np.where(rho > 0, rho, 1.0)), 0.0))
        return energy - self.sign * self.noise * entropy

    def moments(self, x: np.ndarray, count: int) -> np.ndarray:
        """``|int Y_k rho| / M`` per degree ``k = 1..count`` (0 past the basis), shape (count,):
        S^1 ``|rho_hat_k| / rho_hat_0``; S^2 the norm over the orders ``m`` of the Legendre
        moments (``int P_l(cos theta) rho / M`` for an axisymmetric state). Degree 1 is
        :meth:`order_parameter`."""
        b, out = self.basis, np.zeros(count)
        x0 = float(x[b.degree == 0][0])
        for k in range(1, min(count, int(b.degree.max())) + 1):
            norm = float(np.sqrt(np.sum(x[b.degree == k] ** 2)))
            out[k - 1] = norm / (b.manifold.degree_norm_factor(k) * x0)
        return out

    def order_parameter(self, rho: np.ndarray) -> float:
        """``|int x rho| / M``: on S^1 ``|rho_hat_1| / rho_hat_0``."""
        first = self.basis.points.T @ (self.basis.weights * rho)
        return float(np.linalg.norm(first) / self.mass)


def newton(problem: StationaryProblem, x0: np.ndarray, tol: float = NEWTON_TOL,
           max_iter: int = 40) -> tuple[np.ndarray, list[float]]:
    """Damped Newton on ``G(x) = 0`` from ``x0`` (n,).

    Returns the solution and the history of ``|G|_inf / rho_0`` (first entry: at ``x0``).
    Raises RuntimeError when it does not converge.
    """
    x = np.array(x0, dtype=float)
    g = problem.residual(x)
    history = [float(np.max(np.abs(g)) / problem.rho0)]
    for _ in range(max_iter):
        if history[-1] <= tol:
            return x, history
        dx = np.linalg.solve(problem.jacobian(x), -g)
        for _ in range(30):  # halve the step until the residual decreases
            trial = x + dx
            g_trial = problem.residual(trial)
            err = float(np.max(np.abs(g_trial)) / problem.rho0)
            if np.isfinite(err) and err < history[-1] * (1 - 1e-4) or err <= tol:
                break
            dx *= 0.5
        x, g = trial, g_trial
        history.append(err)
    if history[-1] <= tol:
        return x, history
    raise RuntimeError(f"Newton did not converge: |G| = {history[-1]:.3g} after {max_iter} steps")


def uniform_state(problem: StationaryProblem) -> np.ndarray:
    """Coefficients of the uniform density ``M / |S|`` (n,)."""
    x = np.zeros(problem.basis.size)
    x[problem.basis.degree == 0] = problem.rho0
    return x


def rotation_invariant(config: RunConfig) -> bool:
    """Pure attention: no perceptron, the model commutes with every rotation."""
    return config.model.perceptron.n_units == 0


def check_config(config: RunConfig) -> None:
    """ConfigError for a model that the stationary solver does not handle."""
    if config.model.attention != "unnormalized":
        raise ConfigError("model.attention", "continuation solves the stationary equation of "
                          "unnormalized attention: set model.attention = \"unnormalized\"")
    if not config.model.noise > 0:
        raise ConfigError("model.noise", "stationary states with noise need model.noise > 0 "
                          f"(got {config.model.noise:g}); start from a positive value, e.g. "
                          "--set model.noise=1")


def build_problem(config: RunConfig, degree: int | None = None, symmetric: bool | None = None,
                  resolution: int | None = None) -> StationaryProblem:
    """The stationary problem of ``config`` (its ``model.noise``), grid ``domain.resolution``.

    Parameters
    ----------
    degree : int, optional
        Largest degree of the unknowns (default: the kernel bandwidth ``j*`` capped by the grid:
        ``N/2 - 1`` on S^1, ``lmax`` on S^2).
    symmetric : bool, optional
        Restrict to even (S^1) / axisymmetric (S^2) densities; default: for pure attention,
        whose rotation symmetry would make every branch point multiple.
    resolution : int, optional
        Grid resolution (default ``domain.resolution``).
    """
    check_config(config)
    dom, model = config.domain, config.model
    res = dom.resolution if resolution is None else int(resolution)
    manifold = manifold_of(config)
    dim, top = manifold.dimension, manifold.top_degree(res)
    jstar = kernel_bandwidth(model.beta, dim)
    deg = min(jstar, top) if degree is None else int(degree)
    sym = rotation_invariant(config) if symmetric is None else bool(symmetric)
    basis = make_basis(manifold, res, deg, symmetric=sym)
    eig = kernel_multipliers(model.beta, model.kernel, basis.degree, dim)
    half_v = 0.5 * potential(model.perceptron, basis.points)
    log.debug("stationary problem: %s, %d unknowns, grid %s", dom.manifold, basis.size, basis.shape)
    return StationaryProblem(basis, config, 1.0, eig, half_v)
