"""The compiled steps of the S^1 Lagrangian cells (:mod:`solvers.circle.measure.kernels_lagrangian_numba`)
against the numpy code they replace: the right-hand side (bitwise against the numpy code with the
compiled fields inside it, to round-off against the numpy fields, ``MEANFIELD_NUMPY=1``), the
bookkeeping between steps, the error test's points and the Butcher stage sums (bitwise), and a
short run of the default method (bitwise the same steps and atoms)."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

pytest.importorskip("numba")

from solvers.api import load_config  # noqa: E402
from solvers.circle import handover as ho  # noqa: E402
from solvers.circle.measure import kernels_lagrangian_events_numba as kle  # noqa: E402
from solvers.circle.measure import kernels_lagrangian_numba as kl  # noqa: E402
from solvers.circle.measure import lagrangian as lg  # noqa: E402
from solvers.circle.measure import lagrangian_discretization as ld  # noqa: E402
from solvers.circle.measure import lagrangian_fields as lf  # noqa: E402
from solvers.model.kernel import kernel_log_shift  # noqa: E402
from solvers.io.state import initial_state  # noqa: E402
from solvers.timestepping import integrators as it  # noqa: E402
from solvers.timestepping import loop  # noqa: E402

TWO_PI = 2 * np.pi
ROOT = Path(__file__).resolve().parents[2]
N_GRID = 16  # the config's grid: h = 2 pi / 16 sets the event lengths
ACTIVATIONS = ["relu", "gelu", "linear", "tanh", "leaky_relu", "none"]

CONFIG = """
[domain]
manifold = "S1"
resolution = {n}
[model]
beta = {beta}
direction = "{direction}"
attention = "{attention}"
kernel = "{kernel}"
{perceptron}
[atoms]
representation = "dirac"
[time]
scheme = "lagrangian"
t_end = 1.0
[output]
progress = false
"""
UNITS = """[perceptron]
activation = "{activation}"
a = [[-0.9967456002240224, 0.0806114658969388], [-0.6198538201675943, -0.784717300448792], [0.3, 0.9]]
omega = [0.6324575844117477, -0.4696753890279187, 0.25]
b = [0.1, -0.2, 0.35]
"""


def _config(activation: str, attention: str, kernel: str, beta: float, direction: str, n: int = N_GRID):
    perceptron = "" if activation == "none" else UNITS.format(activation=activation)
    return load_config(CONFIG.format(n=n, beta=beta, direction=direction, attention=attention, kernel=kernel,
                                     perceptron=perceptron))


@lru_cache(maxsize=None)
def _disc(activation: str, attention: str, kernel: str, beta: float, direction: str, numpy: bool = False):
    """The discretisation (compiled kernels, or ``numpy``: ``MEANFIELD_NUMPY=1``, all numpy)."""
    before = os.environ.get("MEANFIELD_NUMPY")
    os.environ["MEANFIELD_NUMPY"] = "1" if numpy else "0"
    try:
        disc = ld.LagrangianCircleDiscretization(_config(activation, attention, kernel, beta, direction))
    finally:
        if before is None:
            del os.environ["MEANFIELD_NUMPY"]
        else:
            os.environ["MEANFIELD_NUMPY"] = before
    assert (disc.kernels is None) == numpy
    return disc


def _random_state(seed: int, n: int, offset: float, atoms: float, empty: float) -> lg.LagrangianState:
    """Uneven points (shifted by ``offset``: not normalised), cell masses (a share ``empty`` of
    them 0 or below the mass floor), atoms at a share ``atoms`` of the points; mass 1."""
    rng = np.random.default_rng(seed)
    X = np.unique(np.sort(rng.uniform(0.0, TWO_PI, n))) + offset
    k = X.size
    m = rng.uniform(0.0, 1.0, k) * rng.choice([1.0, 1e-3, 1e-16, 0.0], k, p=[1 - empty, empty / 3, empty / 3,
                                                                             empty / 3])
    A = np.where(rng.random(k) < atoms, rng.uniform(0.01, 1.0, k), 0.0)
    total = m.sum() + A.sum()
    if total == 0.0:
        m[:] = 1.0 / k
        total = 1.0
    return lg.LagrangianState(X, m / total, A / total, np.where(A > 0, np.arange(k), -1))


def _floors(disc, st: lg.LagrangianState) -> None:
    """The mass and density floors of ``prepare_state`` for the state's mass."""
    total = float(np.sum(st.m) + np.sum(st.A))
    disc.mass_floor = ld.MASS_FLOOR * total
    disc.density_floor = 0.01 * total / TWO_PI


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float).view(np.int64)


MODELS = hst.tuples(hst.sampled_from(ACTIVATIONS), hst.sampled_from(["unnormalized", "softmax"]),
                    hst.sampled_from(["exp", "exp_shifted"]), hst.sampled_from([1.0, 5.0, 25.0]),
                    hst.sampled_from(["ascent", "descent"]))


@settings(max_examples=150, deadline=None)
@given(model=MODELS, seed=hst.integers(0, 2**32 - 1), n=hst.integers(2, 80), offset=hst.floats(-7.0, 7.0),
       atoms=hst.floats(0.0, 0.5), empty=hst.floats(0.0, 0.6), tail=hst.sampled_from([0, 1]))
def test_rhs_is_the_numpy_code(model, seed, n, offset, atoms, empty, tail):
    """One compiled call gives the numpy code's right-hand side: bitwise the numpy code with
    the compiled fields inside (its velocity, stretch rate and atom slopes), and to round-off
    the numpy fields (``MEANFIELD_NUMPY=1``), for every activation, both attentions, both
    kernels; softmax where ``f`` is tiny takes the numpy path (direct sums) and says so."""
    disc, ref = _disc(*model), _disc(*model, numpy=True)
    st = _random_state(seed, n, offset, atoms, empty)
    for d in (disc, ref):
        _floors(d, st)
    state = np.concatenate([st.pack(), np.full(tail, ho.CELLS)])
    got, rate = disc.rhs_flat(state, tail)
    assert got.shape == state.shape and not np.any(got[st.n:])
    same, same_rate = disc.rhs_reference(st.pack())
    np.testing.assert_array_equal(_bits(got[:st.n]), _bits(same[:st.n]))
    assert rate == same_rate or (np.isnan(rate) and np.isnan(same_rate))
    # the kernel's own answer, and whether it asked for the numpy path where the fields say so
    _, k_rate, low = kl.cells_rhs(state, st.n, disc.weights, disc._units, disc._consts, disc.mass_floor,
                                  disc.density_floor, ld.FD_STEP)
    at = np.nonzero(st.A > 0)[0]
    pts = np.concatenate([st.X, st.X[at] - ld.FD_STEP, st.X[at] + ld.FD_STEP])
    u = lg.velocity(st, disc.config.model, disc.weights, pts, True, disc._perceptron)
    scale = max(float(np.max(np.abs(u))), 1.0)
    tol = np.full(pts.size, 1e-12 * scale)
    if model[1] == "softmax":
        _, f = lf.attention_fields(st, disc.weights, disc.config.model.beta, pts)
        whole = float(np.sum(st.m) + np.sum(st.A)) * np.exp(disc.config.model.beta
                                                           + kernel_log_shift(disc.config.model))
        assert low == bool(np.any(f < lf.SOFTMAX_FLOOR * whole))
        # the spectral f is exact to about 1e-16 M K(0): f'/f to that over f
        tol += 1e-14 * np.maximum(whole / np.abs(f), 1.0) * (1.0 + np.abs(u))
    else:
        assert not low
    if not low:
        assert k_rate == rate or (np.isnan(k_rate) and np.isnan(rate))
    # to round-off against numpy's fields (the rate: round-off in u over the shortest cell counted)
    numpy_d, numpy_rate = ref.rhs_flat(state, tail)
    np.testing.assert_array_less(np.abs(got[:st.n] - numpy_d[:st.n]), tol[:st.n] * (1 + 1e-9))
    L = st.lengths()
    full = (st.m > disc.mass_floor) & (st.m > disc.density_floor * L)
    shortest = float(np.min(L[full])) if full.any() else 1.0
    slack = 2 * float(tol.max()) / min(shortest, 2 * ld.FD_STEP) + 1e-12 * abs(numpy_rate)
    assert abs(rate - numpy_rate) <= slack


@pytest.mark.parametrize("beta", [25.0, 60.0])
def test_softmax_far_from_the_mass_takes_the_direct_sums(beta):
    """A heavy atom and a thin layer of cells (``f`` below the floor far from the atom): the
    kernel flags it and :meth:`rhs` is the numpy code's (direct sums there)."""
    disc = _disc("relu", "softmax", "exp_shifted", beta, "ascent")
    n = 64
    X = np.linspace(0.0, TWO_PI, n, endpoint=False) + 0.01
    A, ids = np.zeros(n), np.full(n, -1)
    A[0], ids[0] = 1.0, 0
    st = lg.LagrangianState(X, np.full(n, 1e-9), A, ids)
    _floors(disc, st)
    assert kl.cells_rhs(st.pack(), n, disc.weights, disc._units, disc._consts, disc.mass_floor,
                        disc.density_floor, ld.FD_STEP)[2]
    got, rate = disc.rhs(st.pack())
    ref, ref_rate = disc.rhs_reference(st.pack())
    np.testing.assert_array_equal(got, ref)
    assert rate == ref_rate and np.all(np.isfinite(got))


LENGTHS = np.array([0.3 * ld.MET, 0.5 * ld.COLLAPSE, 2.0 * ld.COLLAPSE, 0.5 * ld.ABSORB, 0.5, 1.0,
                    1.5 * ld.REFINE, 3.0])  # times h: the classes of cells the events look at


def _event_state(seed: int, n: int, offset: float, atoms: float, h: float,
                 classes: tuple[int, ...] = tuple(range(LENGTHS.size))) -> lg.LagrangianState:
    """Cells of lengths from the ``classes`` of :data:`LENGTHS` (met, collapsing, absorbed by an
    atom, ordinary, to be split), the last cell what is left of the turn; atoms at some points;
    some cells empty; some mass."""
    rng = np.random.default_rng(seed)
    L = rng.choice(LENGTHS[list(classes)] * h, n) * rng.uniform(0.8, 1.2, n)
    keep = np.cumsum(L) < TWO_PI - 0.2 * h
    L = L[keep] if keep.sum() >= 2 else np.full(4, TWO_PI / 4)
    X = np.concatenate([[0.0], np.cumsum(L)[:-1]]) + offset
    k = X.size
    m = rng.uniform(0.0, 0.05, k) * np.where(rng.random(k) < 0.2, 0.0, 1.0)
    A = np.where(rng.random(k) < atoms, rng.uniform(0.01, 0.3, k), 0.0)
    ids = np.where(A > 0, rng.permutation(k) + 3, -1)
    m[0] += 0.01
    return lg.LagrangianState(X, m, A, ids)


@settings(max_examples=300, deadline=None)
@given(model=MODELS, seed=hst.integers(0, 2**32 - 1), n=hst.integers(2, 60), offset=hst.floats(-7.0, 7.0),
       atoms=hst.floats(0.0, 0.4), tail=hst.sampled_from([0, 1]), next_id=hst.integers(0, 100),
       classes=hst.sets(hst.integers(0, LENGTHS.size - 1), min_size=1))
def test_events_are_the_numpy_code(model, seed, n, offset, atoms, tail, next_id, classes):
    """One compiled call does the bookkeeping between steps as the numpy code does, bitwise
    (normalisation, collapse of runs the flow holds together or whose ends met, absorption,
    merging, refinement, the atoms' identities and the next free one); the state itself when
    nothing happens."""
    disc = _disc(*model)
    st = _event_state(seed, n, offset, atoms, disc.h, tuple(sorted(classes)))
    _floors(disc, st)
    state = np.concatenate([st.pack(), np.full(tail, ho.CELLS)])
    disc.next_id = next_id
    got = disc.events_flat(state, tail)
    got_id = disc.next_id
    disc.next_id = next_id
    ref = disc._events(st).pack()
    np.testing.assert_array_equal(_bits(got[:got.size - tail]), _bits(ref))
    assert np.array_equal(got[got.size - tail:], state[state.size - tail:])
    assert got_id == disc.next_id
    status = kle.events(state, st.n, disc._lengths, disc.mass_floor, next_id, disc._sinks, disc.weights,
                       disc._units, disc._consts)[0]
    if status == kle.NOTHING:
        assert got is state


def test_events_keep_the_state_when_nothing_happens():
    """Ordinary cells, atoms a grid cell apart, ``X_0`` in ``[0, 2 pi)``: the state itself comes
    back (with its tag), no copy."""
    disc = _disc("relu", "unnormalized", "exp_shifted", 5.0, "descent")
    n = 40
    X = 0.3 + np.arange(n) * (TWO_PI / n)
    A, ids = np.zeros(n), np.full(n, -1)
    A[[3, 20]], ids[[3, 20]] = [0.2, 0.3], [4, 9]
    st = lg.LagrangianState(X, np.full(n, 0.5 / n), A, ids)
    _floors(disc, st)
    for tail in (0, 1):
        state = np.concatenate([st.pack(), np.full(tail, ho.CELLS)])
        assert disc.events_flat(state, tail) is state
        np.testing.assert_array_equal(disc._events(st).pack(), st.pack())


def test_events_fall_back_when_every_cell_is_short():
    """Everything met in one point (every cell short): the kernel leaves it to the numpy code,
    which makes the one atom."""
    disc = ld.LagrangianCircleDiscretization(_config("relu", "unnormalized", "exp", 5.0, "descent"))
    disc.h = 1e4  # COLLAPSE h > 2 pi: both cells short
    disc._lengths = np.array([ld.COLLAPSE, ld.MET, ld.ABSORB, ld.MERGE, ld.REFINE]) * disc.h
    st = lg.LagrangianState(np.array([1.0, 1.0 + 1e-9]), np.array([0.5, 0.5]), np.zeros(2), np.array([-1, -1]))
    _floors(disc, st)
    assert kle.events(st.pack(), 2, disc._lengths, disc.mass_floor, 0, disc._sinks, disc.weights, disc._units,
                     disc._consts)[0] == kle.NUMPY
    got = lg.LagrangianState.unpack(disc.events_flat(st.pack(), 0))
    assert got.n == 1 and got.A[0] == pytest.approx(1.0) and got.ids[0] == 0 and disc.next_id == 1


def _handover(numpy: bool):
    before = os.environ.get("MEANFIELD_NUMPY")
    os.environ["MEANFIELD_NUMPY"] = "1" if numpy else "0"
    try:
        base = _config("relu", "unnormalized", "exp_shifted", 5.0, "descent", n=32)
        return ho.SpectralToCells(replace(base, time=replace(base.time, scheme="auto")))
    finally:
        if before is None:
            del os.environ["MEANFIELD_NUMPY"]
        else:
            os.environ["MEANFIELD_NUMPY"] = before


HANDOVER = {}


@settings(max_examples=200, deadline=None)
@given(seed=hst.integers(0, 2**32 - 1), n=hst.integers(2, 80), offset=hst.floats(-7.0, 7.0),
       atoms=hst.floats(0.0, 0.5), empty=hst.floats(0.0, 0.8), move=hst.floats(0.0, 0.5),
       step=hst.sampled_from(["new", "none", "other"]))
def test_error_test_points_are_the_numpy_code(seed, n, offset, atoms, empty, move, step):
    """The error test counts the same points, compiled or numpy (crossings of the ReLU corners
    included), and so does the order check of :meth:`accept`."""
    if not HANDOVER:
        HANDOVER.update(compiled=_handover(False), numpy=_handover(True))
    fast, ref = HANDOVER["compiled"], HANDOVER["numpy"]
    assert fast.cells.kernels is not None and ref.cells.kernels is None
    st = _random_state(seed, n, offset, atoms, empty)
    for d in (fast.cells, ref.cells):
        _floors(d, st)
    rng = np.random.default_rng(seed)
    old = np.append(st.pack(), ho.CELLS)
    moved = st.X + rng.uniform(-move, move, st.n)
    new = {"new": np.append(lg.LagrangianState(moved, st.m, st.A, st.ids).pack(), ho.CELLS),
           "none": None, "other": np.zeros(old.size + 4)}[step]
    got, unit = fast.error_scale(old, new)
    want, want_unit = ref.error_scale(old, new)
    assert unit == want_unit == 1.0
    np.testing.assert_array_equal(got, want)
    for s in (old, new if step == "new" else old):
        assert fast.accept(s) == ref.accept(s)


@pytest.mark.parametrize("name", ["dopri5", "bs32", "rk4"])
def test_butcher_stages_compiled_are_bitwise_numpy(name):
    """The compiled Butcher stage sums (small flat states) give bitwise numpy's: signed zeros,
    zero weights (``0 * inf``), slopes that are zero on most of the state."""
    table = it.get_integrator(name)
    rng = np.random.default_rng(3)
    u = rng.standard_normal(301)
    u[:5] = [-0.0, 0.0, np.inf, -np.inf, 1e-310]

    def rhs(v, dt=None):
        k = np.zeros_like(v)
        with np.errstate(invalid="ignore"):
            k[:150] = np.sin(v[:150]) * 1e3
        k[7] = -0.0
        return k, float(np.abs(k).max())

    for dt in (0.01, 0.37):
        if isinstance(table, it.EmbeddedPair):
            a = it.embedded_step(table, rhs, u, dt, backend="numba")
            b = it.embedded_step(table, rhs, u, dt, backend="numpy")
            for x, y in zip(a[:2], b[:2]):
                np.testing.assert_array_equal(_bits(x), _bits(y))
            assert a[2] == b[2]
        a = it.rk_step(table, rhs, u, dt, backend="numba")
        b = it.rk_step(table, rhs, u, dt, backend="numpy")
        np.testing.assert_array_equal(_bits(a[0]), _bits(b[0]))


def test_default_method_run_takes_the_same_steps():
    """A short run of the default method (spectral, then cells with atoms: collapse, absorption,
    refinement, corner crossings) with the compiled kernels and stage sums takes bitwise the
    steps of the numpy code (with its compiled fields)."""
    base = load_config(str(ROOT / "runs" / "demo.toml"))
    cfg = replace(base, domain=replace(base.domain, resolution=128), time=replace(base.time, t_end=150.0),
                  output=replace(base.output, progress=False))

    def run(kernels: bool) -> dict:
        states: dict = {}

        class Recorder(loop.Solver):
            def step(self, t_stop):
                h = super().step(t_stop)
                states[self.n_steps] = (self.t, self.rho, self.dt)
                return h

        init = ld.LagrangianCircleDiscretization.__init__

        def plain(self, config):
            init(self, config)
            self.kernels = None

        mp = pytest.MonkeyPatch()
        mp.setattr(loop, "Solver", Recorder)
        if not kernels:
            mp.setattr(ld.LagrangianCircleDiscretization, "__init__", plain)
            mp.setattr(it, "BUTCHER_FUSE_MAX_SIZE", 0)
        try:
            rho0, atoms0 = initial_state(cfg)
            loop.simulate(cfg, rho0, atoms0=atoms0)
        finally:
            mp.undo()
        return states

    fast, ref = run(True), run(False)
    cells = [s[1].size for s in fast.values() if s[1][-1] == ho.CELLS]
    assert max(fast) > 100 and len(set(cells)) > 10  # the cells phase, with events
    common = sorted(set(fast) & set(ref))
    assert len(common) >= min(len(fast), len(ref)) - 20  # (the last snapshots' batch: wall-clock)
    for k in common:
        assert fast[k][0] == ref[k][0] and fast[k][2] == ref[k][2]
        np.testing.assert_array_equal(_bits(fast[k][1]), _bits(ref[k][1]))
