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


@lru_cache(maxsize=1)
def fused_steps_available() -> bool:
    """Whether steps whose transforms are FFTs can run whole in one compiled call: numba and
    rocket-fft, which gives numba ``numpy.fft`` (without it each stage is one compiled call after
    numpy's FFTs: the same numbers to round-off)."""
    return numba_available() and importlib.util.find_spec("rocket_fft") is not None


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


THREADS_MIN_VALUES = 65536  # below (lmax < 255 grids) waking the threads costs more than they save


def requested_threads() -> int:
    """``MEANFIELD_THREADS`` (default 1): threads asked for the compiled S^2 kernels.

    Opt-in: threads speed up the step of a large grid, but a whole run also spends its time
    in snapshots and archive writes, which stay serial and compete with the threads for the
    cores; one thread is the default, and ``MEANFIELD_THREADS`` uses more where cores are free.
    """
    text = os.environ.get("MEANFIELD_THREADS", "").strip()
    if not text:
        return 1
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"MEANFIELD_THREADS={text!r}: expected a positive integer (threads for the "
                         "compiled S^2 kernels), e.g. MEANFIELD_THREADS=4") from None
    if value < 1:
        raise ValueError(f"MEANFIELD_THREADS={value}: expected a positive integer, e.g. 1 or 4")
    return value


def compute_threads(n_values: int) -> int:
    """Threads for the compiled S^2 kernels on a grid of ``n_values``.

    1 below ``THREADS_MIN_VALUES``, without numba, or unless ``MEANFIELD_THREADS`` asks for
    more (:func:`requested_threads`); else that many, at most numba's thread count
    (``NUMBA_NUM_THREADS``, default the machine's cores; :func:`numba.set_num_threads` lowers
    it, as the sweep workers do). Results do not depend on it: every value is computed by the
    same operations in the same order on any number of threads.
    """
    if n_values < THREADS_MIN_VALUES or not numba_available():
        return 1
    wanted = requested_threads()
    if wanted == 1:
        return 1
    import numba

    return max(1, min(wanted, int(numba.get_num_threads())))


def spinning_thread_waits() -> None:
    """With threads asked for (``MEANFIELD_THREADS`` > 1), let OpenMP worker threads spin
    between parallel regions (``OMP_WAIT_POLICY=active``, unless the variable is set).

    A threaded step (lmax >= 255) runs a dozen short parallel regions between serial FFTs.
    With libgomp's default policy a worker that finds no work for a while sleeps, and waking
    it again costs time in every region, so that the step's time varies from one process to
    the next; spinning workers make it steady. The price: a worker keeps its core busy while
    the process lives. libgomp reads the variable when it is loaded (by shtns
    or numba's OpenMP pool), so call this before either: ``meanfield run`` and the benchmarks
    do; the library itself leaves the environment as it is.
    """
    if requested_threads() > 1:
        os.environ.setdefault("OMP_WAIT_POLICY", "active")


_MALLOC_TUNED: list[bool] = []


def keep_freed_memory(trim_mb: int = 512, mmap_mb: int = 64) -> bool:
    """Ask glibc's malloc to recycle large freed blocks instead of returning them to the OS.

    A time step allocates a few dozen grid-sized arrays (256 KiB at lmax 127, 1 MiB at 255).
    By default glibc serves blocks over 128 KiB with ``mmap`` and trims the heap top when
    more than a few MiB are free, so every step maps fresh pages and pays a page fault per
    4 KiB page (hundreds to thousands per step). Raising
    ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` keeps those blocks in the heap for reuse
    (the process holds at most ``trim_mb`` MiB of freed memory). Process-wide, done once;
    a no-op returning False where glibc's ``mallopt`` is unavailable or
    ``MEANFIELD_MALLOC=default`` is set.
    """
    if _MALLOC_TUNED:
        return _MALLOC_TUNED[0]
    ok = False
    if os.environ.get("MEANFIELD_MALLOC", "") != "default":
        try:
            import ctypes

            libc = ctypes.CDLL("libc.so.6")
            m_trim_threshold, m_mmap_threshold = -1, -3  # glibc malloc.h
            ok = bool(libc.mallopt(m_trim_threshold, trim_mb << 20)) and bool(libc.mallopt(m_mmap_threshold, mmap_mb << 20))
        except (OSError, AttributeError):
            ok = False
    _MALLOC_TUNED.append(ok)
    return ok
