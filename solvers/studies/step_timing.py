"""The seconds one time step of a config takes on this machine, timed once and cached.

:func:`solvers.model.cost.step_seconds` reads the cache (it lives below the solver and cannot
time a step itself); :func:`ensure_step_timing` fills it, once per key
(:func:`solvers.model.cost.step_key`: manifold, scheme, representation, integrator,
resolution, initial kind and attention), in :func:`solvers.model.cost.timing_file` (the numba
cache folder of the current kernel sources, so a change of the kernels times them again).

:func:`time_step` builds a :class:`~solvers.timestepping.simulation.Solver` of its own from the
config's initial state, takes one step (it loads the compiled kernels, which the run then
finds loaded), then times at least :data:`MIN_PROBE_STEPS` (two, where a step takes more
than a third of the budget: the lesser of the two is kept, since a step that meets a kernel
not yet compiled pays the compilation once) and at most :data:`MAX_PROBE_STEPS` more, until
:data:`PROBE_BUDGET_S` seconds have passed, and returns their median: a step without the
occasional event (an atom born, a hand-over; the estimate's factor per method counts those,
:data:`solvers.model.cost.STEP_FACTOR`), and not one step that a busy moment made short or
long. Each step counts the lesser of its wall and its CPU time: other processes on a busy
machine lengthen the wall time of a step, not its CPU time, and a step on several threads
takes more CPU than wall time. A config whose step the constants put above
:data:`PROBE_MAX_STEP_S` is not timed (its grid is not built for a probe), and a timing more
than :data:`~solvers.model.cost.PROBE_MAX_RATIO` times the constants' is not kept (a probe that met a compilation
or a machine busy with other work: the estimate then uses the constants). Nothing is written
but the cache, and nothing is shared with a run but what the process loads anyway (compiled
kernels, the transforms' plans): the run's answer does not depend on it. The probe runs in
the calling process: a later companion run then starts by ``spawn`` where a thread pool or
SHTns is loaded (:mod:`solvers.studies.companion`).
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from dataclasses import replace
from pathlib import Path

from solvers.model.cost import (PROBE_MAX_RATIO, cached_step_seconds, fallback_step_seconds,
                                read_timings, step_key, timing_file)
from solvers.model.params import RunConfig

log = logging.getLogger(__name__)

MIN_PROBE_STEPS, MAX_PROBE_STEPS = 3, 8  # timed steps a probe takes at least, at most
PROBE_BUDGET_S = 0.3  # the probe stops taking steps once it has run this long
PROBE_MAX_STEP_S = 0.6  # no probe where the constants give a longer step


def time_step(config: RunConfig, budget_s: float = PROBE_BUDGET_S) -> float:
    """Seconds of one time step of ``config`` measured here (module docstring).

    Parameters
    ----------
    config : RunConfig
        A validated config; its initial state is built anew, its output path never opened.
    budget_s : float
        The probe takes no further step once this many seconds have passed.

    Returns
    -------
    float
        The median of the timed steps.
    """
    from solvers.io.state import initial_state
    from solvers.timestepping.simulation import Solver

    probe = replace(config, time=replace(config.time, stop_when_stationary=False),
                    output=replace(config.output, progress=False))
    rho0, atoms0 = initial_state(probe)
    solver = Solver(probe, rho0, atoms0=atoms0)
    if probe.time.t_end <= 0:
        raise ValueError("the probe takes no step (t_end <= 0)")
    solver.step(probe.time.t_end)  # loads the compiled kernels: not timed
    taken: list[float] = []
    start = time.perf_counter()
    while len(taken) < MAX_PROBE_STEPS and solver.t < probe.time.t_end:
        t0, c0 = time.perf_counter(), time.process_time()
        solver.step(probe.time.t_end)
        taken.append(min(time.perf_counter() - t0, time.process_time() - c0))
        slow = len(taken) >= 2 and min(taken) > budget_s / MIN_PROBE_STEPS  # two such are enough
        if (len(taken) >= MIN_PROBE_STEPS or slow) and time.perf_counter() - start > budget_s:
            break
    if not taken:
        raise ValueError("the probe reached t_end in one step")
    return float(statistics.median(taken) if len(taken) >= MIN_PROBE_STEPS else min(taken))


def write_timing(path: Path, key: str, seconds: float) -> None:
    """Add ``key: seconds`` to the cache at ``path``, through the project's writer
    (:func:`solvers.io.safe_paths.write_text`: built aside and renamed over it, so that a
    reader never sees half a file; a link or anything but a plain file there is refused)."""
    from solvers.io.safe_paths import write_text

    data = read_timings(path)
    data[key] = float(seconds)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(data, indent=1, sort_keys=True))


def ensure_step_timing(config: RunConfig, path: Path | None = None) -> float | None:
    """The cached seconds per step of ``config`` (:func:`solvers.model.cost.step_key`), timed
    here and cached at first use; None where the probe fails or is not taken (module
    docstring: then the estimate uses its constants, :func:`solvers.model.cost.step_seconds`).

    Parameters
    ----------
    config : RunConfig
        A validated config.
    path : Path, optional
        The cache file (default :func:`solvers.model.cost.timing_file`).
    """
    path = timing_file() if path is None else path
    cached = cached_step_seconds(config, path)
    if cached is not None or config.time.t_end <= 0 \
            or fallback_step_seconds(config) > PROBE_MAX_STEP_S:
        return cached
    try:
        seconds = time_step(config)
    except Exception as err:  # the probe is advisory: any failure leaves the constants
        log.debug("step timing of %s failed: %s", step_key(config), err)
        return None
    if seconds > PROBE_MAX_RATIO * fallback_step_seconds(config):
        log.debug("step timing of %s not kept: %.3g s, the constants %.3g s", step_key(config),
                  seconds, fallback_step_seconds(config))
        return None
    try:
        write_timing(path, step_key(config), seconds)
    except (OSError, ValueError) as err:  # a read-only cache, a link: used once, not kept
        log.debug("step timing not cached at %s: %s", path, err)
    return seconds
