"""Where numba keeps the compiled kernels: one folder per version of the kernel sources.

numba's ``cache=True`` keys a function's cache on its own file only. A kernel that calls a
kernel of another file (``kernels_fv_numba.circle_fv_stage`` calls
``kernels_numba.limited_slope``; the Dirac stages call the fv kernels) keeps the callee it was
compiled with when only the callee's file changes: after a ``git pull`` or an edit, a run can
silently use the old code (a compiled Dirac stage without a branch added to the fv kernel it
calls, giving other atoms than the numpy reference).

:func:`configure_numba_cache` (called when ``solvers`` is imported) points ``NUMBA_CACHE_DIR``
at ``$XDG_CACHE_HOME/meanfield-spectral/numba/<digest>`` (default ``~/.cache/...``), the digest
a hash of every source file of the package that mentions ``njit`` (those that define
compiled functions, and those whose plain functions a kernel compiles, which say so:
``solvers/core/limiters.py: weno5_value_masked``). Any change to any
of them starts a fresh folder; the four most recent folders are kept. A ``NUMBA_CACHE_DIR`` set
by the user is left alone (then stale caches are theirs to clear).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

KEEP = 4  # cache folders kept (other versions of the sources, e.g. across branches)
PACKAGE = Path(__file__).resolve().parents[1]  # solvers/


def kernel_digest(root: Path = PACKAGE) -> str:
    """Hash (16 hex digits) of the ``.py`` files under ``root`` that mention ``njit``."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        if b"njit" in data:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + data)
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/meanfield-spectral/numba`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "meanfield-spectral" / "numba"


def configure_numba_cache(root: Path | None = None) -> Path | None:
    """Set ``NUMBA_CACHE_DIR`` to the folder of the current kernel sources; returns it (None when
    the user set ``NUMBA_CACHE_DIR`` or the folder cannot be made: numba's default then)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    base = root if root is not None else cache_root()
    folder = base / kernel_digest()
    try:
        fresh = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if fresh:
        _prune(base, keep=folder)
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:  # imported before solvers: numba read its config already
        sys.modules["numba"].config.CACHE_DIR = str(folder)
    return folder


def _prune(base: Path, keep: Path) -> None:
    """Remove all but the ``KEEP`` most recently used cache folders (never ``keep``)."""
    folders = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in folders[:-KEEP]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)
