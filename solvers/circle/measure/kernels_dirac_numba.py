"""Fused numba kernels of the Dirac-atom fields on S^1 (the numpy references are in
:mod:`solvers.circle.measure.dirac`; tests/circle/test_dirac_kernels.py compares the two).

The measure is ``mu = rho dtheta + sum_i m_i delta_{x_i}`` (paper eq. 2.6); its velocity is
``s dU/dx`` with (docs/math.md §1, §3.3):

- the atoms' closed-form attention ``-sum_i m_i sin(p - x_i) e^{beta cos(p - x_i) + log c_K}``
  (:func:`atom_attention`; at the faces :func:`face_attention` takes ``cos p``, ``sin p`` from
  a table and forms ``cos(p - x_i)``, ``sin(p - x_i)`` by the angle-addition formulas: one
  ``exp`` per face and atom);
- the density's spectral attention, a trigonometric polynomial: at the faces from one inverse
  FFT (done by the caller, numba has no FFT), at the atoms by :func:`evaluate` (what
  ``spectral.CircleBasis.evaluate`` computes: ``e^{ikx}`` by rotation, exact every
  ``ANCHOR`` modes);
- the perceptron velocity ``sum_j omega_j sigma(a_j.x + b_j) (P_x a_j).tau`` at the atoms
  (:func:`perceptron_velocity`; the face values are a grid table).

:func:`dirac_rhs` is the whole right-hand side after the FFTs (face velocities, the fv transport
of :func:`solvers.circle.grid.kernels_fv_numba.circle_fv_rhs`, the atom velocities, the step rate) and
:func:`dirac_stage` adds the Shu-Osher combination (:func:`solvers.core.kernels_stages.shu_osher_stage`):
one compiled call per Runge-Kutta stage. :func:`absorb_step` is the bookkeeping after a step
(positions mod 2 pi, face velocity, absorption; merging is flagged, done by the caller).

Compiled with ``cache=True``; import only through :mod:`solvers.core.backend` users (numba is
optional at run time). Arguments: ``faces`` (6, N) = ``cos``, ``sin`` of the right faces, the
perceptron face velocity, ``cos``, ``sin`` of the cell centres, ``h / width`` of the cells (all
1 unless ``time.kink_faces`` moved faces, :mod:`solvers.circle.cells`); ``units`` (J, 4) = ``a_j1, a_j2,
b_j, omega_j``; ``consts`` = ``(beta, log c_K, s, h, absolute mass floor)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.circle.grid.kernels_fv_numba import circle_fv_rhs
from solvers.core.kernels_stages import shu_osher_stage
from solvers.model.activations import LEAKY_SLOPE

# activations with a compiled sigma (solvers.model.activations); others use the numpy path
ACTIVATION_CODES = {"none": 0, "relu": 1, "linear": 2, "leaky_relu": 3, "tanh": 4, "gelu": 5}
ANCHOR = 32  # modes between two exact evaluations of e^{ikx} (rotation error <= ANCHOR eps)
TWO_PI = 2.0 * np.pi
# vexp: range, reduction (fdlibm's split of ln 2: k LN2_HI is exact), Taylor coefficients 1/j!
EXP_LO, EXP_HI = -708.0, 709.0
SHIFTER = 6755399441055744.0  # 1.5 * 2^52: (y + SHIFTER) - SHIFTER rounds y to an integer
LOG2E = 1.4426950408889634
LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
T13 = 1.0 / math.factorial(13)
TAYLOR = tuple(1.0 / math.factorial(j) for j in range(12, -1, -1))  # 1/12!, ..., 1/1!, 1/0!


@njit(cache=True, inline="always", error_model="numpy")
def _sigma(s: float, code: int) -> float:
    """``sigma(s)`` of :data:`solvers.model.activations.ACTIVATIONS` (same operations), scalar."""
    if code == 1:
        return max(s, 0.0)
    if code == 2:
        return s
    if code == 3:
        return s if s > 0 else LEAKY_SLOPE * s
    if code == 4:
        return math.tanh(s)
    return s * (0.5 * math.erfc(-s / math.sqrt(2.0)))  # gelu: s Phi(s)


@njit(cache=True, inline="always", error_model="numpy")
def _phi(s: float, code: int) -> float:
    """The potential ``phi(s)`` (``phi' = 2 sigma``) of :data:`solvers.model.activations.ACTIVATIONS`,
    scalar; tanh's ``2 log cosh s`` as ``2 (|s| + log1p(e^{-2|s|}) - log 2)``."""
    if code == 1:
        r = max(s, 0.0)
        return r * r
    if code == 2:
        return s * s
    if code == 3:
        return s * s if s > 0 else LEAKY_SLOPE * s * s
    if code == 4:
        a = abs(s)
        return 2.0 * ((a + math.log1p(math.exp(-2.0 * a))) - math.log(2.0))
    cdf = 0.5 * math.erfc(-s / math.sqrt(2.0))  # gelu: s^2 Phi(s) + s phi_N(s) - Phi(s)
    return s * s * cdf + s * (math.exp(-0.5 * s * s) / math.sqrt(2.0 * math.pi)) - cdf


@njit(cache=True, error_model="numpy")
def atom_energy(x: np.ndarray, m: np.ndarray, units: np.ndarray, code: int, beta: float, log_c: float) -> float:
    """The atoms' own energy (paper eq. 2.7 for ``sum_i m_i delta_{x_i}``, docs/math.md §1):
    ``(1/(2 beta)) sum_{i,j} m_i m_j c_K e^{beta cos(x_i - x_j)} + (1/2) sum_i m_i v(x_i)``,
    ``v = sum_j omega_j phi(a_j.x + b_j)``; the closed form of
    :meth:`solvers.core.point_atoms.AtomSystem.energy` without sources."""
    n = x.size
    c, s = np.cos(x), np.sin(x)
    pair = 0.0
    for i in range(n):
        for j in range(n):
            pair += (m[i] * m[j]) * math.exp(beta * (c[i] * c[j] + s[i] * s[j]) + log_c)
    v = 0.0
    if code != 0:
        for i in range(n):
            vi = 0.0
            for j in range(units.shape[0]):
                vi += units[j, 3] * _phi(c[i] * units[j, 0] + s[i] * units[j, 1] + units[j, 2], code)
            v += m[i] * vi
    return 0.5 / beta * pair + 0.5 * v


@njit(cache=True, error_model="numpy")
def perceptron_velocity(x: np.ndarray, units: np.ndarray, code: int) -> np.ndarray:
    """Perceptron velocity on S^1 at angles ``x`` (n,): ``(P_x e).tau``, ``e = sum_j omega_j
    sigma(a_j.x + b_j) a_j``, ``x = (cos, sin)``, ``tau = (-sin, cos)`` (docs/math.md §1); (n,).

    The operations of :func:`solvers.model.perceptron.circle_velocity`; ``code`` 0: no units.
    """
    out = np.zeros(x.size)
    if code == 0:
        return out
    for i in range(x.size):
        c, s = math.cos(x[i]), math.sin(x[i])
        e0 = e1 = 0.0
        for j in range(units.shape[0]):
            w = _sigma(c * units[j, 0] + s * units[j, 1] + units[j, 2], code) * units[j, 3]
            e0 += w * units[j, 0]
            e1 += w * units[j, 1]
        dot = e0 * c + e1 * s
        out[i] = (e0 - dot * c) * (-s) + (e1 - dot * s) * c
    return out


@njit(cache=True, error_model="numpy")
def atom_attention(points: np.ndarray, x: np.ndarray, m: np.ndarray, beta: float, log_c: float) -> np.ndarray:
    """``-sum_i m_i sin(p - x_i) e^{beta cos(p - x_i) + log_c}`` at ``points`` (P,); (P,).

    The closed form of :meth:`solvers.circle.measure.dirac.CircleMeasureField.atom_attention`, same
    operations (``d = p - x_i`` first); an atom exerts no force at its own point (``sin 0 = 0``).
    """
    out = np.empty(points.size)
    for p in range(points.size):
        acc = 0.0
        for i in range(x.size):
            d = points[p] - x[i]
            acc += (math.sin(d) * math.exp(beta * math.cos(d) + log_c)) * m[i]
        out[p] = -acc
    return out


@njit(cache=True, error_model="numpy")
def vexp(arg: np.ndarray) -> np.ndarray:
    """``exp`` of every entry of ``arg`` (1-D) in loops the compiler vectorises (libm's ``exp``
    is one call per value): ``e^x = 2^k e^r``, ``k = round(x / ln 2)``, ``|r| <= ln(2) / 2``
    (Cody-Waite reduction), ``e^r`` by its Taylor polynomial of degree 13 (remainder below
    ``1e-17``), ``2^k`` built in the exponent bits. Within 1 ulp of the correctly rounded value
    on ``[-708, 709]``; outside (underflow, overflow, inf, nan) ``math.exp`` itself.
    """
    out, scale = np.empty(arg.size), np.empty(arg.size)
    bits = scale.view(np.int64)
    outside = 0
    for i in range(arg.size):
        a = arg[i]
        outside += 0 if (a >= EXP_LO and a <= EXP_HI) else 1
        x = a if a > EXP_LO else EXP_LO
        x = x if x < EXP_HI else EXP_HI
        kf = (x * LOG2E + SHIFTER) - SHIFTER  # round(x / ln 2), exactly
        r = (x - kf * LN2_HI) - kf * LN2_LO
        p = T13
        for c in TAYLOR:  # unrolled: a tuple of constants
            p = p * r + c
        out[i] = p
        bits[i] = (np.int64(kf) + 1023) << 52  # 2^k
    for i in range(arg.size):
        out[i] *= scale[i]
    if outside:
        for i in range(arg.size):
            if not (arg[i] >= EXP_LO and arg[i] <= EXP_HI):
                out[i] = math.exp(arg[i])
    return out


@njit(cache=True, error_model="numpy")
def face_attention(cos_p: np.ndarray, sin_p: np.ndarray, x: np.ndarray, m: np.ndarray, beta: float,
                   log_c: float) -> np.ndarray:
    """:func:`atom_attention` at points given by ``cos p``, ``sin p`` (P,) (faces, centres), with
    ``cos(p - x) = cos p cos x + sin p sin x`` and ``sin(p - x) = sin p cos x - cos p sin x``
    and :func:`vexp`: no ``sin``/``cos`` per point; equal to the direct form to ``~beta eps``
    relative (the reference's own rounding of ``beta cos(p - x)``)."""
    n_p, n = cos_p.size, x.size
    arg, sn = np.empty(n * n_p), np.empty(n * n_p)
    for i in range(n):
        cx, sx = math.cos(x[i]), math.sin(x[i])
        for p in range(n_p):
            arg[i * n_p + p] = beta * (cos_p[p] * cx + sin_p[p] * sx) + log_c
            sn[i * n_p + p] = sin_p[p] * cx - cos_p[p] * sx
    k = vexp(arg)
    out = np.zeros(n_p)
    for i in range(n):
        mi = m[i]
        for p in range(n_p):
            out[p] -= (sn[i * n_p + p] * k[i * n_p + p]) * mi
    return out


@njit(cache=True, error_model="numpy")
def evaluate(coef: np.ndarray, x: np.ndarray, n_modes: int) -> np.ndarray:
    """``Re sum_{k < n_modes} w_k coef_k e^{i k x}`` (``w`` = 1 at k = 0 and N/2, else 2) at
    ``x`` (n,): the band-limited interpolant of ``spectral.CircleBasis.evaluate``; ``coef``
    (N/2 + 1,) complex, ``n_modes = N/2 + 1`` for every mode.

    Per point, ``e^{ikx}`` is rotated by ``e^{ix}`` from an exact ``cos``/``sin`` of ``k x``
    every ``ANCHOR`` modes (the reference computes each exactly: they agree to ~``ANCHOR eps``).
    """
    nyquist = coef.size - 1
    out = np.empty(x.size)
    for i in range(x.size):
        c1, s1 = math.cos(x[i]), math.sin(x[i])
        acc = c = s = 0.0
        for k in range(n_modes):
            if k % ANCHOR == 0:
                c, s = math.cos(x[i] * k), math.sin(x[i] * k)
            term = c * coef[k].real - s * coef[k].imag
            acc += term if k == 0 or k == nyquist else 2.0 * term
            c, s = c * c1 - s * s1, s * c1 + c * s1
        out[i] = acc
    return out


@njit(cache=True, error_model="numpy")
def atom_gradient(rho_hat: np.ndarray, d_center: np.ndarray, n_modes: int, x: np.ndarray, m: np.ndarray,
                  units: np.ndarray, code: int, beta: float, log_c: float) -> np.ndarray:
    """``dU/dx(x_i)`` (n,): ``(1/beta) d/dx (K*rho) + atoms' attention + perceptron``, the atom's
    own mass excluded (:meth:`~solvers.circle.measure.dirac.CircleMeasureField.atom_gradient`); the
    density's part from the modes ``k < n_modes`` (the kernel's bandwidth: ``d_center`` beyond
    is below ``1e-30`` of its largest entry)."""
    dens = evaluate(rho_hat * d_center, x, n_modes)
    pair = atom_attention(x, x, m, beta, log_c)
    perc = perceptron_velocity(x, units, code)
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = (dens[i] / beta + pair[i]) + perc[i]
    return out


@njit(cache=True, error_model="numpy")
def face_velocity(g: np.ndarray, g_scale: float, x: np.ndarray, m: np.ndarray, faces: np.ndarray,
                  consts: np.ndarray) -> np.ndarray:
    """Signed velocity of the measure at the right faces (N,): ``s ((g g_scale / beta + atoms) + w)``
    with ``g g_scale = N irfft(rho_hat d_face)`` the density's part times ``beta``
    (:meth:`~solvers.circle.measure.dirac.CircleMeasureField.face_velocity`, same operations):
    ``g = irfft(rho_hat d_face)``, ``g_scale = N``, or ``g = irfft(rfft(rho) d_face)``,
    ``g_scale = 1`` (bitwise the same when N is a power of two)."""
    beta, log_c, sign = consts[0], consts[1], consts[2]
    atoms = face_attention(faces[0], faces[1], x, m, beta, log_c)
    out = np.empty(g.size)
    for j in range(g.size):
        out[j] = sign * ((g[j] * g_scale / beta + atoms[j]) + faces[2, j])
    return out


@njit(cache=True, error_model="numpy")
def dirac_rhs(state: np.ndarray, g: np.ndarray, fft: np.ndarray, d_center: np.ndarray, n_modes: int,
              faces: np.ndarray, units: np.ndarray, code: int, consts: np.ndarray, limiter: int, dt: float,
              limit: bool, kinks: np.ndarray) -> tuple[np.ndarray, float]:
    """``(d state/dt, max_rate)`` of the flat state ``[rho (N), x (n), m (n), ids (n)]``, given
    ``fft = rfft(rho)`` and ``g = irfft(fft d_face)`` (:meth:`CompiledCircleField.spectra`).

    fv transport of ``rho`` with the measure's face velocity (outflow limited over ``dt`` when
    ``limit``), ``s dU/dx(x_i)`` for the atoms, zero for ``m`` and ``ids``; ``max_rate`` is the
    larger of the fv rate (faces that move mass: upwind density above the absolute mass floor
    ``consts[4]``) and ``max |dx/dt| / h`` (:meth:`DiracCircleDiscretization._rhs`); ``kinks``:
    the faces on perceptron corners (int64; WENO5 one-sided there, ``circle_fv_rhs``).
    """
    n_grid = g.size
    n = (state.size - n_grid) // 3
    h = consts[3]
    rho, x, m = state[:n_grid], state[n_grid : n_grid + n], state[n_grid + n : n_grid + 2 * n]
    u = face_velocity(g, 1.0, x, m, faces, consts)
    total = 0.0
    for j in range(n_grid):
        total += rho[j]
    floor = consts[4] / max(total / n_grid, 1e-300)  # circle_fv_rhs multiplies by the mean
    inv_h = 1.0 / h
    step = dt if limit else 0.0
    drho, speed = circle_fv_rhs(rho, u, limiter, step, limit, inv_h, step / h, floor, faces[5], kinks)
    rate = speed * inv_h
    k = np.zeros(state.size)
    k[:n_grid] = drho
    if n:
        rho_hat = np.zeros(fft.size, dtype=np.complex128)  # rfft / N (as spectral.CircleBasis.forward)
        for j in range(n_modes):
            rho_hat[j] = complex(fft[j].real / n_grid, fft[j].imag / n_grid)
        vx = atom_gradient(rho_hat, d_center, n_modes, x, m, units, code, consts[0], consts[1])
        for i in range(n):
            k[n_grid + i] = consts[2] * vx[i]  # dx_i/dt = s dU/dx(x_i), docs/math.md §3.3
        rate = max(rate, np.max(np.abs(k[n_grid : n_grid + n])) / h)
    return k, rate


@njit(cache=True, error_model="numpy")
def dirac_stage(state: np.ndarray, g: np.ndarray, fft: np.ndarray, d_center: np.ndarray, n_modes: int,
                faces: np.ndarray, units: np.ndarray, code: int, consts: np.ndarray, limiter: int, dt: float,
                u0: np.ndarray, c: float, alpha: float, uj: np.ndarray, with_j: bool,
                kinks: np.ndarray) -> tuple[np.ndarray, float]:
    """A Shu-Osher stage in one call: :func:`dirac_rhs` (outflow limited over ``dt``), then
    ``(u0 + c k) + alpha (uj - u0)`` (``with_j``) or ``u0 + c k``; returns ``(stage, max_rate)``."""
    k, rate = dirac_rhs(state, g, fft, d_center, n_modes, faces, units, code, consts, limiter, dt, True, kinks)
    return shu_osher_stage(u0, c, k, alpha, uj, with_j), rate


@njit(cache=True, error_model="numpy")
def min_separation(x: np.ndarray) -> float:
    """Smallest ``|x_i - x_j|`` mod 2 pi over pairs (``inf`` below two atoms), as
    :func:`solvers.circle.measure.dirac.merge` measures it."""
    best = np.inf
    for i in range(x.size):
        for j in range(x.size):
            if i != j:
                best = min(best, abs(np.mod(x[i] - x[j] + np.pi, TWO_PI) - np.pi))
    return best


@njit(cache=True, error_model="numpy")
def cell_of(x: float, faces: np.ndarray) -> int:
    """The finite volume holding angle ``x`` in [0, 2 pi]: ``rint(x / h)``, moved one cell where
    ``x`` lies beyond a face moved onto a perceptron corner (``faces[6]``: the right-face angles;
    :meth:`solvers.circle.problem.CircleProblem.cell_of` is the same rule)."""
    n_grid = faces.shape[1]
    c = int(np.rint(x / (TWO_PI / n_grid))) % n_grid
    left = c - 1 if c > 0 else n_grid - 1
    if np.mod(x - faces[6, c] + np.pi, TWO_PI) - np.pi >= 0.0:
        return c + 1 if c + 1 < n_grid else 0
    if np.mod(x - faces[6, left] + np.pi, TWO_PI) - np.pi < 0.0:
        return left
    return c


@njit(cache=True, error_model="numpy")
def cells_of(x: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """:func:`cell_of` of every angle of ``x`` (n,), int64 (n,)."""
    out = np.empty(x.size, np.int64)
    for i in range(x.size):
        out[i] = cell_of(x[i], faces)
    return out


@njit(cache=True, error_model="numpy")
def absorb(state: np.ndarray, u: np.ndarray, faces: np.ndarray) -> float:
    """:func:`solvers.circle.measure.dirac.absorb` in place on a flat state (positions in [0, 2 pi]) with
    the face velocity ``u`` (N,); returns the atoms' smallest separation (:func:`min_separation`).

    Atom i (in order) takes the density of its cell ``c`` (:func:`cell_of`) when both faces
    point into it (``u_c <= 0 <= u_{c-1}``) and ``rho_c > 0``; mass is conserved exactly up to
    the one rounding of ``m_i + rho_c h``.
    """
    n_grid = faces.shape[1]
    h = TWO_PI / n_grid
    n = (state.size - n_grid) // 3
    rho, x, m = state[:n_grid], state[n_grid : n_grid + n], state[n_grid + n : n_grid + 2 * n]
    for i in range(n):
        c = cell_of(x[i], faces)
        left = c - 1 if c > 0 else n_grid - 1
        if u[c] <= 0.0 and u[left] >= 0.0 and rho[c] > 0.0:
            m[i] += rho[c] * h
            rho[c] = 0.0
    return min_separation(x)


@njit(cache=True, error_model="numpy")
def absorb_step(state: np.ndarray, g: np.ndarray, faces: np.ndarray,
                consts: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """After an accepted step, on a copy of the flat state: positions mod 2 pi, then
    :func:`absorb` with the face velocity of that state (``g = irfft(rfft(rho) d_face)``).
    Returns ``(new state, u (N,), smallest separation)``."""
    n_grid = g.size
    n = (state.size - n_grid) // 3
    new = state.copy()
    x, m = new[n_grid : n_grid + n], new[n_grid + n : n_grid + 2 * n]
    for i in range(n):
        x[i] = np.mod(x[i], TWO_PI)
    u = face_velocity(g, 1.0, x, m, faces, consts)
    return new, u, absorb(new, u, faces)


@njit(cache=True, error_model="numpy")
def may_capture(rho: np.ndarray, cells: np.ndarray, u: np.ndarray, corner_cells: np.ndarray, h: float,
                reach: int, bound: float) -> bool:
    """:func:`solvers.circle.measure.dirac_events.may_capture` in one pass: whether a sink cell
    (``u[c - 1] >= 0 >= u[c]``) or a cell within one of ``corner_cells`` that is none of the
    atoms' ``cells`` has density mass ``rho h`` of at least ``bound`` within ``reach`` cells."""
    n = rho.size
    candidate = np.zeros(n, np.bool_)
    for c in range(n):
        candidate[c] = u[c - 1 if c > 0 else n - 1] >= 0.0 and u[c] <= 0.0
    for a in corner_cells:
        for shift in (-1, 0, 1):
            candidate[(a + shift) % n] = True
    for a in cells:
        candidate[a] = False
    for c in range(n):
        if candidate[c]:
            window = 0.0
            for shift in range(-reach, reach + 1):
                window += rho[(c + shift) % n] * h
            if window >= bound:
                return True
    return False


@njit(cache=True, error_model="numpy")
def dirac_atoms_table(pos0: np.ndarray, mass0: np.ndarray, core0: np.ndarray, lab: np.ndarray,
                      x: np.ndarray, m: np.ndarray) -> tuple:
    """:func:`solvers.circle.measure.dirac_diagnostics.with_dirac` on arrays: the basin atoms
    ``pos0, mass0, core0`` (k,), each basin that holds Dirac atoms (``lab`` (n,): each Dirac
    atom's basin, -1: none) moved to their mass-weighted mean direction, and the Dirac atoms in no
    basin appended. Returns ``(mass, position, core, mass of the appended atoms, order, moved)``,
    the rows sorted by position (``order``: the sort; ``moved``: whether it changed the order)."""
    k = pos0.size
    re, im, held = np.zeros(k), np.zeros(k), np.zeros(k, np.bool_)
    alone, alone_mass = 0, 0.0
    for i in range(lab.size):
        b = lab[i]
        if b >= 0:
            re[b] += m[i] * np.cos(x[i])
            im[b] += m[i] * np.sin(x[i])
            held[b] = True
        else:
            alone += 1
            alone_mass += m[i]
    pos, mass, core = np.empty(k + alone), np.empty(k + alone), np.empty(k + alone)
    for b in range(k):
        pos[b] = np.mod(np.arctan2(im[b], re[b]), TWO_PI) if held[b] else pos0[b]
        mass[b], core[b] = mass0[b], core0[b]
    j = k
    for i in range(lab.size):
        if lab[i] < 0:
            pos[j], mass[j], core[j] = x[i], m[i], m[i]
            j += 1
    order = np.argsort(pos)
    moved = False
    for i in range(order.size):
        moved = moved or order[i] != i
    return mass[order], pos[order], core[order], alone_mass, order, moved
