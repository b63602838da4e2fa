"""Choice of the compiled (numba) or reference (numpy) implementation of the fv hot loops.

``backend="numba"`` (the default when numba imports) runs the fused kernels of
:mod:`solvers.core.kernels_numba`; ``backend="numpy"`` runs the array code next to them,
which is the reference the kernels are tested against (tests/core/test_kernels.py). The
environment variable ``MEANFIELD_NUMPY=1`` makes numpy the default.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache

BACKENDS = ("numba", "numpy")


@lru_cache(maxsize=1)
def numba_available() -> bool:
    """Whether numba can be imported (without importing it)."""
    return importlib.util.find_spec("numba") is not None


def default_backend() -> str:
    """``"numpy"`` when ``MEANFIELD_NUMPY=1`` or numba is missing, else ``"numba"``."""
    if os.environ.get("MEANFIELD_NUMPY", "") not in ("", "0") or not numba_available():
        return "numpy"
    return "numba"


def resolve_backend(backend: str | None) -> str:
    """``None`` -> :func:`default_backend`; check the name otherwise."""
    if backend is None:
        return default_backend()
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "numba" and not numba_available():
        raise ImportError("backend 'numba' requested but numba is not installed")
    return backend
