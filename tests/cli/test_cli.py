"""The ``meanfield`` command line: user errors, a real run, info, plot, resume, Ctrl-C."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import PAPER_S2_A, PAPER_S2_OMEGA, toml_config

import solvers.timestepping.loop
from solvers.cli.main import ProgressBar, main
from solvers.core.snapshot import Diagnostics, Snapshot
from solvers.io.reading import open_run

ROOT = Path(__file__).resolve().parents[2]

TINY = """
[domain]
resolution = 64

[model]
beta = 2.0
kernel = "exp_shifted"

[perceptron]
activation = "relu"
a = [[1.0, 0.0], [-0.6, -0.8]]
omega = [0.6, -0.5]

[time]
t_end = 2.0

[output]
snapshot_interval = 1.0
progress = false
"""


def write(tmp_path: Path, text: str, name: str = "run.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def assert_user_error(rc: int, err: str, key: str) -> None:
    assert rc == 2
    assert err.count("\n") == 1, err
    assert err.startswith(f"error: {key}"), err
    assert "Traceback" not in err


BAD_CONFIGS = [
    ("[modle]\nbeta = 1", "modle"),
    ("[model]\nbta = 1", "model.bta"),
    ("[model]\nbeta = true", "model.beta"),
    ("[model]\nbeta = -1", "model.beta"),
    ("[time]\nt_end = nan", "time.t_end"),
    ('[time]\nscheme = "fv"\ncfl = 0.7', "time.cfl"),  # fv positivity: cfl <= 0.5
    ("[time]\ncfl = 1.5", "time.cfl"),  # the default method: cfl <= 1
    ('[time]\nscheme = "spectral"\ncfl = 1.5', "time.cfl"),
    ("[domain]\nresolution = 100.0", "domain.resolution"),
    ("[domain]\nresolution = 32\n[model]\nbeta = 50", "domain.resolution"),
    ("[perceptron]\na = [[1.0, 0.0]]\nomega = [1.0]", "perceptron.a"),
    ('[perceptron]\nactivation = "relu"\na = [[1.0, 0.0]]\nomega = [1.0, 1.0]', "perceptron.omega"),
    ('[model]\ndirection = "up"', "model.direction"),
    ('[initial]\nkind = "von_mises"\ncenters = [0.0, 1.0]\nkappas = [1.0]', "initial.kappas"),
    ("[initial]\nmodes = [[0, 0.5]]", "initial.modes[0]"),
    ("[initial]\nmodes = [[2, 1.5]]", "initial.modes"),  # negative density
    ('[initial]\nkind = "archive"\npath = "no/such/run.nc"', "initial.path"),
    ("[output]\nsnapshot_interval = 0", "output.snapshot_interval"),
    ("[model]\nbeta = [", "config"),
]


@pytest.mark.parametrize("text, key", BAD_CONFIGS, ids=[k for _, k in BAD_CONFIGS])
def test_bad_config_exits_2_with_one_line(tmp_path, capsys, text: str, key: str) -> None:
    rc, _, err = cli(capsys, "run", write(tmp_path, text), "-o", str(tmp_path / "o.nc"))
    assert_user_error(rc, err, key)
    assert not (tmp_path / "o.nc").exists()


@pytest.mark.parametrize("override, key", [
    ("model.beta=0", "model.beta"), ("model.bta=1", "model.bta"), ("time.scheme=fd", "time.scheme"),
    ("perceptron.omega=[1.0]", "perceptron.omega"), ("model.beta", "model.beta"),
    ("nosection.x=1", "nosection"),
])
def test_bad_override_exits_2(tmp_path, capsys, override: str, key: str) -> None:
    rc, _, err = cli(capsys, "run", write(tmp_path, TINY), "--set", override)
    assert_user_error(rc, err, key)


@pytest.mark.parametrize("argv, key", [
    (["run", "missing.toml"], "file not found"),
    (["run"], "run needs CONFIG.toml"),
    (["info", "missing.nc"], "run archive not found"),
    (["plot", "missing.nc"], "run archive not found"),
    (["run", "--resume", "missing.nc"], "archive not found"),
])
def test_missing_files_exit_2(tmp_path, capsys, monkeypatch, argv: list[str], key: str) -> None:
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli(capsys, *argv)
    assert_user_error(rc, err, key)


@pytest.mark.parametrize("command", ["info", "plot", "resume", "initial"])
def test_a_non_archive_exits_2(tmp_path, capsys, command: str) -> None:
    bogus = write(tmp_path, "not netcdf", "x.nc")
    argv = {"info": ["info", bogus], "plot": ["plot", bogus], "resume": ["run", "--resume", bogus],
            "initial": ["run", write(tmp_path, f'[initial]\nkind = "archive"\npath = "{bogus}"')]}
    rc, _, err = cli(capsys, *argv[command])
    assert_user_error(rc, err, "initial.path" if command == "initial" else "")


def test_console_entry_point_has_no_traceback(tmp_path) -> None:
    cfg = write(tmp_path, "[model]\nbeta = -1\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    commands = [[sys.executable, "-m", "solvers.cli"], [sys.executable, "-m", "solvers"]]
    script = Path(sys.executable).parent / "meanfield"  # the console script, once installed
    commands += [[str(script)]] if script.exists() else []
    for command in commands:
        proc = subprocess.run([*command, "run", cfg], cwd=tmp_path, env=env, check=False,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert proc.stderr == "error: model.beta: must be a finite number in [1e-06, 100000] (got -1)\n"


def test_run_info_plot_resume(tmp_path, capsys) -> None:
    cfg, out = write(tmp_path, TINY), str(tmp_path / "sub" / "run.nc")
    rc, stdout, err = cli(capsys, "run", cfg, "-o", out)
    assert rc == 0, err
    assert "finished (t_end) at t = 2 " in stdout and f"archive: {out}" in stdout
    assert "mass error" in stdout and "atoms:" in stdout
    ds = open_run(out)
    np.testing.assert_allclose(ds["time"].values, [0.0, 1.0, 2.0])
    assert ds.attrs["output__path"] == out and "config_text" in ds.attrs

    rc, stdout, _ = cli(capsys, "info", out)
    assert rc == 0
    assert "snapshots: 3" in stdout and "t: 0 .. 2" in stdout and "model.beta = 2.0" in stdout
    assert "final:" in stdout and "energy" in stdout

    png = tmp_path / "fig.png"
    rc, stdout, err = cli(capsys, "plot", out, "-o", str(png))
    assert rc == 0, err
    assert png.stat().st_size > 0

    rc, stdout, err = cli(capsys, "run", "--resume", out, "--set", "time.t_end=4", "--no-progress")
    assert rc == 0, err
    assert "finished (t_end) at t = 4 " in stdout
    ds = open_run(out)
    t, step = ds["time"].values, ds["step"].values
    np.testing.assert_allclose(t, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert np.all(np.diff(t) > 0) and np.all(np.diff(step) > 0)
    # the resume continues the time-error bookkeeping and the method history (default method)
    errors = ds["time_error_estimate"].values
    assert np.all(np.diff(errors) >= 0) and np.all(np.diff(ds["steps_rejected"].values) >= 0)
    assert ds.attrs["time_error_estimate"] == errors[-1] > 0
    history = json.loads(ds.attrs["method_history"])
    assert history[0][:2] == [0.0, "spectral"] and history[-1][0] == 2.0
    assert history[-1][2].startswith("resumed") and "from t = 2:" in stdout


S2_TINY_DOC = {
    "domain": {"manifold": "S2", "resolution": 31},
    "model": {"beta": 1.0, "kernel": "exp_shifted"},
    "perceptron": {"activation": "relu", "a": PAPER_S2_A.tolist(), "omega": PAPER_S2_OMEGA.tolist()},
    "initial": {"modes": [[1, 1, 0.01]]},
    "time": {"t_end": 2.0},
    "output": {"snapshot_interval": 1.0, "progress": False},
}
S2_TINY = toml_config(S2_TINY_DOC)


def test_s2_run_info_plot_animate_resume(tmp_path, capsys) -> None:
    from PIL import Image

    from solvers.sphere.cells import SphereGrid

    cfg, out = write(tmp_path, S2_TINY), str(tmp_path / "s2.nc")
    rc, stdout, err = cli(capsys, "run", cfg, "-o", out)
    assert rc == 0, err
    assert "finished (t_end) at t = 2 " in stdout and "mass error" in stdout
    ds = open_run(out)
    grid = SphereGrid(31)
    assert ds["rho"].shape == (3, *grid.shape) and ds.attrs["manifold"] == "S2"
    np.testing.assert_allclose(ds["cell_weight"], grid.area, rtol=0, atol=0)
    np.testing.assert_allclose(ds["phi"], grid.phi, rtol=0, atol=0)
    np.testing.assert_allclose(ds["mass"], 1.0, rtol=1e-13)

    rc, stdout, _ = cli(capsys, "info", out)
    assert rc == 0 and "manifold: S2" in stdout and "snapshots: 3" in stdout
    n_atoms = int(ds["n_atoms"].values[-1])
    assert f"atoms: {n_atoms}" in stdout
    if n_atoms:
        assert "colatitude (deg)" in stdout and "longitude (deg)" in stdout

    rc, stdout, err = cli(capsys, "plot", out, "-o", str(tmp_path / "s2.png"))
    assert rc == 0 and (tmp_path / "s2.png").stat().st_size > 0, err
    rc, stdout, err = cli(capsys, "animate", out, "--fps", "3", "--view", "mollweide")
    assert rc == 0, err
    with Image.open(tmp_path / "s2.gif") as image:
        assert image.n_frames == 3

    rc, stdout, err = cli(capsys, "run", "--resume", out, "--set", "time.t_end=3")
    assert rc == 0, err
    np.testing.assert_allclose(open_run(out)["time"].values, [0.0, 1.0, 2.0, 3.0])


def test_s2_bad_config_exits_2(tmp_path, capsys) -> None:
    text = toml_config(S2_TINY_DOC, initial__modes=[[1, 2, 0.01]])
    rc, _, err = cli(capsys, "run", write(tmp_path, text), "-o", str(tmp_path / "o.nc"))
    assert_user_error(rc, err, "initial.modes[0]")
    text = toml_config(S2_TINY_DOC, initial__modes=[[1, 1, 0.5]])  # negative
    rc, _, err = cli(capsys, "run", write(tmp_path, text), "-o", str(tmp_path / "o.nc"))
    assert_user_error(rc, err, "initial.modes")
    assert not (tmp_path / "o.nc").exists()


@pytest.fixture
def finished_run(tmp_path, capsys) -> tuple[str, str]:
    cfg, out = write(tmp_path, TINY), str(tmp_path / "run.nc")
    assert cli(capsys, "run", cfg, "-o", out)[0] == 0
    return cfg, out


@pytest.mark.parametrize("extra, key", [
    (["--set", "model.beta=3"], "model.beta"),
    (["--set", "initial.mass=2"], "initial.mass"),
    (["--set", "time.t_end=2"], "time.t_end"),  # already reached
    ([], "time.t_end"),
    (["-o", "other.nc", "--set", "time.t_end=3"], "--resume appends"),
])
def test_resume_errors(finished_run, capsys, extra: list[str], key: str) -> None:
    _, out = finished_run
    rc, _, err = cli(capsys, "run", "--resume", out, *extra)
    assert_user_error(rc, err, key)


def test_resume_with_config_checks_the_physics(finished_run, tmp_path, capsys) -> None:
    _, out = finished_run
    other = write(tmp_path, TINY.replace("beta = 2.0", "beta = 2.5"), "other.toml")
    rc, _, err = cli(capsys, "run", other, "--resume", out, "--set", "time.t_end=3")
    assert_user_error(rc, err, "model.beta")
    same = write(tmp_path, TINY.replace("t_end = 2.0", "t_end = 3.0"), "same.toml")
    rc, _, err = cli(capsys, "run", same, "--resume", out)
    assert rc == 0, err
    np.testing.assert_allclose(open_run(out)["time"].values, [0.0, 1.0, 2.0, 3.0])


def test_existing_archive_needs_overwrite(finished_run, capsys) -> None:
    cfg, out = finished_run
    rc, _, err = cli(capsys, "run", cfg, "-o", out)
    assert_user_error(rc, err, "output.path")
    assert "--overwrite" in err and "--resume" in err
    rc, _, err = cli(capsys, "run", cfg, "-o", out, "--overwrite", "--set", "time.t_end=1")
    assert rc == 0, err
    np.testing.assert_allclose(open_run(out)["time"].values, [0.0, 1.0])


def fake_snapshot(rho: np.ndarray, t: float) -> Snapshot:
    diag = Diagnostics(1.0, rho.min(), rho.max(), 0.0, 0.0, 0.0, 0.0, 0.0, 0,
                       np.zeros(0), np.zeros(0))
    return Snapshot(t, 3, 0.1, rho, diag)


@pytest.mark.parametrize("error, rc_expected, text", [
    (KeyboardInterrupt(), 130, "interrupted at t=0.5"),
    (FloatingPointError("non-finite density"), 1, "error: non-finite density (the run was at t=0.5)"),
])
def test_interrupt_keeps_the_archive(tmp_path, capsys, monkeypatch, error, rc_expected,
                                     text) -> None:
    def simulate(config, rho0, *, trackers=(), progress=None, **kwargs):
        for tracker in trackers:
            tracker(fake_snapshot(rho0, 0.0))
        progress(0.5, 7, 0.1, None)
        warnings.warn("density negative at t=0.5", RuntimeWarning)
        raise error

    monkeypatch.setattr(solvers.timestepping.loop, "simulate", simulate)
    out = str(tmp_path / "run.nc")
    rc, _, err = cli(capsys, "run", write(tmp_path, TINY), "-o", out)
    assert rc == rc_expected
    assert text in err and f"archive {out} holds 1 snapshots" in err
    assert f"continue with: meanfield run --resume {out}" in err
    assert "Traceback" not in err
    assert err.startswith("warning: density negative at t=0.5\n")
    assert open_run(out).sizes["time"] == 1


def test_progress_bar_writes_to_stderr(capsys) -> None:
    bar = ProgressBar(0.0, 10.0, enabled=True)
    bar(2.5, 10, 0.01, None)
    bar(5.0, 20, 0.02, fake_snapshot(np.ones(4), 5.0).diagnostics)
    bar(12.0, 30, 0.02, None)  # clipped to t_end
    bar.close()
    out, err = capsys.readouterr()
    assert out == ""
    assert "t=10.000/10" in err and "steps=30" in err and "atoms=0" in err
    silent = ProgressBar(0.0, 10.0, enabled=False)
    silent(1.0, 1, 0.1, None)
    silent.close()
    assert silent.t == 1.0 and capsys.readouterr() == ("", "")


def test_animate_s1(finished_run, tmp_path, capsys, monkeypatch) -> None:
    import matplotlib.animation
    from PIL import Image

    _, out = finished_run
    gif = tmp_path / "movie" / "run.gif"
    rc, stdout, err = cli(capsys, "animate", out, "-o", str(gif), "--fps", "2")
    assert rc == 0, err
    assert stdout == f"wrote {gif} (created the folder {gif.parent})\n"  # -o into a new folder
    with Image.open(gif) as image:
        assert image.n_frames == 3
    monkeypatch.setattr(matplotlib.animation.FFMpegWriter, "isAvailable",
                        classmethod(lambda cls: False))
    rc, _, err = cli(capsys, "animate", out, "-o", str(tmp_path / "run.mp4"))
    assert_user_error(rc, err, "")
    assert "apt-get install ffmpeg" in err and ".gif" in err
    for argv in (["-o", str(tmp_path / "run.avi")], ["--fps", "0"]):
        rc, _, err = cli(capsys, "animate", out, *argv)
        assert_user_error(rc, err, "")
    rc, _, err = cli(capsys, "animate", str(tmp_path / "missing.nc"))
    assert_user_error(rc, err, "run archive not found")
