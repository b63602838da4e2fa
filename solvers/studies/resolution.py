"""Resolution check of one sweep point (``meanfield sweep --auto-resolution``).

A coarse grid can change the outcome (ascent ReLU at beta = 25: 4 atoms at N = 256, 3 atoms at
N = 512, 1024 and 2048), so one grid is never trusted. A point runs at its resolution ``N_0``
(the config's, raised to the smallest that resolves the kernel) and at ``N_1 = 2 N_0``; while
two successive levels disagree it refines again (S^1: ``N -> 2 N``; S^2: the Gauss grid doubles,
``lmax -> 2 (lmax + 1) - 1``), at most ``max_refinements`` times (default 3) and never past
``max_resolution`` (default 4096 cells on S^1, lmax 255 on S^2).

Two levels *agree* when both finished (``t_end`` or ``stationary``), their atom counts are equal
and their masses, sorted by size, differ by at most ``mass_tol`` (default 0.02; the CLI option
``--mass-tol``). The check *passes* at the first agreeing pair; the point's result is then the
finer run of that pair. Otherwise the check fails and the result is the finest run made.

The point's record (:mod:`solvers.io.summary`) is that run's record plus ``resolution`` (the N
used), ``refinements`` (levels run beyond ``N_0``), ``resolution_check`` (``passed`` or
``failed``), ``mass_difference`` (largest sorted-mass difference of the last pair; inf when the
counts differ) and ``resolution_levels`` (one line: ``N:count`` per level). Atoms are read from
the run records only, i.e. from ``Snapshot.diagnostics`` (any atom detector).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from solvers.core.manifold import Manifold
from solvers.io.summary import FINISHED, done_path, write_done

DEFAULT_MASS_TOL = 0.02
MAX_REFINEMENTS = 3


@dataclass(frozen=True)
class ResolutionCheck:
    """Settings of the check (module docstring); ``max_resolution`` None: the manifold's
    ``max_check_resolution``."""

    mass_tol: float = DEFAULT_MASS_TOL
    max_refinements: int = MAX_REFINEMENTS
    max_resolution: int | None = None

    def __post_init__(self) -> None:
        if not (np.isfinite(self.mass_tol) and self.mass_tol >= 0):
            raise ValueError(f"--mass-tol must be >= 0 (got {self.mass_tol})")
        if self.max_refinements < 1:
            raise ValueError(f"--max-refinements must be >= 1 (got {self.max_refinements})")

    def tag(self) -> str:
        """Text that enters the point's digest (a changed check reruns the point)."""
        return f"rc:{self.mass_tol!r}:{self.max_refinements}:{self.max_resolution}"


def resolution_ladder(start: int, manifold: Manifold, check: ResolutionCheck) -> list[int]:
    """``N_0`` and at most ``max_refinements`` refinements (:meth:`Manifold.refine`: S^1
    ``2 N`` cells; S^2 ``2 (lmax + 1) - 1``, twice the latitudes), none above the limit."""
    cap = check.max_resolution or manifold.max_check_resolution
    levels = [start]
    while len(levels) <= check.max_refinements and manifold.refine(levels[-1]) <= cap:
        levels.append(manifold.refine(levels[-1]))
    return levels


def mass_difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Largest difference of the sorted atom masses of two records (inf: counts differ or a
    run has no result)."""
    if a.get("reason") not in FINISHED or b.get("reason") not in FINISHED:
        return float("inf")
    ma = np.sort(np.asarray(a["atom_mass"], dtype=float))[::-1]
    mb = np.sort(np.asarray(b["atom_mass"], dtype=float))[::-1]
    if int(a["n_atoms"]) != int(b["n_atoms"]) or ma.size != mb.size:
        return float("inf")
    return float(np.max(np.abs(ma - mb), initial=0.0))


def levels_agree(a: dict[str, Any], b: dict[str, Any], mass_tol: float) -> bool:
    """Both finished, equal atom counts, sorted masses within ``mass_tol``."""
    return mass_difference(a, b) <= mass_tol


def _level_text(resolution: int, record: dict[str, Any]) -> str:
    if record.get("reason") not in FINISHED:
        return f"{resolution}:{record.get('reason', '?')}"
    return f"{resolution}:{int(record['n_atoms'])}"


def check_levels(levels: Sequence[tuple[int, Callable[[], dict[str, Any]]]], mass_tol: float
                 ) -> tuple[int, list[dict[str, Any]], bool, float]:
    """Run ``levels`` (``(N, run)`` coarse to fine) until two successive ones agree.

    Returns the index of the result level, the records run so far, whether the check passed
    and the last pair's mass difference. A level that fails stops the ladder (not passed).
    """
    records: list[dict[str, Any]] = []
    diff = float("nan")
    for k, (_, run) in enumerate(levels):
        records.append(run())
        if records[-1].get("reason") not in FINISHED:
            return k, records, False, diff
        if k >= 1:
            diff = mass_difference(records[-2], records[-1])
            if diff <= mass_tol:
                return k, records, True, diff
    return len(records) - 1, records, False, diff


def refine_point(levels: Sequence[tuple[int, Any, str]], archive: str, name: str, digest: str,
                 mass_tol: float, run: Callable[[Any, str, str], dict[str, Any]]
                 ) -> dict[str, Any]:
    """The resolution check of one sweep point (on a worker); its summary record.

    Parameters
    ----------
    levels : sequence of ``(N, config, level_archive)``
        The ladder of :func:`resolution_ladder`, coarse to fine, each a validated config.
    archive : str
        The point's archive ``DIR/<name>.nc``: a copy (hard link) of the result level's.
    name, digest : str
        The point's name and the digest of its configuration and check settings.
    mass_tol : float
    run : callable
        ``run(config, level_archive, level_name) -> record`` (one finished or failed run).
    """
    jobs = [(n, _bind(run, cfg, path, f"{name}@N{n}")) for n, cfg, path in levels]
    k, records, passed, diff = check_levels(jobs, mass_tol)
    record = dict(records[k], name=name, digest=digest, archive=archive)
    record.update(resolution=int(levels[k][0]), refinements=len(records) - 1,
                  resolution_check="passed" if passed else "failed", mass_difference=diff,
                  resolution_levels=" ".join(_level_text(levels[i][0], r)
                                             for i, r in enumerate(records)))
    if record.get("reason") in FINISHED:
        _link(Path(levels[k][2]), Path(archive))
        write_done(Path(archive), record)
    else:
        done_path(Path(archive)).unlink(missing_ok=True)
    return record


def _bind(run: Callable[..., dict[str, Any]], *args: Any) -> Callable[[], dict[str, Any]]:
    return lambda: run(*args)


def _link(source: Path, target: Path) -> None:
    """``target`` becomes the same file as ``source`` (a hard link, else a copy), made in a
    private folder beside it and renamed into place (:mod:`solvers.io.safe_paths`): a file at
    ``target`` is replaced only when it is an archive of ours
    (:func:`~solvers.io.safe_paths.check_target`), and a link is never followed, at the source
    (a level's archive) or the target."""
    from solvers.io.safe_paths import UnsafePathError, check_target, private_folder, replace_file

    if not stat.S_ISREG(os.lstat(source).st_mode):
        raise UnsafePathError(f"{source} (a resolution level's archive) is not a plain file "
                              f"(a link?): not copied to {target}")
    check_target(target, True, "the sweep")
    with private_folder(target) as folder:
        tmp = folder / target.name
        try:
            os.link(source, tmp, follow_symlinks=False)
        except OSError:
            shutil.copyfile(source, tmp, follow_symlinks=False)
        check_target(target, True, "the sweep")  # still nothing, or still ours
        replace_file(tmp, target)
