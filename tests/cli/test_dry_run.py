"""``meanfield run CONFIG --dry-run`` prints the plan (method, resolution, integrator, the
estimate, snapshots, archive and its size) and exits 0 without running or writing anything:
no archive, no folder, no lock file, no companion process; with ``--resume`` it reads the
archive and leaves it as it was."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from solvers.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "runs" / "demo.toml"
SHORT = ["--set", "domain.resolution=128", "--set", "time.t_end=20"]


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def test_a_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "new" / "run.nc"
    assert main(["run", str(DEMO), "-o", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    for part in ("plan: S1, N = 512, t = 0 .. 5000", "method: spectral+lagrangian (dirac)",
                 "integrator: dopri5", "estimate: about", "snapshots every 10",
                 f"archive: {out} (about", "check run(s) of the verdict", "nothing was run or written"):
        assert part in text, text
    assert list(tmp_path.iterdir()) == []  # no archive, no folder, no lock file
    assert mp.active_children() == []  # no companion started


def test_a_dry_run_of_a_refused_run_says_so_and_exits_0(tmp_path: Path, capsys) -> None:
    assert main(["run", str(DEMO), "-o", str(tmp_path / "x.nc"), "--dry-run",
                 "--set", "time.scheme=\"fv\"", "--set", "domain.resolution=1048576"]) == 0
    text = capsys.readouterr().out
    assert "refused without --force" in text and "N = 1048576" in text
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_of_a_resume_leaves_the_archive_as_it_was(tmp_path: Path, capsys) -> None:
    archive = tmp_path / "run.nc"
    assert main(["run", str(DEMO), "-o", str(archive), "--no-check", "--no-progress", *SHORT]) == 0
    before = listing(tmp_path)
    capsys.readouterr()
    assert main(["run", "--resume", str(archive), "--set", "time.t_end=40", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "t = 20 .. 40 (resumed)" in text and "appended" in text, text
    assert listing(tmp_path) == before
