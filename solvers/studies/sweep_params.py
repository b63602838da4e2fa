"""The ``--param`` values of a sweep: parsing, counting before expanding, and the grid of runs.

``--param key=v1,v2,...`` takes TOML values (bare words as strings; commas inside ``[...]`` or
quotes do not split; ``a..b`` is the integer range a, a+1, ..., b). A sweep runs at most
:data:`MAX_RUNS` combinations: the product is counted before any value is expanded, and a larger
one is refused with its count (:mod:`solvers.studies.sweep` runs them).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from solvers.model.config import parse_override

SEED_KEY = "initial.seed"
MAX_RUNS = 10_000  # runs in one sweep (the product of the --param values): counted before any is built
SEED_MAX = 2**63  # initial.seed values: below it (the summary stores them as int64)
_RANGE = re.compile(r"(-?\d{1,4000})\.\.(-?\d{1,4000})")


class SweepError(ValueError):
    """A user error in the sweep's arguments (one line)."""


@dataclasses.dataclass(frozen=True)
class SweepParam:
    """One swept key: ``raw`` the value texts as given, ``values`` parsed (TOML or bare)."""

    key: str
    raw: tuple[str, ...]
    values: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """One run of the grid: its name, grid index and ``key=value`` items."""

    name: str
    index: tuple[int, ...]
    items: tuple[str, ...]


def _parts(text: str) -> list[str]:
    """Split at commas outside brackets and quotes (ranges ``a..b`` not expanded)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text + ","):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[]":
            depth += 1 if ch == "[" else -1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts


def _span(part: str) -> range | None:
    """The integer range of ``a..b`` (a lazy :class:`range`), or None for a plain value."""
    match = _RANGE.fullmatch(part)
    return None if match is None else range(int(match[1]), int(match[2]) + 1)


def count_values(text: str) -> int:
    """How many values :func:`split_values` gives for ``text``, counted without expanding a
    range (``0..1000000000000`` counts in no time)."""
    return sum(len(span) if (span := _span(part)) is not None else 1 for part in _parts(text))


def split_values(text: str, limit: int | None = MAX_RUNS) -> list[str]:
    """Split at commas outside brackets and quotes; expand integer ranges ``a..b``.

    SweepError when there are more than ``limit`` values (counted first, nothing expanded).
    """
    parts = _parts(text)
    if limit is not None and (n := count_values(text)) > limit:
        raise SweepError(f"{n:,} values in {text[:60]!r}, more than one sweep may run "
                         f"({limit:,} runs); split it, or sweep fewer values")
    out: list[str] = []
    for part in parts:
        span = _span(part)
        out += [str(v) for v in span] if span is not None else [part]
    return out


def count_runs(items: Sequence[str]) -> int:
    """The number of runs of the ``--param`` items ``section.key=v1,v2,...``: the product of
    their value counts, nothing expanded."""
    total = 1
    for item in items:
        total *= count_values(item.partition("=")[2])
    return total


def check_run_count(items: Sequence[str]) -> int:
    """:func:`count_runs`, or SweepError (with the count) above :data:`MAX_RUNS`."""
    total = count_runs(items)
    if total > MAX_RUNS:
        sizes = " x ".join(f"{count_values(i.partition('=')[2]):,}" for i in items)
        raise SweepError(f"--param: the sweep would have {total:,} runs ({sizes}); at most "
                         f"{MAX_RUNS:,} runs in one sweep: split it, or sweep fewer values")
    return total


def parse_param(item: str) -> SweepParam:
    """Parse ``section.key=v1,v2,...`` (the ``--param`` syntax) into a :class:`SweepParam`."""
    key, sep, text = item.partition("=")
    try:
        raw = tuple(split_values(text)) if sep else ()
    except SweepError as err:
        raise SweepError(f"--param {key.strip()}: {err}") from None
    if not raw or "" in raw:
        raise SweepError(f"--param {item!r}: expected section.key=v1,v2,... (no empty values)")
    values = tuple(parse_override(f"{key.strip()}={r}")[2] for r in raw)
    if len({json.dumps(v) for v in values}) != len(values):
        raise SweepError(f"--param {key.strip()}: repeated value in {text}")
    if key.strip() == SEED_KEY and not all(isinstance(v, int) and 0 <= v < SEED_MAX
                                           for v in values):
        raise SweepError(f"--param {SEED_KEY}: seeds must be integers in [0, 2**63) "
                         f"(got {text[:200]})")
    return SweepParam(key.strip(), raw, values)


# names a swept dimension may not take: the summary's variables (solvers.io.summary), the
# sweep Dataset's own (solvers.studies.sweep_data) and the run archives' variables that are also
# the last part of a config key (initial.time, time.dt, initial.mass)
TAKEN_NAMES = frozenset({"run", "final_atom", "stop_reason", "final_atom_mass",
                         "final_atom_position", "dirac", "theta", "phi", "nv", "wavenumber",
                         "lm", "time", "t", "dt", "step", "rho", "mass", "energy"})


def dim_names(params: Sequence[SweepParam]) -> list[str]:
    """Summary dimension per parameter: the key's last part, or ``section__key`` where that
    part is shared by two keys or names a variable of the summary, the sweep Dataset or a run
    (``domain.resolution`` -> ``domain__resolution``: the summary's ``resolution`` is each
    run's N)."""
    from solvers.io.summary import SUMMARY_NAMES

    taken = SUMMARY_NAMES | TAKEN_NAMES
    short = [p.key.rsplit(".", 1)[-1] for p in params]
    names = [s if short.count(s) == 1 and s not in taken else p.key.replace(".", "__")
             for s, p in zip(short, params)]
    if len(set(names)) != len(names) or "atom" in names:
        raise SweepError(f"--param: each key may be swept once (got {[p.key for p in params]})")
    return names


def _safe(value: Any, raw: str) -> str:
    text = value if isinstance(value, str) else raw
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", text).strip("_.") or "_"


def sweep_points(params: Sequence[SweepParam]) -> list[SweepPoint]:
    """The cartesian product of the parameters, with filesystem-safe unique names
    (SweepError above :data:`MAX_RUNS` runs, counted first)."""
    total = int(np.prod([len(p.raw) for p in params], dtype=object)) if params else 1
    if total > MAX_RUNS:
        raise SweepError(f"the sweep would have {total:,} runs; at most {MAX_RUNS:,} in one "
                         "sweep: split it, or sweep fewer values")
    dims = dim_names(params)
    grids = [range(len(p.raw)) for p in params]
    points = [SweepPoint("_".join(f"{d}-{_safe(p.values[i], p.raw[i])}"
                                  for d, p, i in zip(dims, params, index)),
                         index, tuple(f"{p.key}={p.raw[i]}" for p, i in zip(params, index)))
              for index in itertools.product(*grids)]
    if len({p.name for p in points}) != len(points):
        raise SweepError("two parameter values give the same run name: use distinct values")
    return points
