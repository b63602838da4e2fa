"""The folder of a sweep under the writer policy (:mod:`solvers.io.writer_policy`): created,
checked and locked for the whole sweep (``DIR/.sweep.lock``), a different sweep's folder refused
unless ``overwrite``, every name a run writes checked before any run starts; and the cap on
``--workers`` (:data:`MAX_WORKERS_PER_CORE` per core). :mod:`solvers.studies.sweep` and
:func:`solvers.studies.sweep_data.sweep` use it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from solvers.io.summary import done_path
from solvers.studies.sweep_params import SEED_KEY, SweepError, SweepParam

MAX_WORKERS_PER_CORE = 4  # --workers above this many per core is refused
SWEEP_LOCK = "sweep"  # the folder's lock: DIR/.sweep.lock


def max_workers() -> int:
    """The most ``--workers`` a local cluster may start: :data:`MAX_WORKERS_PER_CORE` per core."""
    from solvers.model.cost import usable_cores

    return MAX_WORKERS_PER_CORE * max(1, usable_cores())


def check_workers(workers: Any) -> int | None:
    """``workers`` (None: one per core) when it is a count a local cluster can start;
    SweepError otherwise (a huge count would start that many processes and hang)."""
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise SweepError(f"--workers must be >= 1 (got {workers!r})")
    if workers > (top := max_workers()):
        raise SweepError(f"--workers {workers}: at most {top} on this machine "
                         f"({MAX_WORKERS_PER_CORE} per core; each worker is a process)")
    return int(workers)


def sweep_digest(base_text: str, params: Sequence[SweepParam], overrides: Sequence[str],
                 eps: float) -> str:
    """Digest of what makes a sweep: the base config's text, the ``--set`` values and the swept
    keys with their values (and the perturbation when seeds are swept). Equal digests: the same
    sweep, which resumes in its folder."""
    doc = {"config": base_text, "set": list(overrides),
           "param": [[p.key, list(p.raw)] for p in params]}
    if any(p.key == SEED_KEY for p in params):
        doc["perturbation"] = float(eps)
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:16]


def _summary_identity(path: Path) -> tuple[str | None, str, str]:
    """``(sweep_digest, base_config_text, swept_keys)`` of an existing summary of ours."""
    import netCDF4

    try:
        with netCDF4.Dataset(path, "r") as nc:
            attrs = {k: nc.getncattr(k) for k in nc.ncattrs()}
    except OSError:
        return None, "", ""
    return (attrs.get("sweep_digest"), str(attrs.get("base_config_text", "")),
            str(attrs.get("swept_keys", "")))


@contextmanager
def sweep_folder(outdir: str | Path, identity: str, base_text: str, swept_keys: str,
                 overwrite: bool = False) -> Iterator[Any]:
    """The sweep's folder, created, checked and locked for the sweep (module doc); yields its
    :class:`~solvers.io.writer_policy.OutputFolder`.

    Raises
    ------
    SweepError
        The folder holds a different sweep and ``overwrite`` is False.
    UnsafePathError, PermissionError, ArchiveBusyError
        A link or a file not ours at the summary's name, a read-only folder, another sweep
        writing there.
    """
    from solvers.io.safe_paths import check_bool
    from solvers.io.writer_policy import OutputFolder

    overwrite = check_bool(overwrite)
    with OutputFolder(outdir) as folder:
        folder.lock(SWEEP_LOCK)
        summary = folder.entry("summary.nc")
        folder.different = False  # set when the folder holds another sweep (overwrite)
        folder.has_summary = os.path.lexists(summary)
        if folder.has_summary:
            digest, text, keys = _summary_identity(summary)
            same = digest == identity if digest else (text == base_text and keys == swept_keys)
            if not same:
                if not overwrite:
                    raise SweepError(f"{folder.path} holds a different sweep (its summary.nc "
                                     "has another config or other values): pass --overwrite "
                                     "(overwrite=True) to replace it, or choose another folder")
                folder.different = True
        folder.overwrite = overwrite
        yield folder


def _claim_point(folder: Any, archive: Path, digest: str) -> bool:
    """Check every name one run writes in ``folder`` (its archive, marker and lock): a link
    or a file not ours is refused (UnsafePathError). Returns whether a marker of another
    configuration sits there (a different sweep's run)."""
    folder.entry(archive.name)
    folder.entry(f".{archive.name}.lock", kind=None)
    done = folder.entry(done_path(archive).name, kind=None)
    if not os.path.lexists(done):
        return False
    from solvers.io.writer_policy import read_side_text
    from solvers.io.safe_paths import UnsafePathError

    try:
        record = json.loads(read_side_text(done) or "")
    except ValueError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("digest"), str):
        raise UnsafePathError(f"{done} is not a run marker that meanfield wrote (a JSON record "
                              "with a digest): move it, or choose another folder (-o)")
    return record["digest"].split("+")[0] != digest.split("+")[0]
