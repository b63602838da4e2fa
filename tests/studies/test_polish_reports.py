"""A polished archive: ``info`` prints the polish results, ``plot`` draws one state (no time
axis, no empty energy panel), and polishing a run that was not stationary says so."""

from pathlib import Path

import pytest

import solvers
from solvers.cli.main import main
from solvers.plots.circle import run_figure
from solvers.studies.polish import format_report, polish_archive

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def polished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("polish_reports")
    run = folder / "early.nc"  # stopped at t_end = 50, long before the demo is stationary
    solvers.run(ROOT / "runs" / "demo.toml", path=run, domain__resolution=128,
                time__t_end=50.0, time__stop_when_stationary=False)
    result, out = polish_archive(run, folder / "early.polished.nc")
    return result, out


def test_polishing_a_run_that_was_not_stationary_says_so(polished):
    result, _ = polished
    text = format_report(result)
    assert "not a state the run reached" in text
    assert "the run was NOT at a stationary state" in text
    assert "not yet stationary at t = 50" in text


def test_info_prints_the_polish_results(polished, capsys):
    _, out = polished
    assert main(["info", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "polished (Newton on grad U = 0" in printed
    assert "Newton: converged" in printed and "stationary point of the polished atoms" in printed


def test_the_figure_of_one_state_has_no_time_axis(polished):
    _, out = polished
    ds = solvers.open_run(out)
    fig, panels = run_figure(ds)
    assert set(panels) == {"final", "state"}
    labels = [a.get_xlabel() + a.get_ylabel() for a in fig.axes]
    assert not any("time" in label for label in labels)
    text = " ".join(" ".join(t.get_text() for t in panels["state"].texts).split())  # unwrapped
    assert "energy E =" in text and "stationary point" in text
