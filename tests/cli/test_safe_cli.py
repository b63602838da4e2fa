"""Issue 34 on the command line (items 1-3), real files in a temporary folder: every write
path refuses a link, a device or a file it did not write with one line ``error: ...`` naming
the path and exit 2, leaving the file byte for byte; sweeps above the documented cap are
refused at once with their run count."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import WRITER_CONFIG_TOML

from solvers.cli.main import main
from solvers.io.lock import lock_path

CONFIG = WRITER_CONFIG_TOML
VICTIM = b"not an archive: the user's notes\n"


def cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def refused(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    for word in words:
        assert word in err, err


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    return str(path)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


# ------------------------------------------------------------------------- meanfield run


@pytest.mark.parametrize("name", ["x.nc", "x.zarr"])
def test_run_refuses_a_symlinked_lock(tmp_path, capsys, config, victim, name) -> None:
    out = tmp_path / name
    lock_path(out).symlink_to(victim)
    refused(*cli(capsys, "run", config, "-o", str(out))[::2], str(lock_path(out)),
            "symbolic link")
    assert victim.read_bytes() == VICTIM


def test_run_ignores_links_at_the_old_tmp_names(tmp_path, capsys, config, victim) -> None:
    pid = os.getpid()  # the CLI runs in this process
    for p in range(pid - 10, pid + 11):
        (tmp_path / f".x.nc.{p}.tmp").symlink_to(victim)
    rc, _, err = cli(capsys, "run", config, "-o", str(tmp_path / "x.nc"))
    assert rc == 0, err
    assert victim.read_bytes() == VICTIM


def test_overwrite_refuses_a_text_file(tmp_path, capsys, config) -> None:
    notes = tmp_path / "notes.nc"
    notes.write_bytes(VICTIM)
    refused(*cli(capsys, "run", config, "-o", str(notes), "--overwrite")[::2], str(notes),
            "not a NetCDF file written by meanfield", "move or delete it")
    assert notes.read_bytes() == VICTIM


def test_overwrite_refuses_a_users_folder(tmp_path, capsys, config) -> None:
    store = tmp_path / "x.zarr"
    store.mkdir()
    (store / "mine.txt").write_bytes(VICTIM)
    refused(*cli(capsys, "run", config, "-o", str(store), "--overwrite")[::2], str(store),
            "not a meanfield-spectral zarr archive")
    assert (store / "mine.txt").read_bytes() == VICTIM
    assert [p.name for p in store.iterdir()] == ["mine.txt"]


def test_overwrite_refuses_a_link_and_a_fifo(tmp_path, capsys, config, victim) -> None:
    link, fifo = tmp_path / "link.nc", tmp_path / "fifo.nc"
    link.symlink_to(victim)
    os.mkfifo(fifo)
    refused(*cli(capsys, "run", config, "-o", str(link), "--overwrite")[::2], str(link),
            "symbolic link")
    refused(*cli(capsys, "run", config, "-o", str(fifo), "--overwrite")[::2], str(fifo),
            "not a regular file")
    assert victim.read_bytes() == VICTIM and link.is_symlink() and fifo.is_fifo()


@pytest.mark.parametrize("name", ["x.nc", pytest.param("x.zarr", marks=pytest.mark.slow)])
def test_overwrite_replaces_our_own_archive(tmp_path, capsys, config, name) -> None:
    out = str(tmp_path / name)
    assert cli(capsys, "run", config, "-o", out)[0] == 0
    assert cli(capsys, "run", config, "-o", out)[0] == 2
    rc, _, err = cli(capsys, "run", config, "-o", out, "--overwrite")
    assert rc == 0, err


# ------------------------------------------------------------- the other write paths


def test_polish_refuses_a_users_file(tmp_path, capsys, victim) -> None:
    refused(*cli(capsys, "polish", str(tmp_path / "run.nc"), "-o", str(victim))[::2],
            str(victim), "not a NetCDF file written by meanfield")
    assert victim.read_bytes() == VICTIM


def test_polish_refuses_a_link_at_its_default_output(tmp_path, capsys, victim) -> None:
    (tmp_path / "run.polished.nc").symlink_to(victim)
    refused(*cli(capsys, "polish", str(tmp_path / "run.nc"))[::2], "symbolic link")
    assert victim.read_bytes() == VICTIM


@pytest.mark.slow
def test_lemma51_refuses_a_users_file_and_replaces_its_own(tmp_path, capsys) -> None:
    out = tmp_path / "report.nc"
    out.write_bytes(VICTIM)
    args = ["lemma51", "--measure", "atoms", "--beta", "5", "--lmax", "8", "--n", "64",
            "--digits", "--table", "none", "-o", str(out)]
    refused(*cli(capsys, *args, "--no-plot")[::2], str(out), "--output")
    assert out.read_bytes() == VICTIM
    out.unlink()
    (tmp_path / "report.png").write_bytes(VICTIM)  # not a figure of ours
    refused(*cli(capsys, *args)[::2], "report.png", "not a PNG figure")
    assert (tmp_path / "report.png").read_bytes() == VICTIM and not out.exists()
    (tmp_path / "report.png").unlink()
    for _ in range(2):  # the second time: its own files, replaced
        rc, _, err = cli(capsys, *args)
        assert rc == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.nc", "report.png"]


def test_compare_particles_refuses_a_users_file(tmp_path, capsys, config, victim) -> None:
    out = tmp_path / "cmp.nc"
    out.symlink_to(victim)
    refused(*cli(capsys, "compare-particles", config, "--n", "10", "--times", "0.002",
                 "-o", str(out))[::2], str(out), "symbolic link")
    assert victim.read_bytes() == VICTIM


def test_converge_refuses_a_users_file_before_running(tmp_path, capsys, config) -> None:
    (tmp_path / "conv.nc").write_bytes(VICTIM)
    start = time.monotonic()
    refused(*cli(capsys, "converge", config, "--resolutions", "64,128", "-o",
                 str(tmp_path / "conv"))[::2], "conv.nc")
    assert time.monotonic() - start < 5
    assert (tmp_path / "conv.nc").read_bytes() == VICTIM


def test_sweep_summary_refuses_a_users_file(tmp_path) -> None:
    import xarray as xr

    from solvers.io.safe_paths import UnsafePathError
    from solvers.studies.sweep import write_summary

    (tmp_path / "summary.nc").write_bytes(VICTIM)
    with pytest.raises(UnsafePathError, match="summary.nc"):
        write_summary(xr.Dataset({"a": ("x", [1.0])}), tmp_path / "summary.nc")
    assert (tmp_path / "summary.nc").read_bytes() == VICTIM


def test_sweep_done_sidecar_ignores_links(tmp_path, victim) -> None:
    from solvers.studies.sweep import write_done

    (tmp_path / "r.done.tmp").symlink_to(victim)
    write_done(tmp_path / "r.nc", {"reason": "t_end"})
    assert victim.read_bytes() == VICTIM
    assert '"t_end"' in (tmp_path / "r.done.json").read_text()


# --------------------------------------------------------------- item 3: sweep cap


def test_huge_sweep_is_refused_at_once_with_its_count(tmp_path, capsys, config) -> None:
    start = time.monotonic()
    rc, _, err = cli(capsys, "sweep", config, "--param", "initial.seed=0..1000000000000",
                     "-o", str(tmp_path / "sw"))
    assert time.monotonic() - start < 5
    refused(rc, err, "1,000,000,000,001 runs", "10,000")
    assert not (tmp_path / "sw").exists()


def test_sweep_product_above_the_cap_is_refused(tmp_path, capsys, config) -> None:
    rc, _, err = cli(capsys, "sweep", config, "--param", "initial.seed=0..200",
                     "--param", "model.beta=1..100", "-o", str(tmp_path / "sw"))
    refused(rc, err, "20,100 runs", "201 x 100")


def test_sweep_cap_is_documented_and_consistent(capsys) -> None:
    from solvers.cli.options import MAX_SWEEP_RUNS
    from solvers.studies import sweep

    assert MAX_SWEEP_RUNS == sweep.MAX_RUNS == 10_000
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert "10,000 runs" in " ".join(capsys.readouterr().out.split())
    assert sweep.count_values("0..1000000000000,5,[1, 2]") == 1_000_000_000_003
    assert sweep.count_runs(["a.b=1..100", "c.d=x,y"]) == 200
    with pytest.raises(sweep.SweepError, match="1,000,001 values"):
        sweep.parse_param("initial.seed=0..1000000")
    many = [sweep.SweepParam("model.beta", tuple(map(str, range(101))), tuple(range(101))),
            sweep.SweepParam("initial.seed", tuple(map(str, range(100))), tuple(range(100)))]
    with pytest.raises(sweep.SweepError, match="10,100 runs"):
        sweep.sweep_points(many)
    assert len(sweep.sweep_points([sweep.parse_param("initial.seed=0..9999")])) == 10_000


def test_example_never_writes_through_a_link(tmp_path, capsys, victim) -> None:
    link, dangling = tmp_path / "link.toml", tmp_path / "dangling.toml"
    link.symlink_to(victim)
    dangling.symlink_to(tmp_path / "elsewhere.toml")
    refused(*cli(capsys, "example", "demo", "-o", str(link), "--overwrite")[::2], "symbolic link")
    refused(*cli(capsys, "example", "demo", "-o", str(dangling))[::2], "exists")
    assert victim.read_bytes() == VICTIM and not (tmp_path / "elsewhere.toml").exists()
    rc, _, err = cli(capsys, "example", "demo", "-o", str(tmp_path / "demo.toml"))
    assert rc == 0, err
    rc, _, err = cli(capsys, "example", "demo", "-o", str(tmp_path / "demo.toml"), "--overwrite")
    assert rc == 0, err


# ------------------------------------------------------------------ item 7: -o ""


@pytest.mark.parametrize("argv", [["run", "CONFIG"], ["sweep", "CONFIG", "--param",
                                  "model.beta=1"], ["lemma51"], ["polish", "run.nc"],
                                  ["converge", "CONFIG"], ["compare-particles", "CONFIG"],
                                  ["example", "demo"], ["plot", "run.nc"]])
def test_empty_output_is_an_error_naming_the_option(tmp_path, capsys, monkeypatch, config,
                                                    argv) -> None:
    monkeypatch.chdir(tmp_path)  # the default paths would land here
    argv = [config if a == "CONFIG" else a for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    refused(*cli(capsys, *argv, "-o", "")[::2], "-o", "empty path")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
