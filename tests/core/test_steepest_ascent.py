"""The neighbour-table steepest ascent equals a sort-based reference (ties and plateaus too)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.circle.atoms import circle_graph
from solvers.core.atoms import steepest_ascent
from solvers.sphere.atoms import sphere_graph
from solvers.sphere.cells import SphereGrid


def reference(values, graph, labels=None):
    """Every directed edge, sorted by (cell, slope) with a stable sort; the last one wins."""
    i, j = np.concatenate([graph.edges, graph.edges[:, ::-1]]).T
    length = np.arccos(np.clip(np.sum(graph.points[i] * graph.points[j], axis=1), -1.0, 1.0))
    slope = (values[j] - values[i]) / np.maximum(length, 1e-300)
    ok = (slope > 0) | ((values[j] == values[i]) & (j < i))
    if labels is not None:
        ok &= labels[i] == labels[j]
    i, j, slope = i[ok], j[ok], slope[ok]
    order = np.lexsort((slope, i))
    i, j = i[order], j[order]
    pointer = np.arange(values.size)
    if i.size:
        last = np.r_[i[1:] != i[:-1], True]
        pointer[i[last]] = j[last]
    return pointer


def graphs():
    yield circle_graph(2 * np.pi * np.arange(64) / 64)
    g = SphereGrid(31)
    yield sphere_graph(g.points(g.theta, g.phi), g.area)


@pytest.mark.parametrize("graph", list(graphs()), ids=["S1", "S2"])
def test_equals_the_sort_based_reference(graph):
    rng = np.random.default_rng(5)
    n = graph.points.shape[0]
    for values in (rng.normal(size=n), np.round(rng.normal(size=n), 1),  # many ties
                   np.zeros(n), np.repeat(rng.normal(size=n // 4 + 1), 4)[:n]):
        np.testing.assert_array_equal(steepest_ascent(values, graph), reference(values, graph))
        labels = rng.integers(0, 3, size=n)
        np.testing.assert_array_equal(steepest_ascent(values, graph, labels),
                                      reference(values, graph, labels))
