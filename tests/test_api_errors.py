"""Bad calls of the Python API end in the project's errors, as the command line's do.

Each row of the table is one bad call: it must raise :class:`solvers.ConfigError` (or the
documented ``ArchiveError`` for a file that is not a readable run archive, ``FileNotFoundError``
for a missing file, ``UnsafePathError`` for a target the
writer refuses) whose message names the parameter at fault, never a builtin ``KeyError``,
``IndexError`` or ``TypeError`` from deep inside; and nothing is appended to an archive.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import PAPER_S1_PERCEPTRON, toml_config

import solvers
from solvers.io.safe_paths import UnsafePathError

CONFIG_DOC = {
    "domain": {"manifold": "S1", "resolution": 64},
    "model": {"beta": 2.0, "kernel": "exp_shifted"},
    "perceptron": PAPER_S1_PERCEPTRON,
    "initial": {"kind": "uniform", "modes": [[2, 0.1]]},
    "time": {"t_end": 2.0, "scheme": "fv"},
    "output": {"snapshot_interval": 1.0, "progress": False},
}
CONFIG = toml_config(CONFIG_DOC)
ALLOWED = (solvers.ConfigError, solvers.ArchiveError, FileNotFoundError, UnsafePathError)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A finished archive, its Dataset and config, and hostile files beside them."""
    tmp = tmp_path_factory.mktemp("api-errors")
    archive = tmp / "run.nc"
    ds = solvers.run(CONFIG, path=archive)
    (tmp / "notes.txt").write_text("a user's notes\n")
    (tmp / "truncated.nc").write_bytes(archive.read_bytes()[:4000])
    (tmp / "folder").mkdir()
    hostile = tmp / "hostile.nc"
    shutil.copy(archive, hostile)
    with netCDF4.Dataset(hostile, "a") as nc:
        nc.setncattr("config_text", str(tmp / "evil.toml"))  # a path, not TOML
    (tmp / "evil.toml").write_text(toml_config(CONFIG_DOC, model__beta=7.0))
    return {"tmp": tmp, "archive": archive, "ds": ds, "cfg": solvers.load_config(CONFIG)}


def _replace(cfg: Any, section: str, **changes: Any) -> Any:
    return dataclasses.replace(cfg, **{section: dataclasses.replace(getattr(cfg, section),
                                                                    **changes)})


def _perceptron(cfg: Any, **changes: Any) -> Any:
    model = dataclasses.replace(cfg.model, perceptron=dataclasses.replace(cfg.model.perceptron,
                                                                          **changes))
    return dataclasses.replace(cfg, model=model)


Call = Callable[[dict[str, Any]], Any]
CASES: list[tuple[str, Call, str]] = [
    # load_config: wrong types, unknown keys, bad values, replaced configs
    ("load_config(None)", lambda m: solvers.load_config(None), "config"),
    ("load_config(123)", lambda m: solvers.load_config(123), "config"),
    ("load_config(bytes)", lambda m: solvers.load_config(CONFIG.encode()), "config"),
    ("load_config(list)", lambda m: solvers.load_config([CONFIG]), "config"),
    ("load_config(missing)", lambda m: solvers.load_config(m["tmp"] / "missing.toml"),
     "missing.toml"),
    ("load_config(folder)", lambda m: solvers.load_config(m["tmp"] / "folder"), "folder"),
    ("load_config(not TOML)", lambda m: solvers.load_config(m["tmp"] / "notes.txt"), "config"),
    ("load_config(dict section 5)", lambda m: solvers.load_config({"model": 5}), "model"),
    ("load_config(dict None)", lambda m: solvers.load_config({"model": {"beta": None}}),
     "config"),
    ("load_config(dict object)", lambda m: solvers.load_config({"model": {"beta": object()}}),
     "config"),
    ("load_config(dict int key)", lambda m: solvers.load_config({1: {"x": 1}}), "config"),
    ("load_config(dict str beta)", lambda m: solvers.load_config({"model": {"beta": "x"}}),
     "model.beta"),
    ("load_config(dict unknown)", lambda m: solvers.load_config({"model": {"bta": 1}}),
     "model.bta"),
    ("override None", lambda m: solvers.load_config(CONFIG, model__beta=None), "model.beta"),
    ("override object", lambda m: solvers.load_config(CONFIG, model__beta=object()),
     "model.beta"),
    ("override no section", lambda m: solvers.load_config(CONFIG, beta=3), "beta"),
    ("override unknown key", lambda m: solvers.load_config(CONFIG, model__nope=1), "model.nope"),
    ("override deep key", lambda m: solvers.load_config(CONFIG, **{"model.beta.x": 1}),
     "model.beta.x"),
    ("override list", lambda m: solvers.load_config(CONFIG, model__beta=[1, 2]), "model.beta"),
    ("override huge int", lambda m: solvers.load_config(CONFIG, model__beta=10**400),
     "model.beta"),
    ("override nan", lambda m: solvers.load_config(CONFIG, model__beta=math.nan), "model.beta"),
    ("override mode 1e23", lambda m: solvers.load_config(
        CONFIG, initial__modes=[[99999999999999999999999, 0.1]]), "initial.modes"),
    ("override seed-like huge", lambda m: solvers.load_config(
        CONFIG, domain__resolution=99999999999999999999999), "domain.resolution"),
    ("replace beta < 0", lambda m: solvers.load_config(_replace(m["cfg"], "model", beta=-3.0)),
     "model.beta"),
    ("replace beta str", lambda m: solvers.load_config(_replace(m["cfg"], "model", beta="3")),
     "model.beta"),
    ("replace scheme", lambda m: solvers.load_config(_replace(m["cfg"], "time", scheme="x")),
     "time.scheme"),
    ("replace resolution float", lambda m: solvers.load_config(
        _replace(m["cfg"], "domain", resolution=64.5)), "domain.resolution"),
    ("replace section type", lambda m: solvers.load_config(
        dataclasses.replace(m["cfg"], time={"t_end": 1.0})), "time"),
    ("replace weights shape", lambda m: solvers.load_config(
        _perceptron(m["cfg"], a=np.ones((2, 3)))), "perceptron.a"),
    ("replace omega length", lambda m: solvers.load_config(
        _perceptron(m["cfg"], omega=np.ones(5))), "perceptron.omega"),
    ("replace mode above grid", lambda m: solvers.load_config(
        _replace(m["cfg"], "initial", modes=((40, 0.1),))), "initial.modes"),
    ("replace unused key", lambda m: solvers.load_config(
        _replace(m["cfg"], "initial", centers=(1.0,))), "initial.centers"),
    ("replace combination", lambda m: solvers.load_config(
        _replace(m["cfg"], "time", scheme="spectral", kink_faces=True)), "time.kink_faces"),
    # run
    ("run(None)", lambda m: solvers.run(None), "config"),
    ("run(path=123)", lambda m: solvers.run(CONFIG, path=123), "path"),
    ("run(path='')", lambda m: solvers.run(CONFIG, path=""), "path"),
    ("run(overwrite='no')", lambda m: solvers.run(CONFIG, overwrite="no"), "overwrite"),
    ("run(progress='yes')", lambda m: solvers.run(CONFIG, progress="yes"), "progress"),
    ("run over a user's file", lambda m: solvers.run(CONFIG, path=m["tmp"] / "notes.txt",
                                                     overwrite=True), "notes.txt"),
    ("run replaced t_end < 0", lambda m: solvers.run(_replace(m["cfg"], "time", t_end=-1.0)),
     "time.t_end"),
    # resume: the CLI's refusals, bad sources, hostile archives
    ("resume scheme", lambda m: solvers.resume(m["archive"], time__scheme="spectral",
                                               t_end=3.0), "time.scheme"),
    ("resume physics", lambda m: solvers.resume(m["archive"], model__beta=3.0, t_end=3.0),
     "model.beta"),
    ("resume t_end str", lambda m: solvers.resume(m["archive"], t_end="9"), "t_end"),
    ("resume t_end nan", lambda m: solvers.resume(m["archive"], t_end=math.nan), "t_end"),
    ("resume t_end reached", lambda m: solvers.resume(m["archive"], t_end=1.0), "t_end"),
    ("resume t_end default", lambda m: solvers.resume(m["archive"]), "t_end"),
    ("resume progress", lambda m: solvers.resume(m["archive"], t_end=3.0, progress=2),
     "progress"),
    ("resume missing", lambda m: solvers.resume(m["tmp"] / "missing.nc", t_end=3.0),
     "missing.nc"),
    ("resume folder", lambda m: solvers.resume(m["tmp"] / "folder", t_end=3.0), "folder"),
    ("resume text file", lambda m: solvers.resume(m["tmp"] / "notes.txt", t_end=3.0),
     "notes.txt"),
    ("resume truncated", lambda m: solvers.resume(m["tmp"] / "truncated.nc", t_end=3.0),
     "truncated.nc"),
    ("resume missing zarr", lambda m: solvers.resume(m["tmp"] / "x.zarr", t_end=3.0), "x.zarr"),
    ("resume hostile config_text", lambda m: solvers.resume(m["tmp"] / "hostile.nc",
                                                            t_end=3.0), "config"),
    ("resume(123)", lambda m: solvers.resume(123, t_end=3.0), "source"),
    ("resume(empty Dataset)", lambda m: solvers.resume(xr.Dataset(), t_end=3.0), "source"),
    ("resume(no config_text)", lambda m: solvers.resume(
        m["ds"].drop_attrs() if hasattr(m["ds"], "drop_attrs") else
        m["ds"].assign_attrs(config_text=None).drop_vars([]), t_end=3.0), "source"),
    ("resume(no records)", lambda m: solvers.resume(m["ds"].isel(time=slice(0, 0)), t_end=3.0),
     "source"),
    ("resume(no rho)", lambda m: solvers.resume(m["ds"].drop_vars("rho"), t_end=3.0), "source"),
    ("resume(Dataset, scheme)", lambda m: solvers.resume(m["ds"], time__scheme="spectral"),
     "time.scheme"),
    ("resume(Dataset, hostile text)", lambda m: solvers.resume(
        m["ds"].assign_attrs(config_text="/etc/passwd"), t_end=3.0), "config"),
    ("resume(Dataset, wrong grid)", lambda m: solvers.resume(
        m["ds"].assign_attrs(config_text=toml_config(CONFIG_DOC, domain__resolution=32)),
        t_end=3.0), "source"),
    # open_run
    ("open_run(123)", lambda m: solvers.open_run(123), "path"),
    ("open_run(missing)", lambda m: solvers.open_run(m["tmp"] / "missing.nc"), "missing.nc"),
    ("open_run(text file)", lambda m: solvers.open_run(m["tmp"] / "notes.txt"), "notes.txt"),
    ("open_run(truncated)", lambda m: solvers.open_run(m["tmp"] / "truncated.nc"),
     "truncated.nc"),
    ("open_run(folder)", lambda m: solvers.open_run(m["tmp"] / "folder"), "folder"),
    # simulate (the time loop on plain arrays)
    ("simulate(replaced beta)", lambda m: solvers.simulate(
        _replace(m["cfg"], "model", beta=1e9), np.full(64, 1 / (2 * np.pi))), "model.beta"),
    ("simulate(rho shape)", lambda m: solvers.simulate(m["cfg"], np.ones(63)), "rho0"),
    ("simulate(rho text)", lambda m: solvers.simulate(m["cfg"], "x"), "rho0"),
    ("simulate(rho nan)", lambda m: solvers.simulate(m["cfg"], np.full(64, np.nan)), "rho0"),
    ("simulate(config 5)", lambda m: solvers.simulate(5, np.ones(64)), "config"),
    ("simulate(t0 text)", lambda m: solvers.simulate(m["cfg"], np.ones(64), t0="x"), "t0"),
    ("simulate(dt0 < 0)", lambda m: solvers.simulate(m["cfg"], np.ones(64), dt0=-1.0), "dt0"),
    ("simulate(step0 float)", lambda m: solvers.simulate(m["cfg"], np.ones(64), step0=1.5),
     "step0"),
]


@pytest.mark.parametrize("name, call, named", CASES, ids=[c[0] for c in CASES])
def test_bad_api_call_raises_a_project_error(made: dict[str, Any], name: str, call: Call,
                                             named: str) -> None:
    size = made["archive"].stat().st_size
    with pytest.raises(Exception) as info:
        call(made)
    err = info.value
    assert isinstance(err, ALLOWED), f"{name}: {type(err).__name__}: {err}"
    assert named in str(err), f"{name}: the message does not name {named!r}: {err}"
    assert len(str(err).splitlines()) == 1 and len(str(err)) < 700
    assert made["archive"].stat().st_size == size  # nothing appended


def test_resume_refuses_a_scheme_change_as_the_cli_does(made: dict[str, Any], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    """One check for both: the API's error is the CLI's line (exit 2), and the archive keeps
    its records (no negative densities appended)."""
    from solvers.cli.main import main

    copy = tmp_path / "copy.nc"
    shutil.copy(made["archive"], copy)
    with pytest.raises(solvers.ConfigError) as info:
        solvers.resume(copy, time__scheme="spectral", t_end=3.0)
    assert main(["run", "--resume", str(copy), "--set", 'time.scheme="spectral"',
                 "--set", "time.t_end=3.0", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {info.value}"
    assert solvers.open_run(copy).sizes["time"] == made["ds"].sizes["time"]


def test_a_replaced_config_runs_what_it_says(made: dict[str, Any]) -> None:
    """A RunConfig made with dataclasses.replace runs its own values (not its stale text), and
    its archive's config_text describes them."""
    cfg = _replace(made["cfg"], "time", t_end=1.0)
    ds = solvers.run(cfg)
    np.testing.assert_array_equal(ds["time"].values, [0.0, 1.0])
    assert solvers.load_config(ds.attrs["config_text"]).time.t_end == 1.0
    same = solvers.load_config(made["cfg"])
    assert same.text == made["cfg"].text  # an unchanged config keeps its text (and comments)


def test_hostile_config_text_is_not_read_as_a_file(made: dict[str, Any], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    """An archive whose config_text names a TOML file is refused (invalid TOML) by the CLI's
    resume too; the named file is never opened as the config (its beta = 7 is not run)."""
    from solvers.cli.main import main

    copy = tmp_path / "hostile.nc"
    shutil.copy(made["tmp"] / "hostile.nc", copy)
    rc = main(["run", "--resume", str(copy), "--set", "time.t_end=3.0", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and "invalid TOML" in err
    with netCDF4.Dataset(copy) as nc:
        assert nc.dimensions["t"].size == made["ds"].sizes["time"]  # "t" on disk
    with netCDF4.Dataset(made["tmp"] / "hostile.nc", "a") as nc:
        nc.setncattr("config_text", "/etc/passwd")
    shutil.copy(made["tmp"] / "hostile.nc", copy)
    assert main(["run", "--resume", str(copy), "--set", "time.t_end=3.0"]) == 2
    assert "invalid TOML" in capsys.readouterr().err
