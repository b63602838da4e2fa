"""The noisy PDE linearised at a stationary state: leading eigenvalues and stability (docs/noise.md §2).

At a stationary state ``rho`` of ``d_t rho = -s div(rho grad U[rho]) + nu Laplacian rho`` the
linearisation is

    L delta = div(nu grad delta - s delta grad U - s rho grad U_att[delta]),
    U_att[delta] = (1/beta) K*delta.

It maps mean-zero perturbations to mean-zero ones (the mass is conserved), so its spectrum is
computed on the mean-zero functions of a full real basis ``psi_i`` (degrees ``1..L``, every
order: no symmetry assumed), by Galerkin projection with the weak form

    <psi_i, L psi_j> = - int grad psi_i . (nu grad psi_j - s psi_j grad U - s (lambda_j/beta) rho grad psi_j).

At the uniform state the matrix is diagonal with the rates ``s r_j - nu j(j + d - 2)``,
``r_j = M j(j+d-2) lambda_j / (beta |S^{d-1}|)`` (docs/math.md §3.2 plus diffusion). ``L`` is
``s A H`` with ``A = -div(rho grad .) >= 0`` and ``H`` the free energy's Hessian, so its
eigenvalues are real; a rotation-invariant model has one neutral mode per rotation that moves
a non-uniform state (S^1: one; S^2: two about an axisymmetric state), which
:func:`stability` sets aside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.model.perceptron import half_gradient
from solvers.studies.stationary import StationaryProblem, kernel_multipliers, rotation_invariant
from solvers.studies.stationary_basis import RealBasis, make_basis

NEUTRAL_TOL = 1e-8  # |mu| / max |mu| below which an eigenvalue is neutral


def stability_basis(problem: StationaryProblem, degree: int | None = None) -> RealBasis:
    """The full mean-zero basis of degrees ``1..degree`` (default: the manifold's
    ``stability_degree``) on the problem's grid."""
    manifold = problem.basis.manifold
    resolution = manifold.grid_resolution(problem.basis.shape)
    top = manifold.top_degree(resolution)
    deg = min(manifold.stability_degree if degree is None else int(degree), top)
    return make_basis(manifold, resolution, deg, symmetric=False, constant=False)


def _frame_gradient(problem: StationaryProblem, x: np.ndarray) -> np.ndarray:
    """``grad U`` in the frame, shape (n_grid, c)."""
    b = problem.basis
    att = np.einsum("gic,i->gc", b.grad, problem.eig * x)
    cfg = problem.config.model.perceptron
    pv = problem.scale * half_gradient(cfg, b.points)  # grad (v/2), Euclidean tangent vectors
    return att + np.einsum("gcd,gd->gc", b.frame, pv)


def linear_operator(problem: StationaryProblem, x: np.ndarray,
                    basis: RealBasis | None = None) -> np.ndarray:
    """Galerkin matrix of ``L`` at the state ``x`` (module docstring), shape (n, n):
    ``out[i, j] = <psi_i, L psi_j> / <psi_i, psi_i>``."""
    sb = stability_basis(problem) if basis is None else basis
    rho = problem.density(x)
    s, nu, w = problem.sign, problem.noise, sb.weights
    grad_u = _frame_gradient(problem, x)
    lam = kernel_multipliers(problem.config.model.beta, problem.config.model.kernel,
                             sb.degree, sb.manifold.dimension)
    diffusion, attention, drift = 0.0, 0.0, 0.0
    for c in range(sb.grad.shape[2]):  # frame components: matrix products over the grid
        g = sb.grad[:, :, c]
        diffusion = diffusion - nu * (g.T @ (w[:, None] * g))
        attention = attention + s * (g.T @ ((w * rho)[:, None] * g)) * lam[None, :]
        drift = drift + s * (g.T @ ((w * grad_u[:, c])[:, None] * sb.phi))
    return (diffusion + drift + attention) / sb.norm2[:, None]


@dataclass(frozen=True)
class Stability:
    """Leading eigenvalues of ``L`` and the verdict.

    ``eigenvalues``: real parts, decreasing (the neutral symmetry modes included);
    ``neutral``: how many were set aside as rotations; ``growth``: the largest of the others;
    ``stable``: ``growth < 0`` (to ``NEUTRAL_TOL`` of the spectrum's scale).
    """

    eigenvalues: np.ndarray
    neutral: int
    growth: float
    stable: bool


def neutral_modes(problem: StationaryProblem, x: np.ndarray) -> int:
    """Rotations that move the state ``x`` (0 for a model with a perceptron or a uniform state;
    S^1: 1; S^2: 2 for an axisymmetric state, 3 otherwise)."""
    if not rotation_invariant(problem.config):
        return 0
    b = problem.basis
    moving = np.abs(x[b.degree > 0]).max(initial=0.0) > 1e-9 * problem.rho0
    if not moving:
        return 0
    return b.manifold.rotation_modes(symmetric=len(b.degree) == b.degree.max() + 1)


def stability(problem: StationaryProblem, x: np.ndarray, basis: RealBasis | None = None,
              keep: int = 8) -> Stability:
    """Eigenvalues of :func:`linear_operator` (dense) and the stability verdict.

    ``keep``: how many leading eigenvalues to return (beyond the neutral ones)."""
    mu = np.linalg.eigvals(linear_operator(problem, x, basis))
    mu = np.sort(mu.real)[::-1]
    n0 = neutral_modes(problem, x)
    scale = max(float(np.abs(mu).max(initial=0.0)), 1e-300)
    rest = mu
    if n0:
        near = np.argsort(np.abs(mu))[:n0]
        rest = np.delete(mu, near)
    growth = float(rest[0]) if rest.size else -np.inf
    return Stability(mu[: keep + n0], n0, growth, growth < NEUTRAL_TOL * scale)


def uniform_rates(problem: StationaryProblem, degrees: np.ndarray) -> np.ndarray:
    """Closed-form rates ``s r_j - nu j(j+d-2)`` about the uniform state (docs/math.md §3.2 with
    ``-nu`` times the Laplacian's eigenvalue), ``r_j = M j(j+d-2) lambda_j / (beta |S^{d-1}|)``."""
    j = np.asarray(degrees, dtype=float)
    lap = j * (j + problem.dim - 2.0)
    lam = kernel_multipliers(problem.config.model.beta, problem.config.model.kernel,
                             np.asarray(degrees), problem.dim)
    return lap * (problem.sign * problem.mass * lam / problem.basis.area - problem.noise)
