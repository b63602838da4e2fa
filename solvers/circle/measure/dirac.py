"""The measure-valued state on S^1: ``mu = rho dtheta + sum_i m_i delta_{x_i}`` (paper eq. 2.6).

In the continuity equation a Dirac mass stays a Dirac mass, moves with the velocity at its
point and feels no force from itself (``d/dx K(x, x_i) = 0`` at ``x = x_i``). So:

- the density moves by the finite-volume scheme (:mod:`solvers.circle.grid.fv`) with the velocity of
  the whole measure at the faces;
- atom i moves by ``dx_i/dt = s dU/dx(x_i)`` (docs/math.md §1, §3.3);
- the density's part of ``dU/dx`` is spectral (Funk-Hecke, docs/math.md §2) and is evaluated at
  the faces or, as a trigonometric polynomial, at the atoms; the atoms' part
  ``(1/beta) sum_i m_i d/dx K(x, x_i) = -c_K sum_i m_i sin(x - x_i) e^{beta cos(x - x_i)}`` is in
  closed form (no spectral truncation of a delta), ``c_K`` = 1 or ``e^{-beta}`` (shifted kernel).

Between steps (never inside a Runge-Kutta step) capture, absorption and merging change the atoms
(:mod:`solvers.circle.measure.dirac_events`). Here: the fields.

Two implementations of the fields: :class:`CircleMeasureField` (numpy, the reference) and
:class:`CompiledCircleField` (numba kernels of :mod:`solvers.circle.measure.kernels_dirac_numba`,
the default when numba imports; ``MEANFIELD_NUMPY=1`` selects the reference,
:mod:`solvers.core.backend`). They agree to round-off (tests/circle/test_dirac_kernels.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.circle.problem import CircleProblem, kernel_log_shift
from solvers.core.backend import default_backend, fused_steps_available
from solvers.model import perceptron

TWO_PI = 2.0 * np.pi
MODE_TOL = 1e-30  # compiled path: density modes whose multiplier is below this (relative) are left out


def wrap_difference(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """``a - b`` mapped to ``[-pi, pi)``."""
    return np.mod(np.asarray(a) - b + np.pi, TWO_PI) - np.pi


@dataclass(frozen=True)
class CircleMeasureField:
    """Velocities and potentials of a measure on S^1 (unnormalized attention).

    Parameters
    ----------
    problem : CircleProblem
    """

    problem: CircleProblem

    @property
    def log_c(self) -> float:
        """``log c_K`` (0, or ``-beta`` for the shifted kernel)."""
        return kernel_log_shift(self.problem.model)

    def atom_attention(self, points: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``(1/beta) d/dp sum_i m_i K(p, x_i)`` at ``points`` (P,), atoms ``x``, ``m`` (n,): shape (P,)."""
        if m.size == 0:
            return np.zeros(np.shape(points))
        d = np.subtract.outer(np.asarray(points, float), x)
        k = np.exp(self.problem.model.beta * np.cos(d) + self.log_c)
        return -(np.sin(d) * k) @ m

    def atom_potential(self, points: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``sum_i m_i K(p, x_i)`` (before the ``1/beta``), shape (P,)."""
        if m.size == 0:
            return np.zeros(np.shape(points))
        d = np.subtract.outer(np.asarray(points, float), x)
        return np.exp(self.problem.model.beta * np.cos(d) + self.log_c) @ m

    def density_attention_at(self, rho_hat: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``(1/beta) d/dp (K*rho)(p)`` of the grid density's interpolant at any ``points`` (P,)."""
        b = self.problem.basis
        return b.evaluate(rho_hat * self.problem.multipliers("d_center"), points) / self.problem.model.beta

    def density_potential_at(self, rho_hat: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``(K*rho)(p)`` at any ``points`` (P,)."""
        return self.problem.basis.evaluate(rho_hat * self.problem.multipliers("kernel"), points)

    def face_velocity(self, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """Signed velocity of the whole measure at the right faces, shape (N,)."""
        p = self.problem
        att = p.attention_field(rho_hat, "face") + self.atom_attention(p.faces, x, m)
        return p.sign * (att + p.multipliers("w_face"))

    def density_face_velocity(self, rho: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """:meth:`face_velocity` from the grid density ``rho`` (N,) itself."""
        return self.face_velocity(self.problem.basis.forward(rho), x, m)

    def center_gradient(self, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``dU/dtheta`` of the whole measure at the cell centres, shape (N,)."""
        p = self.problem
        return p.potential_gradient(rho_hat) + self.atom_attention(p.basis.theta, x, m)

    def atom_gradient(self, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``dU/dx`` at every atom, its own mass excluded (it exerts no force), shape (n,)."""
        if m.size == 0:
            return np.zeros(0)
        p = self.problem
        return (self.density_attention_at(rho_hat, x) + self.atom_attention(x, x, m)
                + perceptron.circle_velocity(p.model.perceptron, x))


class CompiledCircleField:
    """:class:`CircleMeasureField` (same methods, same signatures) and the Dirac right-hand side
    through the compiled kernels of :mod:`solvers.circle.measure.kernels_dirac_numba`: one call per
    Runge-Kutta stage after the two FFTs.

    Grid-only data are tabulated once (``faces``, shape (5, N): ``cos``, ``sin`` of the right
    faces, the perceptron face velocity, ``cos``, ``sin`` of the centres), with the Fourier
    multipliers and the perceptron's units (J, 4); the perceptron at the atoms is evaluated
    exactly at their positions. Call as ``rhs(state, dt=None)``; :meth:`fused_stage` is the
    integrator's one-call stage (:func:`solvers.timestepping.integrators.rk_step`).

    Parameters
    ----------
    problem : CircleProblem
        Unnormalised attention (the only one a Dirac run allows).
    limiter : str
        Key of :data:`solvers.core.kernels_numba.LIMITER_CODES`.
    """

    def __init__(self, problem: CircleProblem, limiter: str) -> None:
        from solvers.circle.measure import kernels_dirac_numba as kd
        from solvers.core.kernels_numba import LIMITER_CODES

        b, model, units = problem.basis, problem.model, problem.model.perceptron
        self.kd, self.problem, self.n, self.h = kd, problem, b.n, b.h
        faces = problem.faces  # moved onto the perceptron's corners with time.kink_faces
        self.faces = np.ascontiguousarray(np.stack([np.cos(faces), np.sin(faces), problem.multipliers("w_face"),
                                                    np.cos(b.theta), np.sin(b.theta), problem.cell_scale,
                                                    faces]))  # row 6: the face angles (absorb's cells)
        self.d_center, self.d_face = problem.multipliers("d_center"), problem.multipliers("d_face")
        self.moved = problem.moved_faces  # the density's field there: evaluated, not transformed
        self.n_modes = kernel_modes(self.d_center)
        self.code = kd.ACTIVATION_CODES[units.activation] if units.n_units else 0
        self.units = np.zeros((0, 4)) if not units.n_units else np.ascontiguousarray(
            np.column_stack([np.asarray(units.a, float).reshape(-1, 2), units.b, units.omega]), dtype=float)
        self.limiter = LIMITER_CODES[limiter]
        self.beta, self.log_c = float(model.beta), float(kernel_log_shift(model))
        # (beta, log c_K, s, h, absolute mass floor: set_mass_floor)
        self.consts = np.array([self.beta, self.log_c, problem.sign, b.h, 0.0])
        self._moved = problem.moved_evaluation()  # the moved faces, for the compiled whole step
        if not fused_steps_available():  # the integrator then calls fused_stage stage by stage
            self.fused_step = None  # type: ignore[method-assign]

    @staticmethod
    def available(problem: CircleProblem) -> bool:
        """Whether the compiled path runs: the numba backend and an activation it compiles."""
        if default_backend() != "numba":
            return False
        from solvers.circle.measure.kernels_dirac_numba import ACTIVATION_CODES

        return problem.model.perceptron.activation in ACTIVATION_CODES

    def set_mass_floor(self, floor: float) -> None:
        """A face moves mass when its upwind density exceeds ``floor`` (absolute)."""
        self.consts[4] = floor

    # -- the right-hand side ------------------------------------------------------------
    def spectra(self, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``rfft(rho)`` (N//2 + 1,) and ``g = irfft(rfft(rho) d_face)`` (N,): the density's face
        attention times ``beta`` (``CircleProblem.attention_field``; the ``1/N`` of ``rho_hat``
        and the ``N`` of the inverse transform left out: bitwise the same for N a power of two)."""
        fft = np.fft.rfft(rho)
        g = np.fft.irfft(fft * self.d_face, n=self.n)
        if self.moved.size:
            g[self.moved] = self.problem.moved_attention(fft) / self.n
        return fft, g

    def __call__(self, state: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        """``(d state/dt, max_rate)`` of the flat state (``kernels_dirac_numba.dirac_rhs``)."""
        fft, g = self.spectra(state[: self.n])
        return self.kd.dirac_rhs(state, g, fft, self.d_center, self.n_modes, self.faces, self.units, self.code,
                                 self.consts, self.limiter, 0.0 if dt is None else float(dt), dt is not None,
                                 self.problem.kinks)

    def fused_stage(self, state: np.ndarray, dt: float, u0: np.ndarray, c: float, alpha: float,
                    uj: np.ndarray) -> tuple[np.ndarray, float]:
        """``(u0 + c rhs(state, dt)) + alpha (uj - u0)`` and the rate, one compiled call."""
        fft, g = self.spectra(state[: self.n])
        return self.kd.dirac_stage(state, g, fft, self.d_center, self.n_modes, self.faces, self.units, self.code,
                                   self.consts, self.limiter, float(dt), u0, float(c), float(alpha), uj,
                                   alpha != 0.0, self.problem.kinks)

    def fused_step(self, state: np.ndarray, dt: float, plan: tuple) -> tuple[np.ndarray, float]:
        """A whole Shu-Osher step (plan: :attr:`~solvers.timestepping.integrators.ButcherTable.stage_plan`)
        in one compiled call, FFTs included (:func:`solvers.circle.grid.kernels_steps_numba.dirac_step`):
        the operations of :meth:`fused_stage` stage after stage. Set only with rocket-fft."""
        from solvers.circle.grid.kernels_steps_numba import dirac_step

        return dirac_step(state, float(dt), *plan, self.d_face, self.d_center, self.n_modes, *self._moved,
                          self.faces, self.units, self.code, self.consts, self.limiter, self.problem.kinks)

    def absorb_step(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Positions mod 2 pi and :func:`absorb` on a flat state: ``(new state, u, smallest
        separation of the atoms)`` (merge when below ``h``)."""
        if self.fused_step is not None:  # rocket-fft: the FFTs compiled too, one call
            from solvers.circle.grid.kernels_steps_numba import dirac_absorb_step

            return dirac_absorb_step(state, self.d_face, self.d_center, *self._moved, self.faces, self.consts)
        g = self.spectra(state[: self.n])[1]
        return self.kd.absorb_step(state, g, self.faces, self.consts)

    def perceptron_velocity(self, x: np.ndarray) -> np.ndarray:
        """The perceptron's velocity at the angles ``x`` (n,)
        (:func:`solvers.model.perceptron.circle_velocity`, compiled), shape (n,)."""
        return self.kd.perceptron_velocity(_floats(x), self.units, self.code)

    def atom_energy(self, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> float:
        """The atoms' part of ``E[mu]`` (:func:`solvers.circle.measure.dirac_diagnostics.atom_energy`):
        the cross term ``(1/beta) sum_i m_i (K*rho)(x_i)`` and the atoms' own closed form."""
        if not m.size:
            return 0.0
        cross = float(m @ self.density_potential_at(rho_hat, x)) / self.beta
        return cross + self.kd.atom_energy(_floats(x), _floats(m), self.units, self.code, self.beta, self.log_c)

    def cell_of(self, x: np.ndarray) -> np.ndarray:
        """:meth:`CircleProblem.cell_of` of the angles ``x`` (n,), compiled (int64 (n,))."""
        return self.kd.cells_of(_floats(x), self.faces)

    def absorb(self, state: np.ndarray, u: np.ndarray) -> float:
        """:func:`absorb` in place on a flat state (positions mod 2 pi) with the face velocity
        ``u`` (N,); returns the atoms' smallest separation."""
        return self.kd.absorb(state, u, self.faces)

    # -- the fields of CircleMeasureField ---------------------------------------------------
    def atom_attention(self, points: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``(1/beta) d/dp sum_i m_i K(p, x_i)`` at ``points`` (P,), shape (P,)."""
        return self.kd.atom_attention(_floats(points), _floats(x), _floats(m), self.beta, self.log_c)

    def density_potential_at(self, rho_hat: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``(K*rho)(p)`` at any ``points`` (P,)."""
        return self.kd.evaluate(rho_hat * self.problem.multipliers("kernel"), _floats(points), rho_hat.size)

    def face_velocity(self, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """Signed velocity of the whole measure at the right faces, shape (N,)."""
        g = np.fft.irfft(rho_hat * self.d_face, n=self.n)
        if self.moved.size:
            g[self.moved] = self.problem.moved_attention(rho_hat) / self.n
        return self.kd.face_velocity(g, float(self.n), _floats(x), _floats(m), self.faces, self.consts)

    def density_face_velocity(self, rho: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """:meth:`face_velocity` from the grid density ``rho`` (N,) itself: with rocket-fft the
        transforms compiled too, as in :meth:`absorb_step` (the same to round-off)."""
        if self.fused_step is None:
            return self.face_velocity(self.problem.basis.forward(rho), x, m)
        from solvers.circle.grid.kernels_steps_numba import dirac_spectra

        g = dirac_spectra(np.ascontiguousarray(rho, dtype=float), self.d_face, self.d_center, *self._moved)[1]
        return self.kd.face_velocity(g, 1.0, _floats(x), _floats(m), self.faces, self.consts)

    def center_gradient(self, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``dU/dtheta`` of the whole measure at the cell centres, shape (N,)."""
        f = self.faces
        atoms = self.kd.face_attention(f[3], f[4], _floats(x), _floats(m), self.beta, self.log_c)
        return self.problem.potential_gradient(rho_hat) + atoms

    def atom_gradient(self, rho_hat: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
        """``dU/dx`` at every atom, its own mass excluded, shape (n,)."""
        return self.kd.atom_gradient(rho_hat, self.d_center, self.n_modes, _floats(x), _floats(m), self.units,
                                     self.code, self.beta, self.log_c)


def kernel_modes(multiplier: np.ndarray, tol: float = MODE_TOL) -> int:
    """Modes ``k < K`` that carry a Fourier multiplier (N//2 + 1,): beyond ``K`` every entry is
    below ``tol`` times the largest (the kernel's bandwidth, docs/math.md §2), so those modes
    change a field by less than ``tol`` of its scale, far below round-off."""
    size = np.abs(multiplier)
    kept = np.flatnonzero(size >= tol * size.max()) if size.max() > 0 else np.arange(size.size)
    return int(kept.max()) + 1


def _floats(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)
