"""Text layout of a drawn figure: the texts that collide and the texts cut off by the canvas.

:func:`drawn_texts` draws a figure with the Agg canvas and records the window extent (pixels)
of every text that matplotlib actually draws: titles, axis labels, tick labels (only the ticks
inside the view), legend texts, annotations, colour-bar labels, figure texts. A text that is
not drawn (invisible, empty, a tick outside the axis range, an axis switched off) is not seen.
:func:`layout_problems` lists, in words, each pair of texts overlapping by more than ``tol``
pixels in both directions and each text reaching more than ``tol`` pixels outside the canvas.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from unittest import mock

from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

TOL_PX = 2.0


@dataclass(frozen=True)
class DrawnText:
    """One text as drawn: its string, where it belongs (the axes title or ``figure``) and its
    window extent in pixels (origin at the canvas's lower left)."""

    text: str
    owner: str
    box: Bbox

    def describe(self) -> str:
        x0, y0, x1, y1 = self.box.extents
        return f"{self.text!r} ({self.owner}; x {x0:.0f}..{x1:.0f}, y {y0:.0f}..{y1:.0f} px)"


def _owner(text: Text, drawing_axis: list) -> str:
    ax = text.axes or (drawing_axis[-1] if drawing_axis else None)  # tick labels: their axis's
    if ax is None:
        return "figure"
    return f"axes {ax.get_title() or ax.get_label() or ax.get_ylabel() or id(ax)!s}"


def drawn_texts(fig: Figure, dpi: float | None = None) -> list[DrawnText]:
    """Draw ``fig`` on an Agg canvas (at ``dpi`` when given) and return its drawn texts."""
    if dpi is not None:
        fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    original, original_axis = Text.draw, Axis.draw
    seen: dict[int, DrawnText] = {}  # by text: one drawn twice counts once
    drawing_axis: list = []  # the axes whose x or y axis is being drawn

    def recording_axis(self: Axis, renderer) -> None:
        drawing_axis.append(self.axes)
        try:
            original_axis(self, renderer)
        finally:
            drawing_axis.pop()

    def recording_draw(self: Text, renderer) -> None:
        original(self, renderer)
        string = self.get_text()
        if self.get_visible() and string.strip():
            # Text's own extent (an Annotation's would include its arrow)
            box = Text.get_window_extent(self, renderer)
            if box.width > 0 and box.height > 0:
                seen[id(self)] = DrawnText(string, _owner(self, drawing_axis), box)

    with mock.patch.object(Text, "draw", recording_draw), \
            mock.patch.object(Axis, "draw", recording_axis):
        canvas.draw()
    return list(seen.values())


def overlap(a: Bbox, b: Bbox) -> tuple[float, float]:
    """Overlap of two boxes along x and y in pixels (negative: the gap between them)."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0))


def outside(box: Bbox, width: float, height: float) -> float:
    """How far (pixels) ``box`` reaches beyond the canvas ``[0, width] x [0, height]``."""
    return max(-box.x0, -box.y0, box.x1 - width, box.y1 - height, 0.0)


def layout_problems(fig: Figure, name: str, tol: float = TOL_PX,
                    dpi: float | None = None) -> list[str]:
    """Every overlapping pair (more than ``tol`` px in x and in y) and every text more than
    ``tol`` px outside the canvas, one sentence each naming the figure ``name``."""
    texts = drawn_texts(fig, dpi)
    width, height = fig.canvas.get_width_height()
    problems = []
    for t in texts:
        beyond = outside(t.box, width, height)
        if beyond > tol:
            problems.append(f"{name}: {t.describe()} lies {beyond:.1f} px outside the "
                            f"{width}x{height} px canvas")
    for a, b in combinations(texts, 2):
        dx, dy = overlap(a.box, b.box)
        if dx > tol and dy > tol:
            problems.append(f"{name}: {a.describe()} and {b.describe()} overlap by "
                            f"{dx:.1f} x {dy:.1f} px")
    return problems
