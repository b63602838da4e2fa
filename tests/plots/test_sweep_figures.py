"""Summary figures of sweeps (solvers.plots.sweeps), from a tiny real sweep and an S^2 summary."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest
from conftest import paper_s1_toml
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from solvers.cli import sweep_figures as cli_sweep_figures
from solvers.io.summary import THEOREM_3_5, build_summary
from solvers.plots import sweeps as sweep_figures
from solvers.studies import sweep

TINY = paper_s1_toml(activation="gelu")


@pytest.fixture(scope="module")
def tiny_sweeps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two tiny sweeps (beta x seed): descent and ascent, on one in-process worker."""
    root = tmp_path_factory.mktemp("sweeps")
    (root / "tiny.toml").write_text(TINY)
    params = [sweep.parse_param("model.beta=1,3"), sweep.parse_param("initial.seed=0..2")]
    out = {}
    with sweep.dask_client(workers=1, processes=False) as client:
        for direction in ("descent", "ascent"):
            out[direction] = root / direction
            summary = sweep.run_sweep(root / "tiny.toml", params, out[direction], client=client,
                                      overrides=[f'model.direction="{direction}"'],
                                      echo=lambda line: None)
            assert set(summary["reason"].values.ravel()) == {"t_end"}
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="meanfield")
    cli_sweep_figures.add_parser(parser.add_subparsers(dest="command"))
    return parser


def test_atom_counts_overlay_setups(tiny_sweeps: dict[str, Path]) -> None:
    summaries = sweep_figures.load_summaries(list(tiny_sweeps.values()), ["descent", "ascent"])
    fig = sweep_figures.figure_atom_counts(summaries)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.lines) == 6 and ax.get_xscale() == "log"  # 2 setups x 3 seeds
    assert {t.get_text() for t in fig.legends[0].get_texts()} >= {"descent, seed=0",
                                                                   "ascent, seed=2"}
    line = ax.lines[0]
    expected = summaries["descent"]["n_atoms"].sel(seed=0).values
    assert np.array_equal(line.get_xdata(), [1, 3]) and np.array_equal(line.get_ydata(), expected)


def test_atom_masses_against_sqrt_beta_with_theorem_line(tiny_sweeps: dict[str, Path]) -> None:
    ds = sweep_figures.load_summaries([tiny_sweeps["descent"]])["descent"].sel(seed=0)
    fig = sweep_figures.figure_atom_masses({"descent": ds})
    ax = fig.axes[0]
    bound = [ln for ln in ax.lines if np.allclose(ln.get_ydata(), THEOREM_3_5)]
    assert len(bound) == 1 and abs(THEOREM_3_5 - 0.5742) < 1e-4
    masses, unsettled, _legend_proxy = ax.collections
    points = masses.get_offsets()
    finite = points[np.isfinite(points[:, 1])]
    assert set(np.round(finite[:, 0] ** 2, 9)) == {1.0, 3.0}
    assert finite.shape[0] == int(ds["n_atoms"].sum())
    # the tiny runs stop at t_end, not stationary: their largest atoms are drawn open
    assert np.allclose(unsettled.get_offsets()[:, 1], ds["max_atom_mass"].values)
    assert "not stationary" in fig.legends[0].get_texts()[1].get_text()
    assert ax.get_title() == "Atom masses at the end of the runs"  # stopped at t_end


def test_sensitivity_panels_per_setup(tiny_sweeps: dict[str, Path]) -> None:
    summaries = sweep_figures.load_summaries(list(tiny_sweeps.values()))
    fig = sweep_figures.figure_sensitivity(summaries)
    assert len(fig.axes) == 4  # (descent, ascent) x beta in {1, 3}
    assert fig.axes[0].get_title() == "descent, beta=1"
    seeds = [t.get_text() for t in fig.legends[0].get_texts()]
    assert seeds == ["seed 0", "seed 1", "seed 2"]


def test_sphere_summary_is_drawn_on_a_map() -> None:
    params = [sweep.parse_param("initial.seed=0,1")]
    points = sweep.sweep_points(params)
    records = {p.name: {"reason": "stationary", "t_final": 5.0, "n_steps": 3, "wall_time": 1.0,
                        "n_atoms": 2, "max_atom_mass": 0.6, "energy": 0.1, "mass": 1.0,
                        "atom_mass": [0.6, 0.4], "atom_position": [[0, 0, 1], [1, 0, 0]]}
               for p in points}
    ds = build_summary(params, ["seed"], points, records)
    assert ds["atom_position"].dims == ("seed", "atom", "xyz")
    fig = sweep_figures.figure_sensitivity({"S2": ds})
    offsets = fig.axes[0].collections[0].get_offsets()
    assert np.allclose(offsets, [[0.0, 0.0], [0.0, 90.0]])  # (longitude, colatitude)


def test_command_line_writes_the_figures(tiny_sweeps: dict[str, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture) -> None:
    dirs = [str(p) for p in tiny_sweeps.values()]
    args = _parser().parse_args(["sweep-figures", *dirs, "--label", "descent ReLU",
                                 "--label", "ascent", "-o", str(tmp_path)])
    assert args.func(args) == 0
    names = ("sweep_atom_counts.png", "sweep_atom_masses.png", "sweep_sensitivity.png")
    assert all((tmp_path / n).stat().st_size > 10_000 for n in names)
    assert capsys.readouterr().out.count("wrote ") == 3
    for argv in (["sweep-figures", str(tmp_path / "missing")],
                 ["sweep-figures", dirs[0], "--label", "one", "--label", "two"]):
        args = _parser().parse_args(argv)
        assert args.func(args) == 2
        assert capsys.readouterr().err.startswith("error: ")


def test_points_whose_resolution_check_failed_are_marked() -> None:
    params = [sweep.parse_param("model.beta=5,25,50")]
    points = sweep.sweep_points(params)
    verdicts = {"beta-5": "passed", "beta-25": "failed", "beta-50": "passed"}
    records = {p.name: {"reason": "stationary", "t_final": 5.0, "n_steps": 3, "wall_time": 1.0,
                        "n_atoms": 3, "max_atom_mass": 0.46, "energy": 0.1, "mass": 1.0,
                        "atom_mass": [0.46, 0.29, 0.25], "atom_position": [0.0, 2.0, 4.0],
                        "resolution": 512, "refinements": 1,
                        "resolution_check": verdicts[p.name]} for p in points}
    ds = build_summary(params, ["beta"], points, records)
    for make, y in ((sweep_figures.figure_atom_counts, 3.0),
                    (sweep_figures.figure_atom_masses, 0.46)):
        fig = make({"setup": ds})
        ax = fig.axes[0]
        assert ax.get_title().endswith("at convergence")  # every run stopped stationary
        red = to_rgb(sweep_figures.UNRESOLVED_COLOR)
        crosses = [c for c in ax.collections if c.get_offsets().shape[0] == 1
                   and np.allclose(c.get_offsets()[0, 1], y)
                   and np.allclose(c.get_facecolor()[0][:3], red)]
        x = crosses[0].get_offsets()[0, 0]
        assert len(crosses) == 1 and x == pytest.approx(25 if y == 3.0 else np.sqrt(25))
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert sweep_figures.UNRESOLVED_LABEL in labels
    passed = build_summary(params, ["beta"], points, {
        k: dict(v, resolution_check="passed") for k, v in records.items()})
    labels = [t.get_text() for t in sweep_figures.figure_atom_counts(
        {"setup": passed}).legends[0].get_texts()]
    assert sweep_figures.UNRESOLVED_LABEL not in labels
