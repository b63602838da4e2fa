"""The writer policy (solvers.io.writer_policy) as each command uses it: continue and polish
refuse an existing output without --overwrite; a sweep refuses a different sweep's folder
unless --overwrite and resumes its own; two sweeps at once into one folder: the second is
refused; --workers 10000 is refused at once; sweep-figures leaves no empty folder behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import PURE_NOISE_TOML, WRITER_CONFIG_TOML, writer_inputs

from solvers.cli.main import main
from solvers.io.safe_paths import UnsafePathError
from solvers.io.writer_policy import OutputFolder, claim_file, read_side_text

CONFIG, PURE = WRITER_CONFIG_TOML, PURE_NOISE_TOML


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config, a run archive, a finished sweep (beta = 1, 2) and one without a beta axis."""
    from solvers.studies.sweep_data import sweep

    base = writer_inputs(tmp_path_factory.mktemp("made"), betas=(1, 2))
    sweep(str(base / "c.toml"), path=base / "t_end", time__t_end=[0.002, 0.004])
    return base


def _err(capsys: pytest.CaptureFixture, argv: list[str]) -> tuple[int, str]:
    rc = main(argv)
    return rc, capsys.readouterr().err


def _one_line(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err


# ---------------------------------------------------------------- the policy itself


def test_claim_file_refuses_ours_without_overwrite_and_a_users_file_always(made, tmp_path):
    run = made / "run.nc"
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        claim_file(run, False)
    assert claim_file(run, True) == run
    user = tmp_path / "notes.nc"
    user.write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(UnsafePathError, match="not a NetCDF file written by meanfield"):
            claim_file(user, overwrite)
    (tmp_path / "link.nc").symlink_to(run)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        claim_file(tmp_path / "link.nc", True)


def test_output_folder_removes_only_the_folders_it_made_when_it_fails(tmp_path):
    with pytest.raises(RuntimeError), OutputFolder(tmp_path / "a" / "b" / "c"):
        raise RuntimeError("the command failed")
    assert list(tmp_path.iterdir()) == []
    with OutputFolder(tmp_path / "kept") as folder:
        (folder.path / "x").write_text("")
    with pytest.raises(RuntimeError), OutputFolder(tmp_path / "kept"):
        raise RuntimeError
    assert (tmp_path / "kept" / "x").exists()


def test_output_folder_entries_stay_inside_and_follow_no_link(tmp_path, made):
    with OutputFolder(tmp_path / "o") as folder:
        for bad in ("../x", "", "..", "a/b"):
            with pytest.raises(UnsafePathError):
                folder.entry(bad)
        (folder.path / "l.nc").symlink_to(made / "run.nc")
        with pytest.raises(UnsafePathError, match="symbolic link"):
            folder.entry("l.nc")
        (folder.path / "fifo").mkdir()
        with pytest.raises(UnsafePathError, match="not a plain file"):
            folder.entry("fifo", kind=None)
    (tmp_path / "j").symlink_to(made / "run.nc")
    assert read_side_text(tmp_path / "j") is None and read_side_text(made / "c.toml") == CONFIG


# ------------------------------------------------------- item 2: continue and polish -o


def test_continue_refuses_an_existing_output_without_overwrite(made, tmp_path, capsys):
    out = tmp_path / "c.nc"
    argv = ["continue", str(made / "pure.toml"), "--param", "model.noise", "--to", "0.9",
            "-o", str(out)]
    assert main(argv) == 0
    first = out.read_bytes()
    rc, err = _err(capsys, argv)
    assert rc == 2 and "already exists" in err and "--overwrite" in err, err
    _one_line(err)
    assert out.read_bytes() == first
    assert main(argv + ["--overwrite"]) == 0


@pytest.mark.parametrize("overwrite", [False, True])
def test_polish_refuses_an_existing_run_archive_without_overwrite(made, tmp_path, capsys,
                                                                  overwrite):
    target = tmp_path / "other.nc"
    target.write_bytes((made / "run.nc").read_bytes())  # a run archive of ours
    rc, err = _err(capsys, ["polish", str(made / "run.nc"), "-o", str(target)]
                   + (["--overwrite"] if overwrite else []))
    assert rc == 2, err
    _one_line(err)
    if not overwrite:
        assert "already exists" in err and "--overwrite" in err
    assert target.read_bytes() == (made / "run.nc").read_bytes()  # no atoms to polish: kept


# ----------------------------------------------------------------- item 3: sweeps


def test_a_different_sweep_is_refused_naming_the_folder(made, capsys):
    folder = made / "sw"
    before = (folder / "summary.nc").read_bytes()
    rc, err = _err(capsys, ["sweep", str(made / "c.toml"), "--param", "model.beta=3",
                            "-o", str(folder)])
    assert rc == 2 and str(folder) in err and "different sweep" in err, err
    _one_line(err)
    assert (folder / "summary.nc").read_bytes() == before and not (folder / "beta-3.nc").exists()


def test_the_same_sweep_resumes(made, capsys):
    folder = made / "sw"
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.glob("beta-*.nc")}
    assert main(["sweep", str(made / "c.toml"), "--param", "model.beta=1,2",
                 "-o", str(folder)]) == 0
    assert capsys.readouterr().out.count("skipped (finished") == 2
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("beta-*.nc")} == stamps


def test_a_killed_different_sweep_is_refused(made, tmp_path, capsys):
    from solvers.studies.sweep_data import sweep

    sweep(str(made / "c.toml"), path=tmp_path / "k", model__beta=[1])
    (tmp_path / "k" / "summary.nc").unlink()  # killed before its summary
    rc, err = _err(capsys, ["sweep", str(made / "c.toml"), "--param", "model.beta=1",
                            "--set", "time.t_end=0.002", "-o", str(tmp_path / "k")])
    assert rc == 2 and "different sweep" in err and "beta-1.done.json" in err, err


def test_a_second_sweep_at_once_is_refused(made, capsys):
    folder = made / "sw"
    before = (folder / "summary.nc").read_bytes()
    with OutputFolder(folder) as held:
        held.lock("sweep")  # as a running meanfield sweep holds it
        start = time.monotonic()
        rc, err = _err(capsys, ["sweep", str(made / "c.toml"), "--param", "model.beta=1,2",
                                "-o", str(folder)])
        assert time.monotonic() - start < 10
    assert rc == 2 and "being written by another process" in err, err
    assert f"{folder} is being written" in err, err  # names the folder, not DIR/sweep
    _one_line(err)
    assert (folder / "summary.nc").read_bytes() == before  # no run marked failed


def test_a_users_subfolder_named_like_the_lock_does_not_block_a_sweep(made, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "sweep").mkdir(parents=True)  # the user's own folder; the lock is DIR/.sweep.lock
    rc, err = _err(capsys, ["-q", "sweep", str(made / "c.toml"), "--param", "model.beta=1",
                            "-o", str(out)])
    assert rc == 0, err
    assert (out / "summary.nc").is_file() and (out / "sweep").is_dir()


# ------------------------------------------------------ item 4: workers, sweep-figures


def test_ten_thousand_workers_are_refused_at_once(made, tmp_path, capsys):
    start = time.monotonic()
    rc, err = _err(capsys, ["sweep", str(made / "c.toml"), "--param", "model.beta=1",
                            "--workers", "10000", "-o", str(tmp_path / "w")])
    assert time.monotonic() - start < 5
    assert rc == 2 and "--workers 10000: at most" in err, err
    _one_line(err)
    assert not (tmp_path / "w").exists()


def test_sweep_figures_leaves_no_empty_folder_when_it_fails(made, tmp_path, capsys):
    out = tmp_path / "figs" / "new"
    rc, err = _err(capsys, ["sweep-figures", str(made / "t_end"), "-o", str(out)])
    assert rc == 2 and "nothing to draw" in err, err
    _one_line(err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("what", ["file-as-folder", "damaged-summary"])
def test_sweep_figures_names_the_failing_path_in_words(made, tmp_path, capsys, what):
    if what == "file-as-folder":
        target, out, sweeps = tmp_path / "f.txt", tmp_path / "f.txt", made / "sw"
        target.write_text("the user's")
    else:
        sweeps, out = tmp_path / "bad", tmp_path / "figs"
        sweeps.mkdir()
        target = sweeps / "summary.nc"
        target.write_text("not a NetCDF file")
    rc, err = _err(capsys, ["sweep-figures", str(sweeps), "-o", str(out)])
    assert rc == 2 and str(target) in err and "[Errno" not in err, err
    _one_line(err)
    assert not (tmp_path / "figs").exists()


def test_continue_refuses_a_read_only_figure_folder_before_writing_its_archive(made, tmp_path,
                                                                               capsys):
    import os
    import shutil
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(
                ["chattr", "+i", str(ro)], capture_output=True).returncode != 0:
            pytest.skip("root cannot make a read-only folder here (no chattr +i)")
    else:
        ro.chmod(0o555)
    try:
        rc, err = _err(capsys, ["continue", str(made / "pure.toml"), "--param", "model.noise",
                                "--to", "0.9", "-o", str(tmp_path / "c.nc"), "--figure",
                                str(ro / "c.png")])
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(ro)], capture_output=True)
        ro.chmod(0o755)
    assert rc == 2 and "--figure" in err and str(ro) in err, err
    _one_line(err)
    assert not (tmp_path / "c.nc").exists()  # refused before the archive was written
