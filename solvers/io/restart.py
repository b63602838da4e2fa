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
"""

from __future__ import annotations

from typing import Any

import numpy as np


def restart_attributes(restart: Any, after: float) -> dict[str, Any]:
    """Attributes of :data:`RESTART` for the step state ``restart``
    (:class:`~solvers.core.snapshot.Restart`) behind the record at time ``after``."""
    attrs = {"restart_time": float(restart.t), "restart_step": int(restart.step),
             "restart_dt": float(restart.dt), "after_time": float(after)}
    atoms = getattr(restart, "atoms", None)
    if atoms is not None:
        attrs["restart_dirac_count"] = int(atoms.count)
        if atoms.count:
            attrs.update(restart_dirac_mass=np.asarray(atoms.mass, float),
                         restart_dirac_position=np.asarray(atoms.position, float).ravel(),
                         restart_dirac_id=np.asarray(atoms.ids, np.int64))
    return attrs


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


def restart_state(attrs: dict[str, Any], rho: Any, last_time: float
                  ) -> tuple[float, int, float, np.ndarray] | None:
    """``(t, step, dt, rho)`` of the archived step state when it belongs to the last record
    (its ``after_time`` is ``last_time``), else None (the last record is a step state)."""
    after = attrs.get("after_time")
    if after is None or float(after) != float(last_time):
        return None
    return (float(attrs["restart_time"]), int(attrs["restart_step"]), float(attrs["restart_dt"]),
            np.asarray(rho, dtype=float))


def resume_start(record: tuple[float, int, float, np.ndarray],
                 restart: tuple[float, int, float, np.ndarray] | None) -> dict[str, Any]:
    """Where a resume starts (``simulate``'s ``rho0, t0, step0, dt0, after``): the last record
    ``(t, step, dt, rho)``, or the step state behind it when the record is interpolated;
    snapshots continue after the record's time either way."""
    t, step, dt, rho = record if restart is None else restart
    return {"rho": np.asarray(rho, dtype=float), "t0": float(t), "step0": int(step),
            "dt0": float(dt), "after": float(record[0])}

