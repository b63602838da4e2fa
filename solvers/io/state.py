"""A run's starting state and grid, for new runs and restarts.

``initial_density(config)`` gives the configured initial density on the run's grid: analytic
kinds come from the manifold object (:meth:`~solvers.core.manifold.Manifold.initial_density`), ``kind =
"archive"`` reads a snapshot of another run here (the only layer that reads archives).
``initial_state(config)`` gives the initial measure as the run's state: the density and, for
``[atoms] representation = "dirac"`` started from the archive of a measure-valued run, that
record's Dirac atoms at their exact positions. ``grid_arrays(config)`` gives the axes the
archive writer records.

A snapshot of a measure-valued run is ``rho dsigma + sum_i m_i delta_{x_i}``; both functions
read all of it. ``initial_density`` puts each atom's mass into the cell that holds it (the
whole measure on the grid, for a grid run or a caller that passes no atoms); ``initial_state``
keeps the atoms as atoms for a Dirac run. Either way ``initial.mass`` scales the whole measure.
"""

from __future__ import annotations

import numpy as np

from solvers.core.measure import DiracAtoms
from solvers.model.config import ConfigError
from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.timestepping.manifolds import manifold_of


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
    rho, atoms = _initial_measure(config)
    return rho if atoms is None else deposit_atoms(config, rho, atoms)


def initial_state(config: RunConfig) -> tuple[np.ndarray, DiracAtoms | None]:
    """``(rho0, atoms0)``: the initial density (as :func:`initial_density`) and the Dirac atoms
    for ``simulate(config, rho0, atoms0=atoms0)``.

    ``atoms0`` is None except for a Dirac run (``[atoms] representation = "dirac"``) started
    from a record of a measure-valued run (``kind = "archive"``): then ``rho0`` is that record's
    diffuse density and ``atoms0`` its Dirac atoms (masses, exact positions, identities), both
    scaled so that the whole measure has mass ``initial.mass``. (``kind = "atoms"`` runs take
    their atoms from the config, in the discretisation.)
    """
    rho, atoms = _initial_measure(config)
    if atoms is None or plan_method(config).representation == "dirac":
        return rho, atoms
    return deposit_atoms(config, rho, atoms), None


def _initial_measure(config: RunConfig) -> tuple[np.ndarray, DiracAtoms | None]:
    """The configured density and, for an archived measure-valued record, its Dirac atoms,
    scaled together to ``initial.mass`` (atoms: None when the record has none)."""
    init, n, manifold = config.initial, config.domain.resolution, manifold_of(config)
    if init.kind != "archive":
        return manifold.initial_density(init, n, point_values=config.time.scheme == "spectral"), None
    axes, rho, atoms = _read_archive(init.path, init.time)
    rho, weight = manifold.density_from_snapshot(axes, rho, n, init.path)
    if atoms is None or atoms.count == 0:
        return manifold.scale_density(rho, init.mass, "initial.path", n), None
    return _scale_measure(config, rho, weight, atoms)


def _scale_measure(config: RunConfig, rho: np.ndarray, weight: np.ndarray | float,
                   atoms: DiracAtoms) -> tuple[np.ndarray, DiracAtoms]:
    """Density and atoms scaled by one factor so that ``sum(rho weight) + sum(m) = initial.mass``."""
    bad = not (np.all(np.isfinite(rho)) and np.all(np.isfinite(atoms.mass)) and np.all(np.isfinite(atoms.position)))
    if bad or rho.min() < 0.0 or atoms.mass.min() < 0.0:
        raise ConfigError("initial.path", f"{config.initial.path}: the archived measure is not finite "
                                          "and nonnegative")
    total = float(np.sum(rho * weight)) + float(np.sum(atoms.mass))
    if not total > 0.0:
        raise ConfigError("initial.path", f"{config.initial.path}: the archived measure has no mass")
    f = config.initial.mass / total
    return rho * f, DiracAtoms(atoms.mass * f, atoms.position.copy(), atoms.ids.copy())


def deposit_atoms(config: RunConfig, rho: np.ndarray, atoms: DiracAtoms) -> np.ndarray:
    """``rho`` (the run's grid shape) with each Dirac atom's mass added to the cell that holds
    it (S^1: the uniform cell ``round(x / h)``; S^2: the fine cell), a copy; mass exact."""
    return manifold_of(config).deposit_atoms(rho, atoms, config.domain.resolution)


def _read_archive(path: str, time: float | None) -> tuple[object, np.ndarray, DiracAtoms | None]:
    """``(axes, rho, atoms)`` of the snapshot nearest ``time`` (atoms: the record's Dirac atoms,
    None for a grid run); problems become ``initial.path`` errors."""
    from solvers.io.reading import existing_archive, read_dirac, read_snapshot

    try:
        existing_archive(path)  # a NetCDF file or a .zarr store
    except FileNotFoundError:
        raise ConfigError("initial.path", f"archive not found: {path} (a run's .nc file or "
                                          ".zarr store)") from None

    try:
        t, axes, rho = read_snapshot(path, time)
        atoms = read_dirac(path, t)
    except ValueError as err:  # not a run archive, or an empty one
        raise ConfigError("initial.path", str(err)) from None
    return axes, np.asarray(rho, dtype=float), atoms


def grid_arrays(config: RunConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(theta, cell_weight, phi)`` of the run's grid for the archive writer.

    S^1: cell centres (N,), widths (N,), None. S^2: ``SphereGrid(lmax)``'s colatitudes (nlat,),
    areas (nlat, nphi) and longitudes (nphi,).
    """
    return manifold_of(config).grid_arrays(config.domain.resolution)
