"""The starting points of an Sd run: a sample of ``S^{d-1}`` with weights, and the config's atoms.

``[initial] kind = "uniform"``: ``n`` points with equal weights ``M / n`` that integrate the
uniform measure well:

- d = 2: the equispaced angles ``2 pi (k + 1/2) / n`` (exact for every trigonometric polynomial
  of degree below ``n``);
- d = 3: the Fibonacci lattice (latitudes ``z_k = 1 - (2k + 1)/n``, longitudes by the golden
  angle), whose cap discrepancy falls like ``n^{-3/4}``;
- d >= 4: a scrambled Sobol sequence (``SAMPLE_SEED``) mapped to normal vectors by the inverse
  normal distribution function and normalised: uniform on the sphere, and with a lower
  discrepancy than independent points.

``modes = [[j, amplitude], ...]`` multiply the weights by ``1 + sum amplitude Z_j(x.e_d)``, where
``Z_j = C_j^{(d/2-1)} / C_j^{(d/2-1)}(1)`` is the zonal Gegenbauer harmonic of degree j about the
last axis ``e_d`` (``cos(j t)`` on the circle, the Legendre polynomial ``P_j`` on S^2), and are
then scaled to the mass ``M``: the density ``(M/|S^{d-1}|)(1 + sum amplitude Z_j)``.

``kind = "atoms"``: the config's Dirac atoms, and the mass ``M - sum weights`` (if any) as the
uniform sample above.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from solvers.core.measure import DiracAtoms
from solvers.hypersphere.points import normalise
from solvers.model.params import InitialParams

SAMPLE_SEED = 20260121  # the scrambled Sobol sequence of d >= 4 (a fixed seed: runs repeat)


def zonal(j: int, d: int, t: np.ndarray) -> np.ndarray:
    """``Z_j(t) = C_j^{(d/2-1)}(t) / C_j^{(d/2-1)}(1)`` (``T_j = cos(j arccos t)`` at d = 2)."""
    t = np.clip(np.asarray(t, float), -1.0, 1.0)
    if d == 2:
        return np.cos(j * np.arccos(t))
    alpha = d / 2.0 - 1.0
    return special.eval_gegenbauer(j, alpha, t) / special.eval_gegenbauer(j, alpha, 1.0)


def uniform_points(n: int, d: int) -> np.ndarray:
    """``n`` unit vectors of ``R^d`` that sample the uniform measure (module docstring), (n, d)."""
    k = np.arange(n) + 0.5
    if d == 2:
        t = 2.0 * np.pi * k / n
        return np.stack([np.cos(t), np.sin(t)], axis=1)
    if d == 3:
        z = 1.0 - 2.0 * k / n
        r = np.sqrt(np.maximum(0.0, 1.0 - z * z))
        phi = np.pi * (3.0 - np.sqrt(5.0)) * np.arange(n)
        return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)
    import warnings

    from scipy.stats import qmc

    with warnings.catch_warnings():  # balance needs n a power of 2; any n is still uniform
        warnings.simplefilter("ignore", UserWarning)
        u = qmc.Sobol(d, scramble=True, seed=SAMPLE_SEED).random(n)
    g = special.ndtri(np.clip(u, 1e-300, 1.0 - 1e-16))
    return normalise(g)


def initial_points(initial: InitialParams, n: int, d: int) -> DiracAtoms:
    """The starting points (masses, unit vectors (p, d), identities: -1 for the sample, ``0 ..``
    for the config's atoms) of ``initial`` with ``n`` sample points."""
    atoms_mass = np.asarray(initial.weights, float) if initial.kind == "atoms" else np.zeros(0)
    rest = initial.mass - float(atoms_mass.sum())
    x = uniform_points(n, d) if rest > 0 else np.zeros((0, d))
    w = np.ones(x.shape[0])
    for j, amp in ((int(m[0]), float(m[1])) for m in initial.modes):
        w = w + amp * zonal(j, d, x[:, -1])
    if np.any(w <= 0):
        raise ValueError("initial.modes: the amplitudes make the density negative somewhere "
                         "(1 + sum amplitude Z_j must stay positive); lower them")
    w = w * (rest / w.sum()) if x.shape[0] else w
    if initial.kind != "atoms":
        return DiracAtoms(w, x, np.full(w.size, -1))
    centres = normalise(np.asarray(initial.centers, float).reshape(-1, d))
    return DiracAtoms(np.concatenate([w, atoms_mass]), np.concatenate([x, centres]),
                      np.concatenate([np.full(w.size, -1), np.arange(atoms_mass.size)]))
