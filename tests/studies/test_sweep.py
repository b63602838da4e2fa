"""Parameter sweeps (solvers.studies.sweep): the grid, per-run configs, dask execution, resume,
the summary dataset, and the named configs in runs/."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import paper_s1_toml

from solvers.cli import sweep as cli_sweep
from solvers.io.reading import open_run
from solvers.io.state import initial_density
from solvers.model.config import ConfigError, check_resolution, load_config, tomllib
from solvers.studies import sweep

RUNS = Path(__file__).resolve().parents[2] / "runs"
TINY = paper_s1_toml()


@pytest.fixture(scope="module")
def client():
    """Two single-threaded worker processes, shared by the tests of this module."""
    with sweep.dask_client(workers=2) as c:
        yield c


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="meanfield")
    cli_sweep.add_parser(parser.add_subparsers(dest="command"))
    return parser


@pytest.mark.parametrize("path", sorted(RUNS.glob("*.toml")), ids=lambda p: p.name)
def test_named_configs_load_and_resolve(path: Path) -> None:
    config = load_config(path)
    check_resolution(config)
    if path.name.startswith("paper_") and path.name != "paper_s1_descent.toml":
        assert re.search(r"Mirrors paper (Fig\.|section) ", path.read_text()), "say which figure"
        assert config.time.stop_when_stationary


def test_split_and_parse_values() -> None:
    assert sweep.split_values("0.01, 0.5,1") == ["0.01", "0.5", "1"]
    assert sweep.split_values("[[1, 0.1], [2, 0.2]],[]") == ["[[1, 0.1], [2, 0.2]]", "[]"]
    assert sweep.split_values('"a,b",c') == ['"a,b"', "c"]
    assert sweep.split_values("0..3") == ["0", "1", "2", "3"]
    param = sweep.parse_param("perceptron.activation=relu,\"gelu\"")
    assert param.values == ("relu", "gelu") and param.key == "perceptron.activation"
    assert sweep.parse_param("model.beta=0.5,5").values == (0.5, 5)
    for bad in ("model.beta", "model.beta=", "model.beta=1,,2", "model.beta=1,1",
                "initial.seed=-1,2", "initial.seed=0.5"):
        with pytest.raises(sweep.SweepError):
            sweep.parse_param(bad)


def test_points_are_the_cartesian_product_with_safe_names() -> None:
    params = [sweep.parse_param("model.beta=0.5,5"),
              sweep.parse_param('perceptron.activation="relu",gelu,none')]
    points = sweep.sweep_points(params)
    assert len(points) == 6 and points[0].name == "beta-0.5_activation-relu"
    assert points[-1].index == (1, 2) and points[-1].items == ("model.beta=5",
                                                               "perceptron.activation=none")
    assert all(re.fullmatch(r"[A-Za-z0-9._+-]+", p.name) for p in points)
    shared = [sweep.parse_param("model.beta=1"), sweep.parse_param("atoms.radius=0.1")]
    assert sweep.dim_names(shared) == ["beta", "radius"]
    with pytest.raises(sweep.SweepError):
        sweep.dim_names([sweep.parse_param("model.beta=1"), sweep.parse_param("model.beta=2")])


def test_point_config_seed_activation_and_resolution(tmp_path: Path) -> None:
    base = tomllib.loads(TINY)
    archive = tmp_path / "x.nc"
    cfg = sweep.point_config(base, ["perceptron.activation=none", "initial.seed=3"], archive)
    assert cfg.model.perceptron.n_units == 0 and cfg.output.path == str(archive)
    assert cfg.initial.kind == "von_mises" and len(cfg.initial.centers) == 9
    rho = initial_density(cfg)
    assert rho.min() > 0 and np.isclose(rho.sum() * 2 * np.pi / rho.size, 1.0)
    assert not np.allclose(rho[1:], rho[1:][::-1], rtol=1e-3), "not mirror symmetric"
    again = initial_density(sweep.point_config(base, ["initial.seed=3"], archive))
    other = initial_density(sweep.point_config(base, ["initial.seed=4"], archive))
    assert np.array_equal(rho, again) and not np.allclose(rho, other)
    with pytest.raises(ConfigError, match="domain.resolution.*192"):
        sweep.point_config(base, ["model.beta=50"], archive)
    raised = sweep.point_config(base, ["model.beta=50"], archive, auto_resolution=True)
    assert raised.domain.resolution == 192 and check_resolution(raised) == 64
    assert sweep.config_digest(raised) != sweep.config_digest(cfg)
    assert sweep.config_digest(cfg) == sweep.config_digest(
        sweep.point_config(base, ["perceptron.activation=none", "initial.seed=3"], tmp_path / "y.nc"))


def test_sweep_of_two_runs(client, tiny: Path, tmp_path: Path) -> None:
    out, lines = tmp_path / "sweep", []
    params = [sweep.parse_param("model.beta=1,2")]
    summary = sweep.run_sweep(tiny, params, out, client=client, echo=lines.append)
    assert sorted(p.name for p in out.iterdir()) == [
        "beta-1.done.json", "beta-1.nc", "beta-2.done.json", "beta-2.nc", "summary.nc"]
    assert len(lines) == 2 and all(re.match(r"\[\d/2\] beta-\d: t_end ", s) for s in lines)
    ds = xr.load_dataset(out / "summary.nc")
    assert ds["n_atoms"].dims == ("beta",) and ds["atom_mass"].dims == ("beta", "atom")
    assert list(ds["beta"].values) == [1, 2] and list(ds["reason"].values) == ["t_end"] * 2
    for beta in (1, 2):
        run, row = open_run(out / f"beta-{beta}.nc"), ds.sel(beta=beta)
        assert run.attrs["model__beta"] == beta and float(row["t_final"]) == 4.0
        assert float(row["energy"]) == pytest.approx(float(run["energy"][-1]), rel=1e-12)
        assert int(row["n_atoms"]) == int(run["n_atoms"][-1]) >= 1
        masses = np.sort(run["atom_mass"].values[-1][np.isfinite(run["atom_mass"].values[-1])])
        assert np.allclose(row["atom_mass"].values[: masses.size], masses[::-1])
        assert np.all(np.isnan(row["atom_mass"].values[masses.size:]))
        done = json.loads((out / f"beta-{beta}.done.json").read_text())
        assert done["reason"] == "t_end" and done["t_final"] == 4.0 and done["wall_time"] > 0
    assert summary["max_atom_mass"].equals(ds["max_atom_mass"])


def test_failure_then_rerun_skips_finished(client, tiny: Path, tmp_path: Path) -> None:
    out, lines = tmp_path / "sweep", []
    params = [sweep.parse_param("model.beta=1,50")]
    first = sweep.run_sweep(tiny, params, out, client=client, echo=lines.append)
    assert list(first["reason"].values) == ["t_end", "failed"]
    error = str(first["error"].sel(beta=50).values)
    assert error.startswith("domain.resolution: 64 cells do not resolve") and "\n" not in error
    assert any("beta-50: FAILED  domain.resolution" in s for s in lines)
    assert np.isnan(float(first["n_atoms"].sel(beta=50)))
    stamp = (out / "beta-1.nc").stat().st_mtime_ns
    lines.clear()
    sweep.run_sweep(tiny, params, out, client=client, echo=lines.append)
    assert (out / "beta-1.nc").stat().st_mtime_ns == stamp
    assert any(s.startswith("[1/2] beta-1: skipped (finished: t_end") for s in lines)
    lines.clear()
    # --auto-resolution checks every grid: an unchecked run is not reused, beta = 50 starts at 192
    second = sweep.run_sweep(tiny, params, out, client=client, echo=lines.append,
                             auto_resolution=True)
    assert list(second["reason"].values) == ["t_end", "t_end"]
    assert str(second["resolution_levels"].sel(beta=50).values).startswith("192:")
    assert open_run(out / "beta-50.N192.nc").attrs["domain__resolution"] == 192
    assert int(second["resolution"].sel(beta=50)) == open_run(out / "beta-50.nc").attrs[
        "domain__resolution"]
    lines.clear()
    sweep.run_sweep(tiny, params, out, client=client, echo=lines.append, auto_resolution=True)
    assert sum("skipped (finished" in s for s in lines) == 2
    ds = xr.load_dataset(out / "summary.nc")
    assert np.all(np.isfinite(ds["n_atoms"].values)) and list(ds["error"].values) == ["", ""]


def test_unfinished_or_changed_runs_start_again(client, tiny: Path, tmp_path: Path) -> None:
    out, lines = tmp_path / "sweep", []
    params = [sweep.parse_param("model.beta=1")]
    sweep.run_sweep(tiny, params, out, client=client, echo=lines.append)
    (out / "beta-1.done.json").unlink()  # as if killed before the end
    sweep.run_sweep(tiny, params, out, client=client, echo=lines.append)
    with pytest.raises(sweep.SweepError, match="holds a different sweep"):
        sweep.run_sweep(tiny, params, out, overrides=["time.t_end=2.0"], client=client,
                        echo=lines.append)
    sweep.run_sweep(tiny, params, out, overrides=["time.t_end=2.0"], client=client,
                    echo=lines.append, overwrite=True)
    assert [("skipped" in s) for s in lines] == [False, False, False]
    assert float(xr.load_dataset(out / "summary.nc")["t_final"].squeeze()) == 2.0


def test_command_line_on_an_existing_scheduler(client, tiny: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cli"
    args = _parser().parse_args(["sweep", str(tiny), "--param", "model.beta=1",
                                 "--param", "perceptron.activation=relu,none", "-o", str(out),
                                 "--set", "time.t_end=2", "--scheduler", client.scheduler.address])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "beta-1_activation-none: t_end" in text and "2 of 2 runs finished" in text
    ds = xr.load_dataset(out / "summary.nc")
    assert ds["n_atoms"].dims == ("beta", "activation")
    assert list(ds["activation"].values) == ["relu", "none"]
    assert float(ds["n_atoms"].sel(activation="none").squeeze()) == 0


@pytest.mark.parametrize("argv, message", [
    (["--param", "model.beta"], "expected section.key=v1,v2"),
    (["--param", "model.bta=1"], "model.bta: unknown key"),
    ([], "at least one --param"),
    (["--param", "model.beta=1", "--workers", "0"], "--workers must be >= 1")])
def test_command_line_errors(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture,
                             argv: list[str], message: str) -> None:
    args = _parser().parse_args(["sweep", str(tiny), "-o", str(tmp_path / "o")] + argv)
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
