"""Writing figures and animations without touching what is not ours (:mod:`solvers.io.safe_paths`).

Every figure that ``meanfield plot``, ``animate``, ``lemma51``, ``sweep-figures`` (and their
Python functions) write goes through :func:`save_figure`: the file is built inside a private
folder beside its target and renamed into place, so a symbolic link at the target (or at a
guessable temporary name) is never written through, and an existing target is replaced only
when it is a figure file: a PNG that matplotlib wrote (``safe_paths`` kind ``"figure"``), a PDF,
SVG or PostScript file that names Matplotlib as its creator, or an image or movie of the
target's own format (GIF, MP4, JPEG, TIFF, WebP: Pillow and ffmpeg leave no creator mark).
Anything else (a user's data or text file, a folder, a link, a device) raises
:class:`~solvers.io.safe_paths.UnsafePathError` naming the path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from solvers.io.safe_paths import (UnsafePathError, check_target, check_writable_folder, plain_file,
                                   write_via_private)

_HEAD = 64 << 10  # bytes read to recognise a figure (matplotlib's mark sits near the top)
_TAIL = 64 << 10  # and at the end (a PDF's /Creator, /Producer)


def _is_mp4(head: bytes) -> bool:
    return head[4:8] == b"ftyp"


def _is_webp(head: bytes) -> bool:
    return head[:4] == b"RIFF" and head[8:12] == b"WEBP"


# suffix -> (what the file starts with, or a test of its head; needs matplotlib's mark)
_FORMATS: dict[str, tuple[Any, bool]] = {
    ".pdf": (b"%PDF-", True),
    ".svg": ((b"<?xml", b"<svg"), True),
    ".svgz": (b"\x1f\x8b", False),
    ".eps": (b"%!PS", True),
    ".ps": (b"%!PS", True),
    ".gif": ((b"GIF87a", b"GIF89a"), False),
    ".mp4": (_is_mp4, False),
    ".jpg": (b"\xff\xd8\xff", False),
    ".jpeg": (b"\xff\xd8\xff", False),
    ".tif": ((b"II*\x00", b"MM\x00*"), False),
    ".tiff": ((b"II*\x00", b"MM\x00*"), False),
    ".webp": (_is_webp, False),
}


def _head_and_tail(path: Path) -> tuple[bytes, bytes] | None:
    """The first and last bytes of the plain file ``path`` (no link followed), or None."""
    with plain_file(path) as opened:
        if opened is None:
            return None
        fd, st = opened
        return os.pread(fd, _HEAD, 0), os.pread(fd, _TAIL, max(0, st.st_size - _TAIL))


def is_figure_file(path: str | os.PathLike) -> bool:
    """Whether the existing plain file ``path`` is a figure of its suffix's format (module
    doc): the files :func:`save_figure` may replace. PNG: :func:`solvers.io.safe_paths.is_ours`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".png":
        from solvers.io.safe_paths import is_ours

        return is_ours(path, "figure")
    fmt = _FORMATS.get(suffix)
    found = _head_and_tail(path)
    if fmt is None or found is None:
        return False
    head, tail = found
    start, marked = fmt
    ok = start(head) if callable(start) else head.startswith(start)
    return ok and (not marked or b"Matplotlib" in head or b"Matplotlib" in tail
                   or b"matplotlib" in head)


def check_figure_target(out: str | os.PathLike, option: str = "-o") -> None:
    """Raise :class:`~solvers.io.safe_paths.UnsafePathError` unless a figure may be written at
    ``out``: nothing there, or a figure file (:func:`is_figure_file`); never a link."""
    out = Path(out)
    if not os.path.lexists(out):
        check_writable_folder(out.parent, option)  # refused before the command computes
        return
    if out.suffix.lower() == ".png":
        check_target(out, True, option, kind="figure")
        return
    check_target(out, True, option, kind="text")  # links, folders, devices
    if not is_figure_file(out):
        raise UnsafePathError(f"{out} exists and is not a {out.suffix.lstrip('.').upper() or 'figure'} "
                              f"figure that meanfield-spectral wrote; {option} replaces only "
                              "figures: move or delete it yourself, or write elsewhere")


def save_figure(out: str | os.PathLike, write: Callable[[Path], Any], option: str = "-o"
                ) -> Path:
    """Let ``write(tmp)`` draw the figure into a private folder beside ``out`` and rename it
    into place (:func:`solvers.io.safe_paths.write_via_private`), after
    :func:`check_figure_target`. Returns ``out``. Parent folders are created."""
    out = Path(out)
    check_figure_target(out, option)
    if out.suffix.lower() == ".png":
        return write_via_private(out, write, overwrite=True, option=option, kind="figure")

    def checked(tmp: Path) -> None:
        write(tmp)
        check_figure_target(out, option)  # still nothing, or still a figure
    return write_via_private(out, checked, overwrite=True, option=option, kind="text")
