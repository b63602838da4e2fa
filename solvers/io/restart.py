"""The step state behind an interpolated last record (``restart_rho``, docs/archive.md): its
attributes as written, and the state a resume continues from as read back.

A record interpolated between two steps (``output.snapshot_mode = "interpolate"``) is not a
state of the scheme; a resume continues from the step state ``u_n`` before it, so that it takes
the uninterrupted run's steps. The archive keeps ``u_n`` in :data:`~solvers.io.layout.RESTART`
with the record it belongs to (``after_time``): a crash between writing it and counting the
record complete leaves an ``after_time`` that no complete record has, and it is ignored.

A measure-valued step state (``[atoms] representation = "dirac"``) keeps its density in
``restart_rho`` and its Dirac atoms in attributes of it: ``restart_dirac_count``, and when
there are any, ``restart_dirac_mass`` (n,), ``restart_dirac_position`` (n angles on S^1, n x 3
unit-vector components on S^2, row by row) and ``restart_dirac_id`` (n,).

NetCDF archives keep these values in a float64 vector, :data:`RESTART_INFO`, not in attributes:
netCDF-C rewrites an attribute by deleting and re-creating it in the variable's HDF5 object
header, and a process killed while such a header is being flushed can leave a file that does
not open ("Can't open HDF5 attribute"). A vector is rewritten in place. Its layout:
``[after_time, restart_time, restart_step, restart_dt, n, d, mass (n), position (d n),
id (n)]``, ``n = -1`` for a state without Dirac atoms, ``d`` the coordinates of a position (1 on
S^1, 3 on S^2); ``after_time`` is written last, and a longer vector written before leaves a
tail that ``n`` excludes. The readers (:func:`fold_block_state`) turn it back into the
attributes above, so that a loaded archive looks the same whichever way it was stored.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.core.snapshot import RunState

RESTART_INFO = "restart_info"  # NetCDF: the attributes of restart_rho as one vector (see above)
RESTART_INFO_DIM = "restart_len"
# NetCDF: the record counts as 0-d variables, rewritten in place (zarr: global attributes)
COUNT_VARIABLES = ("records_complete", "records_written")
_SCALARS = ("after_time", "restart_time", "restart_step", "restart_dt")


def restart_attributes(restart: RunState, after: float) -> dict[str, Any]:
    """Attributes of :data:`RESTART` for the step state ``restart`` (its ``atoms`` read out:
    :meth:`solvers.timestepping.simulation.Solver.with_density`) behind the record at time
    ``after``."""
    attrs = {"restart_time": float(restart.t), "restart_step": int(restart.step),
             "restart_dt": float(restart.dt), "after_time": float(after)}
    atoms = restart.atoms
    if atoms is not None:
        attrs["restart_dirac_count"] = int(atoms.count)
        if atoms.count:
            attrs.update(restart_dirac_mass=np.asarray(atoms.mass, float),
                         restart_dirac_position=np.asarray(atoms.position, float).ravel(),
                         restart_dirac_id=np.asarray(atoms.ids, np.int64))
    return attrs


def encode_info(attrs: dict[str, Any]) -> np.ndarray:
    """The :data:`RESTART_INFO` vector of ``attrs`` (as :func:`restart_attributes` gives)."""
    head = [float(attrs[name]) for name in _SCALARS]
    n = int(attrs.get("restart_dirac_count", -1))
    body = [np.asarray(attrs[f"restart_dirac_{k}"], float).ravel()
            for k in ("mass", "position", "id")] if n > 0 else []
    width = body[1].size // n if n > 0 else 0
    return np.concatenate([np.array([*head, float(n), float(width)]), *body])


def decode_info(values: Any) -> dict[str, Any]:
    """The attributes a :data:`RESTART_INFO` vector holds ({} when it is empty or unwritten:
    NaN ``after_time``)."""
    v = np.ma.filled(np.ma.asarray(values, dtype=float), np.nan).ravel()
    if v.size < 6 or not np.all(np.isfinite(v[:6])) or v[4] >= v.size or v[5] not in (0, 1, 3):
        return {}  # unwritten, or damaged: no step state (resumes use the last record)
    attrs: dict[str, Any] = {name: float(x) for name, x in zip(_SCALARS, v[:4])}
    attrs["restart_step"] = int(v[2])
    n = int(v[4])
    if n < 0:
        return attrs
    attrs["restart_dirac_count"] = n
    if n:
        width = int(v[5])
        rest = v[6:6 + (width + 2) * n]
        if rest.size < (width + 2) * n:
            return {}
        attrs.update(restart_dirac_mass=rest[:n],
                     restart_dirac_position=rest[n:(width + 1) * n],
                     restart_dirac_id=rest[(width + 1) * n:].astype(np.int64))
    return attrs


def fold_block_state(ds: Any) -> Any:
    """``ds`` (an xarray.Dataset read from a NetCDF archive) with :data:`RESTART_INFO` folded
    into the attributes of ``restart_rho`` and the :data:`COUNT_VARIABLES` into global
    attributes, as archives written before them (and zarr stores) hold them."""
    if RESTART_INFO in ds.variables:
        info = decode_info(ds[RESTART_INFO].values)
        ds = ds.drop_vars(RESTART_INFO)
        unlimited = ds.encoding.get("unlimited_dims")
        if unlimited:  # (else writing the Dataset out declares a dimension it lacks)
            ds.encoding["unlimited_dims"] = set(unlimited) - {RESTART_INFO_DIM}
        if "restart_rho" in ds.variables:
            ds["restart_rho"].attrs.update(info)
    counts = [name for name in COUNT_VARIABLES if name in ds.variables]
    if counts:
        values = {name: int(ds[name].values) for name in counts}
        ds = ds.drop_vars(counts)
        ds.attrs.update(values)
    return ds


def restart_atoms(attrs: dict[str, Any], last_time: float, dim: int) -> Any:
    """The Dirac atoms (:class:`~solvers.core.measure.DiracAtoms`, positions of ``dim`` = 1 or 3
    coordinates) of the archived step state when it belongs to the last record (as
    :func:`restart_state`) and is measure-valued; else None."""
    from solvers.core.measure import DiracAtoms

    after = attrs.get("after_time")
    if after is None or float(after) != float(last_time) or "restart_dirac_count" not in attrs:
        return None
    n = int(np.asarray(attrs["restart_dirac_count"]).ravel()[0])
    if n == 0:
        return DiracAtoms.empty(dim)
    mass = np.atleast_1d(np.asarray(attrs["restart_dirac_mass"], float))[:n]
    pos = np.atleast_1d(np.asarray(attrs["restart_dirac_position"], float))
    ids = np.atleast_1d(np.asarray(attrs["restart_dirac_id"])).astype(int)[:n]
    pos = pos[:n] if dim == 1 else pos[: 3 * n].reshape(n, 3)
    return DiracAtoms(mass, pos, ids)


def restart_state(attrs: dict[str, Any], rho: Any, last_time: float) -> RunState | None:
    """The archived step state (``t``, ``step``, ``dt`` and the density ``rho`` as its state)
    when it belongs to the last record (its ``after_time`` is ``last_time``), else None (the
    last record is a step state)."""
    after = attrs.get("after_time")
    if after is None or float(after) != float(last_time):
        return None
    return RunState(float(attrs["restart_time"]), int(attrs["restart_step"]),
                    float(attrs["restart_dt"]), np.asarray(rho, dtype=float))


def resume_start(record: tuple[float, int, float, np.ndarray],
                 restart: RunState | None) -> RunState:
    """Where a resume starts: the last record ``(t, step, dt, rho)``, or the step state behind it
    (:func:`restart_state`) when the record is interpolated; snapshots continue after the
    record's time either way."""
    t, step, dt, rho = record if restart is None else (restart.t, restart.step, restart.dt,
                                                       restart.rho)
    return RunState(float(t), int(step), float(dt), np.asarray(rho, dtype=float))
