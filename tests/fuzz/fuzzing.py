"""Shared pieces of the fuzz suite: example budgets, the in-process command line with a time
limit, and the properties every case must keep.

Budgets: each test has a small default number of examples (the whole suite runs in well under
a minute). ``MEANFIELD_FUZZ_EXAMPLES=N`` (the "long" profile) gives each test its share of
``N`` examples (:data:`WEIGHTS`, about ``N`` in all), e.g. ``MEANFIELD_FUZZ_EXAMPLES=5000
pytest tests/fuzz --hypothesis-show-statistics`` (which prints each test's count).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings

from solvers.cli import guard
from solvers.cli.main import main

LONG = int(os.environ.get("MEANFIELD_FUZZ_EXAMPLES", "0") or 0)
TIME_LIMIT = 60  # seconds per example: more is a hang
# shares of MEANFIELD_FUZZ_EXAMPLES per test (each test of a group gets its share): cheap
# config parsing most, hostile archives (a resume runs) least
WEIGHTS = {"config": 0.38, "cli_config": 0.09, "cli_command": 0.09, "api": 0.12,
           "archive": 0.06}
BASE = {  # cheap and valid: a wrongly accepted value finishes fast and fails the rc check
    "domain": {"resolution": 64},
    "model": {"beta": 2.0, "kernel": "exp_shifted"},
    "perceptron": {"activation": "relu", "a": [[1.0, 0.0], [-0.6, -0.8]], "omega": [0.6, -0.5]},
    "time": {"t_end": 0.5, "max_steps": 2000},
    "output": {"snapshot_interval": 0.25, "progress": False},
}


def budget(name: str, default: int) -> settings:
    """Hypothesis settings with ``default`` examples, or the test's share of the long run."""
    examples = max(default, int(LONG * WEIGHTS[name])) if LONG else default
    return settings(max_examples=examples, deadline=None, derandomize=not LONG,
                    database=None, suppress_health_check=list(HealthCheck))


class Hang(Exception):
    """An example that did not answer within :data:`TIME_LIMIT`."""


@contextlib.contextmanager
def time_limit(seconds: int = TIME_LIMIT) -> Iterator[None]:
    def alarm(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


CAUGHT: list[BaseException] = []  # the exceptions the last run_cli turned into error lines


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``meanfield ARGV`` in this process: exit status, stdout, stderr. The exceptions that
    reach the command's guard are kept in :data:`CAUGHT` (their types are checked)."""
    err, out = io.StringIO(), io.StringIO()
    CAUGHT.clear()
    describe = guard.describe

    def recording(error: BaseException) -> str:
        CAUGHT.append(error)
        return describe(error)

    guard.describe = recording
    try:
        with time_limit(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse
                rc = exc.code
    finally:
        guard.describe = describe
    return rc, out.getvalue(), err.getvalue()


def project_error(error: BaseException) -> bool:
    """The project's exceptions, and the OS's (a file's error names the file)."""
    return type(error).__module__.startswith(("solvers.", "spectral.")) or isinstance(
        error, (OSError, RecursionError, MemoryError))


def assert_clean(argv: list[str], rc: int, err: str, refused: bool = False) -> None:
    """No traceback, no builtin exception reaching the user; a failure is one ``error:`` line
    with exit status 2 (``refused``: it must be refused), or 1 for a run that fails at run
    time (a tampered archive's state that blows up)."""
    shown = " ".join(argv)[:300]
    assert "Traceback" not in err and len(err) < 4000, f"{shown}: {err[-800:]!r}"
    if refused or rc != 0:
        assert rc == 2 or (rc == 1 and not refused), f"{shown}: exit {rc}, stderr {err[-600:]!r}"
        lines = [line for line in err.splitlines() if not line.startswith("warning: ")]
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{shown}: {err[-800:]!r}"
        for builtin in ("KeyError", "IndexError", "TypeError", "AttributeError",
                        "ZeroDivisionError", "UnboundLocalError", "NameError"):
            assert f"error: {builtin}" not in err, f"{shown}: {err[-600:]!r}"
    for error in CAUGHT:
        assert project_error(error), f"{shown}: {type(error).__name__} reached the user: {err!r}"


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        (Path(tmp) / "afile").write_text("x")
        yield Path(tmp)


def toml_value(value: object) -> str:
    """TOML text of a Python value (nan and inf as TOML spells them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") \
            if math.isinf(value) else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def config_text(doc: dict) -> str:
    return "\n".join(f"[{s}]\n" + "\n".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                                              for k, v in t.items())
                     if isinstance(t, dict) else f"{json.dumps(str(s))} = {toml_value(t)}"
                     for s, t in doc.items()) + "\n"
