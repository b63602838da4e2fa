"""``meanfield example``: the named configs are listed and copied, from a checkout or an install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from solvers.cli.main import main
from solvers.io import runs
from solvers.model.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_list_names_every_config(capsys):
    assert main(["example", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()  # a name, then its description, wrapped
    names = {line.split()[0] for line in lines if line and not line[0].isspace()}
    assert names == {p.stem for p in (ROOT / "runs").glob("*.toml")}


def test_copy_is_the_shipped_file_and_loads(tmp_path, capsys):
    out = tmp_path / "mine.toml"
    assert main(["example", "demo", "-o", str(out)]) == 0
    assert out.read_bytes() == (ROOT / "runs" / "demo.toml").read_bytes()
    assert load_config(out).model.beta == 5.0
    assert main(["example", "demo", "-o", str(out)]) == 2  # exists
    assert "--overwrite" in capsys.readouterr().err


def test_unknown_name_suggests(capsys):
    assert main(["example", "dmeo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean demo" in err


def test_installed_share_folder_is_searched(tmp_path, monkeypatch):
    """After ``pip install`` the configs live in <prefix>/share/meanfield-spectral/runs."""
    share = tmp_path / runs.SHARE
    share.mkdir(parents=True)
    (share / "only_installed.toml").write_text("# an installed config\n[model]\nbeta = 2.0\n")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert runs.find_config("only_installed") == share / "only_installed.toml"
    assert runs.describe(share / "only_installed.toml") == "an installed config"
    with pytest.raises(KeyError, match="did you mean"):
        runs.find_config("only_instaled")
