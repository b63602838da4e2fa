"""The package's import layers (``solvers -> spectral``, and inside ``solvers`` top to bottom).

Every ``import`` of every module is read with :mod:`ast` (lazy imports inside functions
included); an import from a higher layer, between the circle and the sphere, of the CLI, or
one that closes a circle between modules fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Lowest first. A module may import its own layer (its own package) or any layer below.
LAYERS = [
    ("spectral",),
    ("solvers.model",),
    ("solvers.core",),
    ("solvers.circle", "solvers.sphere", "solvers.hypersphere"),
    ("solvers.timestepping",),
    ("solvers.io",),
    ("solvers.plots",),
    ("solvers.studies",),
    ("solvers.runner",),
    ("solvers.api",),
    ("solvers.cli",),
    ("solvers.__main__", "solvers"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit(name: str) -> str:
    """The layer unit of a module: its subpackage (``solvers.circle``), or itself."""
    parts = name.split(".")
    if parts[0] == "spectral":
        return "spectral"
    if len(parts) >= 2 and (ROOT / "solvers" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return name


def level(name: str) -> int:
    u = unit(name)
    for i, members in enumerate(LAYERS):
        if u in members:
            return i
    raise AssertionError(f"{name}: not in any layer of tests/test_layering.py (add its package)")


def imports_of(path: Path) -> set[str]:
    """Every project module imported anywhere in ``path`` (absolute and relative forms)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import mod`` depends on the submodule; ``from mod import name`` on the module
            subs = [f"{base}.{a.name}" for a in node.names]
            names = [n for n in subs if _exists(n)]
            if len(names) < len(subs):
                names.append(base)
        else:
            continue
        for n in names:
            if n.split(".")[0] in ("solvers", "spectral") and _exists(n):
                found.add(n)
    return found


def _exists(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


MODULES = sorted(p for d in ("solvers", "spectral") for p in (ROOT / d).rglob("*.py"))


def test_every_package_is_layered():
    for p in MODULES:
        level(module_name(p))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_upward_import(path):
    me = module_name(path)
    for dep in imports_of(path):
        if dep == "solvers" or me == "solvers":
            continue  # the package root: the API's namespace, imported by nothing below
        assert unit(dep) != "solvers.cli" or unit(me) == "solvers.cli" or me == "solvers.__main__", \
            f"{me} imports the CLI ({dep}): nothing but the CLI imports it"
        assert level(dep) <= level(me), f"{me} (layer {level(me)}) imports {dep} (layer {level(dep)}): upward"
        if level(dep) == level(me):
            assert unit(dep) == unit(me), f"{me} imports {dep}: packages side by side must not import each other"


def test_no_import_cycles():
    graph = {module_name(p): {d for d in imports_of(p) if d != "solvers"} for p in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                cycle = stack[stack.index(m):] + [m]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if m in graph and not state.get(m):
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if not state.get(n):
            visit(n)


def test_the_checker_catches_violations(tmp_path, monkeypatch):
    """The checks can fail: an upward import and a two-module cycle in a scratch tree."""
    for pkg in ("solvers", "solvers/model", "solvers/io", "spectral"):
        (tmp_path / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "solvers/model/a.py").write_text("from solvers.io import b\n")
    (tmp_path / "solvers/io/b.py").write_text("def f():\n    from solvers.io.c import g\n")
    (tmp_path / "solvers/io/c.py").write_text("import solvers.io.b\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    a = tmp_path / "solvers/model/a.py"
    with pytest.raises(AssertionError, match="upward"):
        test_no_upward_import(a)
    global MODULES
    saved = MODULES
    MODULES = sorted((tmp_path / "solvers").rglob("*.py"))
    try:
        with pytest.raises(AssertionError, match="cycle"):
            test_no_import_cycles()
    finally:
        MODULES = saved
