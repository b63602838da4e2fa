"""The IOOS compliance checker (``compliance-checker``, test ``cf:1.8``) on every kind of NetCDF
output, written small by the commands that write them: an S^1 fv grid run, an S^1 run by the
default method (Dirac atoms), its polished archive (``meanfield polish``), an S^2 run and a
Lemma 5.1 report. Each must pass with no error and no warning (the dimensionless model time is
on a record dimension named ``t``, not ``time``, which CF keeps for a time axis with units
``<unit> since <date>``); every message is printed on failure.

The archive layout itself (bounds, coordinates, chunks): test_cf.py and test_archive.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from solvers.cli.main import main

checker = pytest.importorskip("compliance_checker.runner", reason="pip install compliance-checker")

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "runs" / "demo.toml"
S2 = """
[domain]
manifold = "S2"
resolution = 31
[model]
beta = 1.0
[time]
t_end = 0.2
[output]
snapshot_interval = 0.1
progress = false
"""
_LEVELS = {"high_priorities": "error", "medium_priorities": "warning"}


def cf_messages(path: Path) -> list[str]:
    """Every error and warning of ``compliance-checker --test cf:1.8 path``, one line each:
    ``error|warning: <section>: <message>``."""
    suite = checker.CheckSuite
    suite.load_all_available_checkers()
    report = path.with_suffix(".cf.json")
    checker.ComplianceChecker.run_checker(str(path), ["cf:1.8"], 0, "normal",
                                          output_filename=str(report), output_format="json")
    result = json.loads(report.read_text())["cf:1.8"]
    assert result["scored_points"] > 0 and not result.get("errors"), result.get("errors")
    return [f"{_LEVELS[level]}: {item['name']}: {msg}"
            for level in _LEVELS for item in result[level] for msg in item["msgs"]]


def _commands(folder: Path) -> dict[str, list[str]]:
    """The command that writes ``folder/<kind>.nc`` for each kind (polished: after default)."""
    out = {kind: str(folder / f"{kind}.nc") for kind in KINDS}
    return {
        "grid": ["run", str(DEMO), "-o", out["grid"], "--no-check", "--set", 'time.scheme="fv"',
                 "--set", "domain.resolution=128", "--set", "time.t_end=20"],
        "default": ["run", str(DEMO), "-o", out["default"], "--set", "domain.resolution=128",
                    "--set", "time.t_end=300"],
        "polished": ["polish", out["default"], "-o", out["polished"]],
        "s2": ["run", str(folder / "s2.toml"), "-o", out["s2"]],
        "lemma51": ["lemma51", "--beta", "5", "--no-plot", "--digits", "--table", "none",
                    "-o", out["lemma51"]],
        "sd": ["run", str(ROOT / "runs" / "paper_sd_descent_relu.toml"), "-o", out["sd"],
               "--force", "--no-check", "--set", "domain.dim=5", "--set", "domain.points=300",
               "--set", "time.t_end=300"],
        "sd_polished": ["polish", out["sd"], "-o", out["sd_polished"]],
    }


KINDS = ("grid", "default", "polished", "s2", "lemma51", "sd", "sd_polished")
SLOW = {"default", "polished", "s2", "sd", "sd_polished"}  # the checker takes 3-8 s on each (quadratic in variables)


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Callable[[str], list[str]]:
    """``checked(kind)``: the checker's messages on that kind of output, written by its command
    (once per module)."""
    folder = tmp_path_factory.mktemp("cf")
    (folder / "s2.toml").write_text(S2)
    commands, done = _commands(folder), {}

    def messages(kind: str) -> list[str]:
        if kind not in done:
            if kind in ("polished", "sd_polished"):
                messages("default" if kind == "polished" else "sd")
            assert main(["-q", *commands[kind]]) == 0, commands[kind]
            done[kind] = cf_messages(folder / f"{kind}.nc")
        return done[kind]
    return messages


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k
                                  for k in KINDS])
def test_cf_1_8_no_errors_no_warnings(checked, kind):
    """No error and no warning on any kind of output."""
    messages = checked(kind)
    print(f"compliance-checker cf:1.8 on {kind}: {len(messages)} messages", *messages, sep="\n  ")
    assert messages == [], "\n".join(messages)


def test_the_checker_sees_a_defect(tmp_path):
    """The check can fail: a file with a 64-bit integer, a _FillValue on a coordinate and no
    Conventions gets errors and warnings."""
    import numpy as np
    import xarray as xr

    ds = xr.Dataset({"a": ("x", np.arange(3, dtype=np.int64), {"units": "1", "long_name": "a"})},
                    coords={"x": ("x", np.arange(3.0), {"units": "1", "long_name": "x"})})
    ds.to_netcdf(tmp_path / "bad.nc", encoding={"x": {"_FillValue": np.nan}})
    messages = cf_messages(tmp_path / "bad.nc")
    assert any("int64" in m for m in messages) and any("_FillValue" in m for m in messages)
    assert any(m.startswith("warning:") and "Conventions" in m for m in messages)
