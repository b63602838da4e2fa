"""Microseconds per snapshot, part by part, on the states of the demo run (runs/demo.toml, S^1,
N = 512): what the time loop's ``emit()`` costs beyond the steps.

The run is stepped once (fixed ``time.dt = 0.25``, one state every ``--interval`` up to
``--t-end``, no stationarity stop) and its states are kept; each part is then replayed over
all of them in time order, ``--repeat`` times, and the best pass is reported:

- ``atoms``: the atom detector alone (part of ``diagnostics``): the compiled
  :class:`~solvers.circle.atoms.RingDetector` that ``detect_atoms`` and the diagnostics run;
- ``diagnostics``: ``disc.diagnostics`` (fields, reductions, atoms);
- ``snapshot``: ``Solver.snapshot()`` (diagnostics, warnings, copy of rho) and ``check_state``;
- ``stop rule``: :class:`~solvers.timestepping.stop_rule.StopRule` (identity linking included);
- ``record``: :meth:`~solvers.io.records.RecordBuffer.add` (the archive's record of a
  snapshot: its own identity linking, the mass budget, copies), no file I/O;
- ``total``: ``emit()`` as the time loop does it (snapshot, check_state, stop rule, record).

    .venv/bin/python benchmarks/bench_snapshot_parts.py [--t-end 1000] [--interval 1] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from solvers.circle.atoms import ring_detector
from solvers.core.atom_tracks import AtomTracks
from solvers.io.layout import _make_grid
from solvers.io.records import RecordBuffer
from solvers.io.state import grid_arrays, initial_density
from solvers.model.config import load_config
from solvers.model.params import RunConfig
from solvers.timestepping.simulation import Solver
from solvers.timestepping.stop_rule import StopRule, _link_radius

ROOT = Path(__file__).resolve().parents[1]


def demo_states(t_end: float, interval: float) -> tuple[RunConfig, Solver, list[tuple]]:
    """The demo run's config, its solver and its states ``(t, step, dt, rho)`` at every
    multiple of ``interval`` (t = 0 included)."""
    cfg = load_config(ROOT / "runs" / "demo.toml", [
        f"time.t_end={t_end}", "time.dt=0.25", "time.stop_when_stationary=false",
        f"output.snapshot_interval={interval}", "output.progress=false"])
    solver = Solver(cfg, initial_density(cfg))
    states = [(solver.t, solver.n_steps, solver.dt, solver.rho.copy())]
    k = 1
    while solver.t < t_end:
        target = min(t_end, k * interval)
        while solver.t < target:
            solver.step(target)
        states.append((solver.t, solver.n_steps, solver.dt, solver.rho.copy()))
        k += 1
    return cfg, solver, states


def _set(solver: Solver, state: tuple) -> None:
    solver.t, solver.n_steps, solver.dt, solver.rho = state


def passes(cfg: RunConfig, solver: Solver, states: list[tuple]) -> dict[str, Callable[[], None]]:
    """One replay over all states per part (each a fresh stateful object)."""
    disc, atoms = solver.disc, cfg.atoms
    theta, weight, phi = grid_arrays(cfg)
    grid = _make_grid(cfg, theta, weight, phi)
    beta = cfg.model.beta
    snaps = []
    for state in states:
        _set(solver, state)
        snaps.append(replace(solver.snapshot(), stationarity=None))
    rule = StopRule(cfg, _link_radius(cfg))
    rule_snaps = [replace(s, stationarity=rule(s)) for s in snaps]
    faces = [disc.problem.velocity(disc.problem.basis.forward(s[3]), "face") for s in states]

    detector = ring_detector(theta, beta, atoms)

    def atoms_pass() -> None:
        for state, face in zip(states, faces):
            detector(state[3] * weight, face)

    def diagnostics_pass() -> None:
        for state in states:
            disc.diagnostics(state[3], atoms)

    def snapshot_pass() -> None:
        for state in states:
            _set(solver, state)
            solver.check_state(solver.snapshot())

    def rule_pass() -> None:
        rule = StopRule(cfg, _link_radius(cfg))
        for snap in snaps:
            rule(snap)

    def record_pass() -> None:
        buffer = RecordBuffer(grid, bool(cfg.output.spectral), AtomTracks(_link_radius(cfg), 2))
        for snap in rule_snaps:
            buffer.add(snap, snap.rho)

    def total_pass() -> None:
        rule = StopRule(cfg, _link_radius(cfg))
        buffer = RecordBuffer(grid, bool(cfg.output.spectral), AtomTracks(_link_radius(cfg), 2))
        for state in states:  # emit() of simulation.py, the writer's record for the tracker
            _set(solver, state)
            snap = solver.snapshot()
            solver.check_state(snap)
            snap = replace(snap, stationarity=rule(snap))
            buffer.add(snap, np.asarray(snap.rho, dtype=float))

    return {"atoms": atoms_pass, "diagnostics": diagnostics_pass, "snapshot": snapshot_pass,
            "stop rule": rule_pass, "record": record_pass, "total": total_pass}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-end", type=float, default=1000.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cfg, solver, states = demo_states(args.t_end, args.interval)
    parts = passes(cfg, solver, states)
    best = {name: np.inf for name in parts}
    for _ in range(args.repeat + 1):  # the first pass warms up (numba, caches)
        for name, run in parts.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    n = len(states)
    _set(solver, states[-1])
    print(f"demo.toml N={cfg.domain.resolution}, {n} states (t = 0..{args.t_end:g} every "
          f"{args.interval:g}), {solver.snapshot().diagnostics.n_atoms} atoms at the end, "
          f"best of {args.repeat}")
    print("  ".join(f"{name:>11}" for name in best))
    print("  ".join(f"{1e6 * best[name] / n:8.1f} us" for name in best))
    parts_sum = best["snapshot"] + best["stop rule"] + best["record"]
    print(f"snapshot + stop rule + record: {1e6 * parts_sum / n:.1f} us per snapshot")


if __name__ == "__main__":
    main()
