"""``plot_run`` and ``animate_run``: the figure and the animation of one run archive.

The figures of a manifold are chosen by its object (:data:`FIGURES`, keyed on
:class:`~solvers.core.manifold.Manifold`): S^1 archives are drawn by :mod:`solvers.plots.circle`,
S^2 archives by :mod:`solvers.plots.sphere`, Sd archives (``S^{d-1}`` by weighted points, any d)
by :mod:`solvers.plots.points` (imported when drawn). A new manifold adds its entry here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg

from solvers.circle.manifold import CIRCLE
from solvers.core.manifold import Manifold
from solvers.hypersphere.manifold import HYPERSPHERE
from solvers.io.reading import open_run
from solvers.plots.common import VIEWS, movie_writer
from solvers.plots.save import check_figure_target, save_figure
from solvers.plots.style import style_context
from solvers.sphere.manifold import SPHERE
from solvers.timestepping.manifolds import MANIFOLDS, manifold_of


def _circle_figures() -> tuple[Callable, Callable]:
    from solvers.plots.circle import circle_animation, run_figure

    return run_figure, lambda ds, view: circle_animation(ds)


def _sphere_figures() -> tuple[Callable, Callable]:
    from solvers.plots.sphere import sphere_animation, sphere_run_figure

    return sphere_run_figure, sphere_animation


def _points_figures() -> tuple[Callable, Callable]:
    from solvers.plots.points import points_animation, points_run_figure

    return points_run_figure, points_animation


# manifold -> a loader of (run_figure(ds, style) -> (fig, axes), animation(ds, view) -> (fig, update))
FIGURES: dict[Manifold, Callable[[], tuple[Callable, Callable]]] = {
    CIRCLE: _circle_figures, SPHERE: _sphere_figures, HYPERSPHERE: _points_figures}


def manifold_of_run(ds: Any) -> Manifold:
    """The manifold of a run's Dataset: the one its ``manifold`` attribute names (Sd: the
    family's object, ``HYPERSPHERE``), else the one whose grid axes (``Manifold.grid_dims``) are
    the dimensions of ``rho`` besides ``time``."""
    if ds.attrs.get("manifold"):
        return manifold_of(str(ds.attrs["manifold"]))
    dims = {d for d in ds["rho"].dims if d != "time"}
    for known in MANIFOLDS:
        if set(known.grid_dims) == dims:
            return known
    raise ValueError(f"not a run archive of a known manifold: rho has dimensions {sorted(dims)}")


def plot_run(path: str | os.PathLike | Any, out_png: str | os.PathLike | None = None,
             dpi: int | None = None, style: str = "paper") -> Path:
    """Write the summary figure of a run archive.

    Parameters
    ----------
    path : str, PathLike or xarray.Dataset
        Run archive (``RUN.nc``), or a run's Dataset (``solvers.run``, ``open_run``, one
        run of a sweep: ``solvers.sweep(...).sel(beta=5)``).
    out_png : str or PathLike, optional
        Output file (.png, .pdf, .svg); default ``RUN.png`` next to the archive (required
        with a Dataset).
    dpi : int, optional
        Resolution of a PNG (default: the style's, 300 for paper, 120 for screen).
    style : {"paper", "screen"}
        ``paper``: page width (7 in), 8 pt text; ``screen``: 13 in wide, larger text.

    Returns
    -------
    Path
        The PNG written.
    """
    dataset = hasattr(path, "data_vars")
    if dataset and out_png is None:
        raise ValueError("plot_run(Dataset): pass out_png, the figure's path")
    out = Path(out_png) if out_png is not None else Path(path).with_suffix(".png")
    check_figure_target(out)  # a link or a user's file there: refused before drawing
    ds = _one_run(path) if dataset else open_run(Path(path))
    with style_context(style) as spec:
        run_figure = FIGURES[manifold_of_run(ds)]()[0]
        fig, _ = run_figure(ds, style)
        FigureCanvasAgg(fig)
        save_figure(out, lambda tmp: fig.savefig(tmp, dpi=dpi or spec["dpi"]))
    return out


def _one_run(ds: Any) -> Any:
    """A run's Dataset as drawn; one run of a sweep (``solvers.sweep(...).sel(beta=5)``: its
    swept values are scalar coordinates with a ``key`` attribute) gets them back as attributes
    (``model__beta``) and drops the snapshot times only other runs have."""
    swept = {str(c.attrs["key"]).replace(".", "__"): c.item() for c in ds.coords.values()
             if c.ndim == 0 and "key" in c.attrs}
    if not swept:
        return ds
    return ds.dropna("time", how="all", subset=["mass"]).assign_attrs(swept)


def animate_run(path: str | os.PathLike, out: str | os.PathLike | None = None, fps: int = 10,
                view: str = "orthographic", dpi: int = 80,
                progress: Callable[[int, int], None] | None = None) -> Path:
    """Write one frame per snapshot of a run archive as a GIF or MP4.

    Parameters
    ----------
    path : str or PathLike
        Run archive (``RUN.nc``), S^1, S^2 or Sd.
    out : str or PathLike, optional
        ``.gif`` (default ``RUN.gif``) or ``.mp4`` (needs ffmpeg).
    fps : int
        Frames per second (> 0).
    view : {"orthographic", "mollweide"}
        S^2 only: two opposite orthographic hemispheres, or a Mollweide map.
    dpi : int
        Resolution of the frames.
    progress : callable, optional
        ``progress(done, total)`` after each frame written.

    Returns
    -------
    Path
        The file written. Raises ValueError for a bad format, ``fps``, ``view``, a missing
        ffmpeg, or an archive without snapshots.
    """
    path = Path(path)
    out = Path(out) if out is not None else path.with_suffix(".gif")
    if isinstance(fps, bool) or not isinstance(fps, int) or fps <= 0:
        raise ValueError(f"fps must be a positive integer (got {fps!r})")
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)} (got {view!r})")
    writer = movie_writer(out, fps)
    check_figure_target(out)  # a link or a user's file there: refused before drawing
    ds = open_run(path)
    n = ds.sizes.get("time", 0)
    if n == 0:
        raise ValueError("the archive holds no snapshots: nothing to animate")
    fig, update = FIGURES[manifold_of_run(ds)]()[1](ds, view)
    FigureCanvasAgg(fig)
    update(0)
    fig.draw_without_rendering()  # lay out once (constrained), then keep the positions:
    fig.set_layout_engine("none")  # re-running the layout per frame doubles the cost

    def frames(tmp: Path) -> None:
        with writer.saving(fig, str(tmp), dpi):
            for i in range(n):
                update(i)
                writer.grab_frame()
                if progress is not None:
                    progress(i + 1, n)

    save_figure(out, frames)  # built beside out, renamed into place
    return out
