"""Sd figures (solvers.plots.points, the Sd curves of solvers.plots.sweeps) and the Sd sweep table.

The figures of a run come from tiny real Sd runs (d = 2, 3) and from an archive-shaped Dataset
in d = 5 whose atoms are known. The sweep table comes from a tiny real sweep over
``domain.dim`` and ``model.beta``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

import solvers
from solvers.hypersphere.manifold import HYPERSPHERE, hypersphere
from solvers.io.reading import open_run
from solvers.io.summary import THEOREM_3_5
from solvers.plots import points, sweeps
from solvers.plots.run import animate_run, manifold_of_run, plot_run
from solvers.plots.style import style_context
from solvers.studies import sweep

SD_TINY = """[domain]
manifold = "Sd"
dim = {dim}
points = {points}
[model]
beta = 5.0
direction = "descent"
attention = "unnormalized"
[perceptron]
activation = "relu"
seed = 7
[time]
t_end = {t_end}
[output]
snapshot_interval = {every}
"""


@pytest.fixture(scope="module", params=[2, pytest.param(3, marks=pytest.mark.slow)], ids=["d2", "d3"])
def sd_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny real Sd run (N = 200, descent to t = 40, a few atoms, about 2 s) kept as an
    archive."""
    path = tmp_path_factory.mktemp("sd") / f"sd{request.param}.nc"
    solvers.run(SD_TINY.format(dim=request.param, points=200, t_end=40.0, every=2.0), path=path,
                force=True)
    return path


def _figure(ds: xr.Dataset, style: str = "paper") -> tuple[Figure, dict]:
    with style_context(style):
        return points.points_run_figure(ds, style)


def _gids(ax, prefix: str) -> list:
    return [ln for ln in ax.get_lines() if str(ln.get_gid() or "").startswith(prefix)]


def _atom_scatter(ax):
    (dots,) = [c for c in ax.collections if c.get_gid() == "atoms"]
    return dots


def test_run_figure_of_a_real_run(sd_run: Path, tmp_path: Path) -> None:
    """``plot_run`` of an Sd archive writes a PNG; panel (a) has one line per atom identity,
    (b) one per pair of identities, (c) one point per final atom, at its projection."""
    ds = open_run(sd_run)
    assert manifold_of_run(ds) is HYPERSPHERE
    out = plot_run(sd_run, tmp_path / "sd2.png")
    assert out.stat().st_size > 10_000
    fig, panels = _figure(ds)
    k = ds.sizes["atom"]
    assert k >= 2
    lines = _gids(panels["masses"], "atom-")
    assert len(lines) == k
    for j, line in enumerate(lines):  # each line is that identity's mass history
        np.testing.assert_array_equal(line.get_ydata(), ds["atom_mass"].values[:, j])
    assert len(_gids(panels["distances"], "pair-")) == k * (k - 1) // 2
    mass, unit = points.atoms_at(ds, -1)
    assert mass.size == int(ds["n_atoms"].values[-1]) > 0
    dots = _atom_scatter(panels["projection"])
    xy = dots.get_offsets()
    assert xy.shape == (mass.size, 2)
    np.testing.assert_allclose(xy, points.project(unit, mass)[0])
    if unit.shape[1] == 2:  # the principal plane is R^2 itself: every chord distance is kept
        chord = np.linalg.norm(unit[:, None] - unit[None], axis=-1)
        np.testing.assert_allclose(np.linalg.norm(xy[:, None] - xy[None], axis=-1), chord,
                                   atol=1e-12)
    np.testing.assert_allclose(dots.get_sizes(), points.AREA_PER_MASS * mass)


@pytest.mark.slow
def test_animation_of_a_real_run(sd_run: Path, tmp_path: Path) -> None:
    """``animate_run`` of an Sd archive: one GIF frame per snapshot."""
    from PIL import Image

    out = animate_run(sd_run, tmp_path / "sd2.gif", fps=20, dpi=40)
    with Image.open(out) as gif:
        assert gif.n_frames == open_run(sd_run).sizes["time"]


def synthetic_run(d: int = 5, kernel: str = "exp") -> xr.Dataset:
    """An Sd archive's layout over 4 records: identity 0 at e_1, identity 1 at angle 1 from
    it (in the e_1 e_2 plane), identity 2 at e_3 until it ends after record 1."""
    nt, e = 4, np.eye(d)
    unit = np.full((nt, 3, d), np.nan)
    unit[:, 0], unit[:, 1] = e[0], np.cos(1.0) * e[0] + np.sin(1.0) * e[1]
    unit[:2, 2] = e[2]
    mass = np.array([[0.3, 0.3, 0.2]] * 2 + [[0.6, 0.4, np.nan]] * 2)
    top = np.nanmax(mass, axis=1)
    data = {"rho": (("time", "theta"), np.zeros((nt, 1))), "cell_weight": ("theta", [1.0]),
            "atom_mass": (("time", "atom"), mass), "energy": ("time", -np.arange(nt, dtype=float)),
            "atom_position": (("time", "atom", "component"), unit),
            "dissipation": ("time", np.full(nt, 1e-3)), "max_atom_mass": ("time", top),
            "n_atoms": ("time", np.isfinite(mass).sum(axis=1)),
            "theorem_3_5_bound": ("time", np.full(nt, THEOREM_3_5))}
    coords = {"time": np.arange(nt, dtype=float), "theta": [0.0], "component": np.arange(1, d + 1)}
    attrs = {"manifold": "Sd", "domain__manifold": "Sd", "domain__dim": d, "model__beta": 5.0,
             "domain__resolution": 100, "model__direction": "descent", "kernel": f"{kernel}: K"}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def test_distances_and_projection_of_known_atoms() -> None:
    """d = 5: the pair lines are the geodesic distances (1 rad for the pair that lives on, NaN
    once identity 2 has ended), the grouping radius is min(1/(2 beta), pi/(2d)), and the
    projection holds the two final atoms at their chord distance."""
    ds = synthetic_run(5)
    fig, panels = _figure(ds, "screen")
    pairs = {ln.get_gid(): ln.get_ydata() for ln in _gids(panels["distances"], "pair-")}
    assert sorted(pairs) == ["pair-0-1", "pair-0-2", "pair-1-2"]
    np.testing.assert_allclose(pairs["pair-0-1"], 1.0)
    np.testing.assert_allclose(pairs["pair-0-2"][:2], np.pi / 2)
    assert np.isnan(pairs["pair-1-2"][2:]).all()
    (radius,) = _gids(panels["distances"], "grouping-radius")
    assert radius.get_ydata()[0] == pytest.approx(min(1 / 10, np.pi / 10))
    assert radius.get_ydata()[0] == pytest.approx(hypersphere(5).atom_radius(5.0))
    xy = _atom_scatter(panels["projection"]).get_offsets()
    assert xy.shape == (2, 2)
    assert np.linalg.norm(xy[0] - xy[1]) == pytest.approx(2 * np.sin(0.5))


@pytest.mark.parametrize(("kernel", "style", "bound"),
                         [("exp", "--", "bound without"), ("exp_shifted", ":", "not a bound")])
def test_theorem_line_is_a_bound_only_for_the_kernel_exp(kernel: str, style: str,
                                                         bound: str) -> None:
    """Panel (a): 0.5742 dashed for ``exp``; dotted and called not a bound for ``exp_shifted``
    (in the legend and the footnote)."""
    fig, panels = _figure(synthetic_run(5, kernel))
    (line,) = _gids(panels["masses"], "theorem-3-5")
    assert line.get_ydata()[0] == pytest.approx(THEOREM_3_5)
    assert line.get_linestyle() == style
    assert ("not a bound" in line.get_label()) == (kernel == "exp_shifted")
    assert bound in fig.get_supxlabel()


def test_project_keeps_three_points_and_orders_the_axes() -> None:
    """Three points in d = 7: chord distances kept exactly, the leading axis first."""
    rng = np.random.default_rng(3)
    unit = rng.normal(size=(3, 7))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    xy, basis, share = points.project(unit, np.array([0.5, 0.3, 0.2]))
    np.testing.assert_allclose(basis @ basis.T, np.eye(2), atol=1e-12)
    for i, j in itertools.combinations(range(3), 2):
        assert np.linalg.norm(xy[i] - xy[j]) == pytest.approx(np.linalg.norm(unit[i] - unit[j]))
    assert share[0] >= share[1] >= 0 and share.sum() == pytest.approx(1.0)


def dim_summary() -> xr.Dataset:
    """A summary over dim x beta (3 x 2) in the layout of ``summary.nc``."""
    n = np.array([[3, 2], [4, 1], [6, 2]], dtype=float)
    top = np.array([[0.56, 0.59], [0.46, 0.99], [0.3, 0.7]])
    mass = np.stack([top, 1 - top], axis=-1)
    return xr.Dataset({"n_atoms": (("dim", "beta"), n), "max_atom_mass": (("dim", "beta"), top),
                       "atom_mass": (("dim", "beta", "atom"), mass),
                       "reason": (("dim", "beta"), np.full((3, 2), "stationary"))},
                      coords={"dim": [4, 5, 7], "beta": [1.0, 5.0]},
                      attrs={"swept_keys": '{"dim": "domain.dim", "beta": "model.beta"}',
                             "base_config_text": 'kernel = "exp"\n'})


def test_dimension_figures_draw_one_curve_per_beta() -> None:
    """Figs. 4.9 and 4.10: counts and largest masses against d, one curve per beta, and the
    Theorem 3.5 constant."""
    summaries = {"sd": dim_summary()}
    with style_context("paper"):
        counts = sweeps.figure_atom_counts(summaries, "dim")
        masses = sweeps.figure_dimension_masses(summaries, "dim")
    curves = [ln for ln in counts.axes[0].get_lines() if ln.get_label().startswith("sd")]
    assert [ln.get_label() for ln in curves] == ["sd, beta=1", "sd, beta=5"]
    np.testing.assert_array_equal(curves[1].get_xdata(), [4, 5, 7])
    np.testing.assert_array_equal(curves[1].get_ydata(), [2, 1, 2])
    tops = _gids(masses.axes[0], "max-mass-")
    assert len(tops) == 2
    np.testing.assert_array_equal(tops[0].get_ydata(), [0.56, 0.46, 0.3])
    (line,) = _gids(masses.axes[0], "theorem-3-5")
    assert line.get_ydata()[0] == pytest.approx(THEOREM_3_5) and line.get_linestyle() == "--"
    assert "dimension" in masses.axes[0].get_xlabel()


def _tiny_sweep(tmp_path: Path, dims: str) -> tuple[xr.Dataset, Path]:
    (tmp_path / "sd.toml").write_text(SD_TINY.format(dim=4, points=150, t_end=30.0, every=5.0))
    params = [sweep.parse_param(f"domain.dim={dims}"), sweep.parse_param("model.beta=1,5")]
    with sweep.dask_client(workers=1, processes=False) as client:
        summary = sweep.run_sweep(tmp_path / "sd.toml", params, tmp_path / "out", client=client,
                                  echo=lambda line: None)
    return summary, tmp_path / "out"


def _check_table(summary: xr.Dataset, out: Path, dims: list[int]) -> None:
    """One finished row per (d, beta), and sweep-figures draws the d figures from it."""
    table = summary[["n_atoms", "max_atom_mass", "reason"]].to_dataframe()
    assert list(table.index) == [(d, b) for d in dims for b in (1.0, 5.0)]
    assert set(table["reason"]) == {"t_end"}
    paths = sweeps.write_figures([out])
    assert {p.name for p in paths} >= {"sweep_dim_counts.png", "sweep_dim_masses.png"}


@pytest.mark.slow
def test_sweep_over_the_dimension_d2(tmp_path: Path) -> None:
    """A real sweep over domain.dim = 2 and beta = 1, 5 (N = 150, t = 30): its table."""
    summary, out = _tiny_sweep(tmp_path, "2")
    _check_table(summary, out, [2])


def test_sweep_over_the_dimension_d4_d5(tmp_path: Path) -> None:
    """The sweep of the task, small: d = 4, 5 and beta = 1, 5 (N = 150, t = 30)."""
    summary, out = _tiny_sweep(tmp_path, "4,5")
    _check_table(summary, out, [4, 5])


@pytest.mark.slow
@pytest.mark.parametrize("style", ["paper", "screen"])
def test_figures_have_no_colliding_or_cut_texts(sd_run: Path, style: str) -> None:
    """The run figure (real run and d = 5 with many pairs named) and the d figures: no text
    overlaps another or leaves the canvas."""
    from layout_check import layout_problems

    with style_context(style):
        figures = {"run": points.points_run_figure(open_run(sd_run), style)[0],
                   "run d5": points.points_run_figure(synthetic_run(5, "exp_shifted"), style)[0],
                   "counts": sweeps.figure_atom_counts({"sd": dim_summary()}, "dim", style),
                   "masses": sweeps.figure_dimension_masses({"sd": dim_summary()}, "dim", style)}
        problems = [p for name, fig in figures.items() for p in layout_problems(fig, name)]
    assert not problems, problems
