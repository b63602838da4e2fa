"""Finite volumes on S^1 with a face on each corner of the perceptron velocity (``time.kink_faces``).

A ReLU or leaky-ReLU unit's velocity ``omega sigma(a.x + b) (a.tau)`` (paper eq. 2.7) is
continuous with a corner where ``a.x + b = 0``. Where the speed has its minimum at such a corner,
a sink of the flow is born when that minimum crosses zero, and the mass that reaches the corner
from then on stays there: it decides how the diffuse mass splits between atoms. The fv scheme
samples the velocity at faces, so on the uniform grid a sink born at a corner inside a cell is
seen only once the sign change reaches the nearest face, a delay of about ``c d / (du/dt)``
(``c`` the corner's slope, ``d`` the corner's distance to the face). That delay depends on where
the corner falls in its cell, which is why the paper demo's atom masses jumped by 0.006 between
N = 256 and N = 288 (docs/methods.md §6.2).

Here the face nearest each corner is moved onto it. The state stays the cell mass divided by
``h`` (``rho``, what every diagnostic and the archive read, with ``cell_weight = h``); the two
cells beside a moved face have widths ``h + delta`` and ``h - delta`` (``|delta| <= h/2``), so
the reconstruction works on the density ``rho * h / width`` and the CFL rate on ``|u| / width``.
Mass stays exact (the fluxes still telescope) and so does positivity (the outflow limiter
compares a cell's outflow with its content). The attention at a moved face is the band-limited
field evaluated there (:meth:`spectral.CircleBasis.evaluate`); the perceptron's is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.model import perceptron
from solvers.model.params import PerceptronParams
from spectral import CircleBasis

KINKED_ACTIVATIONS = ("relu", "leaky_relu")  # sigma has a corner at 0
MIN_WIDTH = 0.25  # a face is not moved if a cell would get narrower than this many h


@dataclass(frozen=True)
class FaceLayout:
    """Right faces of the S^1 cells, some moved onto perceptron corners.

    Attributes
    ----------
    faces : ndarray, shape (N,)
        Right-face angles (``basis.faces`` except at ``moved``).
    moved : ndarray of int, shape (m,)
        Indices of the moved faces (face ``i`` is the right face of cell ``i``).
    scale : ndarray, shape (N,)
        ``h / width`` of each cell: the cell's density is ``rho * scale``.
    """

    faces: np.ndarray
    moved: np.ndarray
    scale: np.ndarray


def perceptron_kinks(p: PerceptronParams) -> np.ndarray:
    """Angles in ``[0, 2 pi)`` where a kinked unit has ``a_j.x + b_j = 0``, sorted, shape (m,).

    Units with ``|b_j| >= |a_j|`` have no such point on S^1 (or touch it without crossing);
    smooth activations have none.
    """
    if p.n_units == 0 or p.activation not in KINKED_ACTIVATIONS:
        return np.zeros(0)
    out = []
    for a, b in zip(np.asarray(p.a, dtype=float), np.asarray(p.b, dtype=float)):
        r = float(np.hypot(a[0], a[1]))
        if r == 0.0 or abs(b) >= r:
            continue
        phi, d = float(np.arctan2(a[1], a[0])), float(np.arccos(-b / r))
        out += [(phi + d) % (2.0 * np.pi), (phi - d) % (2.0 * np.pi)]
    return np.sort(np.asarray(out, dtype=float))


def sink_corners(p: PerceptronParams, sign: float, eps: float = 1e-7) -> np.ndarray:
    """The corners (:func:`perceptron_kinks`) that are sinks of the perceptron's flow.

    There the flow velocity ``u = s d(v/2)/dtheta`` (``sign`` = s) vanishes (as where every
    unit is off) and neither one-sided slope is positive, one is negative: the perceptron drives mass into the corner from at least one side and out of it
    from none. The paper's S^1 descent has one, at 85.4 degrees (slopes 0 and -0.632). Shape (m,).
    """
    kinks = perceptron_kinks(p)
    if kinks.size == 0:
        return kinks
    u = sign * perceptron.circle_velocity(p, kinks)
    left = (u - sign * perceptron.circle_velocity(p, kinks - eps)) / eps
    right = (sign * perceptron.circle_velocity(p, kinks + eps) - u) / eps
    scale = float(np.abs(np.asarray(p.omega, dtype=float)).sum()) * float(np.abs(np.asarray(p.a)).max())
    zero = np.abs(u) <= 1e-12 * max(scale, 1e-300)
    slope = 1e-9 * max(scale, 1e-300)  # "not positive" and "negative", beyond the differences' round-off
    return kinks[zero & (left <= slope) & (right <= slope) & (np.minimum(left, right) < -slope)]


def holds_together(left: np.ndarray, right: np.ndarray, u_left: np.ndarray, u_right: np.ndarray,
                   corners: np.ndarray) -> np.ndarray:
    """Whether the flow holds each arc ``[left, right)`` together, shapes (r,): the flow velocity
    points into it at both ends (``u_left >= 0 >= u_right``), or the arc holds one of the sink
    ``corners`` (:func:`sink_corners`), which the perceptron drives mass into from one side.

    The rule of both S^1 Dirac states for a concentration to become an atom
    (:func:`solvers.circle.measure.dirac_events.forms_atom`, :func:`solvers.circle.measure.lagrangian.held_runs`;
    docs/methods.md §6.2, the Dirac state's capture).
    """
    held = (np.asarray(u_left) >= 0.0) & (np.asarray(u_right) <= 0.0)
    if corners.size:
        width = np.mod(np.asarray(right) - np.asarray(left), 2.0 * np.pi)
        offset = np.mod(corners[None, :] - np.asarray(left)[:, None], 2.0 * np.pi)
        held |= np.any(offset < width[:, None], axis=1)
    return held


def uniform_layout(basis: CircleBasis) -> FaceLayout:
    """The uniform grid's faces (nothing moved)."""
    return FaceLayout(basis.faces.copy(), np.zeros(0, dtype=int), np.ones(basis.n))


def kink_face_layout(basis: CircleBasis, kinks: np.ndarray) -> FaceLayout:
    """Move the face nearest each of ``kinks`` (angles, shape (m,)) onto it.

    A kink whose nearest face is already taken by another kink, or whose move would leave a
    cell narrower than ``MIN_WIDTH * h``, keeps the uniform face (it lies within a cell or two
    of a moved one).
    """
    h, n = basis.h, basis.n
    faces, width = basis.faces.copy(), np.full(n, h)
    moved: list[int] = []
    for angle in np.asarray(kinks, dtype=float):
        j = int(np.rint(angle / h - 0.5)) % n
        delta = float((angle - basis.faces[j] + np.pi) % (2.0 * np.pi) - np.pi)
        right = (j + 1) % n
        if j in moved or min(width[j] + delta, width[right] - delta) < MIN_WIDTH * h:
            continue
        faces[j] += delta
        width[j] += delta
        width[right] -= delta
        moved.append(j)
    order = np.sort(np.asarray(moved, dtype=int))
    return FaceLayout(faces, order, h / width)


def layout_for(basis: CircleBasis, p: PerceptronParams, kink_faces: bool) -> FaceLayout:
    """``kink_face_layout`` of the perceptron's kinks when ``kink_faces``, else uniform."""
    if not kink_faces:
        return uniform_layout(basis)
    return kink_face_layout(basis, perceptron_kinks(p))

