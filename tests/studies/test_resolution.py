"""The resolution check of sweep points (solvers.studies.resolution) with a stubbed run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import paper_s1_toml

from solvers.io.summary import build_summary
from solvers.studies import resolution as rs
from solvers.studies import sweep
from solvers.timestepping.manifolds import CIRCLE, SPHERE


def record(n_atoms: int, masses, reason: str = "stationary") -> dict:
    return {"name": "x", "archive": "", "reason": reason, "error": "", "t_final": 1.0,
            "n_steps": 1, "wall_time": 0.0, "n_atoms": n_atoms, "max_atom_mass": max(masses),
            "energy": 0.0, "mass": 1.0, "atom_mass": list(masses), "atom_position": [0.0] * n_atoms}


OUTCOMES = {  # the ascent ReLU beta = 25 story: 4 atoms at N = 256, 3 from N = 512 on
    256: record(4, [0.46, 0.287, 0.16, 0.093]),
    512: record(3, [0.4602, 0.2869, 0.2529]),
    1024: record(3, [0.4601, 0.2870, 0.2529]),
    2048: record(3, [0.4600, 0.2871, 0.2529]),
}


def stub(calls: list):
    def run(config, archive, name):
        calls.append(config)
        Path(archive).write_text(f"archive at N = {config}")
        return dict(OUTCOMES[config], name=name, archive=archive, resolution=config)
    return run


def levels(tmp_path: Path, ns):
    return [(n, n, str(tmp_path / f"p.N{n}.nc")) for n in ns]


def test_ladder_doubles_up_to_the_limits():
    check = rs.ResolutionCheck()
    assert rs.resolution_ladder(256, CIRCLE, check) == [256, 512, 1024, 2048]
    assert rs.resolution_ladder(1024, CIRCLE, check) == [1024, 2048, 4096]
    assert rs.resolution_ladder(4096, CIRCLE, check) == [4096]
    assert rs.resolution_ladder(31, SPHERE, check) == [31, 63, 127, 255]
    assert rs.resolution_ladder(256, CIRCLE, rs.ResolutionCheck(max_refinements=1)) == [256, 512]
    with pytest.raises(ValueError, match="--mass-tol"):
        rs.ResolutionCheck(mass_tol=-1.0)


def test_mass_difference_needs_equal_counts():
    assert rs.mass_difference(OUTCOMES[512], OUTCOMES[1024]) == pytest.approx(1e-4)
    assert rs.mass_difference(OUTCOMES[256], OUTCOMES[512]) == np.inf
    assert rs.mass_difference(OUTCOMES[512], record(3, [0.46, 0.25, 0.29])) == pytest.approx(
        0.0031)  # sorted by size
    assert rs.mass_difference(OUTCOMES[512], record(0, [0.0], reason="failed")) == np.inf


def test_disagreeing_coarse_grid_is_refined_until_two_agree(tmp_path):
    calls = []
    rec = rs.refine_point(levels(tmp_path, [256, 512, 1024, 2048]), str(tmp_path / "p.nc"),
                          "p", "digest", 0.02, stub(calls))
    assert calls == [256, 512, 1024]  # 256 != 512 (4 vs 3 atoms), 512 == 1024: stop
    assert rec["resolution"] == 1024 and rec["refinements"] == 2
    assert rec["resolution_check"] == "passed" and rec["n_atoms"] == 3
    assert rec["resolution_levels"] == "256:4 512:3 1024:3"
    assert rec["mass_difference"] == pytest.approx(1e-4)
    assert (tmp_path / "p.nc").read_text() == "archive at N = 1024"  # the result's archive
    assert json.loads((tmp_path / "p.done.json").read_text())["digest"] == "digest"


def test_check_fails_when_no_two_grids_agree(tmp_path):
    calls = []
    rec = rs.refine_point(levels(tmp_path, [256, 512, 1024]), str(tmp_path / "p.nc"), "p", "d",
                          1e-6, stub(calls))  # masses differ by 1e-4 > tol
    assert calls == [256, 512, 1024] and rec["resolution_check"] == "failed"
    assert rec["resolution"] == 1024 and rec["refinements"] == 2


def test_a_failed_level_stops_the_ladder(tmp_path):
    def run(config, archive, name):
        return record(0, [0.0], reason="failed") if config == 512 else dict(OUTCOMES[config])
    rec = rs.refine_point(levels(tmp_path, [256, 512, 1024]), str(tmp_path / "p.nc"), "p", "d",
                          0.02, run)
    assert rec["reason"] == "failed" and rec["resolution_check"] == "failed"
    assert not (tmp_path / "p.done.json").exists()


def test_summary_records_resolution_refinements_and_verdict(tmp_path):
    params = [sweep.parse_param("model.beta=5,25")]
    points = sweep.sweep_points(params)
    recs = {"beta-5": dict(OUTCOMES[512], resolution=512, refinements=1,
                           resolution_check="passed", mass_difference=0.0,
                           resolution_levels="256:3 512:3"),
            "beta-25": rs.refine_point(levels(tmp_path, [256, 512]), str(tmp_path / "p.nc"),
                                       "beta-25", "d", 0.02, stub([]))}
    ds = build_summary(params, sweep.dim_names(params), points, recs)
    assert ds["resolution"].values.tolist() == [512, 512]
    assert ds["refinements"].values.tolist() == [1, 1]
    assert ds["resolution_check"].values.tolist() == ["passed", "failed"]


TINY = paper_s1_toml()


def test_sweep_with_auto_resolution_records_the_check(tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    out, lines = tmp_path / "sw", []
    check = rs.ResolutionCheck(mass_tol=0.05, max_refinements=2)
    with sweep.dask_client(workers=1, processes=False) as client:
        ds = sweep.run_sweep(cfg, [sweep.parse_param("model.beta=1")], out, client=client,
                             auto_resolution=True, check=check, echo=lines.append)
        again = sweep.run_sweep(cfg, [sweep.parse_param("model.beta=1")], out, client=client,
                                auto_resolution=True, check=check, echo=lines.append)
    row = ds.sel(beta=1)
    assert str(row["resolution_check"].values) == "passed" and int(row["refinements"]) >= 1
    levels = str(row["resolution_levels"].values).split()
    assert levels[0].startswith("64:") and int(row["resolution"]) == int(levels[-1].split(":")[0])
    assert (out / "beta-1.nc").is_file() and (out / "beta-1.N64.nc").is_file()
    assert "check passed" in lines[0] and "skipped" in lines[1]
    assert again["resolution"].equals(ds["resolution"])
