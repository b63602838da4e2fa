"""One guard for every ``meanfield`` command: exit codes, one-line errors, signals.

- Any exception that reaches :func:`run_guarded` becomes one line ``error: ...`` on stderr
  naming what failed; the exit status is ``EXIT_USAGE`` (2) for input errors (config,
  arguments, files) and ``EXIT_FAILED`` (1) for failures at run time. The traceback is
  printed only with ``meanfield -v`` / ``--debug``.
- A closed stdout (``meanfield info RUN.nc | head -1``) ends quietly.
- :class:`StopRequest` turns SIGINT and SIGTERM into a flag that the time loop checks; a
  second signal exits at once (``128 + signum``) without writing anything more.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143
MESSAGE_LIMIT = 500
log = logging.getLogger(__name__)


class CliError(Exception):
    """A user error that is not about a config key (printed as ``error: <message>``)."""


def clip(text: object, limit: int) -> str:
    """``text`` with control characters escaped, cut to ``limit`` characters (as
    :func:`solvers.model.validators.clip`, without importing NumPy)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 3] + "..."


def usage_errors() -> tuple[type[BaseException], ...]:
    """Exception types that are input errors (exit 2); imported when an error needs them, so
    that parsing the command line imports neither NumPy nor the config module."""
    from solvers.io.errors import ArchiveError
    from solvers.io.lock import ArchiveBusyError
    from solvers.io.safe_paths import UnsafePathError
    from solvers.model.config import ConfigError

    return (ConfigError, FileNotFoundError, FileExistsError, IsADirectoryError,
            NotADirectoryError, PermissionError, ArchiveBusyError, ValueError, TypeError,
            CliError, RecursionError, UnsafePathError, ArchiveError)


class OneLineParser(argparse.ArgumentParser):
    """``argparse`` whose usage errors are one line on stderr (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {clip(message, MESSAGE_LIMIT)} (see {self.prog} --help)\n")


def describe(err: BaseException) -> str:
    """One line naming what failed: the message, or the OS error and its file."""
    if isinstance(err, FileNotFoundError) and err.filename:
        text = f"file not found: {err.filename}"
    elif isinstance(err, OSError) and err.strerror and type(err).__str__ is OSError.__str__:
        where = f": {err.filename}" if err.filename else ""
        text = f"{err.strerror}{where}"
    elif isinstance(err, MemoryError):
        text = "out of memory (lower domain.resolution or the number of snapshots)"
    elif isinstance(err, RecursionError):
        text = "input nested too deeply"
    else:
        text = str(err) or type(err).__name__
        usage = usage_errors()
        if not isinstance(err, (usage[0], CliError)) and not isinstance(err, OSError):
            text = f"{type(err).__name__}: {text}" if type(err) not in usage else text
    return clip(" ".join(text.split()), MESSAGE_LIMIT)


def exit_code(err: BaseException) -> int:
    """``EXIT_USAGE`` for input errors, ``EXIT_FAILED`` for the rest."""
    return EXIT_USAGE if isinstance(err, usage_errors()) else EXIT_FAILED


def _quiet_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so that the final flush cannot raise again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass


def run_guarded(func: Callable[[Any], int], args: Any, debug: bool = False) -> int:
    """Call ``func(args)`` and turn every error into one line and an exit status."""
    try:
        code = func(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        if debug:
            traceback.print_exc()
        log.debug("command failed", exc_info=err)
        print(f"error: {describe(err)}", file=sys.stderr)
        return exit_code(err)


class StopRequest:
    """A flag set by SIGINT/SIGTERM (call it: ``stop() -> bool``); see :meth:`installed`."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:  # the second one: leave now, write nothing more
            os.write(2, b"\ninterrupted again: exiting now; the archive keeps its complete "
                        b"records\n")
            os._exit(128 + signum)
        self.signum = signum

    @contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Route SIGINT and SIGTERM to this flag inside the block (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
