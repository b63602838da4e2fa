"""Validators of config values: each returns the value or raises :class:`ConfigError`, whose
message is one line naming the key (control characters escaped, long texts shortened)."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np


class ConfigError(ValueError):
    """A configuration problem: ``str(err)`` is ``"<key>: <message>"`` on one line."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = clip(" ".join(str(message).split()), 400)
        super().__init__(f"{clip(key, 80)}: {self.message}")


def clip(text: str, limit: int) -> str:
    """``text`` with control characters escaped, shortened to ``limit`` characters."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show(value: Any, limit: int = 60) -> str:
    """Render a value as TOML (for messages and for :func:`dump_toml`)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (float, str)):  # repr: nan, inf, -inf are TOML too
        text = repr(value) if isinstance(value, float) else json.dumps(value)
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(show(v, 0) for v in value) + "]"
    else:
        text = str(value)
    return text if not limit or len(text) <= limit else text[: limit - 3] + "..."


def number(key: str, value: Any, lo: float | None = None, hi: float | None = None,
           lo_open: bool = True, why: str = "") -> float:
    """A finite real number (not a bool) with ``value > lo`` (``>=`` if not lo_open), ``<= hi``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)
    ok = ok and (lo is None or (value > lo if lo_open else value >= lo))
    if not (ok and (hi is None or value <= hi)):
        if hi is not None and lo is not None:
            bounds = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
        elif hi is not None:
            bounds = f"<= {hi:g}"
        else:
            bounds = "" if lo is None else f"{'>' if lo_open else '>='} {lo:g}"
        want = f"must be a finite number {bounds} {why}".strip()
        raise ConfigError(key, f"{want} (got {show(value)})")
    return float(value)


def _finite(value: int | float) -> bool:
    """``math.isfinite`` that says False for an integer too large for a float (10**400)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _positive(key: str, value: Any) -> float:
    return number(key, value, lo=0.0)


def integer(key: str, value: Any, lo: int, hi: int | None = None) -> int:
    """An integer (not a bool, not a float) ``lo <= value <= hi``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (
            hi is not None and value > hi):
        want = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ConfigError(key, f"must be an integer {want} (got {show(value)})")
    return int(value)


def bounded(lo: float, hi: float, lo_open: bool = False) -> Callable[[str, Any], float]:
    """A rule for :func:`number` with both bounds (for the ``_scalars`` tables)."""
    return lambda k, v: number(k, v, lo=lo, hi=hi, lo_open=lo_open)


def boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(key, f"must be true or false (got {show(value)})")
    return value


def string(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"must be a non-empty string (got {show(value)})")
    return value


def choice(key: str, value: Any, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:  # (an array has no truth value)
        close = difflib.get_close_matches(str(value), allowed, n=1)
        hint = f"; did you mean {json.dumps(close[0])}?" if close else ""
        names = ", ".join(json.dumps(a) for a in allowed)
        raise ConfigError(key, f"must be one of {names} (got {show(value)}){hint}")
    return value


def number_list(key: str, value: Any, lo: float | None = None, lo_open: bool = False,
                length: tuple[int, str] | None = None, hi: float | None = None) -> np.ndarray:
    """A list of finite numbers, bounded; ``length = (n, "the length of ...")``."""
    if not isinstance(value, list):
        raise ConfigError(key, f"must be a list of numbers, e.g. [1.0, 2.0] (got {show(value)})")
    if length is not None and len(value) != length[0]:
        raise ConfigError(key, f"must have {length[1]} ({length[0]} entries; got {len(value)})")
    for i, v in enumerate(value):
        if hi is not None and number(f"{key}[{i}]", v, lo=lo, lo_open=lo_open) < -hi:
            raise ConfigError(f"{key}[{i}]", f"must be >= {-hi:g} (got {show(v)})")
        number(f"{key}[{i}]", v, lo=lo, hi=hi, lo_open=lo_open)
    return np.asarray(value, dtype=float).reshape(len(value))


def matrix(key: str, value: Any, d: int, manifold: str, hi: float | None = None) -> np.ndarray:
    """A list of d-vectors, returned with shape ``(len(value), d)``."""
    if not isinstance(value, list) or not all(isinstance(r, list) and len(r) == d for r in value):
        raise ConfigError(key, f"must be a list of vectors of length {d} on {manifold}, "
                               f"e.g. {[[1.0] + [0.0] * (d - 1)]} (got {show(value)})")
    for i, row in enumerate(value):
        number_list(f"{key}[{i}]", row, hi=hi)
    return np.asarray(value, dtype=float).reshape(len(value), d)


def toml_value(value: Any) -> str:
    """``value`` as a TOML literal (numbers, strings, booleans, nested lists, numpy values),
    for ``section.key=value`` overrides."""
    import tomli_w

    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, dict):  # an inline table (tomli-w writes a [table] section)
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, dict) for v in value):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return tomli_w.dumps({"x": value}).split("=", 1)[1].strip()


def dump_toml(doc: dict[str, dict[str, Any]]) -> str:
    """Serialise sections ``{section: {key: value}}`` to TOML text (tomli-w; None values,
    which TOML cannot hold, are left out)."""
    import tomli_w

    def plain(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    clean = {name: {k: plain(v) for k, v in table.items() if v is not None}
             for name, table in doc.items()}
    return tomli_w.dumps(clean)
