"""The verdict's check runs (resolution ladder, time check), in processes beside the main run.

The verdict (:mod:`solvers.studies.verdict`) compares the run's atoms at its final time ``T``
with those of its check runs (:func:`solvers.studies.verdict_runs.check_runs`: the run at half
and a quarter of the resolution, and, for steps that are not error-controlled, the coarsest of
these with every step bound halved). Run after the main run, they add their whole cost to the
wall time. On a machine with two or more cores, where the cost model puts them at
:data:`~solvers.model.cost.CHILD_MIN_S` or more in all, ``meanfield run`` starts each at once in
a child process instead (:func:`start_companions`):

- A child runs its check config from its initial state to ``time.t_end`` with the
  stationary stop off, no trackers but one that queues ``(t, atom masses, atom positions)``
  of each snapshot, and never writes a file. Its result does not depend on the main run or on
  timing: the main run's ``T`` is one of its snapshot times (a stationary stop is judged at
  a snapshot; ``t_end`` is always one), and the steps up to ``T`` are those a companion run
  to ``T`` takes, since both land on the same snapshot times.
- The parent asks :meth:`Companion.atoms_at` for ``T`` when its run ends; it waits for the
  child's snapshot there, then stops the child. Where the child failed, or ``T`` is not one of
  its snapshot times (a run ended by ``time.max_steps``), the answer is None and the verdict
  runs that check in the parent.
- The child ignores Ctrl-C (the parent's handler stops the run and then the child), and
  never outlives its parent (``kill -9`` of the parent, :func:`die_with_parent`): on Linux the
  kernel kills it when the parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and everywhere a
  watcher thread polls the parent's pid every :data:`POLL_S` seconds and ends the child at
  once (``os._exit``: a feeder thread blocked on a full pipe no reader empties cannot hold
  it).

Only the command line uses the children (a process that does nothing else); the Python API
runs the checks after the main run.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue as queues
import signal
import sys
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from solvers.model.cost import usable_cores
from solvers.model.params import RunConfig

log = logging.getLogger(__name__)

WAIT_S = 3600.0  # the longest the parent waits for one answer of the child
POLL_S = 0.2  # how often it looks whether the child still lives


@dataclass(frozen=True)
class CompanionAtoms:
    """The companion's atoms at one snapshot: ``atom_mass`` (n,), ``atom_position`` (n,) on
    S^1 (angles) or (n, 3) on S^2 (unit vectors): what :func:`~solvers.studies.verdict.compare_atoms`
    reads of a diagnostics."""

    t: float
    atom_mass: np.ndarray
    atom_position: np.ndarray


def companion_config(half: RunConfig) -> RunConfig:
    """The child's config: the check run to ``t_end``, no stationary stop, no output."""
    return replace(half, time=replace(half.time, stop_when_stationary=False),
                   output=replace(half.output, progress=False))


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int, poll_s: float = POLL_S) -> None:
    """Make this (child) process end when the process ``parent`` is gone: the kernel's parent
    death signal on Linux (``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through :mod:`ctypes`), and a
    daemon thread that polls :func:`os.getppid` every ``poll_s`` seconds and calls
    :func:`os._exit` once the parent has changed (other systems, or a parent that died before
    the ``prctl``)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the watcher alone
            pass
    if os.getppid() != parent:  # gone already
        os._exit(0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(0)

    threading.Thread(target=watch, name="meanfield-parent-watch", daemon=True).start()


def _child(half: RunConfig, out: Any, parent: int) -> None:
    """The child process: run ``half`` and queue every snapshot's atoms (module docstring)."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.disable(logging.CRITICAL)  # the parent speaks for the run
    try:
        from solvers.io.state import initial_state
        from solvers.timestepping.loop import simulate

        def send(snap: Any) -> None:
            d = snap.diagnostics
            out.put(("atoms", float(snap.t), np.asarray(d.atom_mass, float),
                     np.asarray(d.atom_position, float)))

        rho0, atoms0 = initial_state(half)
        simulate(half, rho0, atoms0=atoms0, trackers=[send], stop=lambda: os.getppid() != parent)
        out.put(("done", None, None, None))
    except BaseException as err:  # noqa: BLE001  (the parent falls back to its own companion)
        out.put(("error", f"{type(err).__name__}: {err}", None, None))
    finally:
        out.close()
        out.join_thread()


def _start_method() -> str:
    """``fork`` (the child inherits the loaded modules and compiled kernels: no start-up), unless
    numba's thread pool already runs in this process, or SHTns is loaded (its OpenMP pool,
    started by the first transform, e.g. while a resume reads its archive): a forked child
    could hang in either. Then ``spawn``, as where there is no fork."""
    if "fork" not in mp.get_all_start_methods() or "_shtns" in sys.modules:
        return "spawn"
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return "spawn" if parallel is not None and getattr(parallel, "_is_initialized", False) else "fork"


def start_companions(config: RunConfig) -> tuple["Companion", ...]:
    """The verdict's checks of ``config`` started in children: the resolution check
    (:func:`~solvers.studies.verdict.coarse_config`), for steps that are not
    error-controlled the time check (:func:`~solvers.studies.verdict.time_check_config`), and
    the resolution ladder's third level (:func:`~solvers.studies.verdict.ladder_config`); none
    on one core."""
    from solvers.studies.verdict_runs import check_runs

    started = tuple(Companion.start_config(check) for check in check_runs(config))
    return tuple(c for c in started if c is not None)


class Companion:
    """One check run of the verdict in a child process (module docstring).

    Use as a context manager around the main run; :meth:`atoms_at` answers once, after it.
    """

    def __init__(self, half: RunConfig) -> None:
        ctx = mp.get_context(_start_method())
        self.half = half
        self._queue = ctx.Queue()
        self._process = ctx.Process(target=_child, args=(companion_config(half), self._queue, os.getpid()),
                                    daemon=True, name="meanfield-companion")
        self._seen: dict[float, CompanionAtoms] = {}
        self._state = "running"

    @classmethod
    def start(cls, config: RunConfig) -> "Companion | None":
        """The resolution check of ``config`` started in a child (None: one core, or no
        check)."""
        from solvers.studies.verdict import coarse_config

        return cls.start_config(coarse_config(config))

    @classmethod
    def start_config(cls, check: RunConfig | None) -> "Companion | None":
        """The run ``check`` started in a child (None: one core, or ``check`` None)."""
        if check is None or usable_cores() < 2:
            return None
        companion = cls(check)
        sys.stdout.flush()  # a forked child would print what waits in these buffers again
        sys.stderr.flush()
        companion._process.start()
        return companion

    def __enter__(self) -> "Companion":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the child (idempotent)."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join(timeout=5.0)
        self._queue.cancel_join_thread()
        self._queue.close()

    def atoms_at(self, t: float) -> CompanionAtoms | None:
        """The companion's atoms at ``t`` (waits for the child), or None (module docstring)."""
        tol = 1e-9 * max(1.0, abs(t))
        while self._state == "running" and not any(abs(s - t) <= tol for s in self._seen):
            if max(self._seen, default=-np.inf) > t + tol:
                break  # past t without a snapshot there
            self._receive()
        self.close()
        found = [a for s, a in self._seen.items() if abs(s - t) <= tol]
        if not found:
            log.debug("companion: no snapshot at t = %g (%s): run in the parent", t, self._state)
        return found[0] if found else None

    def _receive(self) -> None:
        """One message of the child; ``lost`` when it died without a word (killed)."""
        waited = 0.0
        while True:
            try:
                kind, t, mass, position = self._queue.get(timeout=POLL_S)
                break
            except queues.Empty:
                waited += POLL_S
                if waited >= WAIT_S or not self._process.is_alive() and self._queue.empty():
                    self._state = "lost"
                    return
            except (EOFError, OSError):
                self._state = "lost"
                return
        if kind == "atoms":
            self._seen[t] = CompanionAtoms(t, mass, position)
        else:
            self._state = kind
            if kind == "error":
                log.debug("companion failed: %s", t)
