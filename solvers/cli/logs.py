"""What ``meanfield`` prints on stderr besides errors: log records and warnings, one line each.

The package logs through ``logging.getLogger(__name__)`` in every module and configures
nothing; the command line installs one handler on the root logger (:func:`configure`):

- ``-q``: errors only (no warnings, no progress);
- default: warnings (``warning: <message>``) and the commands' info lines;
- ``-v``: debug lines too (``debug <logger>: <message>``), and tracebacks of failures.

Python warnings (the solver's own ``RuntimeWarning``) reach the same handler as one line each
(:func:`one_line_warnings`), never as ``file:line: Category: message`` plus the source line;
NumPy's raw floating-point warnings are debug lines (``-v``). A progress bar drawn on a terminal is cleared before a line is written, so
lines and bar do not mix.
"""

from __future__ import annotations

import logging
import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

QUIET, NORMAL, VERBOSE = -1, 0, 1
LEVELS = {QUIET: logging.ERROR, NORMAL: logging.INFO, VERBOSE: logging.DEBUG}  # ours
OTHERS = {QUIET: logging.ERROR, NORMAL: logging.WARNING, VERBOSE: logging.WARNING}  # libraries
PACKAGE_LOGGERS = ("solvers", "spectral")
WARNINGS_LOGGER = "py.warnings"
log = logging.getLogger(__name__)


class OneLineFormatter(logging.Formatter):
    """``warning: message`` / ``error: message`` / ``message`` (info) /
    ``debug name: message``; newlines in a message are folded into spaces."""

    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        if record.exc_info and record.levelno <= logging.DEBUG:
            text += " | " + " ".join(self.formatException(record.exc_info).split()[-3:])
        if record.levelno >= logging.ERROR:
            return f"error: {text}"
        if record.levelno >= logging.WARNING:
            return f"warning: {text}"
        if record.levelno >= logging.INFO:
            return text
        return f"debug {record.name}: {text}"


class StderrHandler(logging.Handler):
    """Writes to the current ``sys.stderr`` (looked up per record), through tqdm when a
    progress bar may be on screen so that the bar is redrawn below the line."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            tqdm_module = sys.modules.get("tqdm")
            if tqdm_module is not None and getattr(tqdm_module.tqdm, "_instances", None):
                tqdm_module.tqdm.write(text, file=sys.stderr)
            else:
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
        except BrokenPipeError:
            pass
        except Exception:  # noqa: BLE001 (logging's contract: never raise from emit)
            self.handleError(record)


def configure(verbosity: int = NORMAL) -> logging.Handler:
    """Route the root logger to one :class:`StderrHandler` at the level of ``verbosity``
    (``QUIET``, ``NORMAL`` or ``VERBOSE``); a handler installed by an earlier call is replaced.

    The package's loggers (and warnings) get ``LEVELS[verbosity]``; other libraries' loggers
    (matplotlib, numba, dask) stay at warnings (errors with ``-q``): their debug output is
    not the run's.
    """
    verbosity = max(QUIET, min(VERBOSE, verbosity))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, StderrHandler)]:
        root.removeHandler(old)
    handler = StderrHandler()
    handler.setFormatter(OneLineFormatter())
    root.addHandler(handler)
    root.setLevel(OTHERS[verbosity])
    for name in PACKAGE_LOGGERS + (WARNINGS_LOGGER,):
        logging.getLogger(name).setLevel(LEVELS[verbosity])
    # zarr reads a store's arrays in asyncio tasks: where one array's metadata is damaged the
    # others are left pending, and asyncio reports each at exit ("Task was destroyed but it is
    # pending!"); the command has already said what is wrong with the store (debug with -v)
    logging.getLogger("asyncio").setLevel(logging.DEBUG if verbosity >= VERBOSE else logging.CRITICAL)
    return handler


NUMPY_FLOATING = re.compile(r"^(overflow|underflow|invalid value|divide by zero) encountered in ")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """``warnings.showwarning`` replacement: one log record per warning. NumPy's raw
    floating-point warnings (``overflow encountered in multiply``) are debug lines: a state
    that goes non-finite is reported by the solver's own error, with its time."""
    logger = logging.getLogger(WARNINGS_LOGGER)
    if NUMPY_FLOATING.match(str(message)):
        logger.debug("numpy: %s", message)
        return
    logger.warning("%s", message)
    logger.debug("(%s from %s:%d)", category.__name__, filename, lineno)


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Inside the block, every shown warning becomes one ``warning: ...`` log line (the
    warnings filters decide what is shown, as usual); the previous behaviour comes back after."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        yield


def stderr_is_terminal() -> bool:
    """Whether stderr is an interactive terminal (else: no carriage returns on it)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
