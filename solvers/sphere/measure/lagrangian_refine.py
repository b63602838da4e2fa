"""Basin-boundary refinement of the S^2 Lagrangian particles (``time.basin_refine = K``).

With one particle per Gauss cell (:mod:`solvers.sphere.measure.lagrangian`), a cell that straddles the
boundary between two atoms' basins (a separatrix of the flow) sends all its mass to one side:
each atom's mass is off by O(h) times the density along its basin's boundary, and a soft atom's
position moves with the masses of the others (``meanfield polish`` reports ``dx/dm``). On
``runs/paper_s2_descent_relu_particles.toml`` this error decides the light atoms' positions
(docs/methods.md §6.7, basin-boundary refinement).

The refinement is an adaptive quadrature of the initial measure, found by a scout run:

1. **Scout.** The plain cell particles run to ``time.t_end`` by fixed RK4 steps (the run's
   step), merging as the run does (with ``time.stop_when_stationary``, until no particle moves
   faster than ``time.stationary_tol``); every cell remembers the particle its mass went to. At the
   end the particles are grouped by single linkage at ``LINK`` (chord), so every cell gets the group
   (atom) its mass ended in.
2. **Boundary cells.** A cell whose group differs from that of a neighbour (north, south, east,
   west on the Gauss grid), and the neighbours of those cells (the boundary moves a little when
   the quadrature changes), are marked.
3. **Sub-particles.** Each marked cell starts as ``K x K`` particles, at the centres of equal
   pieces in ``(mu = cos theta, phi)`` (equal areas), whose masses follow a slope-limited linear
   reconstruction of the density (minmod in both directions: positive, second order where the
   density is smooth) scaled to the cell's mass exactly. So the total mass and every cell's
   mass are those of the grid density, and the boundary cells' pieces are ``K`` times narrower.

The run then starts from these particles. The scout costs about one plain run; the refined run
costs more than its extra particles alone suggest (the boundaries are curves, so O(1 / lmax) of
the cells are marked, but their pieces sit near separatrices and merge last): at lmax 63 a
refined run, scout included, takes 3x (K = 2) to 4.2x (K = 4) a plain one.
"""

from __future__ import annotations

import logging
import time as wallclock
from collections.abc import Callable

import numpy as np

from solvers.core.point_merge import combine, merge_labels
from solvers.sphere.measure.dirac import normalise
from solvers.sphere.cells import SphereGrid

Velocity = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (x (n, 3), w (n,)) -> (n, 3)

LINK = 0.05  # rad: scout particles joined by shorter links are one group (atom)

log = logging.getLogger(__name__)


def scout_groups(x: np.ndarray, w: np.ndarray, velocity: Velocity, t_end: float, dt: float,
                 merge_radius: float, still: float = 0.0) -> np.ndarray:
    """The group (atom) each particle's mass ends in: ``(n,)`` integer labels.

    ``x`` (n, 3) unit vectors, ``w`` (n,) masses; ``velocity(x, w)`` the particles' velocity
    (n, 3); fixed RK4 steps of at most ``dt`` to ``t_end``, or until no particle moves faster
    than ``still`` (then no group can change); particles closer than ``merge_radius`` merge
    after every step (as the run does); the final particles are grouped by single linkage at
    :data:`LINK` (the connected components of the pairs closer than it).
    """
    owner = np.arange(w.size)
    steps = max(1, int(np.ceil(t_end / dt - 1e-9)))
    h = t_end / steps
    x, w, owner = _merge(x, w, owner, merge_radius)
    for _ in range(steps):
        k1 = velocity(x, w)
        if still > 0 and float(np.max(np.abs(k1), initial=0.0)) <= still:
            break
        k2 = velocity(normalise(x + 0.5 * h * k1), w)
        k3 = velocity(normalise(x + 0.5 * h * k2), w)
        k4 = velocity(normalise(x + h * k3), w)
        x, w, owner = _merge(normalise(x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)), w, owner,
                             merge_radius)
    found = merge_labels(x, LINK)  # single linkage at LINK, O(n log n)
    group = np.arange(w.size) if found is None else found[1]
    return group[owner]


def _merge(x: np.ndarray, w: np.ndarray, owner: np.ndarray, radius: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge as :func:`solvers.core.point_merge.merge_close`, carrying ``owner`` (the index of
    the current particle that holds each starting particle's mass)."""
    found = merge_labels(x, radius)
    if found is None:
        return x, w, owner
    k, label = found
    return *combine(x, w, k, label), label[owner]


def boundary_cells(group: np.ndarray) -> np.ndarray:
    """Cells to refine from the group of every cell, ``group`` (nlat, nphi) (-1: empty cell).

    A cell is marked when a neighbour (north, south, east, west; longitude is periodic) holds
    another group; the marked cells' neighbours are marked too. Returns bool (nlat, nphi).
    """
    differs = np.zeros(group.shape, bool)
    ns = group[1:] != group[:-1]
    differs[1:] |= ns
    differs[:-1] |= ns
    ew = group != np.roll(group, -1, axis=1)
    differs |= ew | np.roll(ew, 1, axis=1)
    differs &= group >= 0
    out = differs.copy()
    out[1:] |= differs[:-1]
    out[:-1] |= differs[1:]
    out |= np.roll(differs, 1, axis=1) | np.roll(differs, -1, axis=1)
    return out & (group >= 0)


def _minmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a * b > 0, np.sign(a) * np.minimum(np.abs(a), np.abs(b)), 0.0)


def sub_particles(grid: SphereGrid, rho: np.ndarray, mark: np.ndarray, k: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The particles of the grid density ``rho`` (nlat, nphi) on ``grid`` (a
    :class:`~solvers.sphere.cells.SphereGrid`): one per unmarked cell holding mass (its centre,
    its mass) and ``k x k`` per marked cell (``mark`` bool (nlat, nphi); module docstring).

    Returns ``(x (n, 3), w (n,), cell (n,))``, ``cell`` the flat index of each particle's cell.
    Every cell's particles hold its mass ``rho area`` (to round-off).
    """
    rho = np.asarray(rho, float)
    cell = rho * grid.area
    plain = ~mark & (cell > 0)
    centres = grid.points(grid.theta, grid.phi)
    xs, ws, cs = [centres[plain]], [cell[plain]], [np.flatnonzero(plain)]
    j, m = np.nonzero(mark & (cell > 0))
    if j.size:
        s = (np.arange(k) + 0.5) / k - 0.5  # piece centres in cell units, (k,)
        d_mu = np.zeros_like(rho)
        d_mu[1:-1] = _minmod(rho[2:] - rho[1:-1], rho[1:-1] - rho[:-2])
        d_phi = _minmod(np.roll(rho, -1, axis=1) - rho, rho - np.roll(rho, 1, axis=1))
        value = (rho[j, m][:, None, None] + d_mu[j, m][:, None, None] * s[None, :, None]
                 + d_phi[j, m][:, None, None] * s[None, None, :])  # (n, k mu, k phi)
        value = np.maximum(value, 0.0).reshape(j.size, k * k)
        total = value.sum(axis=1, keepdims=True)
        share = np.where(total > 0, value / np.where(total > 0, total, 1.0), 1.0 / (k * k))
        mu_top, mu_bottom = grid.mu_faces[j], grid.mu_faces[j + 1]
        mu = mu_top[:, None] + (mu_bottom - mu_top)[:, None] * (s + 0.5)[None, :]  # (n, k)
        phi = grid.phi[m][:, None] + grid.dphi * s[None, :]  # (n, k)
        mu, phi = np.broadcast_arrays(mu[:, :, None], phi[:, None, :])
        st = np.sqrt(np.clip(1.0 - mu * mu, 0.0, None))
        xs.append(np.stack([st * np.cos(phi), st * np.sin(phi), mu], axis=-1).reshape(-1, 3))
        ws.append((share * cell[j, m][:, None]).ravel())
        cs.append(np.repeat(j * grid.shape[1] + m, k * k))
    return np.concatenate(xs), np.concatenate(ws), np.concatenate(cs)


def refined_particles(grid: SphereGrid, rho: np.ndarray, k: int, velocity: Velocity,
                      t_end: float, dt: float, merge_radius: float,
                      atoms: tuple[np.ndarray, np.ndarray] | None = None, still: float = 0.0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``(x (n, 3), w (n,))``: the particles of ``rho`` with the basin-boundary cells refined
    ``k x k`` (module docstring; the scout runs ``velocity`` to ``t_end`` by steps of ``dt``, or
    until no particle is faster than ``still``, with the Dirac ``atoms = (position (a, 3), mass
    (a,))`` moving beside the cells)."""
    start = wallclock.perf_counter()
    x, w, cell = sub_particles(grid, rho, np.zeros(grid.shape, bool), 1)
    if atoms is not None:
        x, w = np.concatenate([x, atoms[0]]), np.concatenate([w, atoms[1]])
    log.info("basin_refine = %d: a scout run of %d particles to t = %g finds the basin boundaries",
             k, cell.size, t_end)
    group = np.full(grid.area.size, -1)
    group[cell] = scout_groups(x, w, velocity, t_end, dt, merge_radius, still)[:cell.size]
    mark = boundary_cells(group.reshape(grid.shape))
    x, w, _ = sub_particles(grid, rho, mark, k)
    log.info("basin_refine = %d: scout done in %.1f s; %d of %d cells refined; the run starts from"
             " %d particles", k, wallclock.perf_counter() - start, int(mark.sum()), mark.size, w.size)
    return x, w
