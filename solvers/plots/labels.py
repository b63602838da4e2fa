"""Point labels that never overlap: the atom masses written beside the atoms.

:func:`label_points` writes one annotation per point (``ax.annotate``, so the labels are in
``ax.texts``) and adds a :class:`LabelPlacer` to the axes. At every draw, before the labels are
drawn, the placer puts each label, heaviest point first, at the first of a few offsets around
its point (right-above, left-above, right-below, left-below, then higher rows above) where it
overlaps no label placed before it, no legend of the axes and stays inside the axes; a label
with no free place is hidden for that draw (its value is still in ``ax.texts``). The placement
is redone at each draw, so it holds for any figure size, dpi or layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

GAP_PT = 3.0  # points between a point and its label
ROWS = 4  # rows above (and below) the point tried after the four corners
MARKER_PT = 3.0  # half size of the box kept free around each labelled point


class LabelPlacer(Artist):
    """Moves (or hides) ``labels`` so that they do not overlap (module doc). Draws nothing."""

    def __init__(self, ax: Axes, labels: Sequence[Annotation], priority: Sequence[float]) -> None:
        super().__init__()
        self.ax = ax
        self.labels = [labels[i] for i in np.argsort(-np.asarray(priority, dtype=float),
                                                     kind="stable")]
        self.set_zorder(-100)  # before the labels and the legend
        self.set_in_layout(False)

    def _obstacles(self, renderer: Any) -> list[Bbox]:
        """The legend and a marker-sized box around every labelled point."""
        legend = self.ax.get_legend()
        boxes = [legend.get_window_extent(renderer)] if legend is not None else []
        r = MARKER_PT * renderer.points_to_pixels(1.0)
        for label in self.labels:
            x, y = self.ax.transData.transform(label.xy)
            boxes.append(Bbox([[x - r, y - r], [x + r, y + r]]))
        return boxes

    def draw(self, renderer: Any) -> None:
        frame = self.ax.get_window_extent(renderer)
        placed = self._obstacles(renderer)
        for label in self.labels:
            label.set_visible(True)
            for offset, ha, va in _candidates(label.get_fontsize()):
                label.set(ha=ha, va=va)
                label.xyann = offset
                box = label.get_window_extent(renderer)
                inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0
                          and box.y1 <= frame.y1)
                if inside and not any(box.overlaps(other) for other in placed):
                    placed.append(box)
                    break
            else:
                label.set_visible(False)
        self.stale = False

    def clear_labels(self) -> None:
        """Remove the labels and the placer from the axes (an animation's next frame)."""
        for label in self.labels:
            label.remove()
        self.labels = []
        self.remove()


def _candidates(size: float) -> list[tuple[tuple[float, float], str, str]]:
    """Offsets (points), horizontal and vertical alignment to try, in order."""
    g = GAP_PT + MARKER_PT
    corners = [((g, g), "left", "bottom"), ((-g, g), "right", "bottom"),
               ((g, -g), "left", "top"), ((-g, -g), "right", "top")]
    rows = [((dx, s * (g + k * 1.2 * size)), ha, va) for k in range(1, ROWS + 1)
            for s, va in ((1.0, "bottom"), (-1.0, "top"))
            for dx, ha in ((0.0, "center"), (-g, "right"), (g, "left"))]
    return corners + rows


def label_points(ax: Axes, x: np.ndarray, y: np.ndarray, texts: Sequence[str],
                 priority: Sequence[float] | None = None, **text_kw: Any) -> LabelPlacer:
    """Label the points ``(x, y)`` (data coordinates) with ``texts`` without overlaps (module
    doc); ``priority`` (e.g. the masses) orders who gets the first choice. Returns the placer
    (its ``labels``: the annotations)."""
    labels = [ax.annotate(t, (float(a), float(b)), textcoords="offset points", xytext=(GAP_PT + MARKER_PT, GAP_PT + MARKER_PT),
                          annotation_clip=False, **text_kw) for a, b, t in zip(x, y, texts)]
    for label in labels:
        label.set_in_layout(False)
    placer = LabelPlacer(ax, labels, priority if priority is not None else np.zeros(len(labels)))
    ax.add_artist(placer)
    return placer
