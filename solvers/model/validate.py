"""Validation of a :class:`~solvers.model.params.RunConfig` built in Python, and the rules of a
resume (the same for the Python API and the command line).

A ``RunConfig`` made with :func:`dataclasses.replace` (or by hand) skips the TOML reader:
:func:`validate_config` writes its fields back as a TOML document and reads that with
:func:`solvers.model.config.build_config`, so that it passes every check a config file
passes (types, ranges, vocabularies, combinations) and fails with the same
:class:`~solvers.model.validators.ConfigError` naming the key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import MISSING, fields, is_dataclass, replace
from typing import Any

import numpy as np

from solvers.model.config import KIND_KEYS, SECTIONS, build_config, config_from_text, parse_override
from solvers.model.params import RunConfig, flatten
from solvers.model.validators import ConfigError, dump_toml

RESUMABLE_SECTIONS = ("time", "output")
FIXED_ON_RESUME = ("time.scheme",)  # the archived state is in this scheme's representation


def _plain(value: Any) -> Any:
    """Arrays, tuples and NumPy scalars as the lists and numbers TOML holds."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _default(f: Any) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _differs(value: Any, default: Any) -> bool:
    try:
        return bool(np.any(np.asarray(_plain(value), dtype=object) != np.asarray(
            _plain(default), dtype=object))) or np.shape(_plain(value)) != np.shape(_plain(default))
    except (ValueError, TypeError):
        return True


def _section_table(name: str, section: Any) -> dict[str, Any]:
    """The TOML table of one section's dataclass; keys at their default that TOML cannot hold
    (None) or that the section's kind does not use are left out."""
    kind = SECTIONS[name]
    if not isinstance(section, kind):
        raise ConfigError(name, f"must be a {kind.__name__} (got {type(section).__name__}); "
                          f"build it with dataclasses.replace(config.{name}, ...)")
    table = {}
    for f in fields(section):
        value = getattr(section, f.name)
        if f.name == "perceptron" or value is None:
            continue
        kind_name = getattr(section, "kind", None)
        used = KIND_KEYS.get(kind_name, ()) if isinstance(kind_name, str) else ()
        if name == "initial" and f.name not in ("kind", "mass") + used \
                and not _differs(value, _default(f)):
            continue  # another kind's key, unused
        table[f.name] = _plain(value)
    return table


def config_doc(config: RunConfig) -> dict[str, dict[str, Any]]:
    """The TOML document ``{section: {key: value}}`` of a RunConfig's fields (the inverse of
    :func:`~solvers.model.config.build_config`)."""
    if not isinstance(config, RunConfig) or not is_dataclass(config):
        raise ConfigError("config", f"must be a RunConfig, a path, TOML text or a dict (got "
                          f"{type(config).__name__})")
    doc = {name: _section_table(name, getattr(config, name)) for name in SECTIONS
           if name not in ("perceptron", "model")}
    domain = doc["domain"]
    if domain.get("manifold") == "Sd":  # its points are read as domain.points
        domain["points"] = domain.pop("resolution", None)
    elif not domain.get("dim"):
        domain.pop("dim", None)
    model = config.model
    doc["model"] = _section_table("model", model)
    perceptron = getattr(model, "perceptron", None)
    table = _section_table("perceptron", perceptron)
    if table.get("activation") == "none" and not any(
            np.size(table.get(k, [])) for k in ("a", "omega", "b")):
        table = {}
    doc["perceptron"] = table
    return doc


def validate_config(config: RunConfig) -> RunConfig:
    """``config`` checked as a config file is (every key; :class:`ConfigError` naming the first
    bad one) and returned as the reader builds it. Its ``text`` is kept when it describes the
    same run, else replaced by the TOML of the fields (provenance of what runs)."""
    doc = config_doc(config)
    rebuilt = build_config(doc)  # every value checked before it is written as TOML
    if isinstance(config.text, str) and config.text.strip():
        try:
            same = _same(config_from_text(config.text), rebuilt)
        except ConfigError:
            same = False
        if same:
            return replace(rebuilt, text=config.text)
    try:
        return replace(rebuilt, text=dump_toml(doc))
    except (TypeError, ValueError, OverflowError) as err:  # a value TOML cannot hold
        raise ConfigError("config", f"a field of this RunConfig cannot be written as TOML "
                          f"({err}); build it with dataclasses.replace and plain values") from None


def _same(a: RunConfig, b: RunConfig) -> bool:
    left, right = flatten(a), flatten(b)
    left.pop("text", None)
    right.pop("text", None)
    return left == right


def check_resume_overrides(items: Iterable[str]) -> None:
    """``section.key=value`` overrides allowed on a resume: ``time.*`` and ``output.*`` but
    ``time.scheme`` (the archived state is in its scheme's representation)."""
    for item in items:
        section, key, _ = parse_override(item)
        if f"{section}.{key}" in FIXED_ON_RESUME:
            raise ConfigError(f"{section}.{key}", "cannot change on resume (the archived state "
                              "belongs to its scheme); start a new run with initial.kind = "
                              "\"archive\"")
        if section not in RESUMABLE_SECTIONS:
            raise ConfigError(f"{section}.{key}", "cannot change on resume (only time.* and "
                              "output.* can); for new physics start a run with initial.kind = "
                              "\"archive\"")
