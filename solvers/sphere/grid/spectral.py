"""Pseudo-spectral transport on S^2: ``d_t rho = -s div(rho g)`` (paper eq. 2.6, docs/math.md §1).

The state is the density at the Gauss nodes of ``problem.grid.basis`` (shape (nlat, nphi)), kept
band-limited to degrees ``l <= c = (2 lmax) // 3`` (Orszag's 2/3 rule). One evaluation:

1. velocity at the nodes, ``u = s (attention + perceptron)`` from
   :meth:`SphereProblem.centre_fields` (attention ``grad f / beta`` or softmax
   ``grad f / (beta f)``, ``f = K*rho`` by Funk-Hecke, docs/math.md §2; perceptron exact);
2. flux ``F = rho u`` (both components) at the nodes;
3. ``div F`` by shtns' vector analysis (:func:`spectral.sphere_vector.divergence`), truncated to
   ``l <= c`` and synthesised: ``drho_dt = -P_c div F``.

Why ``c = 2 lmax / 3``: for ``rho``, ``f`` of degree ``<= c`` and unnormalised attention,
``F . grad Y_lm`` is a polynomial of degree ``2c + l``; the Gauss analysis is exact when
``2c + l <= 2 nlat - 1`` and ``2c + l < nphi``, i.e. for all kept ``l <= c`` as soon as
``3c <= 2 lmax + 1`` on the default grid (``nlat >= lmax + 1``, ``nphi >= 2 lmax + 2``)
(tested in ``tests/test_sphere_vector.py``). Softmax and non-polynomial perceptrons are not
band-limited: their aliasing error is that of the quadrature, small while they are smooth.

Discrete invariants (consequences of the quadrature form of the divergence, see
:mod:`spectral.sphere_vector`): mass ``sum w drho = 0`` to round-off (degree 0 of a divergence is
zero), and ``dE/dt = s sum w rho V . grad(P_c U_h)`` with ``U_h`` the grid potential: equal to the
discrete dissipation (docs/math.md §1) to round-off when ``U`` has degree ``<= c`` (pure attention,
linear perceptron), to the spectral tail of the perceptron potential otherwise.

No limiter (``dt`` is ignored): there is no positivity guarantee (docs/math.md §6); the solver records
``min rho`` and warns.

Courant measure: ``max_rate = max |u| / (pi / nlat)``, the analogue of S^1's ``max |u| / h``;
since the largest advective eigenvalue of a degree-``c`` truncation is about ``|u| c``,
``dt * max_rate = C`` means ``|u| c dt ~ 2 C / 3 * pi`` (about ``2.1 C``), inside RK4's
imaginary-axis stability interval (``2 sqrt 2``) for ``C <~ 1.3``.
"""

from __future__ import annotations

import numpy as np

from solvers.sphere.problem import SphereProblem
from spectral.sphere_vector import divergence


def dealias_cutoff(lmax: int) -> int:
    """Highest degree kept by the 2/3 rule for a basis of degree ``lmax``."""
    return (2 * int(lmax)) // 3


class SphereSpectral:
    """``rhs(rho, dt=None) -> (drho_dt, max_rate)`` on the Gauss grid (nlat, nphi).

    Parameters
    ----------
    problem : SphereProblem
        Model and grid; the grid should not merge polar cells (``merge_ratio = 0``): the scheme
        works on point values at the Gauss nodes.

    Attributes
    ----------
    cutoff : int
        Highest degree kept, ``(2 lmax) // 3``.
    spacing : float
        Courant length ``pi / nlat`` (radians).
    """

    def __init__(self, problem: SphereProblem) -> None:
        self.problem = problem
        self.basis = problem.grid.basis
        self.cutoff = dealias_cutoff(self.basis.lmax)
        self.keep = self.basis.degrees <= self.cutoff  # (nlm,), spectral mask
        self.spacing = np.pi / self.basis.nlat

    def project(self, rho: np.ndarray) -> np.ndarray:
        """Band-limit a grid field: analyse, zero degrees ``> cutoff``, synthesise.

        Parameters
        ----------
        rho : ndarray, shape (nlat, nphi)
            Grid values.

        Returns
        -------
        ndarray, shape (nlat, nphi)
            Grid values of degree ``<= cutoff`` (Gauss analysis: exact for fields of degree
            ``<= lmax``; the mass is kept exactly for fields of degree ``<= 2 nlat - 1``).
        """
        return self.basis.backward(np.where(self.keep, self.basis.forward(rho), 0.0))

    def velocity(self, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Signed velocity ``u = s (attention + perceptron)`` at the nodes (eq. 2.6, 2.9).

        Parameters
        ----------
        rho : ndarray, shape (nlat, nphi)
            Grid density.

        Returns
        -------
        u_theta, u_phi : ndarray, each shape (nlat, nphi)
            Grid components (southward, eastward).
        """
        c = self.problem.centre_fields(rho)
        s = self.problem.sign
        return s * c["vel_theta"], s * c["vel_phi"]

    def tendency(self, rho: np.ndarray, u_theta: np.ndarray, u_phi: np.ndarray) -> np.ndarray:
        """``-P_c div(rho u)`` as grid values, shape (nlat, nphi) (inputs: grid, (nlat, nphi))."""
        div_lm = divergence(self.basis, rho * u_theta, rho * u_phi)
        return -self.basis.backward(np.where(self.keep, div_lm, 0.0))

    def __call__(self, rho: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        """Right-hand side ``d rho / dt`` and the Courant rate.

        Parameters
        ----------
        rho : ndarray, shape (nlat, nphi)
            Grid density, band-limited to ``cutoff`` (as :meth:`project` leaves it).
        dt : float, optional
            Ignored (no limiter in this scheme).

        Returns
        -------
        drho_dt : ndarray, shape (nlat, nphi)
            Grid values of degree ``<= cutoff``.
        max_rate : float
            ``max |u| / (pi / nlat)`` over all nodes.
        """
        u_theta, u_phi = self.velocity(rho)
        rate = float(np.max(np.hypot(u_theta, u_phi))) / self.spacing
        return self.tendency(rho, u_theta, u_phi), rate
