"""Atoms (clusters) of a grid density, shared by S^1 and S^2 (paper section 4, docs/math.md §5).

The cells of a grid form a graph (:class:`CellGraph`: unit-vector centres, widths, edges). Two
detectors share it:

``basin`` (default)
    1. Every cell points to where its mass flows (the manifold module builds the pointer: S^1 from
       the sign of the velocity at the faces, S^2 by steepest ascent of the potential); a sink
       points to itself, a cell whose mass leaves both ways (a source) points nowhere (-1).
       Following the pointers gives the flow basins (:func:`follow`).
    2. Inside each basin the density is split into its peaks by steepest ascent; two peaks stay
       one region only if the saddle between them is at least ``saddle_ratio`` times the lower
       peak (persistence, :func:`split_at_saddles`). So two atoms are never one group.
    3. A region is an atom if it holds at least ``min_mass`` within ``max_radius`` of its peak
       (cells farther are diffuse) and its peak density exceeds ``contrast * M / |S|``, or, at
       the cell scale, its peak cell and the peak's neighbours hold ``CONCENTRATED`` (0.9) of
       that mass and the peak exceeds ``contrast`` times the region's own mean density (an atom
       lighter than ``2 contrast / N`` on S^1 cannot pass the first test in two cells).
``paper``
    The paper particle code's convention: cells denser than ``contrast * M / |S|`` are
    particles, grouped by single linkage within ``radius`` (:func:`paper_labels`).

Each atom reports its mass, its position (centre of mass of its core, the cells within
``core_radius`` of the position, default the paper's ``1/(2 beta)`` of Theorem 3.5; edge cells
weighted by the fraction of their width inside, iterated, so the position moves continuously
below the cell size) and its ``core_mass``. ``diffuse_mass`` is the mass in no atom.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from solvers.core.atom_tracks import DEFAULT_LINK_RADIUS
from solvers.model.params import AtomParams


CAP_SLACK = 1.0 + 1e-12


@dataclass(frozen=True)
class CellGraph:
    """Cells of a grid on ``S^{d-1}`` as a graph.

    points : ndarray, shape (n, d)
        Unit vectors of the cell centres.
    width : ndarray, shape (n,)
        Cell widths in radians (S^1: h; S^2: sqrt(area)).
    edges : ndarray, shape (E, 2)
        Undirected neighbour pairs.
    measure : float
        ``|S^{d-1}|``: 2 pi or 4 pi.
    """

    points: np.ndarray
    width: np.ndarray
    edges: np.ndarray
    measure: float

    def distance(self, unit: np.ndarray) -> np.ndarray:
        """Geodesic distance of every cell centre from the unit vector ``unit`` (d,), shape (n,)."""
        return np.arccos(np.clip(self.points @ unit, -1.0, 1.0))

    @cached_property
    def neighbours(self) -> tuple[np.ndarray, np.ndarray]:
        """``(cells (n, k), lengths (n, k))``: each cell's neighbours, in the order of
        ``edges`` (then reversed edges), padded with -1 / inf; built once per graph."""
        i, j = np.concatenate([self.edges, self.edges[:, ::-1]]).T
        order = np.argsort(i, kind="stable")
        i, j = i[order], j[order]
        n = self.points.shape[0]
        counts = np.bincount(i, minlength=n)
        col = np.arange(i.size) - np.concatenate([[0], np.cumsum(counts)[:-1]])[i]
        cells = np.full((n, int(counts.max(initial=0))), -1)
        lengths = np.full(cells.shape, np.inf)
        cells[i, col] = j
        lengths[i, col] = np.arccos(np.clip(np.sum(self.points[i] * self.points[j], axis=1), -1.0, 1.0))
        return cells, lengths


@dataclass(frozen=True)
class Radii:
    """Resolved radii (radians): ``core``, ``cap`` (max_radius), ``group`` (paper), ``link``."""

    core: float
    cap: float
    group: float
    link: float


def resolve_radii(params: AtomParams, beta: float, cell: float, paper_cap: float) -> Radii:
    """Defaults of :class:`AtomParams`: ``core = 1/(2 beta)`` (Theorem 3.5) and ``group =
    min(0.5/sqrt(beta), paper_cap)``, both at least 1.5 cells; ``cap = pi/4``; ``link = pi/8``."""
    core = params.core_radius if params.core_radius is not None else 1.0 / (2.0 * beta)
    group = params.radius if params.radius is not None else min(0.5 / np.sqrt(beta), paper_cap)
    cap = params.max_radius if params.max_radius is not None else np.pi / 4.0
    link = params.link_radius if params.link_radius is not None else DEFAULT_LINK_RADIUS
    return Radii(max(core, 1.5 * cell), max(cap, 1.5 * cell), max(group, 1.5 * cell), link)


@dataclass(frozen=True)
class AtomSet:
    """Atoms of one grid state, in detection order.

    mass, core_mass : ndarray, shape (n,)
    unit : ndarray, shape (n, d)
        Positions as unit vectors.
    diffuse_mass : float
        Total mass minus the atoms' masses.
    labels : ndarray of int, shape (cells,), optional
        The atom (index into ``mass``) each cell belongs to, -1 for diffuse cells.
    """

    mass: np.ndarray
    core_mass: np.ndarray
    unit: np.ndarray
    diffuse_mass: float
    labels: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.mass.size)


def follow(pointer: np.ndarray) -> np.ndarray:
    """Root of every cell under ``pointer`` (roots point to themselves; -1 leads nowhere).

    Parameters
    ----------
    pointer : ndarray of int, shape (n,)

    Returns
    -------
    ndarray of int, shape (n,): the root cell, or -1 for cells that reach a -1.
    """
    p = np.asarray(pointer, dtype=np.int64).copy()
    for _ in range(64):  # pointer jumping: path lengths halve each pass
        nxt = np.where(p >= 0, p[np.maximum(p, 0)], -1)
        if np.array_equal(nxt, p):
            return p
        p = nxt
    raise RuntimeError("atom pointers contain a cycle")


def steepest_ascent(values: np.ndarray, graph: CellGraph, labels: np.ndarray | None = None
                    ) -> np.ndarray:
    """Pointer of every cell to its neighbour of steepest ascent of ``values`` (itself at a
    local maximum), moving only between cells of equal ``labels`` when given (shape (n,)).

    On a plateau (equal neighbours, no ascent) a cell points to its equal neighbour of lower
    index, so that a peak spread evenly over two cells (an atom on a face) has one root.
    """
    cells, lengths = graph.neighbours
    valid = cells >= 0
    j = np.where(valid, cells, 0)
    here = values[:, None]
    slope = (values[j] - here) / np.maximum(lengths, 1e-300)
    ok = valid & ((slope > 0) | ((values[j] == here) & (j < np.arange(values.size)[:, None])))
    if labels is not None:
        ok &= labels[j] == labels[:, None]
    # the steepest neighbour; among equal slopes the last in edge order (as a stable sort)
    last = ok.shape[1] - 1 - np.argmax(np.where(ok, slope, -np.inf)[:, ::-1], axis=1)
    pointer = np.arange(values.size)
    moves = ok.any(axis=1)
    pointer[moves] = j[moves, last[moves]]
    return pointer


def split_at_saddles(labels: np.ndarray, density: np.ndarray, graph: CellGraph,
                     ratio: float) -> np.ndarray:
    """Split the regions ``labels`` (shape (n,), -1 = none) at their density saddles.

    Each region is cut into the basins of its density peaks (steepest ascent); two adjacent
    basins are joined again, highest saddle first, when the saddle (the larger of the two
    densities' minimum over a shared edge) is at least ``ratio`` times the lower peak.

    Returns
    -------
    ndarray of int, shape (n,): a peak cell per cell (-1 where ``labels`` is -1).
    """
    peak = follow(steepest_ascent(density, graph, labels))
    peak[labels < 0] = -1
    i, j = graph.edges.T
    cross = (labels[i] == labels[j]) & (labels[i] >= 0) & (peak[i] != peak[j])
    saddle = np.minimum(density[i], density[j])[cross]
    a, b = peak[i][cross], peak[j][cross]
    # a root is the highest peak of its group, so an edge that fails the test against its own
    # two peaks fails it against their roots too: only the others can join anything (exact)
    keep = saddle >= ratio * np.minimum(density[a], density[b])
    saddle, a, b = saddle[keep], a[keep], b[keep]
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for k in np.argsort(-saddle, kind="stable"):
        ra, rb = find(int(a[k])), find(int(b[k]))
        if ra != rb and saddle[k] >= ratio * min(density[ra], density[rb]):
            hi, lo = (ra, rb) if density[ra] >= density[rb] else (rb, ra)
            parent[lo] = hi
    unique = np.unique(peak)
    roots = unique.copy()
    for k in np.flatnonzero(np.isin(unique, list(parent))):  # only joined peaks move
        roots[k] = find(int(unique[k]))
    return np.where(peak >= 0, roots[np.searchsorted(unique, peak)], -1)


def paper_labels(density: np.ndarray, graph: CellGraph, mass: float, contrast: float,
                 radius: float) -> np.ndarray:
    """The paper particle code's groups: cells denser than ``contrast * mass / |S|``, single
    linkage within geodesic ``radius``; one label per cell (-1 for the others), shape (n,)."""
    from scipy.sparse import coo_matrix  # (scipy.spatial: 0.1 s of a run's start-up, only here)
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    idx = np.flatnonzero(density > contrast * mass / graph.measure)
    labels = np.full(density.size, -1)
    if idx.size:
        chord = 2.0 * np.sin(0.5 * min(radius, np.pi)) * (1 + 1e-12)
        pairs = cKDTree(graph.points[idx]).query_pairs(chord, output_type="ndarray")
        adj = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(idx.size,) * 2)
        labels[idx] = connected_components(adj, directed=False)[1]
    return labels


def _inside(dist: np.ndarray, radius: float, width: np.ndarray) -> np.ndarray:
    """Fraction of each cell within ``radius`` (linear in the centre's distance over one width)."""
    return np.clip((radius - dist) / width + 0.5, 0.0, 1.0)


def core_of(cells: np.ndarray, cell_mass: np.ndarray, graph: CellGraph, start: np.ndarray,
            radius: float) -> tuple[np.ndarray, float]:
    """Centre of mass (unit vector (d,)) of the cells ``cells`` within ``radius`` of it, and the
    mass there; fixed-point iteration from ``start`` (d,), edge cells weighted by
    :func:`_inside` so that the position is continuous in the density."""
    pts, m, w = graph.points[cells], np.maximum(cell_mass[cells], 0.0), graph.width[cells]
    unit = start
    for _ in range(8):
        weight = m * _inside(np.arccos(np.clip(pts @ unit, -1.0, 1.0)), radius, w)
        centre = weight @ pts
        norm = np.linalg.norm(centre)
        if norm == 0.0:
            return unit, 0.0
        new = centre / norm
        done = np.linalg.norm(new - unit) < 1e-14
        unit = new
        if done:
            break
    weight = m * _inside(np.arccos(np.clip(pts @ unit, -1.0, 1.0)), radius, w)
    return unit, float(weight.sum())


CONCENTRATED = 0.9  # fraction of a region's mass in its peak cell and neighbours: an atom at the cell scale


def _cell_scale_atom(cells: np.ndarray, top: int, density: np.ndarray, cell_mass: np.ndarray,
                     graph: CellGraph, contrast: float, mass: float) -> bool:
    """Whether a region too light to pass the global contrast is an atom at the cell scale:
    its peak cell and the peak's neighbours hold ``CONCENTRATED`` of its mass, and the peak
    density exceeds ``contrast`` times the region's own mean density (so that a uniform
    density, whatever its basins, has none). On a coarse grid an atom of mass ``m`` spread
    over two cells has density ``m / 2h``, below ``contrast M / |S|`` for ``m N < 2 contrast``
    (S^1): without this rule a concentrated atom of mass 0.04 at N = 128 stayed "diffuse"."""
    nbr = graph.neighbours[0][top]
    near = np.isin(cells, nbr[nbr >= 0]) | (cells == top)
    if float(cell_mass[cells[near]].sum()) < CONCENTRATED * mass:
        return False
    area = float(np.sum(graph.width[cells] ** (graph.points.shape[1] - 1)))
    return bool(density[top] > contrast * mass / area)


def measure_atoms(labels: np.ndarray, density: np.ndarray, cell_mass: np.ndarray,
                  graph: CellGraph, params: AtomParams, radii: Radii, cap: float) -> AtomSet:
    """Atoms of the regions ``labels`` (shape (n,), -1 = none): a region counts if it holds
    ``min_mass`` within ``cap`` of the peak and its peak density exceeds ``contrast * M / |S|``
    or it is an atom at the cell scale (:func:`_cell_scale_atom`)."""
    total = float(np.sum(cell_mass))
    floor = params.contrast * abs(total) / graph.measure
    masses, cores, units = [], [], []
    owner = np.full(labels.shape, -1)
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    for cells in np.split(order, bounds):
        if cells.size == 0 or labels[cells[0]] < 0:
            continue
        top = cells[np.argmax(density[cells])]
        faint = density[top] <= floor
        if faint and float(cell_mass[cells].sum()) < params.min_mass:
            continue  # (the cap only removes mass: most basins of a spread density end here)
        # a cell exactly at the cap (N/8 cells away on S^1) is in, whatever the round-off
        dist = np.arccos(np.clip(graph.points[cells] @ graph.points[top], -1.0, 1.0))
        cells = cells[dist <= cap * CAP_SLACK]
        mass = float(cell_mass[cells].sum())
        if mass < params.min_mass:
            continue
        if faint and not _cell_scale_atom(cells, top, density, cell_mass, graph, params.contrast, mass):
            continue
        unit, core = core_of(cells, cell_mass, graph, graph.points[top], radii.core)
        owner[cells] = len(masses)
        masses.append(mass), cores.append(core), units.append(unit)
    d = graph.points.shape[1]
    mass = np.asarray(masses, dtype=float)
    return AtomSet(mass, np.asarray(cores, dtype=float), np.asarray(units, dtype=float).reshape(-1, d),
                   total - float(mass.sum()), owner)


def detect(pointer: np.ndarray, density: np.ndarray, cell_mass: np.ndarray, graph: CellGraph,
           params: AtomParams, radii: Radii) -> AtomSet:
    """Atoms by ``params.method`` (see the module docstring).

    Parameters
    ----------
    pointer : ndarray of int, shape (n,)
        Where each cell's mass flows (itself at a sink, -1 at a source); unused by ``paper``.
    density, cell_mass : ndarray, shape (n,)
    graph : CellGraph
    params : AtomParams
    radii : Radii
    """
    if params.method == "paper":
        labels = paper_labels(density, graph, float(np.sum(cell_mass)), params.contrast, radii.group)
        return measure_atoms(labels, density, cell_mass, graph, params, radii, np.inf)
    labels = split_at_saddles(follow(pointer), density, graph, params.saddle_ratio)
    return measure_atoms(labels, density, cell_mass, graph, params, radii, radii.cap)
