"""``meanfield plot | animate | info``: look at a run archive."""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from solvers.cli.guard import CliError
from solvers.cli.progress import Counter
from solvers.cli.run import _atom_rows, _existing, _sphere_atom_rows
from solvers.model.config import clip

log = logging.getLogger(__name__)


def _new_folder(out: str | Path) -> Path | None:
    """The folder of ``out`` when it does not exist yet (the figure's writer creates it; the
    command says so), else None. A file where a folder should be: CliError naming ``-o``."""
    folder = Path(out).parent
    for part in (folder, *folder.parents):
        if part.exists():
            if not part.is_dir():
                raise CliError(f"-o: {part} is a file, not a folder: choose another path")
            return None if part == folder else folder
    return folder


def _wrote(out: str | Path, folder: Path | None) -> None:
    print(f"wrote {out}" + (f" (created the folder {folder})" if folder is not None else ""))


@contextlib.contextmanager
def _archive_errors(path: Path, what: str) -> Iterator[None]:
    """A ValueError (not a run archive, an empty one; a bad format, no ffmpeg) or a KeyError (a
    NetCDF file without a variable that the ``what`` needs) as a CliError."""
    try:
        yield
    except ValueError as err:
        raise CliError(str(err)) from None
    except KeyError as err:
        raise CliError(f"{path} lacks the variable {err} that the {what} needs") from None


def cmd_plot(args: argparse.Namespace) -> int:
    """``meanfield plot``: figure of a run (see :func:`solvers.plots.run.plot_run`)."""
    path = _existing(args.run, "run archive")
    out = args.output or str(path.with_suffix(".png"))
    folder = _new_folder(out)
    from solvers.plots.run import plot_run

    with _archive_errors(path, "figure"):
        plot_run(path, out, style=args.style)
    _wrote(out, folder)
    return 0


def cmd_animate(args: argparse.Namespace) -> int:
    """``meanfield animate``: one frame per snapshot (see :func:`solvers.plots.run.animate_run`)."""
    path = _existing(args.run, "run archive")
    if args.fps <= 0:
        raise CliError(f"--fps must be a positive integer (got {args.fps})")
    out = Path(args.output) if args.output else path.with_suffix(".gif")
    folder = _new_folder(out)
    from solvers.plots.run import animate_run

    with (_archive_errors(path, "animation"),
          Counter(0, "frames", enabled=not getattr(args, "quiet", False)) as frames):
        animate_run(path, out, fps=args.fps, view=args.view,
                    progress=lambda done, total: frames.update(1, total=total))
    _wrote(out, folder)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    """``meanfield info``: verdict, snapshots, final diagnostics, atoms, then the parameters."""
    from solvers.io.reading import open_run

    path = _existing(args.run, "run archive")
    try:
        ds = open_run(path)
    except (OSError, ValueError) as err:  # not a run archive
        raise CliError(str(err)) from None
    print("\n".join(info_lines(ds, path)))
    return 0


def _restart_lines(ds: Any, last: float) -> list[str]:
    """Where ``--resume`` continues when the last record is interpolated between two steps."""
    from solvers.io.layout import RESTART
    from solvers.io.restart import restart_state

    if RESTART not in ds:
        return []
    found = restart_state(ds[RESTART].attrs, ds[RESTART].values, last)
    if found is None:
        return []
    return [f"last record interpolated between steps: --resume continues from the step state "
            f"at t = {found.t:.6g} (step {found.step})"]


def info_lines(ds: Any, path: Path) -> list[str]:
    """The text of ``meanfield info`` for a run dataset (see :mod:`solvers.io.archive`): the
    accuracy verdict, the snapshots, the final diagnostics and atoms, then the provenance and
    the parameters (the longest part) last."""
    lines = [f"run: {clip(path, 500)}"]
    if "verdict" in ds.attrs:  # the accuracy statement first (solvers.studies.verdict)
        lines += [clip(s, 300) for s in str(ds.attrs["verdict"]).splitlines()[:50]]
    else:
        lines.append("accuracy: no verdict archived (an interrupted run, or an older archive)")
    if "polish_stability" in ds.attrs:  # a polished archive (meanfield polish)
        from solvers.io.attributes import polish_lines

        lines += [clip(s, 300) for s in polish_lines(ds.attrs)]
    return lines + _record_lines(ds) + _provenance_lines(ds)


def _provenance_lines(ds: Any) -> list[str]:
    """Version, creation, method, kernel, and the parameters (or the config text)."""
    lines = [f"  {key}: {clip(ds.attrs[key], 200)}"
             for key in ("version", "created", "manifold", "scheme", "kernel") if key in ds.attrs]
    params = {clip(k.replace("__", "."), 80): v for k, v in ds.attrs.items() if "__" in k}
    lines += ["parameters:"] + [f"  {k} = {clip(v, 200)}" for k, v in params.items()] \
        if params else []
    if not params and "config_text" in ds.attrs:
        lines += ["config:"] + ["  " + clip(s, 200)
                                for s in str(ds.attrs["config_text"]).splitlines()[:500]]
    return lines


def _record_lines(ds: Any) -> list[str]:
    """Snapshot count, time range, final diagnostics, atoms and their history."""
    n = int(ds.sizes.get("time", 0))
    lines = [f"snapshots: {n}"]
    if n == 0:
        return lines
    times = ds["time"].values
    lines.append(f"t: {float(times[0]):g} .. {float(times[-1]):g}")
    lines += _restart_lines(ds, float(times[-1]))
    names = ("mass", "energy", "dissipation", "min_rho", "max_rho", "n_atoms", "max_atom_mass")
    lines.append("final:")
    lines += [f"  {v:14s} {float(ds[v].values[-1]):.10g}" for v in names if v in ds]
    if "atom_mass" in ds and ds["atom_mass"].ndim == 2:
        masses = ds["atom_mass"].values[-1]
        keep = np.isfinite(masses) & (masses > 0)
        if "atom_position" in ds:
            lines.append(f"atoms: {int(keep.sum())}")
            lines += _atom_rows(masses[keep], ds["atom_position"].values[-1][keep])
        elif "atom_colatitude" in ds and "atom_longitude" in ds:
            lines.append(f"atoms: {int(keep.sum())}")
            lines += _sphere_atom_rows(masses[keep], ds["atom_colatitude"].values[-1][keep],
                                       ds["atom_longitude"].values[-1][keep])
        from solvers.io.atom_history import history_lines

        lines += history_lines(ds)
    return lines
