"""What the commands show while they work, on stderr, and the lowest-density check of a run.

- On a terminal: a tqdm bar redrawn in place.
- Elsewhere (a pipe, a file, a CI log): no carriage returns; a plain line at most every
  ``LINE_EVERY`` seconds and one at the end (:class:`ProgressBar`), or nothing
  (:class:`Counter`, whose commands print their own result lines).
- Disabled (``--no-progress``, ``output.progress = false``, ``-q``): nothing.

A run that stops on stationarity (``time.stop_when_stationary``) has no meaningful ETA: its
bar shows, instead of a percentage and a remaining time, the stationarity measure of the last
snapshot against ``time.stationary_tol`` (``rate``: transport rate / mass, or ``velocity``:
max support velocity) and which stop criteria hold over the window and which do not yet
(``window``, ``transport``, ``atoms``, ``masses``: :class:`solvers.core.snapshot.Stationarity`);
the run stops when all four hold::

    t=181.000/5000 [00:01, rate 2.6e-03 > tol 1e-05; holds: window; not yet: transport, atoms, masses | steps=4666 ...]
"""

from __future__ import annotations

import os
import sys
import time as wallclock
from typing import Any

from solvers.cli.logs import stderr_is_terminal

NEGATIVE_TOL = 1e-9  # min rho below -NEGATIVE_TOL * max rho: not a probability density
LINE_EVERY = 10.0  # seconds between two plain progress lines (stderr not a terminal)
CRITERIA = ("window", "transport", "atoms", "masses")
MAX_WIDTH = 100  # widest bar (characters), and never wider than the terminal


def bar_width() -> int:
    """Columns of a bar: the terminal's (``COLUMNS`` when set, else stderr's size), at most
    :data:`MAX_WIDTH`; tqdm cuts a longer line to it."""
    columns = os.environ.get("COLUMNS", "")
    if not columns.isdigit() or int(columns) == 0:
        try:
            columns = os.get_terminal_size(sys.stderr.fileno()).columns
        except (ValueError, OSError, AttributeError):  # not a terminal (a test's stream)
            columns = MAX_WIDTH
    return max(10, min(int(columns), MAX_WIDTH))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _write(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


class ProgressBar:
    """``progress(t, step, dt, diagnostics)`` callback of :func:`simulate` on stderr.

    Parameters
    ----------
    t0, t_end : float
        Start and end of the run's time interval.
    enabled : bool
        False: draw nothing (the object still records ``t`` and ``step``).
    time : TimeParams, optional
        The run's ``config.time``: with ``stop_when_stationary`` the bar shows the
        stationarity measure and criteria (pass :meth:`track` as a tracker) instead of an ETA.
    terminal : bool, optional
        Draw in place (tqdm); default: whether stderr is a terminal.
    """

    def __init__(self, t0: float, t_end: float, enabled: bool = True, time: Any = None,
                 terminal: bool | None = None) -> None:
        self.t, self.step, self.t_end = t0, 0, t_end
        self.time = time
        self.stationary = bool(time is not None and time.stop_when_stationary)
        self.enabled = enabled
        self.bar: Any = None
        self._extra, self._rate, self._station, self._dt = "", "", "", 0.0
        self._start = self._last_line = wallclock.perf_counter()
        self._updated = False
        if enabled and (stderr_is_terminal() if terminal is None else terminal):
            from tqdm import tqdm

            fmt = ("t={n:.3f}/{total:g} [{elapsed}{postfix}]" if self.stationary else
                   "{percentage:3.0f}%|{bar}| t={n:.3f}/{total:g} [{elapsed}<{remaining}{postfix}]")
            self.bar = tqdm(total=t_end, initial=t0, file=sys.stderr, bar_format=fmt,
                            ncols=bar_width(), leave=True)

    def track(self, snap: Any) -> None:
        """Tracker (``tracker(snapshot)``): keeps the snapshot's stop criteria for the bar."""
        if not (self.enabled and self.stationary) or snap.stationarity is None:
            return
        held = [name for name in CRITERIA if getattr(snap.stationarity, name)]
        waiting = [name for name in CRITERIA if name not in held]
        self._station = (f"; holds: {', '.join(held) or 'none'}"
                         + (f"; not yet: {', '.join(waiting)}" if waiting else ""))

    def _measure(self, diagnostics: Any) -> str:
        """The stationarity measure of the last snapshot against its tolerance."""
        tol = self.time.stationary_tol
        if self.time.stationary_measure == "velocity":
            name, value = "velocity", diagnostics.max_support_velocity
        else:
            name, value = "rate", diagnostics.transport_rate / max(abs(diagnostics.mass), 1e-300)
        return f"{name} {value:.1e} {'<=' if value <= tol else '>'} tol {tol:.0e}"

    def __call__(self, t: float, step: int, dt: float, diagnostics: Any = None) -> None:
        self.t, self.step, self._dt = t, step, dt
        if not self.enabled:
            return
        self._updated = True
        if diagnostics is not None:
            self._extra = f" E={diagnostics.energy:.6g} atoms={diagnostics.n_atoms}"
            if self.stationary:
                self._rate = self._measure(diagnostics)
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            self.bar.update(min(t, self.bar.total) - self.bar.n)
        elif wallclock.perf_counter() - self._last_line >= LINE_EVERY:
            self._line()

    def _postfix(self) -> str:
        """Stationarity first (what decides the end of the run), then the step counters."""
        steps = f"steps={self.step} dt={self._dt:.2e}{self._extra}"
        return f"{self._rate}{self._station} | {steps}" if self._rate else steps

    def _line(self) -> None:
        self._last_line = now = wallclock.perf_counter()
        share = "" if self.stationary else f" ({100 * min(self.t / self.t_end, 1.0):.0f}%)"
        head = f"progress: t={min(self.t, self.t_end):.3f}/{self.t_end:g}{share} [{_clock(now - self._start)}] "
        line = head + self._postfix()
        if len(line) > MAX_WIDTH:  # a log's lines stay as narrow as a bar: the essentials first
            held = self._station.split("; not yet:")[0]
            line = head + (f"{self._rate}{held} | steps={self.step}" if self._rate else
                           f"steps={self.step} dt={self._dt:.2e}")
        _write(line[:MAX_WIDTH])

    def close(self) -> None:
        """End the bar (terminal) or write the last plain line (when anything was shown)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.enabled and self._updated:
            self._line()
            self._updated = False


class Counter:
    """A count of finished items (frames, runs) on a terminal; nothing elsewhere.

    ``update(n)`` adds ``n`` done; ``write(line)`` prints a line above the bar (or plainly);
    ``close()`` removes the bar. Use as a context manager.
    """

    def __init__(self, total: int, what: str, enabled: bool = True,
                 terminal: bool | None = None) -> None:
        self.done, self.total = 0, total
        self.bar: Any = None
        if enabled and (stderr_is_terminal() if terminal is None else terminal):
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=what, file=sys.stderr, ncols=bar_width(),
                            leave=False, bar_format="{desc}: {n_fmt}/{total_fmt} |{bar}| "
                                                    "[{elapsed}<{remaining}{postfix}]")

    def __enter__(self) -> Counter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1, total: int | None = None, note: str = "") -> None:
        self.done += n
        if self.bar is None:
            return
        if note:
            self.bar.set_postfix_str(note, refresh=False)
        self.bar.update(n)
        if total is not None and total != self.bar.total:
            self.bar.total = total
            self.bar.refresh()
        elif self.bar.total and self.bar.n >= self.bar.total:
            self.bar.refresh()  # the last count is drawn even when it comes within tqdm's mininterval

    def write(self, line: str, file: Any = None) -> None:
        """Print ``line`` (to stdout by default) without breaking the bar."""
        file = sys.stdout if file is None else file
        if self.bar is not None:
            self.bar.write(line, file=file)
        else:
            print(line, file=file, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class LowestDensity:
    """Tracker of the lowest density of a run (a negative one fails the run)."""

    def __init__(self) -> None:
        self.min, self.t, self.scale = float("inf"), 0.0, 0.0

    def __call__(self, snap: Any) -> None:
        d = snap.diagnostics
        self.scale = max(self.scale, abs(d.max_rho))
        if d.min_rho < self.min:
            self.min, self.t = d.min_rho, snap.t

    def verdict(self, config: Any) -> int:
        if self.min >= -NEGATIVE_TOL * self.scale:
            return 0
        fix = "use time.scheme = \"fv\" (positivity preserving)" if \
            config.time.scheme != "fv" else "lower time.cfl"
        print(f"error: the density went negative (min rho = {self.min:.3g} at t = {self.t:.6g}): "
              f"not a probability density; {fix} or raise domain.resolution", file=sys.stderr)
        return 1
