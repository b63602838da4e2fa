"""The named run configurations (``runs/*.toml``), found in a source checkout or an install.

A checkout has them in ``runs/`` next to the package; ``pip install`` puts the same files in
``<prefix>/share/meanfield-spectral/runs`` (``[tool.setuptools.data-files]`` in pyproject.toml).
``meanfield example NAME`` copies one out.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

SHARE = Path("share") / "meanfield-spectral" / "runs"


def config_dirs() -> list[Path]:
    """Folders that may hold the named configs, most specific first (those that exist)."""
    here = Path(__file__).resolve().parents[2] / "runs"  # a source checkout
    prefixes = [sys.prefix, sysconfig.get_config_var("userbase") or "", sys.base_prefix]
    dirs = [here] + [Path(p) / SHARE for p in prefixes if p]
    seen: list[Path] = []
    for d in dirs:
        if d.is_dir() and d not in seen:
            seen.append(d)
    return seen


def named_configs() -> dict[str, Path]:
    """``{name: path}`` of every named config (the first folder that has a name wins)."""
    found: dict[str, Path] = {}
    for d in config_dirs():
        for path in sorted(d.glob("*.toml")):
            found.setdefault(path.stem, path)
    return dict(sorted(found.items()))


def describe(path: Path) -> str:
    """The first comment line of a config (its one-line description), or ''."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("# ").strip()
            return text[:-1] if text.endswith((":", ",")) else text
        if line.strip():
            break
    return ""


def find_config(name: str) -> Path:
    """The path of the named config ``name`` (with or without ``.toml``).

    Raises
    ------
    KeyError
        Unknown name; the message lists the close matches.
    """
    configs = named_configs()
    key = name[:-5] if name.endswith(".toml") else name
    if key in configs:
        return configs[key]
    import difflib

    close = difflib.get_close_matches(key, configs, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see meanfield example --list"
    raise KeyError(f"no named config {name!r}{hint}")
