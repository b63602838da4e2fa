"""The velocity field of the S^1 Lagrangian state (:mod:`solvers.circle.measure.lagrangian`): moving cells
plus Dirac atoms, unnormalized or softmax-normalised attention.

The attention uses the measure's Fourier coefficients ``mu_j = int e^{-i j y} dmu`` in closed
form (a uniform cell gives ``m e^{-i j c} sinc(j L / 2)``, ``c`` its midpoint and ``L`` its
length; an atom ``A e^{-i j x}``) and the Funk-Hecke multipliers (paper Lemma 5.1, docs/math.md
§2), ``w_j = lambda_j / (2 pi beta)``, truncated where ``lambda_j / lambda_0 < 1e-18`` (the kernel
is smooth, so this is exact to round-off):

- ``(1/beta) f'(p) = sum_{j != 0} i j w_j mu_j e^{i j p}`` (:func:`attention_gradient`);
- ``f(p) = (K*mu)(p) = beta sum_j w_j mu_j e^{i j p}`` (:func:`potential`), ``j`` from ``-J`` to
  ``J``, real.

Unnormalized attention moves the points with ``(1/beta) f'``; softmax-normalised attention (paper
eq. 2.9, section 6; docs/math.md §1) with ``f' / (beta f)``, ``f = K*mu`` the normaliser of the
whole measure, atoms included (an atom's own ``m K(x, x)`` is in its ``f``, its own derivative is
0). The shift of ``exp_shifted`` cancels in ``f'/f``. The perceptron's ``v'/2`` is added as is, and
everything is multiplied by ``s`` (+1 ascent, -1 descent).

A spectral ``f`` carries an absolute error of about ``1e-16 M K(0)``: far from all the mass (where
``f`` is below ``SOFTMAX_FLOOR M K(0)``, large ``beta``) the ratio ``f'/f`` is taken from the direct
sums instead (:func:`direct_sums`, each term positive or with its own sign, scaled so that no
exponential underflows), which are accurate relative to ``f`` itself.

:func:`attention_gradient_reference` and :func:`potential_reference` sum the closed forms
directly: per cell ``(1/beta) (m_k / L_k) (K(p, X_k) - K(p, X_{k+1}))`` and a Gauss-Legendre rule
for ``int K`` over the cell (which has no elementary closed form); per atom ``-A_i sin(p - x_i)
K(p, x_i)`` and ``A_i K(p, x_i)`` (``K(p, y) = c_K e^{beta cos(p - y)}``): an independent
computation the tests compare against. The coefficients and the fields are compiled (numba) or
numpy (``MEANFIELD_NUMPY=1``, :mod:`solvers.core.backend`); the two agree to round-off.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; the numpy path is the reference
    numba = None

from solvers.model.kernel import kernel_log_shift
from solvers.model import perceptron
from solvers.model.params import ModelParams
from spectral import kernel_bandwidth, kernel_eigenvalues

# "LagrangianState" in the annotations is solvers.circle.measure.lagrangian.LagrangianState (that module
# imports this one: not imported here, so that the layering has no cycle)

TWO_PI = 2.0 * np.pi
BANDWIDTH_TOL = 1e-18  # multipliers below this (relative to lambda_0) are left out
SOFTMAX_FLOOR = 1e-7  # softmax: where f < SOFTMAX_FLOOR M K(0), f'/f from the direct sums
FALLBACK_NODES = 8  # Gauss-Legendre nodes per cell of the direct sums in that fallback
BLOCK = 1 << 20  # direct sums: terms per block of points (8 MiB per array)


def gradient_weights(model: ModelParams) -> np.ndarray:
    """``lambda_j / (2 pi beta)`` for ``j = 0 .. J`` (shifted kernel included), ``J`` the first degree
    with ``lambda_J / lambda_0 < BANDWIDTH_TOL``: ``dU_att/dx = sum_{j != 0} i j w_j mu_j e^{ijp}``."""
    J = kernel_bandwidth(model.beta, 2, BANDWIDTH_TOL)
    log_lam = kernel_eigenvalues(model.beta, np.arange(J + 1), 2, log=True) + kernel_log_shift(model)
    return np.exp(log_lam) / (TWO_PI * model.beta)


def _coefficients_numpy(X: np.ndarray, m: np.ndarray, A: np.ndarray, J: int) -> np.ndarray:
    """``mu_j``, ``j = 0 .. J`` (J + 1,) complex, of the cells and atoms of the state."""
    L = np.diff(np.append(X, X[0] + TWO_PI))
    mid = X + 0.5 * L
    j = np.arange(J + 1)[:, None]
    half = 0.5 * j * L[None, :]
    sinc = np.where(half == 0.0, 1.0, np.sin(half) / np.where(half == 0.0, 1.0, half))
    return (np.exp(-1j * j * mid) * sinc) @ m + np.exp(-1j * j * X) @ A


def _field_numpy(mu: np.ndarray, w: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``sum_{j != 0} i j w_j mu_j e^{i j p}`` at ``points`` (P,), real."""
    j = np.arange(1, w.size)
    terms = (1j * j * w[1:] * mu[1:])[None, :] * np.exp(1j * np.outer(points, j))
    return 2.0 * terms.sum(axis=1).real


def _potential_numpy(mu: np.ndarray, w: np.ndarray, beta: float, points: np.ndarray) -> np.ndarray:
    """``f(p) = beta sum_{j=-J}^{J} w_j mu_j e^{i j p}`` at ``points`` (P,), real (``mu_{-j}`` is
    the conjugate of ``mu_j``)."""
    j = np.arange(1, w.size)
    terms = (w[1:] * mu[1:])[None, :] * np.exp(1j * np.outer(points, j))
    return beta * (w[0] * mu[0].real + 2.0 * terms.sum(axis=1).real)


if numba is not None:
    # reassociation lets the sums over cells run in SIMD lanes (the order of a floating-point
    # sum, nothing else: agrees with the numpy path to round-off)
    @numba.njit(cache=True, fastmath={"reassoc", "nsz", "contract"})
    def _coefficients_numba(X, m, A, J):  # pragma: no cover - compiled; compared with numpy in tests
        """``mu_j`` as :func:`_coefficients_numpy`: for each ``j`` one pass over the cells,
        ``e^{-i j c}`` and ``e^{i j L/2}`` (whose imaginary part is ``sin(j L/2)``) advanced by
        one rotation per cell (split real and imaginary arrays); the atoms after, only where
        ``A > 0``."""
        n = X.shape[0]
        mu = np.zeros(J + 1, np.complex128)
        em_re, em_im, eh_re, eh_im, scale = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        total = 0.0
        for k in range(n):
            L = (X[k + 1] if k + 1 < n else X[0] + 2.0 * np.pi) - X[k]
            mid = X[k] + 0.5 * L
            em_re[k], em_im[k] = np.cos(mid), -np.sin(mid)
            eh_re[k], eh_im[k] = np.cos(0.5 * L), np.sin(0.5 * L)
            scale[k] = m[k] / (0.5 * L) if L > 0.0 else 0.0
            total += m[k] + A[k]
        mu[0] = total
        pm_re, pm_im, ph_re, ph_im = em_re.copy(), em_im.copy(), eh_re.copy(), eh_im.copy()
        for j in range(1, J + 1):
            acc_re = acc_im = 0.0
            for k in range(n):
                w = scale[k] * ph_im[k]
                acc_re += w * pm_re[k]
                acc_im += w * pm_im[k]
                r = pm_re[k] * em_re[k] - pm_im[k] * em_im[k]
                pm_im[k] = pm_re[k] * em_im[k] + pm_im[k] * em_re[k]
                pm_re[k] = r
                r = ph_re[k] * eh_re[k] - ph_im[k] * eh_im[k]
                ph_im[k] = ph_re[k] * eh_im[k] + ph_im[k] * eh_re[k]
                ph_re[k] = r
            mu[j] = complex(acc_re / j, acc_im / j)
        for k in range(n):
            if A[k] != 0.0:
                e_x = np.exp(-1j * X[k])
                p = e_x
                for j in range(1, J + 1):
                    mu[j] += A[k] * p
                    p *= e_x
        return mu

    @numba.njit(cache=True)
    def _field_numba(mu, w, points):  # pragma: no cover - compiled
        """:func:`_field_numpy`: for each ``j`` one pass over the points (each its own sum, so
        the pass runs in SIMD lanes), ``e^{i j p}`` advanced by one rotation."""
        J = w.shape[0] - 1
        e_re, e_im = np.cos(points), np.sin(points)
        p_re, p_im = e_re.copy(), e_im.copy()
        acc = np.zeros(points.shape[0])
        for j in range(1, J + 1):
            a, b = j * w[j] * mu[j].real, j * w[j] * mu[j].imag
            for q in range(points.shape[0]):
                acc[q] -= a * p_im[q] + b * p_re[q]  # Im(mu_j e^{ijp}) j w_j
                r = p_re[q] * e_re[q] - p_im[q] * e_im[q]
                p_im[q] = p_re[q] * e_im[q] + p_im[q] * e_re[q]
                p_re[q] = r
        return 2.0 * acc

    @numba.njit(cache=True)
    def _fields_numba(mu, w, beta, points):  # pragma: no cover - compiled
        """``(``:func:`_field_numpy` ``,`` :func:`_potential_numpy` ``)`` in one pass over ``j``
        (the rotation of :func:`_field_numba` shared by both sums): two arrays (P,)."""
        J = w.shape[0] - 1
        e_re, e_im = np.cos(points), np.sin(points)
        p_re, p_im = e_re.copy(), e_im.copy()
        grad, f = np.zeros(points.shape[0]), np.zeros(points.shape[0])
        for j in range(1, J + 1):
            a, b = w[j] * mu[j].real, w[j] * mu[j].imag
            for q in range(points.shape[0]):
                f[q] += a * p_re[q] - b * p_im[q]  # Re(w_j mu_j e^{ijp})
                grad[q] -= j * (a * p_im[q] + b * p_re[q])  # Re(i j w_j mu_j e^{ijp})
                r = p_re[q] * e_re[q] - p_im[q] * e_im[q]
                p_im[q] = p_re[q] * e_im[q] + p_im[q] * e_re[q]
                p_re[q] = r
        base = w[0] * mu[0].real
        for q in range(points.shape[0]):
            grad[q] *= 2.0
            f[q] = beta * (base + 2.0 * f[q])
        return grad, f


def coefficients(state: "LagrangianState", J: int, compiled: bool = True) -> np.ndarray:
    """``mu_j``, ``j = 0 .. J`` (J + 1,) complex, of the cells and atoms of ``state``."""
    if compiled and numba is not None:
        return _coefficients_numba(state.X, state.m, state.A, J)
    return _coefficients_numpy(state.X, state.m, state.A, J)


def attention_gradient(state: "LagrangianState", w: np.ndarray, points: np.ndarray,
                       compiled: bool = True) -> np.ndarray:
    """``(1/beta) d/dp (K*mu)(p)`` at ``points`` (P,) for the measure of ``state`` (spectral, exact
    to round-off past the kernel's bandwidth); ``compiled``: numba when it imports."""
    mu = coefficients(state, w.size - 1, compiled)
    if compiled and numba is not None:
        return _field_numba(mu, w, np.ascontiguousarray(points, dtype=float))
    return _field_numpy(mu, w, np.asarray(points, float))


def attention_fields(state: "LagrangianState", w: np.ndarray, beta: float, points: np.ndarray,
                     compiled: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``((1/beta) f', f)`` at ``points`` (P,), each (P,): ``f = K*mu`` of the whole measure
    (spectral, absolute error about ``1e-16 M K(0)``); one pass over the modes when compiled."""
    mu = coefficients(state, w.size - 1, compiled)
    if compiled and numba is not None:
        return _fields_numba(mu, w, float(beta), np.ascontiguousarray(points, dtype=float))
    p = np.asarray(points, float)
    return _field_numpy(mu, w, p), _potential_numpy(mu, w, float(beta), p)


def potential(state: "LagrangianState", w: np.ndarray, beta: float, points: np.ndarray,
              compiled: bool = True) -> np.ndarray:
    """``f(p) = (K*mu)(p)`` at ``points`` (P,), shape (P,) (:func:`attention_fields`)."""
    return attention_fields(state, w, beta, points, compiled)[1]


def direct_sums(state: "LagrangianState", model: ModelParams, points: np.ndarray,
                nodes: int = FALLBACK_NODES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(g, f, log_scale)``, each (P,): ``(1/beta) f'(p) = g e^{log_scale}`` and ``f(p) = f
    e^{log_scale}`` by direct sums at ``points`` (P,).

    Cells: ``(c/beta) (K(p, a) - K(p, b))`` for ``f'`` (exact, ``d_p K = -d_y K``) and ``nodes``
    Gauss-Legendre nodes for ``c int_a^b K(p, y) dy``; atoms: ``-A sin(p - x) K(p, x)`` and
    ``A K(p, x)``. ``log_scale`` is the largest exponent ``beta cos(p - y) + log c_K`` over the
    nodes, the cell ends and the atoms, taken out of every term (no underflow however far ``p``
    lies from the mass, so ``g / f`` is accurate to round-off relative to itself).
    """
    beta, shift = model.beta, kernel_log_shift(model)
    p = np.asarray(points, float)
    X, L = state.X, state.lengths()
    c = np.divide(state.m, L, out=np.zeros_like(L), where=L > 0)
    t, wq = np.polynomial.legendre.leggauss(nodes)
    y = (X + 0.5 * L)[:, None] + 0.5 * L[:, None] * t[None, :]  # (n, q) the quadrature nodes
    mq = (0.5 * state.m)[:, None] * wq[None, :]  # m/2 times the weights: sum over nodes is m
    ends = np.concatenate([X, X + L])
    g, f, scale = np.empty(p.size), np.empty(p.size), np.empty(p.size)
    step = max(1, BLOCK // max(y.size + ends.size, 1))
    for lo in range(0, p.size, step):
        q = p[lo:lo + step, None]
        e_nodes = beta * np.cos(q[:, :, None] - y[None, :, :])
        e_ends = beta * np.cos(q - ends[None, :])
        top = np.maximum(e_nodes.max(axis=(1, 2)), e_ends.max(axis=1))[:, None]
        k_ends = np.exp(e_ends - top)
        ka, kb, kx = k_ends[:, :X.size], k_ends[:, X.size:], k_ends[:, :X.size]
        g[lo:lo + step] = ((ka - kb) @ c) / beta - (np.sin(q - X[None, :]) * kx) @ state.A
        f[lo:lo + step] = np.einsum("pkq,kq->p", np.exp(e_nodes - top[:, :, None]), mq) + kx @ state.A
        scale[lo:lo + step] = top[:, 0] + shift
    return g, f, scale


def attention_gradient_reference(state: "LagrangianState", model: ModelParams,
                                 points: np.ndarray) -> np.ndarray:
    """:func:`attention_gradient` by the closed forms (direct sums, numpy; the tests' independent
    value): a uniform cell ``[a, b]`` of density ``c`` gives ``(1/beta) d/dp int_a^b c K(p, y) dy =
    (c/beta) (K(p, a) - K(p, b))``, an atom ``-A sin(p - x) K(p, x)``."""
    g, _, scale = direct_sums(state, model, points, nodes=1)
    return g * np.exp(scale)


def potential_reference(state: "LagrangianState", model: ModelParams, points: np.ndarray,
                        nodes: int = 16) -> np.ndarray:
    """:func:`potential` by direct sums (numpy): ``nodes`` Gauss-Legendre nodes per cell, ``A K(p,
    x)`` per atom. For a cell of length ``L`` the rule's relative error is about
    ``(beta L / 2)^(2 nodes) / (2 nodes)!``."""
    _, f, scale = direct_sums(state, model, points, nodes)
    return f * np.exp(scale)


def softmax_attention(state: "LagrangianState", model: ModelParams, w: np.ndarray,
                      points: np.ndarray, compiled: bool = True) -> np.ndarray:
    """``f' / (beta f)`` at ``points`` (P,) (paper eq. 2.9), shape (P,): spectral, and by
    :func:`direct_sums` where ``f < SOFTMAX_FLOOR M K(0)`` (there the spectral ``f`` is accurate
    to no better than ``1e-9`` relative; module docstring)."""
    g, f = attention_fields(state, w, model.beta, points, compiled)
    total = float(np.sum(state.m) + np.sum(state.A))
    low = f < SOFTMAX_FLOOR * total * np.exp(model.beta + kernel_log_shift(model))
    if low.any():
        g_low, f_low, _ = direct_sums(state, model, np.asarray(points, float)[low])
        g[low], f[low] = g_low, f_low
    return g / f


def velocity(state: "LagrangianState", model: ModelParams, w: np.ndarray, points: np.ndarray,
             compiled: bool = True,
             perceptron_velocity: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Transport velocity of the whole measure at ``points`` (P,), shape (P,): ``s ((1/beta) f' +
    v'/2)`` (unnormalized attention, paper eq. 2.7) or ``s (f'/(beta f) + v'/2)`` (softmax, paper
    eq. 2.9), ``s = +1`` ascent, ``-1`` descent. ``perceptron_velocity(angles)``: the perceptron's
    part (default :func:`solvers.model.perceptron.circle_velocity`; the compiled
    :meth:`solvers.circle.measure.dirac.CompiledCircleField.perceptron_velocity` does the same operations)."""
    angles = np.mod(points, TWO_PI)
    v = perceptron.circle_velocity(model.perceptron, angles) if perceptron_velocity is None \
        else perceptron_velocity(angles)
    if model.attention == "softmax":
        return model.sign * (softmax_attention(state, model, w, points, compiled) + v)
    return model.sign * (attention_gradient(state, w, points, compiled) + v)
