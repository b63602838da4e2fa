"""A run's starting state and grid, for new runs and restarts.

``initial_density(config)`` gives the configured initial density on the run's grid: analytic
kinds come from :mod:`solvers.circle.initial` / :mod:`solvers.sphere.initial`, ``kind =
"archive"`` reads a snapshot of another run here (the only layer that reads archives).
``grid_arrays(config)`` gives the axes the archive writer records.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from solvers.circle import initial as circle
from solvers.model.config import ConfigError
from solvers.model.params import RunConfig


def initial_density(config: RunConfig) -> np.ndarray:
    """Cell averages of the configured initial density, with total mass ``initial.mass``.

    Parameters
    ----------
    config : RunConfig
        ``domain.resolution`` gives the number of cells N (S^1) or ``lmax`` (S^2);
        ``initial`` the density.

    Returns
    -------
    ndarray, shape (N,) on S^1, (nlat, nphi) of ``SphereGrid(lmax)`` on S^2
        S^1: ``sum(rho) * 2 pi / N == initial.mass``; S^2: ``sum(rho * SphereGrid(lmax).area)``.
        On S^2 with the spectral scheme: values at the Gauss nodes (the scheme's state; on S^1
        the scheme converts cell averages itself, exactly, mode by mode; on S^2 cells are not
        rotation-invariant, so the point values are sampled here).

    Raises
    ------
    ConfigError
        For a negative or non-finite density, zero mass, or a missing or unsuitable archive.
    """
    init, n = config.initial, config.domain.resolution
    if config.domain.manifold == "S2":
        from solvers.sphere import initial as sphere
        from solvers.sphere.grid import SphereGrid

        grid = SphereGrid(n)
        if init.kind == "archive":
            axes, rho = _read_archive(init.path, init.time)
            return sphere.scale(sphere.from_snapshot(axes, rho, grid, init.path), init.mass,
                                "initial.path", grid)
        return sphere.sphere_initial_density(init, grid, point_values=config.time.scheme == "spectral")
    if init.kind == "archive":
        theta, rho = _read_archive(init.path, init.time)
        return circle.scale(circle.from_snapshot(theta, rho, n, init.path), init.mass, "initial.path")
    return circle.circle_initial_density(init, n)


def _read_archive(path: str, time: float | None) -> tuple[object, np.ndarray]:
    """``(axes, rho)`` of the snapshot nearest ``time``; problems become ``initial.path`` errors."""
    if not Path(path).is_file():
        raise ConfigError("initial.path", f"archive not found: {path}")
    from solvers.io.archive import read_snapshot

    try:
        _, axes, rho = read_snapshot(path, time)
    except ValueError as err:  # not a run archive, or an empty one
        raise ConfigError("initial.path", str(err)) from None
    return axes, np.asarray(rho, dtype=float)


def grid_arrays(config: RunConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(theta, cell_weight, phi)`` of the run's grid for the archive writer.

    S^1: cell centres (N,), widths (N,), None. S^2: ``SphereGrid(lmax)``'s colatitudes (nlat,),
    areas (nlat, nphi) and longitudes (nphi,).
    """
    n = config.domain.resolution
    if config.domain.manifold == "S2":
        from solvers.sphere.grid import SphereGrid

        grid = SphereGrid(n)
        return grid.theta, grid.area, grid.phi
    return circle.cell_centers(n), np.full(n, circle.cell_width(n)), None
