"""What the command line shows while it works: progress (terminal or pipe), -q / -v, one-line
warnings, --style, --version, and a start-up that imports nothing heavy."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_cli import TINY, cli, fake_snapshot, write

import solvers.cli.progress as progress_module
import solvers.timestepping.loop
from solvers.cli.progress import Counter, ProgressBar
from solvers.core.snapshot import Stationarity
from solvers.model.params import TimeParams

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "scipy", "xarray", "netCDF4", "matplotlib", "dask", "distributed", "mpmath",
         "tqdm", "numba", "shtns")
STATIONARY = TINY.replace("progress = false", "progress = true").replace(
    "[time]\nt_end = 2.0", "[time]\nt_end = 2.0\nstop_when_stationary = true\n"
    "stationary_window_time = 0.5\nstationary_tol = 1e-3")


def meanfield(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "solvers", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, timeout=300)


# --------------------------------------------------------------------------- start-up

def test_parser_and_version_import_nothing_heavy(tmp_path) -> None:
    code = ("import importlib, sys; m = importlib.import_module('solvers.cli.main'); "
            "m.build_parser(); print(sorted(k for k in %r if k in sys.modules))" % (HEAVY,))
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
    proc = meanfield("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("meanfield ") and proc.stderr == ""


def test_repeated_constants_match_the_studies() -> None:
    from solvers.cli import options
    from solvers.plots.style import STYLES
    from solvers.studies import particles, polish, resolution, sweep

    assert options.STYLES == tuple(STYLES) and options.PLACEMENTS == particles.PLACEMENTS
    assert options.MERGE_TOL == polish.MERGE_TOL
    assert options.DEFAULT_MASS_TOL == resolution.DEFAULT_MASS_TOL
    assert options.MAX_REFINEMENTS == resolution.MAX_REFINEMENTS
    from solvers.timestepping.manifolds import manifold_of

    assert options.MAX_CHECK_CELLS == manifold_of("S1").max_check_resolution
    assert options.MAX_CHECK_LMAX == manifold_of("S2").max_check_resolution
    assert options.DEFAULT_PERTURBATION == sweep.DEFAULT_PERTURBATION
    from solvers.cli import sweep as cli_sweep

    assert cli_sweep.SEED_KEY == sweep.SEED_KEY


def test_only_the_command_line_tunes_malloc() -> None:
    """The library has no process-wide side effect: keep_freed_memory is called by the CLI only."""
    for path in (ROOT / "solvers").rglob("*.py"):
        if path.parts[-2] == "cli" or path.name == "backend.py":
            continue
        assert "keep_freed_memory(" not in path.read_text(), path


# --------------------------------------------------------------------------- progress

def test_run_in_a_pipe_has_no_carriage_return_and_shows_stationarity(tmp_path) -> None:
    cfg = write(tmp_path, STATIONARY)
    proc = meanfield("run", cfg, "-o", str(tmp_path / "run.nc"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("progress: t=") and " rate " in last and "tol 1e-03" in last
    assert "holds: " in last and "%" not in last  # no share of t_end, no ETA
    assert max(len(line) for line in proc.stderr.splitlines()) <= 100


def test_time_bound_run_in_a_pipe(tmp_path) -> None:
    cfg = write(tmp_path, TINY.replace("progress = false", "progress = true"))
    proc = meanfield("run", cfg, "-o", str(tmp_path / "run.nc"), cwd=tmp_path)
    assert proc.returncode == 0 and "\r" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("progress: t=2.000/2 (100%) [00:0")
    assert " steps=" in lines[0] and "atoms=0" in lines[0] and "rate" not in lines[0]
    assert len(lines[0]) <= 100


def test_stationary_bar_on_a_terminal_has_no_eta(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # the bar's full width, whatever terminal runs the tests
    tp = TimeParams(t_end=10.0, stop_when_stationary=True, stationary_tol=1e-6)
    bar = ProgressBar(0.0, 10.0, time=tp, terminal=True)
    snap = fake_snapshot(np.ones(4), 5.0)
    bar.track(SimpleNamespace(stationarity=Stationarity(True, False, True, False)))
    diag = snap.diagnostics
    bar(5.0, 20, 0.02, SimpleNamespace(energy=diag.energy, n_atoms=3, mass=2.0,
                                      transport_rate=4e-5, max_support_velocity=0.0))
    bar.close()
    err = capsys.readouterr().err
    assert "rate 2.0e-05 > tol 1e-06" in err
    assert "holds: window, atoms; not yet: transport, masses" in err
    assert max(len(line) for line in err.replace("\n", "\r").split("\r")) <= 100  # at most 100 characters
    assert "%|" not in err and "<" not in err.replace("<=", "")


def test_time_bound_bar_on_a_terminal_keeps_its_eta(capsys) -> None:
    bar = ProgressBar(0.0, 10.0, time=TimeParams(t_end=10.0), terminal=True)
    bar(5.0, 20, 0.02, None)
    bar.close()
    err = capsys.readouterr().err
    assert "50%|" in err and "t=5.000/10" in err and "stop criteria" not in err


def test_counter_draws_on_a_terminal_only(capsys, monkeypatch) -> None:
    with Counter(3, "runs", terminal=False) as quiet:
        quiet.update(1)
        quiet.write("line")
    assert capsys.readouterr() == ("line\n", "")
    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: True)
    with Counter(0, "frames") as bar:
        bar.update(1, total=2)
        bar.update(1, total=2)
    assert "frames: 1/2" in capsys.readouterr().err


def test_animate_counts_frames_on_a_terminal(tmp_path, capsys, monkeypatch) -> None:
    cfg, out = write(tmp_path, TINY), str(tmp_path / "run.nc")
    assert cli(capsys, "run", cfg, "-o", out)[0] == 0
    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: True)
    rc, stdout, err = cli(capsys, "animate", out, "-o", str(tmp_path / "run.gif"))
    assert rc == 0 and "frames: 3/3" in err and stdout.startswith("wrote ")
    rc, _, err = cli(capsys, "-q", "animate", out, "-o", str(tmp_path / "quiet.gif"))
    assert rc == 0 and err == ""


# --------------------------------------------------------------------------- -q, -v, warnings

def test_quiet_silences_progress_and_warnings(tmp_path, capsys) -> None:
    cfg = write(tmp_path, STATIONARY)
    for argv in (["-q", "run", cfg], ["run", cfg, "-q"], ["run", cfg, "--quiet"]):
        rc, stdout, err = cli(capsys, *argv, "-o", str(tmp_path / "q.nc"), "--overwrite")
        assert rc == 0 and err == "" and "finished" in stdout


def test_verbose_shows_debug_lines(tmp_path, capsys) -> None:
    cfg = write(tmp_path, TINY)
    for argv in (["-v", "run", cfg], ["run", cfg, "--verbose"]):
        rc, _, err = cli(capsys, *argv, "-o", str(tmp_path / "v.nc"), "--overwrite")
        assert rc == 0 and "debug solvers.cli.run: run " in err
    rc, _, err = cli(capsys, "run", cfg, "-o", str(tmp_path / "v.nc"), "--overwrite")
    assert rc == 0 and "debug" not in err


def test_warnings_are_one_line_each(tmp_path, capsys, monkeypatch) -> None:
    def simulate(config, rho0, **kwargs):
        with np.errstate(divide="warn"):
            np.log(np.zeros(1))
        warnings.warn("under-resolved at t=0\nsecond line", RuntimeWarning)
        raise FloatingPointError("stop here")

    monkeypatch.setattr(solvers.timestepping.loop, "simulate", simulate)
    rc, _, err = cli(capsys, "run", write(tmp_path, TINY), "-o", str(tmp_path / "w.nc"))
    lines = err.splitlines()
    assert rc == 1 and lines[0] == "warning: under-resolved at t=0 second line"
    assert "divide by zero" not in err  # NumPy's raw floating-point warnings: debug lines
    assert ".py" not in err and "RuntimeWarning" not in err
    assert lines[1].startswith("error: stop here") and len(lines) == 2
    rc, _, err = cli(capsys, "-v", "run", write(tmp_path, TINY), "-o", str(tmp_path / "v.nc"))
    assert rc == 1 and "debug py.warnings: numpy: divide by zero encountered in log" in err
    rc, _, err = cli(capsys, "-q", "run", write(tmp_path, TINY), "-o", str(tmp_path / "x.nc"))
    assert rc == 1 and "warning:" not in err and err.startswith("error: stop here (the run was at t=")


# --------------------------------------------------------------------------- --style

def test_plot_style(tmp_path, capsys) -> None:
    from PIL import Image

    cfg, out = write(tmp_path, TINY), str(tmp_path / "run.nc")
    assert cli(capsys, "run", cfg, "-o", out)[0] == 0
    sizes = {}
    for style in ("paper", "screen"):
        png = tmp_path / f"{style}.png"
        rc, _, err = cli(capsys, "plot", out, "-o", str(png), "--style", style)
        assert rc == 0, err
        with Image.open(png) as image:
            sizes[style] = image.size
    assert sizes["paper"] != sizes["screen"]
    with pytest.raises(SystemExit) as exited:
        cli(capsys, "plot", out, "--style", "poster")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "invalid choice" in err and err.count("\n") == 1


class _Saved:
    def __init__(self, *args, **kwargs):
        pass

    def to_netcdf(self, path):
        Path(path).write_text("nc")

    def savefig(self, path, dpi=None):
        Path(path).write_text(f"png {dpi}")


def test_style_reaches_lemma51_converge_and_sweep_figures(tmp_path, capsys, monkeypatch) -> None:
    import solvers.plots.lemma51
    import solvers.plots.sweeps
    import solvers.studies.converge
    import solvers.studies.converge_report
    import solvers.studies.lemma51

    seen = []
    monkeypatch.setattr(solvers.studies.lemma51, "run_lemma51", lambda *a, **k: _Saved())
    monkeypatch.setattr(solvers.studies.lemma51, "format_report", lambda ds, table: "report")
    monkeypatch.setattr(solvers.plots.lemma51, "plot_lemma51",
                        lambda ds, png, style="paper": seen.append(("lemma51", style)) or png)
    rc, _, err = cli(capsys, "lemma51", "--style", "screen", "-o", str(tmp_path / "l.nc"))
    assert rc == 0, err

    def converge(*args, progress=None):
        progress(1, 2, "space resolution=64", 0.5)
        progress(2, 2, "space resolution=128", 1.0)
        return []

    monkeypatch.setattr(solvers.studies.converge, "converge", converge)
    monkeypatch.setattr(solvers.studies.converge_report, "to_dataset", _Saved)
    monkeypatch.setattr(solvers.studies.converge_report, "plot_ladders",
                        lambda lad, tab, style="paper": seen.append(("converge", style)) or _Saved())
    cfg = write(tmp_path, TINY)
    rc, _, err = cli(capsys, "converge", cfg, "--resolutions", "64,128", "--style", "screen",
                     "-o", str(tmp_path / "c"))
    assert rc == 0, err
    assert "converge: [2/2] space resolution=128 done in 1.0 s" in err and "\r" not in err
    assert (tmp_path / "c.png").read_text() == "png 120"  # the screen style's dpi
    monkeypatch.setattr(solvers.plots.sweeps, "write_figures",
                        lambda s, l, o, style="paper": seen.append(("sweep-figures", style)) or [])
    assert cli(capsys, "sweep-figures", str(tmp_path), "--style", "screen")[0] == 0
    assert seen == [("lemma51", "screen"), ("converge", "screen"), ("sweep-figures", "screen")]


@pytest.mark.slow
def test_sweep_in_a_pipe_is_plain_lines(tmp_path) -> None:
    cfg = write(tmp_path, TINY)
    proc = meanfield("sweep", cfg, "--param", "model.beta=1,2", "--workers", "1", "-o",
                     str(tmp_path / "sweep"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stdout + proc.stderr
    assert "Scheduler at" not in proc.stderr and "INFO" not in proc.stderr  # dask at warnings
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("[1/2] beta-") and lines[-1].startswith("2 of 2 runs finished")


def test_a_damaged_zarr_array_gives_one_error_line(tmp_path) -> None:
    """One array's metadata emptied: ``info`` says the store is unreadable in one line; zarr's
    pending asyncio tasks are not reported at exit (they were, one line each)."""
    cfg = write(tmp_path, TINY)
    store = tmp_path / "run.zarr"
    assert meanfield("run", cfg, "-o", str(store), "--no-check", "-q", cwd=tmp_path).returncode == 0
    (store / "rho" / "zarr.json").write_text("")
    # zarr's other reads, left pending by the failure, met its loop closing at exit now and
    # then ("Event loop is closed"), more often on a busy machine: four at once
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-m", "solvers", "info", str(store)], cwd=tmp_path,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    for proc in procs:
        err = proc.communicate(timeout=300)[1]
        lines = err.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, err
        assert "run.zarr" in lines[0] and "Task" not in err
