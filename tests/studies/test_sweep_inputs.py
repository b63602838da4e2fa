"""The sweep's inputs: a swept key never takes the name of a summary or run variable (a
resolution sweep, the first step of a convergence study, finishes with its summary), and bad
arguments of ``solvers.sweep`` are ConfigErrors naming the argument, before anything runs."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest
from conftest import short_s1_toml

import solvers
import solvers.model.params as params_module
from solvers.io.summary import SUMMARY_NAMES, open_summary
from solvers.model.config import ConfigError
from solvers.model.params import RunConfig
from solvers.studies.sweep_params import TAKEN_NAMES, dim_names, parse_param

BASE = short_s1_toml(t_end=0.5, snapshot_interval=0.25)


def config_keys() -> list[str]:
    """Every ``section.key`` of the configuration."""
    hints = typing.get_type_hints(RunConfig, vars(params_module))
    return [f"{f.name}.{g.name}" for f in dataclasses.fields(RunConfig)
            if dataclasses.is_dataclass(hints[f.name]) for g in dataclasses.fields(hints[f.name])]


def test_a_resolution_sweep_writes_its_summary(tmp_path) -> None:
    folder = tmp_path / "ladder"
    ds = solvers.sweep(BASE, domain__resolution=[64, 96], path=folder)
    summary = open_summary(folder)
    assert list(summary["domain__resolution"].values) == [64, 96]
    assert list(summary["resolution"].values) == [64, 96]  # each run's own N
    assert list(summary["reason"].values) == ["t_end", "t_end"]
    assert ds["domain__resolution"].attrs["key"] == "domain.resolution"
    assert ds["mass"].dims[0] == "domain__resolution"
    np.testing.assert_allclose(ds["mass"].isel(time=-1).values, 1.0, rtol=1e-12)


def test_no_config_key_names_a_summary_or_run_variable(tmp_path) -> None:
    keys = config_keys()
    assert len(keys) > 40 and "domain.resolution" in keys and "initial.mass" in keys
    run = solvers.run(BASE, path=tmp_path / "run.nc")
    run_names = {str(n) for n in run.variables} | {str(d) for d in run.dims}
    for key in keys:
        [name] = dim_names([parse_param(f"{key}=1,2")])
        assert name not in SUMMARY_NAMES | run_names | TAKEN_NAMES, key
        assert name in (key.rsplit(".", 1)[1], key.replace(".", "__"))


@pytest.mark.parametrize("kwargs, name", [
    ({"path": 123}, "path"),
    ({"path": ""}, "path"),
    ({"perturbation": "big"}, "perturbation"),
    ({"perturbation": float("nan")}, "perturbation"),
    ({"perturbation": True}, "perturbation"),
    ({"overwrite": "yes"}, "overwrite"),
    ({"model__beta": None}, "model.beta"),
    ({"model__beta": [1.0, None]}, "model.beta"),
    ({"time__t_end": None}, "time.t_end"),
    ({"model__beta": [1.0, object()]}, "model.beta"),
])
def test_bad_sweep_arguments_are_config_errors(tmp_path, monkeypatch, kwargs, name) -> None:
    monkeypatch.chdir(tmp_path)
    args = {"model__beta": [1.0, 2.0], "path": tmp_path / "out", **kwargs}
    with pytest.raises(ConfigError) as err:
        solvers.sweep(BASE, **args)
    assert str(err.value).startswith(name) and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []  # nothing ran, nothing written
