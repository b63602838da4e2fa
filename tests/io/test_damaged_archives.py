"""A zarr store with a deleted chunk: reading it names the damaged variable (zarr itself reads a
missing chunk as fill values without complaint), and a resume whose exact-state slot lost a
chunk says so instead of falling back silently."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import short_s1_toml

from solvers.cli.main import main
from solvers.io.errors import ArchiveError
from solvers.io.reading import open_run, read_last_state, read_snapshot
from solvers.io.resume_slots import SLOTS, read_resume

CONFIG = short_s1_toml(t_end=1.0, snapshot_interval=0.5)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("damaged")
    (folder / "run.toml").write_text(CONFIG)
    path = folder / "run.zarr"
    assert main(["run", str(folder / "run.toml"), "-o", str(path), "--no-check", "-q"]) == 0
    return path


def _copy(store: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy.zarr"
    shutil.copytree(store, copy)
    return copy


def test_a_deleted_rho_chunk_is_named_by_every_reader_and_command(store, tmp_path, capsys):
    damaged = _copy(store, tmp_path)
    (damaged / "rho" / "c" / "0" / "0").unlink()
    for read in (open_run, read_last_state, read_snapshot):
        with pytest.raises(ArchiveError, match=r"variable 'rho' lacks chunk c/0/0"):
            read(damaged)
    for argv in (["info", str(damaged)], ["plot", str(damaged), "-o", str(tmp_path / "a.png")],
                 ["polish", str(damaged), "-o", str(tmp_path / "p.nc")],
                 ["run", "--resume", str(damaged), "--set", "time.t_end=1.5", "--no-check",
                  "-q"]):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "variable 'rho' lacks chunk c/0/0" in err[0], (argv, err)
        assert err[0].startswith(f"error: {damaged} is damaged"), (argv, err)  # no type name
        assert "--overwrite" in err[0]
    assert not (tmp_path / "a.png").exists() and not (tmp_path / "p.nc").exists()
    assert open_run(store).sizes["time"] == 3  # the intact store reads as before


def test_a_deleted_coordinate_chunk_is_named(store, tmp_path):
    damaged = _copy(store, tmp_path)
    (damaged / "t" / "c" / "0").unlink()
    with pytest.raises(ArchiveError, match=r"variable 't' lacks chunk c/0"):
        open_run(damaged)


def test_every_chunk_of_a_new_store_is_on_disk(store):
    """Chunks that hold only fill values (steps_rejected: all 0) are written too, so that a
    missing one is damage."""
    assert (store / "steps_rejected" / "c" / "0").is_file()
    assert np.all(open_run(store)["steps_rejected"].values == 0)


def _valid_slot(store: Path) -> str:
    t = read_last_state(store)[0]
    found = read_resume(store, t)
    assert found is not None
    import zarr

    group = zarr.open_group(str(store), mode="r")
    return next(name for name in SLOTS if float(group[name][1]) == t)


def test_a_resume_whose_slot_lost_a_chunk_says_so(store, tmp_path, capsys, caplog):
    damaged = _copy(store, tmp_path)
    name = _valid_slot(damaged)
    (damaged / name / "c" / "0").unlink()
    t = read_last_state(damaged)[0]
    with caplog.at_level("WARNING", logger="solvers.io.resume_slots"):
        assert read_resume(damaged, t) is None
    assert any(name in r.getMessage() and "chunk c/0 missing" in r.getMessage()
               for r in caplog.records), caplog.text
    capsys.readouterr()
    assert main(["run", "--resume", str(damaged), "--set", "time.t_end=1.5", "--no-check"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "resume slot" in line]
    assert len(lines) == 1 and name in lines[0] and "resuming from the last record" in lines[0], err


def test_a_resume_whose_slot_folder_is_gone_says_so(store, tmp_path, caplog):
    damaged = _copy(store, tmp_path)
    name = _valid_slot(damaged)
    shutil.rmtree(damaged / name)
    with caplog.at_level("WARNING", logger="solvers.io.resume_slots"):
        assert read_resume(damaged, read_last_state(damaged)[0]) is None
    assert any(name in r.getMessage() and "metadata missing" in r.getMessage()
               for r in caplog.records), caplog.text


def test_an_intact_resume_says_nothing(store, tmp_path, caplog):
    with caplog.at_level("WARNING", logger="solvers.io.resume_slots"):
        assert read_resume(store, read_last_state(store)[0]) is not None
    assert not caplog.records


@pytest.fixture(scope="module")
def atoms_store(tmp_path_factory) -> Path:
    """A store with Dirac atoms and atom records (the demo, short and coarse)."""
    folder = tmp_path_factory.mktemp("atoms")
    path = folder / "demo.zarr"
    assert main(["run", "runs/demo.toml", "--set", "domain.resolution=96", "--set",
                 "time.t_end=20", "-o", str(path), "--no-check", "-q"]) == 0
    return path


@pytest.mark.parametrize("name", ["dirac_mass", "dirac_position", "atom_mass", "atom_position"])
def test_a_deleted_atom_or_dirac_chunk_is_named(atoms_store, tmp_path, capsys, name):
    """Per-identity variables are not checked against the record count (a block writes only
    the columns it holds), but a chunk that the other variables of its dimension have is
    damage: polish read the lost Dirac masses as missing values and dropped an atom."""
    damaged = _copy(atoms_store, tmp_path)
    chunk = next(p for p in sorted((damaged / name / "c").rglob("*")) if p.is_file())
    chunk.unlink()
    key = str(chunk.relative_to(damaged / name))
    with pytest.raises(ArchiveError, match=f"variable '{name}' lacks chunk {key}"):
        open_run(damaged)
    assert main(["polish", str(damaged), "-o", str(tmp_path / "p.nc")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"variable '{name}' lacks chunk {key}" in err[0], err
    assert not (tmp_path / "p.nc").exists()
    assert open_run(atoms_store).sizes["time"] == 3  # the intact store reads as before
