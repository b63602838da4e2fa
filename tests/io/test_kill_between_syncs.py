"""``kill -9`` between a block's data sync and its count sync, then ``meanfield run --resume``:
the finished archive equals the uninterrupted run bitwise, every variable (the fv grid, NetCDF
and zarr). The block was synced whole (records, atom tracks, cells, the step state behind an
interpolated record) before the kill: its marker (NetCDF ``records_written``; zarr: every
``time`` of the block written) counts it, so that the resume continues from the state the
archive holds. Also a few kills at random moments (benchmarks/kill_resume.py runs more)."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kill_resume", ROOT / "benchmarks" / "kill_resume.py")
kill_resume = sys.modules["kill_resume"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kill_resume)


def _case(case: str, tmp_path: Path, kills: int, between: bool, seed: int) -> kill_resume.Tally:
    tally = kill_resume.run_case(case, kills, tmp_path, random.Random(seed), between)
    assert tally.kills == kills
    assert tally.equal == kills, tally.different
    return tally


@pytest.mark.slow
def test_kill_between_the_syncs_resumes_bitwise_netcdf(tmp_path: Path) -> None:
    tally = _case("nc-fv", tmp_path, 1, True, 3)
    assert tally.resumes == 1  # the kill left records to resume from


@pytest.mark.slow
@pytest.mark.parametrize("case", ["zarr-fv", "nc-fv"])
def test_kills_between_the_syncs_and_at_random_resume_bitwise(case: str, tmp_path: Path) -> None:
    _case(case, tmp_path / "between", 2, True, 11)
    _case(case, tmp_path / "random", 3, False, 12)
