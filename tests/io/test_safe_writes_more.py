"""The writes that :mod:`solvers.io.safe_paths` did not cover yet, with real files and planted
links in a temporary folder: a sweep's ``NAME.done.json`` and ``summary.nc``
(:mod:`solvers.io.summary`), the resolution check's copy of its result level
(``solvers.studies.resolution._link``), ``polish_archive`` called from Python, and the figures
and animations of ``meanfield plot`` / ``animate`` (:mod:`solvers.plots.save`). Every victim
file is compared byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import solvers
from solvers.cli.main import main
from solvers.io.safe_paths import UnsafePathError
from solvers.io.summary import done_path, write_dataset, write_done
from solvers.plots.run import animate_run, plot_run
from solvers.plots.save import is_figure_file, save_figure
from solvers.studies import resolution as rs
from solvers.studies.polish import polish_archive

VICTIM = b"the user's precious data\n\x00\x01\x02"
# the default method (Dirac atoms): two atoms by t = 4, a small archive to polish and plot
RUN = ('[domain]\nresolution = 64\n[model]\nbeta = 2.0\ndirection = "ascent"\n'
       '[time]\nt_end = 4.0\n[output]\nsnapshot_interval = 0.5\nprogress = false\n'
       '[initial]\nkind = "uniform"\nmodes = [[2, 0.3], [1, 0.1]]\n')


def victim(tmp_path: Path, name: str = "victim.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(VICTIM)
    return path


def entries(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("safe_more") / "run.nc"
    solvers.run(RUN, path=path)
    return path


# ------------------------------------------------------------------ sweep side files


def test_write_done_ignores_a_link_at_the_old_temporary_name(tmp_path: Path) -> None:
    bait = victim(tmp_path)
    archive = tmp_path / "r.nc"
    old_tmp = done_path(archive).with_suffix(".tmp")  # r.done.tmp, the old predictable name
    old_tmp.symlink_to(bait)
    write_done(archive, {"reason": "t_end", "digest": "d"})
    assert bait.read_bytes() == VICTIM and old_tmp.is_symlink()
    assert json.loads(done_path(archive).read_text())["digest"] == "d"
    write_done(archive, {"reason": "t_end", "digest": "e"})  # its own file: replaced
    assert json.loads(done_path(archive).read_text())["digest"] == "e"
    assert entries(tmp_path) == {"victim.txt", "r.done.tmp", "r.done.json"}  # nothing left over


def test_write_done_refuses_a_link_at_the_sidecar(tmp_path: Path) -> None:
    bait = victim(tmp_path)
    archive = tmp_path / "r.nc"
    done_path(archive).symlink_to(bait)
    with pytest.raises(UnsafePathError, match="not a plain file"):
        write_done(archive, {"reason": "t_end"})
    assert bait.read_bytes() == VICTIM and done_path(archive).is_symlink()


def _summary() -> xr.Dataset:
    return xr.Dataset({"n_atoms": ("beta", np.array([1.0, 2.0])),
                       "reason": ("beta", np.array(["t_end", "failed"], dtype=object))},
                      coords={"beta": [1.0, 2.0]})


def test_write_dataset_ignores_a_link_at_the_old_temporary_name(tmp_path: Path) -> None:
    bait = victim(tmp_path)
    (tmp_path / "summary.nc.tmp").symlink_to(bait)
    path = tmp_path / "summary.nc"
    write_dataset(_summary(), path)
    assert bait.read_bytes() == VICTIM and (tmp_path / "summary.nc.tmp").is_symlink()
    with xr.open_dataset(path) as ds:
        assert ds["reason"].values.tolist() == ["t_end", "failed"]
    write_dataset(_summary().assign(n_atoms=("beta", np.array([3.0, 4.0]))), path)  # ours
    with xr.open_dataset(path) as ds:
        assert ds["n_atoms"].values.tolist() == [3.0, 4.0]
    assert entries(tmp_path) == {"victim.txt", "summary.nc.tmp", "summary.nc"}


@pytest.mark.parametrize("plant", ["link", "file"])
def test_write_dataset_replaces_only_a_summary_of_ours(tmp_path: Path, plant: str) -> None:
    bait = victim(tmp_path)
    path = tmp_path / "summary.nc"
    if plant == "link":
        path.symlink_to(bait)
    else:
        path.write_bytes(VICTIM)
    with pytest.raises(UnsafePathError):
        write_dataset(_summary(), path)
    assert bait.read_bytes() == VICTIM
    assert path.is_symlink() if plant == "link" else path.read_bytes() == VICTIM


# ------------------------------------------------------------- the resolution check's copy


def _levels(tmp_path: Path) -> list[tuple[int, int, str]]:
    return [(n, n, str(tmp_path / f"p.N{n}.nc")) for n in (256, 512)]


def _stub(config: int, archive: str, name: str) -> dict:
    Path(archive).write_text(f"archive at N = {config}")
    return {"name": name, "archive": archive, "reason": "stationary", "error": "",
            "t_final": 1.0, "n_steps": 1, "wall_time": 0.0, "n_atoms": 1, "max_atom_mass": 1.0,
            "energy": 0.0, "mass": 1.0, "atom_mass": [1.0], "atom_position": [0.0]}


def test_link_ignores_a_link_at_the_old_temporary_name(tmp_path: Path) -> None:
    bait = victim(tmp_path)
    (tmp_path / "p.nc.link").symlink_to(bait)  # the old predictable name
    rec = rs.refine_point(_levels(tmp_path), str(tmp_path / "p.nc"), "p", "d", 0.02, _stub)
    assert rec["resolution"] == 512
    assert (tmp_path / "p.nc").read_text() == "archive at N = 512"
    assert bait.read_bytes() == VICTIM and (tmp_path / "p.nc.link").is_symlink()
    assert os.stat(tmp_path / "p.nc").st_ino == os.stat(tmp_path / "p.N512.nc").st_ino
    assert entries(tmp_path) == {"victim.txt", "p.nc.link", "p.nc", "p.N256.nc", "p.N512.nc",
                                 "p.done.json"}


@pytest.mark.parametrize("plant", ["link", "file"])
def test_link_replaces_only_an_archive_of_ours(tmp_path: Path, plant: str) -> None:
    bait = victim(tmp_path)
    target = tmp_path / "p.nc"
    if plant == "link":
        target.symlink_to(bait)
    else:
        target.write_bytes(VICTIM)
    with pytest.raises(UnsafePathError, match=str(target)):
        rs.refine_point(_levels(tmp_path), str(target), "p", "d", 0.02, _stub)
    assert bait.read_bytes() == VICTIM
    assert target.is_symlink() if plant == "link" else target.read_bytes() == VICTIM
    assert not (tmp_path / "p.done.json").exists()


def test_link_never_follows_a_link_at_the_level_archive(tmp_path: Path) -> None:
    bait = victim(tmp_path)

    def run(config: int, archive: str, name: str) -> dict:
        record = _stub(config, archive, name)
        if config == 512:  # the result level's archive swapped for a link to the victim
            os.unlink(archive)
            os.symlink(bait, archive)
        return record

    with pytest.raises(UnsafePathError, match="not a plain file"):
        rs.refine_point(_levels(tmp_path), str(tmp_path / "p.nc"), "p", "d", 0.02, run)
    assert bait.read_bytes() == VICTIM and not os.path.lexists(tmp_path / "p.nc")


def test_link_replaces_our_previous_archive(tmp_path: Path, archive: Path) -> None:
    import shutil

    target = tmp_path / "p.nc"
    shutil.copyfile(archive, target)  # a run archive of ours from an earlier sweep
    rs.refine_point(_levels(tmp_path), str(target), "p", "d", 0.02, _stub)
    assert target.read_text() == "archive at N = 512"


# ------------------------------------------------------------- polish_archive from Python


@pytest.mark.parametrize("plant", ["link", "file"])
def test_polish_archive_refuses_a_link_or_a_users_file(tmp_path: Path, archive: Path,
                                                       plant: str) -> None:
    bait = victim(tmp_path)
    out = tmp_path / "run.polished.nc"
    if plant == "link":
        out.symlink_to(bait)
    else:
        out.write_bytes(VICTIM)
    with pytest.raises(UnsafePathError, match=str(out)):
        polish_archive(archive, out)
    assert bait.read_bytes() == VICTIM
    assert out.is_symlink() if plant == "link" else out.read_bytes() == VICTIM
    assert entries(tmp_path) == {"victim.txt", "run.polished.nc"}


def test_polish_archive_writes_and_replaces_its_own_file(tmp_path: Path, archive: Path) -> None:
    out = tmp_path / "p.nc"
    _, written = polish_archive(archive, out)
    assert written == out and "polish_representation" in solvers.open_run(out).attrs
    first = out.stat().st_ino
    polish_archive(archive, out)  # ours: replaced by a rename (a new file)
    assert out.stat().st_ino != first and entries(tmp_path) == {"p.nc"}


# ------------------------------------------------------------------ figures


@pytest.mark.parametrize("name", ["fig.png", "fig.pdf", "fig.svg"])
def test_plot_refuses_a_link_and_a_users_file(tmp_path: Path, archive: Path, name: str) -> None:
    bait = victim(tmp_path)
    out = tmp_path / name
    out.symlink_to(bait)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        plot_run(archive, out)
    assert bait.read_bytes() == VICTIM and out.is_symlink()
    out.unlink()
    out.write_bytes(VICTIM)  # a user's file under a figure's name
    with pytest.raises(UnsafePathError, match=str(out)):
        plot_run(archive, out)
    assert out.read_bytes() == VICTIM
    assert entries(tmp_path) == {"victim.txt", name}


@pytest.mark.parametrize("name", ["fig.png", pytest.param("fig.pdf", marks=pytest.mark.slow), "fig.svg"])
def test_plot_replaces_its_own_figure(tmp_path: Path, archive: Path, name: str) -> None:
    out = plot_run(archive, tmp_path / "sub" / name, dpi=30)
    assert is_figure_file(out)
    first = out.stat().st_ino
    plot_run(archive, out, dpi=30)
    assert out.stat().st_ino != first and entries(out.parent) == {name}


def test_plot_command_refuses_a_link(tmp_path: Path, archive: Path, capsys) -> None:
    bait = victim(tmp_path)
    (tmp_path / "x.png").symlink_to(bait)
    assert main(["plot", str(archive), "-o", str(tmp_path / "x.png")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert bait.read_bytes() == VICTIM


@pytest.mark.slow
def test_animate_refuses_a_link_and_a_users_file_and_replaces_its_own(tmp_path: Path,
                                                                       archive: Path,
                                                                       capsys) -> None:
    bait = victim(tmp_path)
    out = tmp_path / "run.gif"
    out.symlink_to(bait)
    assert main(["animate", str(archive), "-o", str(out)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert bait.read_bytes() == VICTIM and out.is_symlink()
    out.unlink()
    out.write_bytes(VICTIM)
    with pytest.raises(UnsafePathError, match="not a GIF figure"):
        animate_run(archive, out, fps=4, dpi=20)
    assert out.read_bytes() == VICTIM
    out.unlink()
    animate_run(archive, out, fps=4, dpi=20)
    assert out.read_bytes()[:6] == b"GIF89a"
    first = out.stat().st_ino
    animate_run(archive, out, fps=4, dpi=20)  # its own animation: replaced
    assert out.stat().st_ino != first
    assert entries(tmp_path) == {"victim.txt", "run.gif"}


def test_save_figure_refuses_a_folder_and_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "d.png").mkdir()
    with pytest.raises(UnsafePathError, match="folder"):
        save_figure(tmp_path / "d.png", lambda tmp: tmp.write_bytes(b"x"))
    os.mkfifo(tmp_path / "f.pdf")
    with pytest.raises(UnsafePathError):
        save_figure(tmp_path / "f.pdf", lambda tmp: tmp.write_bytes(b"x"))
    assert (tmp_path / "d.png").is_dir() and not (tmp_path / "f.pdf").is_file()
