"""``meanfield continue``'s inputs: --to and --at inside the parameter's valid range and the
interval, and an ``initial.path`` that exists and holds a run of the config's manifold, each
refused before any Newton step with one line naming the option."""

from __future__ import annotations

import pytest

import solvers
from solvers.cli.main import main
from solvers.model.config import ConfigError, load_config
from solvers.studies.continuation_run import continue_states

S1 = ('[domain]\nmanifold = "S1"\nresolution = 64\n[model]\nbeta = 2.0\ndirection = "ascent"\n'
      'kernel = "exp"\nnoise = 1.0\n')


@pytest.mark.parametrize("key, to, at, option", [
    ("model.noise", float("inf"), (), "--to"),
    ("model.beta", float("inf"), (), "--to"),
    ("model.beta", 1e7, (), "--to"),
    ("initial.mass", 1e9, (), "--to"),
    ("perceptron.scale", float("nan"), (), "--to"),
    ("model.noise", 0.5, (0.7, 2.0), "--at"),  # 2.0: outside [0.5, 1.0]
    ("model.noise", 0.5, (0.1,), "--at"),
    ("model.noise", 0.5, (float("inf"),), "--at"),
])
def test_bad_ends_and_points_are_refused(key, to, at, option) -> None:
    with pytest.raises(ConfigError, match=f"^{option}: "):
        continue_states(load_config(S1), key, to, at)


def test_the_command_refuses_to_inf_in_one_line(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(S1)
    rc = main(["continue", "c.toml", "--param", "model.noise", "--to", "inf"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --to") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == [tmp_path / "c.toml"]


def test_initial_path_must_hold_a_run_of_the_manifold(tmp_path) -> None:
    missing = S1 + f'[initial]\nkind = "archive"\npath = "{tmp_path / "none.nc"}"\n'
    with pytest.raises(ConfigError, match=r"^initial\.path: .*not found"):
        continue_states(load_config(missing), "model.noise", 0.5)
    s1_run = tmp_path / "s1.nc"
    solvers.run('[domain]\nresolution = 64\n[model]\nbeta = 2.0\n[time]\nt_end = 0.2\n'
                '[output]\nsnapshot_interval = 0.1\nprogress = false\n', path=s1_run)
    s2 = S1.replace('"S1"', '"S2"').replace("= 64", "= 31") + \
        f'[initial]\nkind = "archive"\npath = "{s1_run}"\n'
    with pytest.raises(ConfigError, match=r"^initial\.path: .*S2"):
        continue_states(load_config(s2), "model.noise", 0.5)
