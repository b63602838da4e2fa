"""The S^1 Lagrangian scheme (``time.scheme = "lagrangian"``): moving cells plus Dirac atoms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from conftest import toml_config
from solvers.api import load_config
from solvers.circle.measure import lagrangian as lg
from solvers.circle.measure.lagrangian_discretization import LagrangianCircleDiscretization
from solvers.io.state import initial_density
from solvers.model.config import ConfigError
from solvers.timestepping.loop import simulate

TWO_PI = 2 * np.pi
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _demo(n: int, **keys) -> str:
    """The paper's S^1 descent in Lagrangian cells (runs/paper_s1_descent_lagrangian.toml) at
    ``n`` cells, without its output path; ``keys`` as :func:`toml_config`'s."""
    return toml_config(ROOT / "runs" / "paper_s1_descent_lagrangian.toml", domain__resolution=n,
                       output__path=None, **keys)


def _state(n: int = 48, seed: int = 0) -> lg.LagrangianState:
    """A random smooth-ish state: uneven points, masses, two atoms."""
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0.0, TWO_PI, n))
    A = np.zeros(n)
    ids = np.full(n, -1)
    A[[5, 30]], ids[[5, 30]] = [0.2, 0.1], [0, 1]
    return lg.LagrangianState(X, rng.uniform(0.0, 0.02, n), A, ids)


@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
@pytest.mark.parametrize("beta", [1.0, 5.0, 25.0])
def test_spectral_velocity_equals_closed_form(kernel, beta):
    """The Fourier coefficients of the cells and atoms, times the Funk-Hecke multipliers, give the
    direct closed-form sums to round-off (compiled and numpy)."""
    cfg = load_config(f'[model]\nbeta = {beta}\nkernel = "{kernel}"\n')
    st, w = _state(), lg.gradient_weights(cfg.model)
    pts = np.linspace(-1.0, 7.0, 41)
    exact = lg.attention_gradient_reference(st, cfg.model, pts)
    scale = np.abs(exact).max()
    for compiled in (True, False):
        got = lg.attention_gradient(st, w, pts, compiled=compiled)
        assert np.abs(got - exact).max() < 1e-12 * scale


def test_collapse_keeps_mass_and_first_moment():
    st = _state()
    short = np.zeros(st.n, bool)
    short[[3, 4, 5, 6, 20]] = True  # a run through atom 0 (point 5) and a run of one cell
    new, next_id = lg.collapse(st, short, 7)
    assert new.n == st.n - 5
    assert np.sum(new.m) + np.sum(new.A) == pytest.approx(np.sum(st.m) + np.sum(st.A), abs=1e-15)
    L = st.lengths()
    for run, cells, ident in ((slice(3, 8), slice(3, 7), 0), (slice(20, 22), slice(20, 21), 7)):
        mass = st.A[run].sum() + st.m[cells].sum()
        centre = (np.sum(st.A[run] * st.X[run]) + np.sum(st.m[cells] * (st.X[cells] + 0.5 * L[cells]))) / mass
        assert np.mod(new.X[new.ids == ident][0], TWO_PI) == pytest.approx(centre, rel=1e-13)
        assert new.A[new.ids == ident][0] == pytest.approx(mass, rel=1e-14)
    assert np.all(new.lengths() > 0) and np.all(new.m >= 0) and np.all(new.A >= 0)
    assert sorted(new.ids[new.ids >= 0]) == [0, 1, 7]  # the run through atom 0 keeps its id
    assert next_id == 8


def test_collapse_across_two_pi_and_mass_floor():
    st = _state()
    short = np.zeros(st.n, bool)
    short[[st.n - 1, 0]] = True  # the run X[n-1], X[0] + 2 pi, X[1] + 2 pi
    new, _ = lg.collapse(st, short, 7)
    assert new.n == st.n - 2 and 0 <= new.X[0] < TWO_PI and np.all(new.lengths() > 0)
    assert np.sum(new.m) + np.sum(new.A) == pytest.approx(np.sum(st.m) + np.sum(st.A), abs=1e-15)
    joined = new.X[new.ids == 7][0]
    want = (st.m[-1] * (st.X[-1] + 0.5 * st.lengths()[-1]) + st.m[0] * (st.X[0] + TWO_PI + 0.5 * st.lengths()[0])) \
        / (st.m[-1] + st.m[0])
    assert np.mod(joined, TWO_PI) == pytest.approx(np.mod(want, TWO_PI), rel=1e-13)
    empty = lg.LagrangianState(st.X, np.zeros(st.n), np.zeros(st.n), np.full(st.n, -1))
    none, next_id = lg.collapse(empty, short, 7, mass_floor=1e-14)
    assert next_id == 7 and np.all(none.ids == -1) and none.n == st.n - 2  # no massless atoms


def test_short_cells_absorb_and_merge():
    X = np.array([0.0, 1.0, 1.001, 1.5, 1.52, 4.0])
    A = np.array([0.0, 0.3, 0.0, 0.2, 0.1, 0.0])
    ids = np.array([-1, 0, -1, 1, 2, -1])
    st = lg.LagrangianState(X, np.full(6, 0.01), A, ids)
    short = lg.short_cells(st, delta=1e-4, absorb=0.005, merge=0.05)
    # cell 1 (beside atom 0, 0.001 long) is absorbed; cell 3 lies between atoms 0.02 apart
    assert short.tolist() == [False, True, False, True, False, False]


def test_refine_splits_stretched_cells_conservatively():
    st = _state()
    new = lg.refine(st, 0.1, 0.0)
    L = st.lengths()
    assert new.n == st.n + int(np.sum(L > 0.1))
    assert np.sum(new.m) == pytest.approx(np.sum(st.m), abs=1e-15)
    assert np.all(new.m >= 0) and np.all(new.lengths() > 0) and np.all(new.lengths() <= max(L.max() / 2, 0.1) + 1e-15)


def test_cell_masses_are_exact_and_from_grid_round_trips():
    """The grid's cell masses integrate the piecewise-constant density exactly; a state made from
    grid densities gives those densities back."""
    st = _state()
    n = 64
    masses = lg.cell_masses(st, n)
    assert masses.sum() == pytest.approx(st.m.sum(), abs=1e-15) and np.all(masses >= -1e-17)
    # mass of [0, b] from the cells against the brute-force integral of the density
    h = TWO_PI / n
    fine = np.linspace(-h / 2, TWO_PI - h / 2, 400001)[:-1] + TWO_PI / 400000 / 2
    k = np.searchsorted(np.concatenate([st.X - TWO_PI, st.X, st.X + TWO_PI]), fine, side="right") - 1
    dens = np.tile(st.m / st.lengths(), 3)[k]
    assert np.sum(dens[: 100000]) * TWO_PI / 400000 == pytest.approx(masses[:16].sum(), abs=1e-5)
    rho = 1.0 + 0.5 * np.cos(np.arange(n) * h)
    back = lg.from_grid(rho, np.array([0.3]), np.array([2.0]), np.array([4]))
    assert np.allclose(lg.cell_masses(back, n) / h, rho, rtol=1e-13)
    assert back.A.sum() == 0.3 and back.X[back.ids == 4] == 2.0


def test_a_run_conserves_mass_and_keeps_points_in_order():
    cfg = load_config(_demo(96, time__t_end=200.0))
    disc = LagrangianCircleDiscretization(cfg)
    res = simulate(cfg, initial_density(cfg))
    d = res.final.diagnostics
    assert d.mass == pytest.approx(2 * np.pi * 1 / (2 * np.pi), rel=1e-13)
    assert np.min(res.final.rho) >= 0 and d.n_atoms >= 2
    assert disc.accept(disc.prepare_state(initial_density(cfg), None, True))


@pytest.mark.slow
def test_demo_atoms_agree_at_n_128_and_256():
    """The paper's S^1 descent (beta = 5): the same five atoms at N = 128 and 256, masses within
    1e-3 and positions within 1e-3 rad (issue target; measured 4.5e-4 and 4.2e-4 rad)."""
    out = []
    for n in (128, 256):
        cfg = load_config(_demo(n))
        res = simulate(cfg, initial_density(cfg))
        d = res.final.diagnostics
        o = np.argsort(d.dirac_position)
        out.append((np.asarray(d.dirac_mass)[o], np.asarray(d.dirac_position)[o]))
    assert out[0][0].size == out[1][0].size == 5
    assert np.abs(out[0][0] - out[1][0]).max() < 1e-3
    assert np.abs(out[0][1] - out[1][1]).max() < 1e-3


@pytest.mark.parametrize("text, key", [
    ('[domain]\nmanifold = "S2"\nresolution = 31\n[time]\nscheme = "lagrangian"\n', "time.scheme"),
    ('[time]\nscheme = "lagrangian"\n', "time.scheme"),
    ('[time]\nlagrangian_until = 5.0\n', "time.lagrangian_until: is retired"),
    ('[time]\none_sided_kinks = true\n', "time.one_sided_kinks: is retired"),
    ('[atoms]\nrepresentation = "dirac"\n[time]\nscheme = "lagrangian"\n[output]\nsnapshot_mode = "interpolate"\n',
     "output.snapshot_mode"),
])
def test_config_errors_name_the_key(text, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(text)


def test_cli_run_polish_and_resume(tmp_path, capsys):
    """The archive of a Lagrangian run is the Dirac state's: ``run --polish`` polishes it to a
    stable stationary measure (1e-12), and ``run --resume`` continues it (from its grid cells and
    atoms) with the mass conserved and the same atoms."""
    import solvers
    from solvers.cli.main import main
    from solvers.studies.polish import polish_archive

    cfg = tmp_path / "demo.toml"
    cfg.write_text(_demo(128))
    path = tmp_path / "lag.nc"
    assert main(["run", str(cfg), "-o", str(path), "--no-progress", "--polish",
                 "--set", "time.t_end=1000", "--set", "time.stop_when_stationary=false"]) == 0
    assert "descent: stable stationary point" in capsys.readouterr().out
    result, _ = polish_archive(path, tmp_path / "p.nc")
    assert result.converged and result.residuals[-1] <= 1e-12 and result.stable
    assert result.m.size == 5 and result.m.sum() == pytest.approx(1.0, abs=1e-12)
    before = solvers.open_run(path)
    assert before.attrs["scheme"] == "lagrangian"
    assert main(["run", "--resume", str(path), "--set", "time.t_end=1200", "--no-progress"]) == 0
    after = solvers.open_run(path)
    assert float(after["time"][-1]) == 1200.0
    assert np.abs(after["mass"].values - 1.0).max() < 1e-13
    m0 = np.sort(before["atom_mass"].isel(time=-1).values)
    m1 = np.sort(after["atom_mass"].isel(time=-1).values)
    assert m1[np.isfinite(m1)] == pytest.approx(m0[np.isfinite(m0)], abs=2e-4)


@settings(max_examples=200, deadline=None)
@given(seed=hst.integers(0, 2**32 - 1), n=hst.integers(3, 40), delta=hst.floats(1e-4, 0.5),
       absorb=hst.floats(0.0, 0.5), merge=hst.floats(0.0, 1.0), longest=hst.floats(0.01, 1.0))
def test_events_keep_the_measure_valid(seed, n, delta, absorb, merge, longest):
    """Fuzzed states through collapse, absorption, merging and refinement: the mass is kept to
    round-off, the points stay in order within one turn, masses stay non-negative, atoms have
    identities and positive masses, and identities stay unique."""
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0.0, TWO_PI, n)) + rng.uniform(-3, 3)
    X = np.unique(X)
    k = X.size
    A = np.where(rng.random(k) < 0.3, rng.uniform(0.0, 0.2, k), 0.0)
    ids = np.where(A > 0, np.arange(k), -1)
    m = np.where(rng.random(k) < 0.2, 0.0, rng.uniform(0.0, 0.05, k))
    st0 = lg.normalise(lg.LagrangianState(X, m, A, ids))
    total = st0.m.sum() + st0.A.sum()
    short = lg.short_cells(st0, delta, absorb, merge)
    st1, next_id = lg.collapse(st0, short, k, mass_floor=1e-14)
    st2 = lg.refine(st1, longest, 1e-14)
    for s in (st1, st2):
        assert s.m.sum() + s.A.sum() == pytest.approx(total, rel=1e-13, abs=1e-15)
        assert np.all(s.lengths() > 0) and 0 <= s.X[0] < TWO_PI
        assert np.all(s.m >= 0) and np.all(s.A >= 0)
        assert np.all((s.A > 0) <= (s.ids >= 0))
        assert np.unique(s.ids[s.ids >= 0]).size == int(np.sum(s.ids >= 0))
    assert next_id >= k


BETA25 = ["model.beta=25", "domain.resolution=256", 'atoms.representation="dirac"', "output.progress=false",
          "output.snapshot_interval=20"]


def _beta25(*extra: str, base: tuple[str, ...] = tuple(BETA25)):
    """The paper's descent ReLU run at beta = 25 with ``--set`` style overrides."""
    from solvers.model.config import load_config as load_with_overrides

    return load_with_overrides(ROOT / "runs" / "paper_s1_descent_relu_beta50.toml", list(base) + list(extra))


def test_default_method_gives_the_corner_atom_of_the_fine_grid():
    """beta = 25, N = 256, t = 60: the fv Dirac state alone puts .1994 in the atom born on the ReLU
    corner at 85.4 degrees (the sub-cell layer of mass beside the corner is smeared before the
    sink is born, docs/methods.md §6.4); the default method (cells throughout) puts there the grid
    density's mass at N = 1024 (.2031) within 1e-3."""
    def corner(cfg) -> float:
        d = simulate(cfg, initial_density(cfg)).final.diagnostics
        near = np.abs(np.degrees(np.asarray(d.atom_position)) - 85.5) < 1.0
        return float(np.asarray(d.atom_mass)[near][0])

    fine = corner(_beta25("time.t_end=60", base=("model.beta=25", "domain.resolution=1024",
                                                  "output.progress=false", "output.snapshot_interval=20")))
    default = corner(load_config("\n".join(
        line for line in (ROOT / "runs" / "paper_s1_descent_relu_beta50.toml").read_text().splitlines()
        if not line.startswith(("scheme", "cfl"))), **{k.replace(".", "__"): v for k, v in (
            ("model.beta", 25.0), ("domain.resolution", 256), ("output.progress", False),
            ("output.snapshot_interval", 20.0), ("time.t_end", 60.0))}))
    assert abs(default - fine) < 1e-3


