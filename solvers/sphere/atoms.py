"""Atoms (clusters) of grid densities on S^2 (paper section 4; docs/math.md §5).

The shared algorithm is :mod:`solvers.core.atoms`; here the S^2 specifics:

- the cell graph of the Gauss grid (nlat, nphi): neighbours along a latitude (periodic), along a
  meridian, diagonally, and across each pole (``phi`` and ``phi + pi`` on the polar rows);
- the flow pointer by steepest ascent of ``s U`` over that graph, ``U = dE/dmu`` the first
  variation (docs/math.md §1; softmax: ``log(K*rho)/beta + v/2``), since the velocity is
  ``s grad U``: each basin of ``s U`` is the region that drains into one sink;
- ``method = "paper"`` groups within ``min(0.5/sqrt(beta), pi/6)`` (paper section 4, d = 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.core.atoms import (
    CAP_SLACK,
    CONCENTRATED,
    AtomSet,
    CellGraph,
    Radii,
    detect,
    resolve_radii,
    steepest_ascent,
)
from solvers.core.backend import resolve_backend
from solvers.model.params import AtomParams


@dataclass(frozen=True)
class SphereAtoms:
    """Atoms of one S^2 state, heaviest first.

    mass, core_mass : ndarray, shape (n,)
    position : ndarray, shape (n, 3)
        Unit vectors: the normalised centre of mass of each core.
    diffuse_mass : float
    """

    mass: np.ndarray
    position: np.ndarray
    core_mass: np.ndarray = None  # type: ignore[assignment]
    diffuse_mass: float = 0.0
    labels: np.ndarray | None = None  # (cells,) atom index (into mass) or -1: diffuse

    def __post_init__(self) -> None:
        if self.core_mass is None:
            object.__setattr__(self, "core_mass", np.asarray(self.mass, dtype=float).copy())

    @property
    def count(self) -> int:
        return int(self.mass.size)


def default_radius(beta: float, dim: int = 3) -> float:
    """``min(1/(2 beta), pi/(2 d))`` (docs/math.md §5)."""
    return min(1.0 / (2.0 * beta), np.pi / (2.0 * dim))


def grid_edges(nlat: int, nphi: int) -> np.ndarray:
    """Neighbour pairs of the flattened (nlat, nphi) grid, shape (E, 2)."""
    idx = np.arange(nlat * nphi).reshape(nlat, nphi)
    east = np.roll(idx, -1, axis=1)
    pairs = [(idx, east), (idx[:-1], idx[1:]), (idx[:-1], east[1:]), (east[:-1], idx[1:])]
    half = np.roll(idx, -(nphi // 2), axis=1)
    pairs += [(idx[:1, : nphi // 2], half[:1, : nphi // 2]),
              (idx[-1:, : nphi // 2], half[-1:, : nphi // 2])]
    return np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in pairs])


def sphere_graph(points: np.ndarray, area: np.ndarray) -> CellGraph:
    """Cell graph from centres (nlat, nphi, 3) or (n, 3) with ``area`` of shape (nlat, nphi)."""
    nlat, nphi = area.shape
    return CellGraph(points.reshape(-1, 3), np.sqrt(area).ravel(), grid_edges(nlat, nphi), 4.0 * np.pi)


_GRAPHS: dict[bytes, CellGraph] = {}  # graphs of the grids seen (a run uses one): no rebuilds


def _cached_graph(points: np.ndarray, area: np.ndarray) -> CellGraph:
    """:func:`sphere_graph`, built once per grid (its neighbour table is the costly part)."""
    import hashlib

    key = hashlib.blake2b(_fingerprint(points) + _fingerprint(area), digest_size=16).digest()
    if key not in _GRAPHS:
        if len(_GRAPHS) >= 4:
            _GRAPHS.clear()
        _GRAPHS[key] = sphere_graph(points, area)
    return _GRAPHS[key]


def _fingerprint(values: np.ndarray, samples: int = 4096) -> bytes:
    """Shape and about ``samples`` evenly spaced values of an array (every latitude of a grid):
    a graph key costing microseconds where hashing a whole lmax 255 grid took milliseconds."""
    flat = values.reshape(-1)
    step = max(1, flat.size // samples)
    return repr(values.shape).encode() + np.ascontiguousarray(flat[::step]).tobytes() + flat[-1:].tobytes()


def detect_atoms(points: np.ndarray, cell_mass: np.ndarray, area: np.ndarray, beta: float,
                 params: AtomParams, cell: float = 0.0, potential: np.ndarray | None = None,
                 backend: str | None = None, candidates: np.ndarray | None = None,
                 centres: bool = True) -> SphereAtoms:
    """Atoms of a grid density on S^2 (see :mod:`solvers.core.atoms`).

    Parameters
    ----------
    points : ndarray, shape (nlat * nphi, 3)
        Cell centres (unit vectors), row-major over (nlat, nphi).
    cell_mass : ndarray, shape (nlat * nphi,) or (nlat, nphi)
        ``rho * area``.
    area : ndarray, shape (nlat, nphi)
        Cell areas (the grid's shape gives the neighbours).
    beta : float
    params : AtomParams
    cell : float
        Largest cell width in radians (the radii are at least 1.5 cells).
    potential : ndarray, same size as ``cell_mass``, optional
        ``s U``, whose steepest ascent is the flow (``basin``); without it the density's
        steepest ascent stands in.
    backend : {"numba", "numpy"}, optional
        ``numba`` (the default where it imports) runs the basin detector as compiled calls
        (:mod:`solvers.core.atoms_numba`); ``numpy`` the reference.
    candidates : ndarray of bool, shape (nlat * nphi,), optional
        A hint for a caller that needs only the atoms whose basin of the flow holds a candidate
        cell (capture): the compiled detector then looks only at those basins, and the atoms
        of the others are missing (their mass counts as diffuse). The reference ignores it.
    centres : bool
        False: positions are the peak cells and core masses 0 (compiled detector only), for a
        caller that needs only the atoms' masses and labels.
    """
    area = np.asarray(area, dtype=float)
    graph = _cached_graph(np.asarray(points, dtype=float), area)
    mass = np.asarray(cell_mass, dtype=float).ravel()
    density = mass / area.ravel()
    ascent = density if potential is None else np.asarray(potential, dtype=float).ravel()
    radii = resolve_radii(params, beta, cell, np.pi / 6.0)
    found = None
    if params.method == "basin" and resolve_backend(backend) == "numba":
        found = _detect_compiled(graph, ascent, density, mass, params, radii, candidates, centres)
    if found is None:
        found = detect(steepest_ascent(ascent, graph), density, mass, graph, params, radii)
    order = np.argsort(-found.mass, kind="stable")
    new = np.empty(order.size, dtype=int)
    new[order] = np.arange(order.size)
    labels = np.where(found.labels >= 0, new[np.maximum(found.labels, 0)] if order.size else -1, -1)
    return SphereAtoms(found.mass[order], found.unit[order], found.core_mass[order],
                       found.diffuse_mass, labels)


def _detect_compiled(graph: CellGraph, ascent: np.ndarray, density: np.ndarray, mass: np.ndarray,
                     params: AtomParams, radii: Radii, candidates: np.ndarray | None = None,
                     centres: bool = True) -> AtomSet | None:
    """The basin detector in two compiled calls (None on a pointer cycle: use the reference);
    ``candidates`` and ``centres`` as :func:`detect_atoms`."""
    from solvers.core.atoms_numba import ascent as steepest, detect_graph

    nbr, length = graph.neighbours
    pointer = steepest(ascent, np.zeros(ascent.size, dtype=np.int64), nbr, length)
    ok, labels, m, core, unit, diffuse = detect_graph(
        pointer, density, mass, graph.points, graph.width, graph.edges, nbr, length,
        graph.measure, float(params.contrast), float(params.min_mass), float(params.saddle_ratio),
        radii.core, radii.cap, CAP_SLACK, CONCENTRATED,
        np.zeros(0, dtype=np.bool_) if candidates is None else np.asarray(candidates, dtype=np.bool_),
        bool(centres))
    return AtomSet(m, core, unit, float(diffuse), labels) if ok else None
