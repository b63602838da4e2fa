"""Cell particles: the PDE's initial grid density as one weighted particle per cell, run by the
exact particle flow until its clusters are atoms. An independent check of a grid run's atoms.

A weighted empirical measure solves the continuity equation (paper eq. 2.6) exactly when each
point follows ``dx_k/dt = s grad U(x_k)`` (:mod:`solvers.studies.particles`), so the only errors
are the time step and the initial quadrature. Placing one particle at the centre of every grid
cell, with the cell's mass (``rho area``), makes that quadrature exact for the attention field at
t = 0: on S^2 the Gauss grid's centres and areas integrate the spherical harmonics of the
kernel's band exactly (docs/methods.md §6.5), on S^1 the uniform cells integrate the Fourier modes
up to N/2. No mass moves between cells by upwinding, so slow mass (velocities of 1e-4) is
carried at its own speed instead of being held in place by the grid.

Particles closer than ``merge`` (rad, chord) merge into one, keeping mass and first moment (the
normalised mass-weighted mean): a cluster that has collapsed costs one particle. Atoms are the
groups of particles joined by links shorter than ``link`` (single linkage), with their mass,
mass-weighted mean position (normalised), particle count and spread (the mass-weighted RMS
distance from that position): a spread far below ``link`` means the group is an atom, not yet
a cloud.

``benchmarks/s2_cell_particles.py`` runs this on ``runs/paper_s2_descent_relu.toml``
(docs/tutorial.md §6: the particles find a fifth atom).
"""

from __future__ import annotations

import time as wallclock
from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from solvers.core.point_merge import merge_close
from solvers.model.params import RunConfig
from solvers.studies.particles import ParticleSystem, normalise
from solvers.timestepping.manifolds import manifold_of

MERGE = 1e-4  # rad: particles closer than this merge
LINK = 0.05  # rad: particles joined by shorter links form one atom


def cell_particles(config: RunConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(x (n, d), w (n,))``: one particle per grid cell holding mass of the config's initial
    density (:func:`solvers.io.state.initial_density`), at the cell's centre, with its mass."""
    from solvers.io.state import initial_density

    rho = np.asarray(initial_density(config), dtype=float)
    x, cell = manifold_of(config).cell_masses(rho, config.domain.resolution)
    has = cell > 0
    return x[has], cell[has]


@dataclass(frozen=True)
class ParticleAtoms:
    """Groups of particles (heaviest first): ``mass`` (k,), ``position`` (k, d) unit vectors,
    ``count`` (k,) particles, ``spread`` (k,) rad."""

    mass: np.ndarray
    position: np.ndarray
    count: np.ndarray
    spread: np.ndarray


def particle_atoms(x: np.ndarray, w: np.ndarray, link: float = LINK) -> ParticleAtoms:
    """The single-linkage groups of the particles at distance ``link`` (module docstring)."""
    label = (fcluster(linkage(x, "single"), link, "distance") - 1 if w.size > 1
             else np.zeros(w.size, int))
    k = int(label.max()) + 1 if w.size else 0
    mass = np.bincount(label, weights=w, minlength=k)
    pos = normalise(np.stack([np.bincount(label, weights=w * x[:, d], minlength=k)
                              for d in range(x.shape[1])], axis=1)) if k else np.zeros((0, x.shape[1]))
    d2 = np.sum((x - pos[label]) ** 2, axis=1)
    spread = np.sqrt(np.bincount(label, weights=w * d2, minlength=k) / np.maximum(mass, 1e-300))
    order = np.argsort(-mass, kind="stable")
    return ParticleAtoms(mass[order], pos[order], np.bincount(label, minlength=k)[order], spread[order])


@dataclass(frozen=True)
class CellParticleRun:
    """Snapshots of a cell-particle run: ``times`` (T,), particle positions ``x`` and masses
    ``w`` at each time (lists: the count falls as particles merge), ``steps``, ``wall_time`` s."""

    times: np.ndarray
    x: list
    w: list
    steps: int
    wall_time: float


def run_cell_particles(config: RunConfig, times, dt: float, merge: float = MERGE,
                       progress=None) -> CellParticleRun:
    """Cell particles of ``config`` (:func:`cell_particles`) by RK4 steps of ``dt``
    (:meth:`ParticleSystem.step`), merged after every step (:func:`solvers.core.point_merge.merge_close`); recorded at
    ``times`` (non-decreasing, >= 0). ``progress(t, x, w)`` is called at each recorded time."""
    times = np.asarray(times, dtype=float).ravel()
    if dt <= 0 or not np.isfinite(dt):
        raise ValueError(f"dt: must be a positive number (got {dt})")
    if times.size and (times[0] < 0 or np.any(np.diff(times) < 0)):
        raise ValueError("times: must be non-negative and non-decreasing")
    start = wallclock.perf_counter()
    system = ParticleSystem(config.model)
    x, w = cell_particles(config)
    t, steps, xs, ws = 0.0, 0, [], []
    for target in times:
        m = max(1, int(np.ceil((target - t) / dt - 1e-9))) if target > t else 0
        for _ in range(m):
            x = system.step(x, w, (target - t) / m)
            x, w, _ = merge_close(x, w, merge)
        steps, t = steps + m, float(target)
        xs.append(x.copy())
        ws.append(w.copy())
        if progress is not None:
            progress(t, x, w)
    return CellParticleRun(times, xs, ws, steps, wallclock.perf_counter() - start)
