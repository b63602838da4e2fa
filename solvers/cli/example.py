"""``meanfield example``: list the named run configs, or copy one out to edit and run."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

from solvers.io.runs import describe, find_config, named_configs


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``meanfield example`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "example", help="list the named run configs (--list) or copy one out (NAME [-o FILE])",
        description="The named configs (the paper's experiments and the demo) ship with the "
                    "package. Copy one out, edit it, and run it with meanfield run FILE.")
    p.add_argument("name", nargs="?", help="config name, e.g. demo or paper_s2_descent_relu")
    p.add_argument("--list", action="store_true", help="list the names with their descriptions")
    p.add_argument("-o", "--output", metavar="FILE", help="where to copy it (default NAME.toml; - for stdout)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing FILE")
    p.set_defaults(func=run_command)
    return p


def first_sentence(path: Path) -> str:
    """The head of a config's leading comment, whole: its text up to the first ``:``, ``;`` or
    sentence end outside brackets and quotes (it may run over several comment lines: ``--list``
    wraps it, never cuts it); '' without a leading comment."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#") or not line.lstrip("# ").strip():
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines)
    depth, quoted = 0, False
    for i, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif c in "([" and not quoted:
            depth += 1
        elif c in ")]" and not quoted:
            depth = max(depth - 1, 0)
        elif depth == 0 and not quoted and c in ":;.":
            rest = text[i + 1:]
            if c != "." or not rest or re.match(r"\s+[A-Z]", rest):  # "Fig. 3", "4.1": no end
                return text[:i] + ("." if c == "." else "")
    return text


def run_command(args: argparse.Namespace) -> int:
    """List or copy; unknown names and existing files are one-line errors (exit 2)."""
    if args.list or not args.name:
        configs = named_configs()
        if not configs:
            print("error: no named configs found (a broken install?)", file=sys.stderr)
            return 2
        width = max(map(len, configs))
        columns = max(shutil.get_terminal_size((100, 24)).columns, width + 40)
        for name, path in configs.items():
            text = first_sentence(path) or describe(path)
            print(textwrap.fill(text, columns, initial_indent=f"{name:<{width}}  ",
                                subsequent_indent=" " * (width + 2)))
        return 0
    try:
        source = find_config(args.name)
    except KeyError as err:
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    if args.output == "-":
        sys.stdout.write(source.read_text(encoding="utf-8"))
        return 0
    out = Path(args.output or source.name)
    if os.path.lexists(out) and not args.overwrite:
        print(f"error: {out} exists: pass --overwrite or choose another -o FILE", file=sys.stderr)
        return 2
    from solvers.io.safe_paths import write_via_private

    # a plain file only (never through a link, never a device): built beside it, renamed
    write_via_private(out, lambda tmp: shutil.copyfile(source, tmp), option="--overwrite",
                      kind="text")
    print(f"wrote {out}; run it with: meanfield run {out}")
    return 0
