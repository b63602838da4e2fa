"""Capture on S^1 only where a Dirac mass is being born (:func:`solvers.circle.measure.dirac_events.forms_atom`).

Under descent the attention pushes mass apart, so a concentration that nothing holds together
spreads again: it must stay density. It becomes a Dirac atom when the flow holds it in on both
sides, or at a perceptron corner that is a sink of the whole flow.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as hst

from solvers.api import load_config
from solvers.circle.measure import lagrangian as lg
from solvers.circle.measure.dirac import CircleMeasureField
from solvers.circle.measure.dirac_events import capture, forms_atom
from solvers.circle.cells import holds_together, perceptron_kinks, sink_corners
from solvers.circle.problem import CircleProblem
from solvers.core.measure import DiracAtoms
from solvers.io.state import initial_density
from solvers.model import perceptron
from solvers.model.params import AtomParams
from solvers.timestepping.loop import simulate
from spectral import CircleBasis

BETA50 = "runs/paper_s1_descent_relu_beta50.toml"
TWO_PI = 2.0 * np.pi


def spike(n: int, cells: slice) -> np.ndarray:
    rho = np.full(n, 1e-4)
    rho[cells] += np.array([2.0, 5.0, 3.0])
    return rho


def attention_only(direction: str, n: int = 256) -> CircleProblem:
    cfg = load_config(f'[domain]\nresolution = {n}\n[model]\nbeta = 5.0\ndirection = "{direction}"\n')
    return CircleProblem(cfg.model, CircleBasis(n))


@pytest.mark.parametrize("direction", ["descent", "ascent"])
def test_sink_corners_are_where_the_sampled_flow_converges(direction):
    """Brute force: sample the perceptron's flow velocity across each corner."""
    p = load_config(BETA50, model__direction=direction).model
    expected = []
    for k in perceptron_kinks(p.perceptron):
        d = np.array([-2e-4, -1e-4, 0.0, 1e-4, 2e-4])
        u = p.sign * perceptron.circle_velocity(p.perceptron, k + d)
        if abs(u[2]) < 1e-14 and np.all(np.diff(u) <= 1e-14) and np.diff(u).min() < -1e-6:
            expected.append(k)
    np.testing.assert_array_equal(sink_corners(p.perceptron, p.sign), expected)
    assert len(expected) == 1  # descent: 85.4 degrees, ascent: 321.7 degrees
    assert np.degrees(expected[0]) == pytest.approx(85.376 if direction == "descent" else 321.695, abs=1e-3)


def test_a_spike_that_spreads_is_not_captured():
    """Descent, attention only: the spike's own attention moves both outer faces outwards."""
    p = attention_only("descent")
    rho = spike(p.basis.n, slice(100, 103))
    u = CircleMeasureField(p).face_velocity(p.basis.forward(rho), np.zeros(0), np.zeros(0))
    assert u[99] < 0.0 < u[102]  # left face flows left, right face right
    assert not forms_atom(np.arange(100, 103), u, p)
    new, atoms = capture(rho, DiracAtoms.empty(1), u, p, AtomParams(capture_fraction=0.9), 0)
    assert atoms.count == 0 and np.array_equal(new, rho)


def test_the_same_spike_is_captured_when_held_in():
    """Ascent: the same spike's attention pulls its outer faces inwards, and it is captured."""
    p = attention_only("ascent")
    rho = spike(p.basis.n, slice(100, 103))
    u = CircleMeasureField(p).face_velocity(p.basis.forward(rho), np.zeros(0), np.zeros(0))
    assert u[99] > 0.0 > u[102]
    new, atoms = capture(rho, DiracAtoms.empty(1), u, p, AtomParams(capture_fraction=0.9), 0)
    assert atoms.count == 1
    assert new.sum() * p.basis.h + atoms.mass.sum() == pytest.approx(rho.sum() * p.basis.h, abs=1e-15)


def test_a_spike_on_a_sink_corner_is_captured_though_one_side_leaks():
    """beta = 50: a spike on the corner at 85.4 degrees. Its left side, where the perceptron is
    off, flows away; its right side is driven into the corner: a Dirac mass is born there."""
    cfg = load_config(BETA50, domain__resolution=256)
    p = CircleProblem(cfg.model, CircleBasis(256))
    corner = float(p.sink_corners[0])
    c = int(p.cell_of(np.array([corner]))[0])
    rho = spike(p.basis.n, slice(c - 1, c + 2))
    u = CircleMeasureField(p).face_velocity(p.basis.forward(rho), np.zeros(0), np.zeros(0))
    assert u[c - 2] < 0.0 and u[c + 1] < 0.0  # the left face leaks, the right face flows in
    new, atoms = capture(rho, DiracAtoms.empty(1), u, p, AtomParams(capture_fraction=0.9), 0)
    assert atoms.count == 1 and abs(atoms.position[0] - corner) < 1.5 * p.basis.h


def test_a_spike_carried_by_the_flow_is_not_captured():
    """Every face flows left, faster than the spike's own attention: it moves, nothing holds it.
    Held on the left as well, it is trapped; at a sink corner it is captured either way."""
    cfg = load_config(BETA50, domain__resolution=256)
    p = CircleProblem(cfg.model, CircleBasis(256))
    c = int(p.cell_of(np.array([np.radians(200.0)]))[0])  # no corner near
    core = np.arange(c - 1, c + 2)
    u = np.full(p.basis.n, -1.0)
    assert not forms_atom(core, u, p)
    u[c - 2] = 0.0
    assert forms_atom(core, u, p)
    u[:] = -1.0
    at_corner = int(p.cell_of(p.sink_corners)[0])
    assert forms_atom(np.arange(at_corner - 1, at_corner + 2), u, p)


@pytest.mark.slow  # 10 s: the CI's slow step
def test_beta50_default_method_has_the_fine_grid_atoms():
    """beta = 50, t = 5000: the default method (spectral, then Lagrangian cells) at N = 256
    against the grid density at N = 2048 (`benchmarks/dirac_resolution.py --beta 50 --grid
    2048`: corner atom .19254, heavy atom .70464). Capturing the perceptron-free arc's passing
    concentrations had frozen one at .0516 and left the heavy atom at .6933."""
    cfg = load_config(BETA50, domain__resolution=256, time__t_end=5000.0, time__scheme="auto",
                      output__progress=False)
    result = simulate(cfg, initial_density(cfg))
    d = result.final.diagnostics
    masses = dict(zip(np.round(np.degrees(d.atom_position)), d.atom_mass))
    assert masses[85.0] == pytest.approx(0.19254, abs=2e-3)
    assert masses[251.0] == pytest.approx(0.70464, abs=2e-3)
    # the arc's forming cluster (.0207 at 60.7 degrees, .0207 on the grid at N = 1024) stays density
    assert np.sort(np.round(np.degrees(d.dirac_position))).tolist() == [85.0, 251.0]
    h = 2 * np.pi / 256
    assert result.final.rho.sum() * h + d.dirac_mass.sum() == pytest.approx(1.0, abs=1e-13)


# -- the same rule for the Lagrangian cells' collapse -------------------------------------------

@settings(max_examples=200, deadline=None)
@given(bits=hst.lists(hst.booleans(), min_size=2, max_size=40))
def test_runs_are_the_maximal_stretches_of_short_cells(bits):
    short = np.asarray(bits)
    assume(not short.all())
    first, last = lg.runs(short)
    n = short.size
    seen = np.zeros(n, bool)
    for f, e in zip(first, last):
        cells = np.arange(f, f + (e - f) % n + 1) % n
        assert short[cells].all() and not seen[cells].any()
        assert not short[(f - 1) % n] and not short[(e + 1) % n]  # maximal
        seen[cells] = True
    np.testing.assert_array_equal(seen, short)


def _line(n: int = 20) -> lg.LagrangianState:
    """Cells 5-7 (points 5..8) squeezed into 1e-5 rad around 3.0; no atom anywhere."""
    X = np.linspace(0.0, TWO_PI, n, endpoint=False)
    X[5:9] = 3.0 + 1e-5 * np.arange(4) / 3
    X[9:] = np.linspace(3.1, TWO_PI - 0.1, n - 9)
    return lg.LagrangianState(np.sort(X), np.full(n, 1.0 / n), np.zeros(n), np.full(n, -1))


def test_held_runs_keep_only_what_the_flow_holds_together():
    st = _line()
    short = st.lengths() < 1e-4
    assert short.tolist() == [i in (5, 6, 7) for i in range(st.n)]
    none = np.zeros(0)
    outwards = lambda x: np.where(x < 3.000005, -1.0, 1.0)  # noqa: E731
    inwards = lambda x: np.where(x < 3.000005, 1.0, -1.0)  # noqa: E731
    carried = lambda x: np.full(x.size, -1.0)  # noqa: E731
    assert not lg.held_runs(st, short, none, outwards).any()
    assert not lg.held_runs(st, short, none, carried).any()
    np.testing.assert_array_equal(lg.held_runs(st, short, none, inwards), short)
    # a sink corner inside the run holds it whatever the velocity at its ends
    np.testing.assert_array_equal(lg.held_runs(st, short, np.array([3.000004]), outwards), short)
    np.testing.assert_array_equal(lg.held_runs(st, short, np.array([3.5]), outwards), np.zeros_like(short))
    # a run with an atom on it (absorption, merging) is never held back
    with_atom = lg.LagrangianState(st.X, st.m, np.where(np.arange(st.n) == 6, 0.1, 0.0),
                                   np.where(np.arange(st.n) == 6, 0, -1))
    np.testing.assert_array_equal(lg.held_runs(with_atom, short, none, outwards), short)


@pytest.mark.slow
def test_lagrangian_cells_leave_the_arc_cluster_as_density():
    """beta = 50, t = 5000, cells alone at N = 256: the atoms of the hand-over and of the grid at
    N = 1024 (corner .1920, heavy .7051, the arc's basin .0207 at 60.7 degrees, benchmarks/README
    round 15). Collapsing the passing cluster had made it a Dirac atom of .0352."""
    cfg = load_config(BETA50, domain__resolution=256, time__t_end=5000.0, time__scheme="lagrangian",
                      atoms__representation="dirac", output__progress=False)
    d = simulate(cfg, initial_density(cfg)).final.diagnostics
    masses = dict(zip(np.round(np.degrees(d.atom_position)), d.atom_mass))
    assert sorted(masses) == [60.0, 85.0, 251.0]
    assert masses[85.0] == pytest.approx(0.1920, abs=2e-3)
    assert masses[251.0] == pytest.approx(0.7051, abs=2e-3)
    assert masses[60.0] == pytest.approx(0.0207, abs=2e-3)
    assert np.sort(np.round(np.degrees(d.dirac_position))).tolist() == [85.0, 251.0]


def test_holds_together_takes_arcs_half_open_as_the_cells():
    """``[left, right)``, as a cell holds its left face and not its right one (``cell_of``); the
    arcs may wrap past 2 pi. A corner on the right end belongs to the next arc."""
    left, right = np.array([1.0, 6.0]), np.array([2.0, 0.5])
    out = np.full(2, -1.0), np.full(2, 1.0)  # both ends flow outwards
    assert not holds_together(left, right, *out, np.zeros(0)).any()
    assert holds_together(left, right, np.ones(2), -np.ones(2), np.zeros(0)).all()
    assert holds_together(left, right, *out, np.array([1.0])).tolist() == [True, False]
    assert holds_together(left, right, *out, np.array([2.0])).tolist() == [False, False]
    assert holds_together(left, right, *out, np.array([0.1])).tolist() == [False, True]
