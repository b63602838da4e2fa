"""``meanfield compare-particles``: the PDE density against the particle model, as n grows.

The PDE (:func:`solvers.timestepping.loop.simulate`) runs once; the particle model
(:mod:`solvers.studies.particles`) runs for every n from particles placed on the PDE's initial density.
At each time we report

- S^1: the exact Wasserstein-1 distance (:mod:`solvers.studies.wasserstein`) between the PDE's
  piecewise-constant density and the particle measure;
- S^1 and S^2: the kernel distance ``sqrt(<K(mu - nu), mu - nu>)``, from the moments of both
  measures (paper Lemma 5.1, docs/math.md §2): S^1 ``sum_k I_k(beta) |mu_k - nu_k|^2`` with
  ``mu_k = int e^{-ik theta} dmu``; S^2 ``sum_lm lambda_l |mu_lm - nu_lm|^2`` with
  ``mu_lm = int conj(Y_lm) dmu``; both times ``exp(-beta)`` for ``exp_shifted``. Degrees stop at
  the kernel bandwidth j* (S^1) or lmax (S^2): the dropped terms are below 1e-16 of lambda_0.

and the observed rate: the least-squares slope of ``log distance`` against ``log n``
(quantile placement: O(1/n) initially, ``pi M / (2 n)`` in W1; sampling: O(n^{-1/2})).

The PDE runs as ``meanfield run`` does (:func:`pde_states`: the same config, pipeline and
snapshot times), so that its atoms at a time are the run's.

Atoms (S^1): the PDE's from its snapshot diagnostics, the particles' grouped by the same rule
(:func:`solvers.studies.particles.group_particles`: particles as weighted cells of the PDE grid
through the PDE's detector); counts, masses (largest first) and the largest mass difference,
atoms matched by position (:func:`solvers.studies.converge.match_atoms`, unmatched atoms count in
full), with its rate in n. On S^2 the particles are not grouped into atoms: the report says so and
lists the PDE's atoms.

Default times: :data:`DEFAULT_TIMES` = 50, 100, 200 (those up to ``time.t_end``, else
``t_end``): after concentration, where the dynamics has acted. At early times (t <= 2) W1 only
measures the initial placement (``pi M / (2 n)``, slope -1.00 for quantiles).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from solvers.core.measure import dirac_of
from solvers.core.snapshot import RunState
from solvers.model.config import ConfigError
from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.studies.particles import (
    ParticleRun,
    circle_angles,
    group_particles,
    run_particles,
)
from solvers.timestepping.manifolds import manifold_of

TWO_PI = 2.0 * np.pi
DEFAULT_TIMES = (50.0, 100.0, 200.0)


# --------------------------------------------------------------------------- PDE


@dataclasses.dataclass
class PdeStates:
    """PDE states at ``times`` (S^1: cell averages (N,); S^2: grid values) and the cost;
    ``dirac``: a measure-valued run's Dirac atoms ``(masses, positions)`` at each time (None
    for a grid run), part of the PDE's measure in every distance."""

    times: list[float]
    rho: list[np.ndarray]
    wall_time: float = 0.0
    steps: int = 0
    atoms: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=list)
    dirac: list[tuple[np.ndarray, np.ndarray] | None] = dataclasses.field(default_factory=list)
    note: str = ""  # why the PDE's atoms may differ from `meanfield run`'s ("": they do not)


class PdeRunner:
    """Advances one PDE run piecewise (the resume path of :func:`simulate`)."""

    def __init__(self, config: RunConfig) -> None:
        from solvers.io.state import initial_state

        time = dataclasses.replace(config.time, stop_when_stationary=False)
        out = dataclasses.replace(config.output, progress=False)
        self.config = dataclasses.replace(config, time=time, output=out)
        self.rho, self.atoms0 = initial_state(config)  # atoms0: a measure-valued run's Dirac atoms
        self.t, self.steps, self.dt = 0.0, 0, None
        self.restart: RunState | None = None  # the step state behind an interpolated self.rho
        self.wall, self.n_atoms = 0.0, 0
        self.atoms: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0))

    def advance(self, t1: float) -> np.ndarray:
        """Advance to ``t1 >= t``; return a copy of the state (:func:`cell_averages` on S^1; a
        measure-valued run: its density, the atoms are :attr:`dirac`)."""
        from solvers.timestepping.loop import simulate

        if t1 > self.t:
            cfg = dataclasses.replace(self.config, time=dataclasses.replace(
                self.config.time, t_end=t1), output=dataclasses.replace(
                self.config.output, snapshot_interval=t1 - self.t))
            go = self.restart or RunState(self.t, self.steps, self.dt, self.rho, atoms=self.atoms0)
            fresh = self.restart is None and self.steps == 0
            res = simulate(cfg, go.rho, t0=go.t, step0=go.step, dt0=go.dt,
                           after=None if fresh else self.t, atoms0=go.atoms)
            if res.reason != "t_end":
                raise ConfigError("time.max_steps", f"the PDE stopped ({res.reason}) at t = "
                                  f"{res.final.t:.6g} before t = {t1:g}; raise time.max_steps")
            self.rho, self.t, self.steps = res.final.rho, res.final.t, res.n_steps
            self.dt, self.wall = res.final.dt, self.wall + res.wall_time
            self.restart = res.final.restart
            diag = res.final.diagnostics
            self.atoms0 = dirac_of(diag) if plan_method(self.config).representation == "dirac" else None
            self.n_atoms = int(diag.n_atoms)
            order = np.argsort(-np.asarray(diag.atom_mass), kind="stable")
            self.atoms = (np.asarray(diag.atom_mass)[order], np.asarray(diag.atom_position)[order])
        fresh = self.steps == 0  # initial cell averages, not yet the scheme's own state
        return self.rho.copy() if fresh else cell_averages(self.config, self.rho)

    @property
    def dirac(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(masses, positions)`` of the current Dirac atoms (copies), None for a grid run."""
        if self.atoms0 is None:
            return None
        return self.atoms0.mass.copy(), self.atoms0.position.copy()


def default_times(config: RunConfig) -> list[float]:
    """:data:`DEFAULT_TIMES` up to ``time.t_end`` (``[t_end]`` if none)."""
    return [t for t in DEFAULT_TIMES if t <= config.time.t_end] or [config.time.t_end]


def on_snapshot_grid(config: RunConfig, times: list[float]) -> bool:
    """Whether every time but the last (the run's ``t_end``) is a multiple of
    ``output.snapshot_interval``: then one run of the config to the last time makes snapshots
    at all of them, taking ``meanfield run``'s own steps."""
    interval = config.output.snapshot_interval
    return all(abs(t / interval - round(t / interval)) <= 1e-9 * max(1.0, t / interval)
               for t in times[:-1])


def pde_states(config: RunConfig, times: list[float] | None = None) -> PdeStates:
    """PDE states and atoms at ``times`` (sorted; default :func:`default_times`).

    The PDE is ``meanfield run``'s pipeline: one :func:`~solvers.timestepping.loop.simulate`
    of the config (its ``output.snapshot_interval``, the stationary stop off) to the last time,
    its snapshots at ``times`` kept, so that its atoms are the run's at those times. Where a
    time is not a snapshot time of the config (:func:`on_snapshot_grid`), the PDE is advanced
    from time to time instead (:class:`PdeRunner`: the steps land on the requested times, and
    the atoms differ from the run's by the time error); :attr:`PdeStates.note` says so.
    """
    times = sorted(times) if times else default_times(config)
    if on_snapshot_grid(config, times):
        return _one_run(config, times)
    runner = PdeRunner(config)
    rho, atoms, dirac = [], [], []
    for t in times:
        rho.append(runner.advance(t))
        atoms.append(runner.atoms)
        dirac.append(runner.dirac)
    note = (f"the times are not all multiples of output.snapshot_interval = "
            f"{config.output.snapshot_interval:g}: the PDE was advanced from time to time, its steps "
            "landing on them, so its atoms differ from `meanfield run`'s by the time error")
    return PdeStates(list(times), rho, runner.wall, runner.steps, atoms, dirac, note)


def _one_run(config: RunConfig, times: list[float]) -> PdeStates:
    """:func:`pde_states` by one run of the config (its snapshots at ``times``)."""
    from solvers.io.state import initial_state
    from solvers.timestepping.loop import simulate

    cfg = dataclasses.replace(
        config, time=dataclasses.replace(config.time, t_end=times[-1], stop_when_stationary=False),
        output=dataclasses.replace(config.output, progress=False))
    rho0, atoms0 = initial_state(config)
    measure = plan_method(cfg).representation == "dirac"
    kept: dict[float, tuple] = {}

    def keep(snap: Any) -> None:
        for t in times:
            if t not in kept and abs(float(snap.t) - t) <= 1e-9 * max(1.0, t):
                diag = snap.diagnostics
                order = np.argsort(-np.asarray(diag.atom_mass), kind="stable")
                d = dirac_of(diag) if measure else None
                kept[t] = (rho0.copy() if t == 0.0 else cell_averages(cfg, snap.rho),
                           (np.asarray(diag.atom_mass)[order], np.asarray(diag.atom_position)[order]),
                           None if d is None else (d.mass.copy(), d.position.copy()))

    res = simulate(cfg, rho0, atoms0=atoms0, trackers=[keep])
    missing = [t for t in times if t not in kept]
    if res.reason != "t_end" or missing:
        raise ConfigError("time.max_steps", f"the PDE stopped ({res.reason}) at t = "
                          f"{res.final.t:.6g} before t = {times[-1]:g}; raise time.max_steps")
    rows = [kept[t] for t in times]
    return PdeStates(list(times), [r[0] for r in rows], res.wall_time, res.n_steps,
                     [r[1] for r in rows], [r[2] for r in rows])


def cell_averages(config: RunConfig, rho: np.ndarray) -> np.ndarray:
    """A scheme state as non-negative cell averages on S^1 (spectral: point values -> averages).

    S^2 states and fv states are returned as they are (a copy).
    """
    if config.time.scheme != "spectral" or not manifold_of(config).ordered:
        return rho.copy()
    n = rho.size
    avg = np.fft.irfft(np.fft.rfft(rho) * np.sinc(np.arange(n // 2 + 1) / n), n=n)
    clipped = np.maximum(avg, 0.0)  # spectral overshoots: W1 needs a non-negative density
    return clipped * (avg.sum() / clipped.sum())


# --------------------------------------------------------------------------- distances


def log_kernel_factor(config: RunConfig, degrees: np.ndarray, dim: int) -> np.ndarray:
    """``log`` of the per-degree weights of ``<K nu, nu>`` (S^1: ``I_k``; S^2: ``lambda_l``)."""
    from spectral import kernel_eigenvalues

    shift = -config.model.beta if config.model.kernel == "exp_shifted" else 0.0
    log_lam = kernel_eigenvalues(config.model.beta, degrees, dim, log=True)
    return log_lam + shift - (np.log(TWO_PI) if dim == 2 else 0.0)


def circle_kernel_distance(config: RunConfig, rho: np.ndarray, theta: np.ndarray,
                           w: np.ndarray, dirac: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """``sqrt(<K(mu - nu), mu - nu>)``: grid density ``rho`` (N,) against atoms ``(theta, w)`` (n,).

    ``K = sum_k I_k(beta) e^{ik(x - y)}``, so the form is ``sum_k I_k |mu_k - nu_k|^2``
    (``k`` from -j* to j*; ``mu_k`` of the piecewise-constant density: cell mass times
    ``e^{-ik theta_i} sinc(k / N)``, plus ``m_j e^{-ik x_j}`` of the Dirac atoms ``dirac``).
    """
    from spectral import kernel_bandwidth

    n = rho.size
    k = np.arange(kernel_bandwidth(config.model.beta, 2) + 1)
    cells = TWO_PI * np.arange(n) / n
    mu = np.exp(-1j * np.outer(k, cells)) @ (rho * TWO_PI / n) * np.sinc(k / n)
    if dirac is not None:
        mu = mu + np.exp(-1j * np.outer(k, np.asarray(dirac[1], float))) @ np.asarray(dirac[0], float)
    nu = np.exp(-1j * np.outer(k, theta)) @ w
    mult = np.where(k == 0, 1.0, 2.0) * np.exp(log_kernel_factor(config, k, 2))
    return float(np.sqrt(max(mult @ np.abs(mu - nu) ** 2, 0.0)))


def sphere_kernel_distance(config: RunConfig, rho: np.ndarray, x: np.ndarray,
                           w: np.ndarray, chunk: int = 2048,
                           dirac: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """``sqrt(sum_lm lambda_l |mu_lm - nu_lm|^2)`` on S^2 (``m < 0`` by symmetry: factor 2).

    ``mu_lm``: Gauss analysis of the grid state (exact moments of the cell masses placed at
    the cell centres, :mod:`solvers.sphere.cells`), plus ``sum_j m_j conj(Y_lm(x_j))`` of the
    Dirac atoms ``dirac``; ``nu_lm = sum_i w_i conj(Y_lm(x_i))``.
    """
    from solvers.studies.distances import point_moments
    from spectral.sphere import SphereBasis

    basis = SphereBasis(config.domain.resolution)
    mu = basis.forward(rho)
    if dirac is not None and len(dirac[0]):
        mu = mu + point_moments(basis, np.asarray(dirac[1], float).reshape(-1, 3),
                                np.asarray(dirac[0], float), chunk)
    nu = point_moments(basis, x, w, chunk)
    lam = np.exp(log_kernel_factor(config, np.arange(basis.lmax + 1), 3))
    mult = np.where(basis.orders == 0, 1.0, 2.0) * lam[basis.degrees]
    return float(np.sqrt(max(mult @ np.abs(mu - nu) ** 2, 0.0)))


def distances(config: RunConfig, rho: np.ndarray, x: np.ndarray, w: np.ndarray,
              dirac: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, float]:
    """``(W1, kernel distance)`` between a PDE state and particles ``x`` (n, d), ``w`` (n,).

    ``rho``: S^1 cell averages (N,) (see :func:`cell_averages`) or the S^2 grid state;
    ``dirac``: the PDE's Dirac atoms ``(masses, positions)`` (measure-valued runs), exact
    point masses in both distances. W1 is NaN on S^2.
    """
    if not manifold_of(config).ordered:  # W1 by distribution functions: S^1 only
        return float("nan"), sphere_kernel_distance(config, rho, x, w, dirac=dirac)
    from solvers.studies.wasserstein import CircleMeasure, particles, w1

    theta = circle_angles(x)
    dm, dx = (np.zeros(0), np.zeros(0)) if dirac is None else dirac
    mass = float(np.sum(rho)) * TWO_PI / rho.size + float(np.sum(dm))
    nu = particles(theta, w * (mass / w.sum()))  # identical masses up to the PDE's round-off
    mu = CircleMeasure(rho, np.mod(np.asarray(dx, float), TWO_PI), np.asarray(dm, float))
    return w1(mu, nu), circle_kernel_distance(config, rho, theta, w, dirac=dirac)


def fit_rate(sizes: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of ``log value`` against ``log n`` (NaN with < 2 positive values)."""
    ok = np.isfinite(values) & (values > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(sizes[ok]), np.log(values[ok]), 1)[0])


# --------------------------------------------------------------------------- comparison


def compare(config: RunConfig, sizes: list[int], times: list[float] | None = None, *,
            placement: str = "quantiles", seed: int = 0, dt: float | None = None,
            cfl: float = 0.2, log=None) -> Any:
    """Run the PDE once and the particles for every n; return the report as an xarray Dataset.

    Returns
    -------
    xarray.Dataset
        Dims ``(n, time)``: ``w1``, ``kernel_distance``, ``particle_energy``,
        ``particle_n_atoms``, ``atom_mass_error``; ``(n, time, atom)``: ``particle_atom_mass``;
        ``(time,)``: ``pde_n_atoms``, ``w1_rate``, ``kernel_rate``, ``atom_mass_rate``;
        ``(time, atom)``: ``pde_atom_mass``; ``(n,)``: ``wall_time``, ``n_steps``, ``dt``.
        Atom masses largest first, NaN padded (S^2: no atoms, NaN). Attributes: the PDE's
        wall time, steps and scheme, the placement, the config text.
    """
    pde = pde_states(config, times)
    if log:
        log(f"PDE ({config.time.scheme}, resolution {config.domain.resolution}) to "
            f"t = {pde.times[-1]:g}: {pde.wall_time:.2f} s, {pde.steps} steps")
    rows = []
    for n in sizes:
        run = run_particles(config, n, pde.times, placement=placement, seed=seed, dt=dt, cfl=cfl)
        dist = np.array([distances(config, rho, run.x[j], run.weights, pde.dirac[j])
                         for j, rho in enumerate(pde.rho)])  # (time, 2)
        rows.append((dist, run, [particle_atoms(config, run.x[j], run.weights)
                                 for j in range(len(pde.times))]))
        if log:
            log(f"particles n = {n}: {run.wall_time:.2f} s, {run.n_steps} steps")
    ds = report_dataset(sizes, pde.times, rows, pde.atoms, atom_radius(config))
    ds.attrs.update(manifold=config.domain.manifold, resolution=config.domain.resolution,
                    scheme=config.time.scheme, pde_wall_time=pde.wall_time, pde_steps=pde.steps,
                    placement=placement, seed=seed, cfl=cfl, config_text=config.text,
                    pde_note=pde.note,
                    integrator="RK4 on y' = V(y/|y|), retraction x/|x| after each step")
    return ds


def atom_radius(config: RunConfig) -> float:
    """The grouping radius the atoms are matched with (docs/math.md §5)."""
    from solvers.circle.atoms import default_radius

    return config.atoms.radius or default_radius(config.model.beta)


def particle_atoms(config: RunConfig, x: np.ndarray, w: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Atoms of the particles (S^1, :func:`group_particles` on the PDE grid); S^2: none."""
    if not manifold_of(config).ordered:  # grouped by angle
        return np.full(0, np.nan), np.full(0, np.nan)
    return group_particles(circle_angles(x), w, config.model.beta, config.atoms,
                           config.domain.resolution)


def _padded(masses: list[np.ndarray], width: int) -> np.ndarray:
    out = np.full((len(masses), width), np.nan)
    for i, m in enumerate(masses):
        out[i, :m.size] = m
    return out


def report_dataset(sizes: list[int], times: list[float], rows: list[tuple[np.ndarray, ParticleRun,
                   list]], pde_atoms: list[tuple[np.ndarray, np.ndarray]], radius: float) -> Any:
    """Dataset with dims (n, time[, atom]) from per-n ``(distances (time, 2), run, atoms per
    time)`` and the PDE's atoms per time (masses, positions), matched within ``radius``."""
    import xarray as xr

    from solvers.studies.converge import match_atoms

    dist = np.stack([d for d, _, _ in rows])  # (n, time, 2)
    n_arr = np.asarray(sizes, dtype=float)
    error = np.array([[match_atoms(*pde_atoms[j], *atoms[j], radius)[1] for j in range(len(times))]
                      for _, _, atoms in rows])  # (n, time)
    width = max([1] + [m.size for m, _ in pde_atoms] + [a[j][0].size for _, _, a in rows
                                                          for j in range(len(times))])
    part = np.stack([_padded([a[j][0] for j in range(len(times))], width) for _, _, a in rows])

    def rate(v: np.ndarray) -> list[float]:
        return [fit_rate(n_arr, v[:, j]) for j in range(len(times))]

    from solvers.io.cf import describe

    return describe(xr.Dataset(
        {"w1": (("n", "time"), dist[..., 0]), "kernel_distance": (("n", "time"), dist[..., 1]),
         "particle_energy": (("n", "time"), np.stack([r.energy for _, r, _ in rows])),
         "wall_time": ("n", [r.wall_time for _, r, _ in rows]),
         "n_steps": ("n", [r.n_steps for _, r, _ in rows]), "dt": ("n", [r.dt for _, r, _ in rows]),
         "pde_n_atoms": ("time", [m.size for m, _ in pde_atoms]),
         "pde_atom_mass": (("time", "atom"), _padded([m for m, _ in pde_atoms], width)),
         "particle_n_atoms": (("n", "time"), [[a[j][0].size for j in range(len(times))]
                                              for _, _, a in rows]),
         "particle_atom_mass": (("n", "time", "atom"), part),
         "atom_mass_error": (("n", "time"), error),
         "w1_rate": ("time", rate(dist[..., 0])), "kernel_rate": ("time", rate(dist[..., 1])),
         "atom_mass_rate": ("time", rate(error))},
        coords={"n": np.asarray(sizes), "time": np.asarray(times, dtype=float)}),
        "meanfield-spectral PDE against particles", PARTICLE_TABLE)


PARTICLE_TABLE = {
    "n": ("1", "number of particles"),
    "w1": ("1", "Wasserstein-1 distance of the PDE density and the particle measure"),
    "kernel_distance": ("1", "kernel distance sqrt(<K(mu - nu), mu - nu>)"),
    "wall_time": ("s", "wall-clock time of the particle run"),
    "atom_mass_error": ("1", "largest atom mass difference (atoms matched by position)"),
}
