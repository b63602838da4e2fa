"""The package maps and the rooms of the two manifolds.

- Every package's ``__init__`` docstring (the map a reader opens first) names each of its
  modules and subpackages by dotted path.
- :mod:`solvers.core` names no manifold in its module names and imports neither of them.
- The circle and the sphere mirror each other: every module of one has its counterpart at the
  same path in the other, or the package docstring on the side that lacks it (or on its own
  side) names it with the reason.
- Inside a manifold, imports go one way through its rooms: the manifold's base modules
  (problem, cells, initial, atoms) < ``grid`` < ``measure`` < the default method (``handover``).
  A compiled kernel module (``kernels_*`` or ``*_numba``) may call the compiled kernels of
  another room: one compiled call spans the fv transport and the atoms (a Dirac stage calls the
  grid's fv kernel; the grid's compiled diagnostics evaluate the atoms' fields).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from test_layering import ROOT, imports_of, module_name

PACKAGES = sorted(p.parent for d in ("solvers", "spectral") for p in (ROOT / d).rglob("__init__.py"))
MANIFOLDS = ("circle", "sphere")
ROOMS = {"grid": 1, "measure": 2}
TOP = {"handover": 3, "manifold": 4}  # the S^1 default method stands on both states; the
# manifold object on everything of its manifold


def members(package: Path) -> list[str]:
    """Dotted names of the modules and subpackages directly in ``package``."""
    base = module_name(package / "__init__.py")
    mods = [p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")]
    subs = [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(f"{base}.{m}" for m in mods + subs)


def docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_package_docstring_lists_every_member(package):
    text = docstring(package)
    missing = [m for m in members(package) if m not in text and "~" + m not in text]
    assert not missing, f"{package.relative_to(ROOT)}/__init__.py: its docstring does not name {missing}"


def test_core_is_manifold_free():
    core = ROOT / "solvers" / "core"
    for path in core.rglob("*.py"):
        name = path.stem.lower()
        assert not any(w in name for w in ("circle", "sphere", "s1", "s2")), f"{path.name} names a manifold"
        text = path.read_text()
        for pkg in ("solvers.circle", "solvers.sphere", "solvers/circle", "solvers/sphere"):
            assert pkg not in text, f"{path.name} refers to {pkg}: core knows no manifold"
        for dep in imports_of(path):
            assert not dep.startswith(("solvers.circle", "solvers.sphere")), f"{path.name} imports {dep}"


def relative_modules(manifold: str) -> set[str]:
    root = ROOT / "solvers" / manifold
    return {p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.py")}


@pytest.mark.parametrize("side", MANIFOLDS)
def test_manifolds_mirror_each_other(side):
    other = MANIFOLDS[1 - MANIFOLDS.index(side)]
    lacking = sorted(relative_modules(side) - relative_modules(other))
    unexplained = []
    for rel in lacking:
        folder = Path(rel).parent.as_posix()
        texts = [docstring(ROOT / "solvers" / m / folder) for m in MANIFOLDS if (ROOT / "solvers" / m / folder).is_dir()]
        stem = Path(rel).name
        if not any(f"``{stem}``" in t or f"{stem}``" in t or ("only" in t and stem in t) for t in texts):
            unexplained.append(rel)
    assert not unexplained, f"solvers/{side}: no counterpart in solvers/{other} and no reason given: {unexplained}"


def compiled(name: str) -> bool:
    stem = name.rsplit(".", 1)[-1]
    return stem.startswith("kernels_") or stem.endswith("_numba")


def room(name: str) -> int:
    parts = name.split(".")
    if len(parts) < 3:
        return 0
    if parts[2] in ROOMS:
        return ROOMS[parts[2]]
    return TOP.get(parts[2], 0)


@pytest.mark.parametrize("manifold", MANIFOLDS)
def test_rooms_import_one_way(manifold):
    prefix = f"solvers.{manifold}"
    for path in (ROOT / "solvers" / manifold).rglob("*.py"):
        me = module_name(path)
        if path.name == "__init__.py":
            continue
        for dep in imports_of(path):
            if compiled(me) and compiled(dep):
                continue
            if dep.startswith(prefix + ".") and not dep.endswith("__init__"):
                assert room(dep) <= room(me), f"{me} (room {room(me)}) imports {dep} (room {room(dep)})"


def test_the_map_check_can_fail(tmp_path, monkeypatch):
    pkg = tmp_path / "solvers" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Map: :mod:`~solvers.demo.a`."""\n')
    (pkg / "a.py").write_text("")
    (pkg / "b.py").write_text("")
    import test_layering

    monkeypatch.setattr(test_layering, "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    with pytest.raises(AssertionError, match=r"solvers\.demo\.b"):
        test_package_docstring_lists_every_member(pkg)


MAX_LINES = 450


def test_no_module_is_too_long():
    long = {str(p.relative_to(ROOT)): n for d in ("solvers", "spectral") for p in (ROOT / d).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"
