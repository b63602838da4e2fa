"""Time loop: PLACEHOLDER signature, the real implementation is being written.

CONTRACT (stable):

simulate(config, rho0, *, t0=0.0, step0=0, dt0=None, trackers=(), progress=None) -> RunResult

- config: solvers.params.RunConfig (domain S1 only for now)
- rho0: ndarray shape (N,), cell averages at theta_i = 2 pi i / N, N = config.domain.resolution
- trackers: callables ``tracker(snapshot: Snapshot) -> None`` called at t0 (unless step0 > 0,
  i.e. a resume, where the initial snapshot is already archived), at every multiple of
  config.output.snapshot_interval, and at the final time (always, also on stop by
  stationarity / max_steps).  KeyboardInterrupt propagates to the caller after trackers have
  seen every completed snapshot.
- progress: callable ``progress(t, step, dt, diagnostics_or_None) -> None`` called every few steps
  (at most ~10 times per second of wall time) and at every snapshot with its diagnostics.
- RunResult: .final (Snapshot), .reason in {"t_end", "stationary", "max_steps"}, .n_steps, .wall_time
"""

from __future__ import annotations
