"""CLI manners: the progress bars stay within the terminal and 100 characters; ``plot -o`` and
``animate -o`` into a missing folder create it and say so, and a file where the folder should
be is refused with exit 2."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import solvers
from solvers.cli.main import main
from solvers.cli.progress import MAX_WIDTH, Counter, ProgressBar
from solvers.model.params import TimeParams

ROOT = Path(__file__).resolve().parents[2]


def _lines(text: str) -> list[str]:
    """The lines tqdm drew (redrawn in place after a carriage return), escape codes removed."""
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
    return [part for part in re.split(r"[\r\n]", text) if part.strip()]


def _draw_run_bar() -> None:
    time = TimeParams(t_end=5000.0, stop_when_stationary=True)
    bar = ProgressBar(0.0, 5000.0, time=time, terminal=True)
    snap = SimpleNamespace(stationarity=SimpleNamespace(window=True, transport=False,
                                                        atoms=False, masses=False))
    diag = SimpleNamespace(energy=-0.0691199673, n_atoms=5, transport_rate=2.6e-3, mass=1.0,
                           max_support_velocity=0.1)
    bar.track(snap)
    for k in range(1, 50):
        bar(181.0 + k, 4666 + k, 0.1, diag)
    bar.close()


@pytest.mark.parametrize("columns, width", [("180", MAX_WIDTH), ("60", 60), ("", MAX_WIDTH)])
def test_bars_stay_within_the_terminal_and_100_columns(monkeypatch, columns, width):
    """A stationary run's bar (its postfix alone is over 100 characters) and a counter, drawn
    in place, are cut at the terminal's width, at most 100; without COLUMNS and without a
    terminal (this test's stream) the width is 100."""
    monkeypatch.setenv("COLUMNS", columns)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    _draw_run_bar()
    with Counter(3, "runs " + "x" * 200, terminal=True) as counter:
        counter.update(1)
    lines = _lines(stream.getvalue())
    assert lines and max(map(len, lines)) <= width
    assert max(len(line) for line in lines if line.startswith("t=")) == width  # cut, not short
    assert any("rate 2.6e-03 > tol" in line for line in lines)  # what matters comes first


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("manners") / "run.nc"
    solvers.run(ROOT / "runs" / "demo.toml", path=path, domain__resolution=128,
                time__t_end=2.0, time__scheme="fv", output__snapshot_interval=1.0)
    return path


@pytest.mark.parametrize("command, name", [("plot", "x.png"),
                                           pytest.param("animate", "x.gif", marks=pytest.mark.slow)])
def test_output_into_a_missing_folder_is_created_and_said(archive, tmp_path, capsys, command,
                                                          name):
    out = tmp_path / "new" / "sub" / name
    assert main([command, str(archive), "-o", str(out)]) == 0
    assert out.is_file()
    assert f"(created the folder {out.parent})" in capsys.readouterr().out
    assert main([command, str(archive), "-o", str(out.with_name("y" + name[1:]))]) == 0
    assert "created" not in capsys.readouterr().out  # the folder exists now


def test_output_below_a_file_is_refused(archive, tmp_path, capsys):
    (tmp_path / "afile").write_text("mine")
    assert main(["plot", str(archive), "-o", str(tmp_path / "afile" / "deep" / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "-o:" in err and "is a file, not a folder" in err
    assert (tmp_path / "afile").read_text() == "mine"


def test_info_opens_with_the_verdict_and_ends_with_the_parameters(archive, capsys):
    assert main(["info", str(archive)]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = {key: next(i for i, line in enumerate(lines) if line.startswith(key))
             for key in ("accuracy:", "snapshots:", "final:", "atoms:", "parameters:")}
    assert first["accuracy:"] == 1
    assert first["accuracy:"] < first["snapshots:"] < first["final:"] < first["atoms:"] \
        < first["parameters:"]
    assert all(line.startswith("  ") for line in lines[first["parameters:"] + 1:])
