"""Particle companion of the mean-field PDE: n weighted particles on ``S^{d-1}``, any d >= 2.

The empirical measure ``mu = sum_j w_j delta_{x_j}`` (``sum_j w_j = M``) solves the continuity
equation (paper eq. 2.6, docs/math.md §1) exactly when every particle follows the velocity field:

    dx_i/dt = s g(x_i),
    g(x) = c_K sum_j w_j exp(beta x.x_j) P_x x_j + sum_k omega_k sigma(a_k.x + b_k) P_x a_k,

with ``P_x = I - x x^T``, ``c_K = 1`` (kernel ``exp``) or ``exp(-beta)`` (``exp_shifted``). This
is the paper's particle method. Softmax attention (eq. 2.9, docs/math.md §1: ``grad f / (beta f)``,
``f = K*mu``) replaces the attention term by the Gibbs average
``sum_j w_j e^{beta x.x_j} P_x x_j / sum_j w_j e^{beta x.x_j}`` (the factor ``c_K`` cancels).
Energy (eq. 2.7): ``E = (1/(2 beta)) sum_ij w_i w_j K(x_i, x_j) + (1/2) sum_i w_i v(x_i)``;
the particle sphere gradient of E is ``w_i g(x_i)``, so ``dE/dt = s sum_i w_i |g(x_i)|^2``.

Time stepping: classical RK4 applied to the ambient ODE ``y_i' = V_i(y_1/|y_1|, ..., y_n/|y_n|)``
(the velocity evaluated at the normalised points; its flow keeps every ``|y_i|`` since
``V_i`` is orthogonal to ``y_i``, and it equals the sphere flow on the sphere), followed by the
retraction ``x <- x / |x|`` after each step. Fourth order for smooth activations; a kink
(ReLU) crossed inside a step costs a local O(dt^2) error for that particle.

On S^2 the attention sums use the kernel series (:mod:`spectral.kernel_series`: ``O(n C(K+3, 3))``,
exact to round-off; 1140 terms at beta = 1) when it has fewer terms than there are particles.
Otherwise pair sums cost O(n^2 d) per evaluation, chunked by rows (``chunk_bytes`` per block, so memory
stays O(n d) plus one block; optionally a thread pool over blocks).

Initial particles (:func:`initial_particles`) come from the PDE's initial grid density.
"""

from __future__ import annotations

import time as wallclock
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from solvers.model.kernel import kernel_log_shift, max_kernel_second_derivative
from solvers.model.activations import get_activation
from solvers.model.params import AtomParams, ModelParams, RunConfig
from solvers.model.perceptron import half_gradient, potential
from solvers.timestepping.manifolds import manifold_of
from spectral.kernel_series import series_field_numba, series_terms

TWO_PI = 2.0 * np.pi
PLACEMENTS = ("quantiles", "sample")
ATTENTION_METHODS = ("auto", "series", "direct")
GOLDEN = 0.5 * (np.sqrt(5.0) - 1.0)


@dataclass(frozen=True)
class ParticleSystem:
    """The velocity field, energy and RK4 step of the particle model (docs/math.md §1).

    Parameters
    ----------
    model : ModelParams
        ``perceptron.a`` has shape (n_units, d) with the particles' dimension d.
    chunk_bytes : int
        Memory for one block of pair terms (rows x n float64; at least one row). Blocks that
        stay in cache are fastest: 256 KiB took 0.3 s per velocity at n = 10^4, d = 2, against
        1-5 s for 4-64 MiB blocks (shared 2-core machine; timings varied by 2-3x with load).
    workers : int
        Threads for the row blocks (1: no pool; more did not help on 2 cores).
    attention_method : {"auto", "series", "direct"}
        The attention sums on S^2: the kernel series (:meth:`series`), the pair sums, or
        (``"auto"``) the series when it has fewer terms than there are particles.
    """

    model: ModelParams
    chunk_bytes: int = 1 << 18
    workers: int = 1
    attention_method: str = "auto"

    def __post_init__(self) -> None:
        if self.attention_method not in ATTENTION_METHODS:
            raise ValueError(f"attention_method: must be one of {ATTENTION_METHODS} "
                             f"(got {self.attention_method!r})")

    def _blocks(self, n: int) -> list[slice]:
        rows = max(1, self.chunk_bytes // (8 * max(n, 1)))
        return [slice(i, min(i + rows, n)) for i in range(0, n, rows)]

    def _map(self, fn, n: int) -> list:
        blocks = self._blocks(n)
        if self.workers <= 1 or len(blocks) == 1:
            return [fn(b) for b in blocks]
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(fn, blocks))

    def _log_kernel(self, gram: np.ndarray) -> np.ndarray:
        """``log K`` in place on a Gram block: ``beta x.y + log c_K`` (softmax: shift ``-beta``)."""
        beta = self.model.beta
        shift = -beta if self.model.attention == "softmax" else kernel_log_shift(self.model)
        gram *= beta
        gram += shift
        return gram

    def attention(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Attention velocity at every particle (tangent vectors), shape (n, d).

        Unnormalised: ``c_K sum_j w_j e^{beta x_i.x_j} P_{x_i} x_j`` (= grad (1/beta) K*mu);
        softmax: the same sum divided by ``sum_j w_j e^{beta x_i.x_j}`` (docs/math.md §1, eq. 2.9).

        Parameters
        ----------
        x : ndarray, shape (n, d), unit rows
        w : ndarray, shape (n,), weights
        """
        softmax = self.model.attention == "softmax"
        if self.series(x.shape):
            beta = self.model.beta
            f, euclid = series_field_numba(x, x, w, beta, -beta if softmax else kernel_log_shift(self.model))
            if softmax:
                euclid = euclid / f[:, None]
            return euclid - np.sum(euclid * x, axis=1, keepdims=True) * x
        wx = w[:, None] * x

        def block(rows: slice) -> np.ndarray:
            k = np.exp(self._log_kernel(x[rows] @ x.T))  # (r, n)
            out = k @ wx
            return out / (k @ w)[:, None] if softmax else out

        euclid = np.concatenate(self._map(block, x.shape[0]))
        return euclid - np.sum(euclid * x, axis=1, keepdims=True) * x

    def series(self, shape: tuple[int, ...]) -> bool:
        """Whether :meth:`attention` sums by the kernel series (:mod:`spectral.kernel_series`,
        exact to round-off, ``O(n terms)``) instead of pairs (``O(n^2)``): on S^2 (d = 3), when
        ``attention_method`` allows it and (``"auto"``) the series has fewer terms than n."""
        if len(shape) != 2 or shape[1] != 3 or self.attention_method == "direct":
            return False
        if self.attention_method == "series":
            return True
        return series_terms(self.model.beta) < shape[0]

    def field(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``g(x_i)`` = attention + perceptron ``grad v / 2`` (docs/math.md §1), shape (n, d)."""
        return self.attention(x, w) + half_gradient(self.model.perceptron, x)

    def velocity(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``dx_i/dt = s g(x_i)`` (eq. 2.6), shape (n, d)."""
        return self.model.sign * self.field(x, w)

    def energy(self, x: np.ndarray, w: np.ndarray) -> float:
        """``E = (1/(2 beta)) sum_ij w_i w_j K(x_i, x_j) + (1/2) sum_i w_i v(x_i)`` (eq. 2.7).

        ``K`` is the configured kernel (``exp`` or ``exp_shifted``), also for softmax runs
        (where E is a Lyapunov function of the pure attention only, docs/math.md §1).
        """
        beta, shift = self.model.beta, kernel_log_shift(self.model)
        half_v = 0.5 * float(w @ potential(self.model.perceptron, x))
        if self.series(x.shape):
            return float(w @ series_field_numba(x, x, w, beta, shift)[0]) / (2.0 * beta) + half_v

        def block(rows: slice) -> float:
            gram = x[rows] @ x.T
            return float(w[rows] @ np.exp(beta * gram + shift) @ w)

        pairs = sum(self._map(block, x.shape[0]))
        return pairs / (2.0 * beta) + half_v

    def rate_bound(self, mass: float) -> float:
        """A bound ``L`` of the velocity's Lipschitz constant, for the step ``dt = cfl / L``.

        Attention, unnormalised: ``2 M max|K''| / beta`` (self term plus coupling, cf. docs/math.md §6);
        softmax: ``2 (1 + beta)`` (a Gibbs average of ``P_x y``; its weights vary at rate beta).
        Perceptron: ``sum_k |omega_k| (Lip |a_k|^2 + 2 (sigma0 + Lip (|a_k| + |b_k|)) |a_k|)``.
        """
        m = self.model
        if m.attention == "softmax":
            att = 2.0 * (1.0 + m.beta)
        else:
            att = 2.0 * abs(mass) * max_kernel_second_derivative(m.beta, kernel_log_shift(m)) / m.beta
        p = m.perceptron
        if p.n_units == 0:
            return att
        act = get_activation(p.activation)
        na = np.linalg.norm(p.a, axis=1)
        bound = act.lipschitz * na**2 + 2.0 * (act.sigma0 + act.lipschitz * (na + np.abs(p.b))) * na
        return att + float(np.abs(p.omega) @ bound)

    def step(self, x: np.ndarray, w: np.ndarray, dt: float) -> np.ndarray:
        """One RK4 step of ``y' = V(y/|y|)`` from unit ``x`` (n, d), then ``x <- x/|x|``."""
        def f(y: np.ndarray) -> np.ndarray:
            return self.velocity(normalise(y), w)

        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        return normalise(x + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4))


def normalise(y: np.ndarray) -> np.ndarray:
    """The retraction ``y / |y|`` row by row, shape (n, d)."""
    return y / np.linalg.norm(y, axis=1, keepdims=True)


@dataclass(frozen=True)
class ParticleRun:
    """Particle snapshots.

    Attributes
    ----------
    times : ndarray, shape (T,)
    x : ndarray, shape (T, n, d)
        Positions at ``times``.
    weights : ndarray, shape (n,)
    energy : ndarray, shape (T,)
        ``E`` at ``times`` (NaN when not computed).
    n_steps : int
    dt : float
        The nominal step (each interval between snapshots uses equal steps <= dt).
    wall_time : float
        Seconds.
    """

    times: np.ndarray
    x: np.ndarray
    weights: np.ndarray
    energy: np.ndarray
    n_steps: int
    dt: float
    wall_time: float


def integrate(system: ParticleSystem, x0: np.ndarray, w: np.ndarray, times, *,
              dt: float | None = None, cfl: float = 0.2, energy: bool = True) -> ParticleRun:
    """Integrate the particles from t = 0 and record them at ``times``.

    Parameters
    ----------
    x0 : ndarray, shape (n, d)
        Initial positions (normalised here).
    w : ndarray, shape (n,)
        Weights; their sum is the mass M (conserved exactly: weights never change).
    times : sequence of float, non-decreasing, >= 0
    dt : float, optional
        Fixed nominal step; default ``cfl / system.rate_bound(M)``.
    energy : bool
        Record ``E`` at each snapshot (one extra pair sum each).

    Returns
    -------
    ParticleRun
    """
    start = wallclock.perf_counter()
    times = np.asarray(times, dtype=float).ravel()
    if times.size and (times[0] < 0 or np.any(np.diff(times) < 0)):
        raise ValueError("times: must be non-negative and non-decreasing")
    w = np.asarray(w, dtype=float)
    h = float(dt) if dt else cfl / max(system.rate_bound(float(w.sum())), 1e-300)
    x, t, steps = normalise(np.asarray(x0, dtype=float)), 0.0, 0
    out, energies = [], []
    for target in times:
        m = max(1, int(np.ceil((target - t) / h - 1e-9))) if target > t else 0
        for _ in range(m):
            x = system.step(x, w, (target - t) / m)
        steps, t = steps + m, float(target)
        out.append(x.copy())
        energies.append(system.energy(x, w) if energy else np.nan)
    xs = np.stack(out) if out else np.zeros((0,) + x.shape)
    return ParticleRun(times, xs, w, np.array(energies), steps, h, wallclock.perf_counter() - start)


def energy_violation(energies: np.ndarray, sign: float) -> float:
    """Largest move of ``E`` against its expected direction (``s dE/dt >= 0``); 0 if monotone."""
    steps = sign * np.diff(np.asarray(energies, dtype=float))
    return float(max(0.0, -steps.min())) if steps.size else 0.0


# --------------------------------------------------------------------------- initial particles


def circle_quantile_function(rho: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Inverse CDF of the piecewise-constant S^1 density (cell averages ``rho`` (N,)).

    ``F(theta) = int_0^theta rho``; returns the smallest angle with ``F = q`` for ``q`` in
    ``(0, M)`` (any shape), inside a cell of positive mass. Cells as in :mod:`solvers.circle.initial`.
    """
    n = rho.size
    h = TWO_PI / n
    m = rho * h
    xp = np.concatenate([[0.0], (np.arange(n) + 0.5) * h, [TWO_PI]])
    fp = np.concatenate([[0.0], np.cumsum(m) - 0.5 * m[0], [m.sum()]])
    k = np.clip(np.searchsorted(fp, q, side="left"), 1, xp.size - 1)
    frac = (q - fp[k - 1]) / np.maximum(fp[k] - fp[k - 1], 1e-300)
    return np.mod(xp[k - 1] + np.clip(frac, 0.0, 1.0) * (xp[k] - xp[k - 1]), TWO_PI)


def circle_particles(rho: np.ndarray, n: int, placement: str = "quantiles",
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n equal-weight particles from a grid density on S^1.

    ``quantiles``: at the quantiles ``(i + 1/2) M / n`` of the CDF from angle 0 (deterministic;
    W1 to the density ~ ``pi M / (2 n)``). ``sample``: i.i.d. draws (``numpy`` generator
    seeded with ``seed``; W1 ~ ``n^{-1/2}``).

    Returns
    -------
    x : ndarray, shape (n, 2)
    w : ndarray, shape (n,)
        ``M / n`` each.
    """
    mass = float(np.sum(rho)) * TWO_PI / rho.size
    if placement == "quantiles":
        q = (np.arange(n) + 0.5) * mass / n
    elif placement == "sample":
        q = np.random.default_rng(seed).uniform(0.0, mass, n)
    else:
        raise ValueError(f"placement: must be one of {PLACEMENTS} (got {placement!r})")
    theta = circle_quantile_function(np.asarray(rho, dtype=float), q)
    return np.stack([np.cos(theta), np.sin(theta)], axis=1), np.full(n, mass / n)


def sphere_particles(rho: np.ndarray, grid, n: int, placement: str = "quantiles",
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n equal-weight particles from a grid density on S^2 (cells of ``SphereGrid``).

    The cells are ordered band by band (colatitude), then by longitude; particle i goes to the
    cell holding the cumulative mass ``q_i``: ``(i + 1/2) M / n`` (``quantiles``) or uniform draws
    (``sample``, seeded). Inside the cell (uniform in area: ``mu = cos theta`` and ``phi``
    uniform) ``mu`` is the fraction of the cell's mass below ``q_i``; ``phi`` is a golden-ratio
    (Kronecker) sequence across the cell (``quantiles``) or uniform (``sample``). ``sample`` is
    thus exact sampling from the piecewise-constant density (no rejection needed).

    Returns
    -------
    x : ndarray, shape (n, 3)
    w : ndarray, shape (n,)
    """
    rng = np.random.default_rng(seed)
    cell = (np.asarray(rho, dtype=float) * grid.area).ravel()
    cum = np.concatenate([[0.0], np.cumsum(cell)])
    mass = float(cum[-1])
    if placement not in PLACEMENTS:
        raise ValueError(f"placement: must be one of {PLACEMENTS} (got {placement!r})")
    quant = placement == "quantiles"
    q = (np.arange(n) + 0.5) * mass / n if quant else rng.uniform(0.0, mass, n)
    c = np.clip(np.searchsorted(cum, q, side="left") - 1, 0, cell.size - 1)
    r = np.clip((q - cum[c]) / np.maximum(cell[c], 1e-300), 0.0, 1.0)
    j, k = np.unravel_index(c, grid.shape)
    top, bottom = grid.mu_faces[j], grid.mu_faces[j + 1]
    mu = top - r * (top - bottom)
    u = np.mod(np.arange(n) * GOLDEN, 1.0) if quant else rng.uniform(0.0, 1.0, n)
    phi = grid.phi[k] + (u - 0.5) * grid.dphi
    s = np.sqrt(np.clip(1.0 - mu * mu, 0.0, None))
    return np.stack([s * np.cos(phi), s * np.sin(phi), mu], axis=1), np.full(n, mass / n)


def initial_particles(config: RunConfig, n: int, placement: str = "quantiles",
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n particles from the PDE's initial density (:func:`solvers.io.state.initial_density`).

    Returns ``x`` (n, d) with d = 2 (S1) or 3 (S2) and weights ``w`` (n,) summing to
    ``initial.mass``.
    """
    from solvers.io.state import initial_density

    rho = initial_density(config)
    if manifold_of(config).ordered:  # quantiles along the circle
        return circle_particles(rho, n, placement, seed)
    from solvers.sphere.cells import SphereGrid

    return sphere_particles(rho, SphereGrid(config.domain.resolution), n, placement, seed)


def run_particles(config: RunConfig, n: int, times=None, *, placement: str = "quantiles",
                  seed: int = 0, dt: float | None = None, cfl: float = 0.2,
                  energy: bool = True) -> ParticleRun:
    """The particle model of ``config`` (same model parameters) from its initial density.

    ``times`` default: ``(0, time.t_end)``. See :func:`integrate` and :func:`initial_particles`.
    """
    x0, w = initial_particles(config, n, placement, seed)
    times = (0.0, config.time.t_end) if times is None else times
    return integrate(ParticleSystem(config.model), x0, w, times, dt=dt, cfl=cfl, energy=energy)


def circle_angles(x: np.ndarray) -> np.ndarray:
    """Angles in ``[0, 2 pi)`` of points (..., 2) on S^1."""
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), TWO_PI)


# --------------------------------------------------------------------------- grouping


def group_particles(theta: np.ndarray, w: np.ndarray, beta: float, atoms: AtomParams,
                    cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Atoms of a weighted particle measure on S^1 by the PDE's rule (masses, positions).

    The particles are treated as weighted cells: their weights are summed into the ``cells``
    cells of the PDE grid (centres ``2 pi i / N``, each cell ``[theta_i - h/2, theta_i + h/2)``)
    and those cell masses go through the PDE's detector
    (:func:`solvers.circle.atoms.detect_atoms`: density threshold ``contrast * M / 2 pi``,
    single linkage within the grouping radius, ``min_mass``). Positions are the circular
    centres of mass of the grouped cells. This is the one place to change when the detector
    does.

    Parameters
    ----------
    theta : ndarray, shape (n,)
        Particle angles.
    w : ndarray, shape (n,)
        Weights (sum: the mass M).
    beta : float
    atoms : AtomParams
    cells : int
        N of the PDE grid the particles are compared with.

    Returns
    -------
    masses, positions : ndarray, shape (n_atoms,)
        Sorted by mass, largest first.
    """
    from solvers.circle.atoms import detect_atoms

    h = TWO_PI / cells
    idx = np.floor(np.mod(np.asarray(theta, dtype=float), TWO_PI) / h + 0.5).astype(int) % cells
    cell_mass = np.bincount(idx, weights=np.asarray(w, dtype=float), minlength=cells)
    found = detect_atoms(h * np.arange(cells), cell_mass, beta, atoms)
    order = np.argsort(-found.mass, kind="stable")
    return found.mass[order], found.position[order]
