"""Atoms (clusters) of grid densities on S^1 (paper section 4; docs/math.md §5).

The shared algorithm is :mod:`solvers.core.atoms`; here the S^1 specifics:

- the cell graph: cells ``theta_i`` with neighbours ``i +- 1`` (periodic);
- the flow pointer from the sign of the velocity at the faces: cell ``i`` drains right if
  ``u_{i+1/2} > 0``, left if ``u_{i-1/2} < 0``; both: a source (in no basin, its mass is
  diffuse); neither: a sink (the core of a basin);
- ``method = "paper"`` groups within ``min(0.5/sqrt(beta), pi/4)`` (paper section 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from solvers.core.atoms import CAP_SLACK, CONCENTRATED, CellGraph, detect, resolve_radii
from solvers.core.backend import resolve_backend
from solvers.model.params import AtomParams


@dataclass(frozen=True)
class Atoms:
    """Atoms of one S^1 state, sorted by position.

    mass, core_mass : ndarray, shape (n,)
        Basin mass (whole atom) and the mass within the core radius of the position.
    position : ndarray, shape (n,)
        Centre of mass of the core, in [0, 2 pi).
    diffuse_mass : float
        Mass in no atom.
    labels : ndarray of int, shape (N,), optional
        The atom (index into ``mass``) of every cell, -1 for diffuse cells.
    """

    mass: np.ndarray
    position: np.ndarray
    core_mass: np.ndarray
    diffuse_mass: float = 0.0
    labels: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.mass.size)


def default_radius(beta: float) -> float:
    """``min(1/(2 beta), pi/4)`` on S^1 (docs/math.md §5; the core radius before the cap)."""
    return min(1.0 / (2.0 * beta), np.pi / 4.0)


def circle_graph(theta: np.ndarray) -> CellGraph:
    """The periodic cell graph of N equal cells centred at ``theta`` (N,)."""
    n = theta.size
    idx = np.arange(n)
    points = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    return CellGraph(points, np.full(n, 2.0 * np.pi / n), np.stack([idx, (idx + 1) % n], axis=1),
                     2.0 * np.pi)


def flow_pointer(face_velocity: np.ndarray, cell_mass: np.ndarray | None = None) -> np.ndarray:
    """Where each cell's mass flows, from the velocity at the right faces (N,): ``i + 1``,
    ``i - 1``, ``i`` (a sink) or -1 (a source), shape (N,).

    Two sinks side by side have a face of velocity exactly 0 between them: the sink of the
    flow sits on that face (a converged atom straddling it, whose two cells' pulls cancel to
    round-off) and they are one basin. Given ``cell_mass`` (N,), such a sink points to its
    heaviest zero-face sink neighbour when that one is heavier (equal masses: the lower index
    wins), so that they share a root.
    """
    n = face_velocity.size
    right = face_velocity > 0.0
    left = np.roll(face_velocity, 1) < 0.0
    idx = np.arange(n)
    pointer = np.where(right, (idx + 1) % n, np.where(left, (idx - 1) % n, idx))
    pointer = np.where(right & left, -1, pointer)
    if cell_mass is None:
        return pointer
    m = np.asarray(cell_mass, dtype=float)
    sink = pointer == idx
    best = idx.copy()
    for step, face in ((1, face_velocity), (-1, np.roll(face_velocity, 1))):
        nb = (idx + step) % n
        heavier = (m[nb] > m[best]) | ((m[nb] == m[best]) & (nb < best))
        best = np.where(sink & sink[nb] & (face == 0.0) & heavier, nb, best)
    return np.where(sink, best, pointer)


def detect_atoms(theta: np.ndarray, cell_mass: np.ndarray, beta: float, params: AtomParams,
                 face_velocity: np.ndarray | None = None, backend: str | None = None) -> Atoms:
    """Atoms of a grid density on S^1 (see :mod:`solvers.core.atoms`).

    Parameters
    ----------
    theta : ndarray, shape (N,)
        Cell centres ``2 pi i / N``.
    cell_mass : ndarray, shape (N,)
        ``rho_i * h``.
    beta : float
    params : AtomParams
    face_velocity : ndarray, shape (N,), optional
        Signed velocity at the right faces ``theta_i + h/2`` (needed by ``method = "basin"``;
        without it the density's steepest ascent stands in for the flow).
    backend : {"numba", "numpy"}, optional
        ``numba`` (the default where it imports, :mod:`solvers.core.backend`) runs the basin
        detector as one compiled call (:mod:`solvers.circle.atoms_numba`); ``numpy`` the
        reference.

    Returns
    -------
    Atoms
    """
    theta = np.asarray(theta, dtype=float)
    if (face_velocity is not None and params.method == "basin"
            and resolve_backend(backend) == "numba"):
        found = ring_detector(theta, beta, params)(np.asarray(cell_mass, dtype=float),
                                                   np.asarray(face_velocity, dtype=float))
        if found is not None:
            return found
    graph = _cached_graph(theta.tobytes())
    h = 2.0 * np.pi / theta.size
    radii = resolve_radii(params, beta, h, np.pi / 4.0)
    density = cell_mass / h
    if face_velocity is None:
        from solvers.core.atoms import steepest_ascent

        pointer = steepest_ascent(density, graph)
    else:
        pointer = flow_pointer(np.asarray(face_velocity, dtype=float), cell_mass)
    found = detect(pointer, density, cell_mass, graph, params, radii)
    return _sorted(found.mass, found.core_mass, found.unit[:, 0], found.unit[:, 1],
                   found.diffuse_mass, found.labels)


def _sorted(mass: np.ndarray, core: np.ndarray, x: np.ndarray, y: np.ndarray, diffuse: float,
            labels: np.ndarray | None) -> Atoms:
    """:class:`Atoms` sorted by position from atoms in detection order."""
    position = np.mod(np.arctan2(y, x), 2.0 * np.pi)
    order = np.argsort(position)
    return Atoms(mass[order], position[order], core[order], diffuse, relabel(labels, order))


@lru_cache(maxsize=8)
def _cached_graph(theta_bytes: bytes) -> CellGraph:
    """The ring's cell graph, built once per grid (neighbour table included)."""
    graph = circle_graph(np.frombuffer(theta_bytes, dtype=float))
    graph.neighbours  # noqa: B018  (computed now, cached on the graph)
    return graph


class RingDetector:
    """The compiled basin detector (:func:`solvers.circle.atoms_numba.detect_ring`) for one
    grid and one :class:`AtomParams` (``method = "basin"``), its arguments prepared once.

    ``detector(cell_mass, face_velocity)`` (float arrays (N,)) is :func:`detect_atoms` with
    the ``numba`` backend, or None on a pointer cycle (the reference then raises).
    """

    def __init__(self, theta: np.ndarray, beta: float, params: AtomParams) -> None:
        graph = _cached_graph(np.asarray(theta, dtype=float).tobytes())
        n = graph.points.shape[0]
        radii = resolve_radii(params, beta, 2.0 * np.pi / n, np.pi / 4.0)
        nbr, length = graph.neighbours
        px, py = (np.ascontiguousarray(graph.points[:, k]) for k in range(2))
        self._args = (graph.points, px, py, graph.edges, nbr, length, _in_angular_order(theta),
                      float(params.contrast), float(params.min_mass), float(params.saddle_ratio),
                      radii.core, radii.cap)

    def arguments(self) -> tuple:
        """The arguments of ``detect_ring`` after ``face_velocity`` and ``cell_mass`` (with the
        module constants ``CAP_SLACK`` and ``CONCENTRATED`` as they are now)."""
        return (*self._args, CAP_SLACK, CONCENTRATED)

    def __call__(self, cell_mass: np.ndarray, face_velocity: np.ndarray) -> Atoms | None:
        from solvers.circle.atoms_numba import detect_ring

        return ring_atoms(detect_ring(face_velocity, cell_mass, *self.arguments()))


def ring_atoms(found: tuple) -> Atoms | None:
    """:class:`Atoms` from what ``detect_ring`` returns (None on a pointer cycle). Positions
    are numpy's ``arctan2`` of the kernel's unit vectors, as the reference's; where the
    kernel's order by angle was not sure, numpy's order decides."""
    ok, labels, table, diffuse, sure = found
    if not ok:
        return None
    if not sure:
        return _sorted(table[0], table[1], table[2], table[3], diffuse, labels)
    return Atoms(table[0], np.mod(np.arctan2(table[3], table[2]), 2.0 * np.pi), table[1], diffuse,
                 labels)


@lru_cache(maxsize=8)
def _cached_detector(theta_bytes: bytes, beta: float, params: AtomParams) -> RingDetector:
    return RingDetector(np.frombuffer(theta_bytes, dtype=float), beta, params)


def ring_detector(theta: np.ndarray, beta: float, params: AtomParams) -> RingDetector:
    """The :class:`RingDetector` of a grid and parameters, built once (cached)."""
    return _cached_detector(np.asarray(theta, dtype=float).tobytes(), float(beta), params)


def _in_angular_order(theta: np.ndarray) -> bool:
    """Whether the cells ``theta`` (N,) go once around the circle in order (each step forward
    by less than pi): then an arc of the circle holds a run of consecutive cells."""
    theta = np.asarray(theta, dtype=float)
    if theta.size < 4:
        return False
    steps = np.mod(np.diff(theta, append=theta[0] + 2.0 * np.pi), 2.0 * np.pi)
    return bool(np.all((steps > 0.0) & (steps < np.pi)) and abs(steps.sum() - 2.0 * np.pi) < 1e-9)


def relabel(labels: np.ndarray | None, order: np.ndarray) -> np.ndarray | None:
    """Cell labels after the atoms are reordered by ``order`` (new k = old ``order[k]``)."""
    if labels is None:
        return None
    new = np.empty(order.size + 1, dtype=int)  # the last entry: -1 (diffuse) stays -1
    new[order] = np.arange(order.size)
    new[-1] = -1
    return new[labels]
