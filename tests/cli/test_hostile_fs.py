"""Every ``meanfield`` command that writes, on a hostile file system: a symbolic link (to a file
outside, and dangling) at every name it writes, a user's file at its output, a read-only output
folder. Each is refused with one line ``error: ...`` and exit 2, and nothing outside the output
folder is touched (the link's target keeps its bytes, a dangling link's target is not created).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import PURE_NOISE_TOML, WRITER_CONFIG_TOML, writer_inputs

from solvers.cli.main import main

CONFIG, PURE = WRITER_CONFIG_TOML, PURE_NOISE_TOML
VICTIM = b"not meanfield's: the user's notes\n"

# command -> (arguments, {i}: the inputs' folder, {o}: the output folder; the names it writes in
# {o}; whether it has --overwrite)
COMMANDS = {
    "run": (["run", "{i}/c.toml", "-o", "{o}/x.nc", "--no-check"], ["x.nc", ".x.nc.lock"], True),
    "sweep": (["sweep", "{i}/c.toml", "--param", "model.beta=1,2", "-o", "{o}"],
              ["beta-1.nc", "beta-2.nc", "beta-1.done.json", ".beta-2.nc.lock", "summary.nc",
               ".sweep.lock", "."], True),
    "continue": (["continue", "{i}/pure.toml", "--param", "model.noise", "--to", "0.9", "-o",
                  "{o}/c.nc", "--figure", "{o}/c.png"], ["c.nc", "c.png"], True),
    "polish": (["polish", "{i}/run.nc", "-o", "{o}/p.nc"], ["p.nc"], True),
    "plot": (["plot", "{i}/run.nc", "-o", "{o}/p.png"], ["p.png"], False),
    "animate": (["animate", "{i}/run.nc", "-o", "{o}/a.gif"], ["a.gif"], False),
    "sweep-figures": (["sweep-figures", "{i}/sw", "-o", "{o}"],
                      ["sweep_atom_counts.png", "sweep_atom_masses.png", "."], False),
    "lemma51": (["lemma51", "--measure", "atoms", "--beta", "5", "--lmax", "8", "--n", "64",
                 "--digits", "--table", "none", "-o", "{o}/r.nc"], ["r.nc", "r.png"], False),
    "converge": (["converge", "{i}/c.toml", "--resolutions", "64,128", "-o", "{o}/conv"],
                 ["conv.nc", "conv.png"], False),
    "compare-particles": (["compare-particles", "{i}/c.toml", "--n", "10", "--times", "0.002",
                           "-o", "{o}/cmp.nc"], ["cmp.nc"], False),
}
LINKS = [(cmd, name) for cmd, (_, names, _) in COMMANDS.items() for name in names]
FIRST = [(cmd, names[0]) for cmd, (_, names, _) in COMMANDS.items()]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The configs, a finished run archive and a finished sweep folder."""
    return writer_inputs(tmp_path_factory.mktemp("inputs"))


def _argv(cmd: str, inputs: Path, out: Path, overwrite: bool = False) -> list[str]:
    args, _, has_overwrite = COMMANDS[cmd]
    argv = [a.replace("{i}", str(inputs)).replace("{o}", str(out)) for a in args]
    return argv + (["--overwrite"] if overwrite and has_overwrite else [])


def _refused(capsys: pytest.CaptureFixture, argv: list[str], *words: str) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


def _outside(tmp_path: Path) -> tuple[Path, Path]:
    """A victim file outside the output folder, and a dangling link's target there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "victim.nc"
    victim.write_bytes(VICTIM)
    return victim, elsewhere / "created-through-the-link"


@pytest.mark.parametrize("cmd, name", LINKS, ids=[f"{c}:{n}" for c, n in LINKS])
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_link_at_any_name_written_is_refused(inputs, tmp_path, capsys, cmd, name, dangling):
    victim, missing = _outside(tmp_path)
    out = tmp_path / "out"
    if name == ".":  # the output folder itself
        out.symlink_to(missing if dangling else victim.parent, target_is_directory=True)
    else:
        out.mkdir()
        (out / name).symlink_to(missing if dangling else victim)
    before = sorted(p.name for p in victim.parent.iterdir())
    _refused(capsys, _argv(cmd, inputs, out, overwrite=True), "link")
    assert victim.read_bytes() == VICTIM and not os.path.lexists(missing)
    assert sorted(p.name for p in victim.parent.iterdir()) == before  # nothing outside touched


@pytest.mark.parametrize("cmd, name", FIRST, ids=[c for c, _ in FIRST])
@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
def test_a_users_file_at_the_output_is_refused(inputs, tmp_path, capsys, cmd, name, overwrite):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_bytes(VICTIM)
    _refused(capsys, _argv(cmd, inputs, out, overwrite), name)
    assert (out / name).read_bytes() == VICTIM
    assert sorted(p.name for p in out.iterdir()) == [name]


def _read_only(folder: Path) -> None:
    """Make ``folder`` read-only, also for root (the immutable flag); skip where impossible."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("root cannot make a read-only folder here (no chattr +i)")


def _writable(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
    folder.chmod(0o755)


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_a_read_only_folder_is_one_error_line(inputs, tmp_path, capsys, cmd):
    out = tmp_path / "out"
    out.mkdir()
    _read_only(out)
    try:
        err = _refused(capsys, _argv(cmd, inputs, out))
        assert "read-only" in err or "ermission" in err or "not permitted" in err, err
        assert str(out) in err, err
        assert list(out.iterdir()) == []
    finally:
        _writable(out)
    assert stat.S_ISDIR(out.lstat().st_mode)


def test_the_hostile_cases_cover_every_writing_command() -> None:
    assert set(COMMANDS) == {"run", "sweep", "continue", "polish", "plot", "animate",
                             "sweep-figures", "lemma51", "converge", "compare-particles"}
    assert len(LINKS) * 2 + len(FIRST) * 2 + len(COMMANDS) == 74
