"""Failures reach the user as one line ``error: ...`` naming the file or key and the cause:
a full disk, an unreadable or forbidden archive, a blow-up (with the time it happened, no raw
NumPy warnings), a non-representable angle, a seed out of range."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import toml_config

import solvers.io.netcdf_store
import solvers.io.zarr_store
from solvers.cli.main import main

RUN_DOC = {
    "domain": {"resolution": 64},
    "model": {"beta": 2.0, "kernel": "exp_shifted"},
    "perceptron": {"activation": "relu", "a": [[1.0, 0.0], [-0.6, -0.8]], "omega": [0.6, -0.5]},
    "initial": {"kind": "uniform", "modes": [[2, 0.1]]},
    "time": {"t_end": 2.0, "scheme": "fv"},
    "output": {"snapshot_interval": 0.25, "sync_interval": 0, "progress": False},
}
RUN = toml_config(RUN_DOC)
# the spectral scheme at a fixed step far above its stability bound: the density blows up
BLOW_UP = toml_config(RUN_DOC, domain__resolution=128, model__beta=5.0, time__scheme="spectral",
                      time__dt=2.0, time__t_end=50.0, output__snapshot_interval=2.0)


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("suffix, store", [(".nc", solvers.io.netcdf_store.NetCDFStore),
                                           (".zarr", solvers.io.zarr_store.ZarrStore)])
def test_a_full_disk_names_the_archive_and_the_cause(tmp_path: Path, capsys, monkeypatch,
                                                     suffix: str, store: type) -> None:
    """ENOSPC on the third block: exit 1, the archive and 'No space left on device' named,
    the records before it kept and readable, and how to continue."""
    written = store.write_block

    def write_block(self, *args, **kwargs):
        if self.n >= 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return written(self, *args, **kwargs)

    monkeypatch.setattr(store, "write_block", write_block)
    cfg, out = tmp_path / "run.toml", tmp_path / f"full{suffix}"
    cfg.write_text(RUN)
    rc, _, err = run_cli(capsys, "run", str(cfg), "-o", str(out), "--no-check")
    line = one_error_line(err)
    assert rc == 1 and str(out) in line and "No space left on device" in line
    assert "holds 2 snapshots" in line and f"--resume {out}" in line
    from solvers.io.reading import open_run

    assert open_run(out).sizes["time"] == 2


def test_unreadable_and_forbidden_archives(tmp_path: Path, capsys, monkeypatch) -> None:
    """A truncated file, a text file and a file the reader may not open: exit 2, the file
    and the cause named (root reads any file, so the refusal is simulated)."""
    cfg, good = tmp_path / "run.toml", tmp_path / "good.nc"
    cfg.write_text(RUN)
    assert run_cli(capsys, "run", str(cfg), "-o", str(good), "--no-check")[0] == 0
    (tmp_path / "cut.nc").write_bytes(good.read_bytes()[:5000])
    (tmp_path / "notes.nc").write_text("my notes\n")
    for name, cause in (("cut.nc", "HDF error"), ("notes.nc", "Unknown file format")):
        for command in (["info"], ["plot"], ["run", "--resume"]):
            rc, _, err = run_cli(capsys, *command, str(tmp_path / name))
            line = one_error_line(err)
            assert rc == 2 and name in line and cause in line, line
    opened = netCDF4.Dataset

    def forbidden(path, *args, **kwargs):
        if Path(path).name == "good.nc":
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(netCDF4, "Dataset", forbidden)
    for command in (["info"], ["run", "--resume"]):
        rc, _, err = run_cli(capsys, *command, str(good))
        line = one_error_line(err)
        assert rc == 2 and "good.nc" in line and "Permission denied" in line, line


def test_a_blow_up_names_its_time_without_raw_numpy_warnings(tmp_path: Path, capsys) -> None:
    cfg, out = tmp_path / "blow.toml", tmp_path / "blow.nc"
    cfg.write_text(BLOW_UP)
    rc, _, err = run_cli(capsys, "run", str(cfg), "-o", str(out), "--no-check")
    line = one_error_line(err)
    assert rc == 1 and "encountered in" not in err  # no raw NumPy floating-point warnings
    failed_at = float(re.search(r"at t=([0-9.e+-]+)", line)[1])
    from solvers.io.reading import open_run

    ds = open_run(out)
    last = float(ds["time"].values[-1])
    assert failed_at > last > 0 and f"the last at t={last:g}" in line  # not "at t=0"
    assert np.all(np.isfinite(ds["rho"].values))  # the archive keeps the finite records
    assert "lower time.dt" in line and "--set time.dt=1" in line


def test_a_von_mises_centre_of_1e300_is_refused(tmp_path: Path, capsys) -> None:
    """cos(theta - 1e300) is the same number at every theta: it was a uniform start."""
    cfg = tmp_path / "vm.toml"
    von_mises = {"kind": "von_mises", "centers": [1e300], "kappas": [5.0]}
    cfg.write_text(toml_config(RUN_DOC, initial=von_mises))
    rc, _, err = run_cli(capsys, "run", str(cfg), "-o", str(tmp_path / "vm.nc"))
    line = one_error_line(err)
    assert rc == 2 and "initial.centers[0]" in line and "not a representable angle" in line
    assert not (tmp_path / "vm.nc").exists()
    # a plain angle runs, peaked at 6 rad
    cfg.write_text(toml_config(RUN_DOC, initial={**von_mises, "centers": [6.0]}))
    assert run_cli(capsys, "run", str(cfg), "-o", str(tmp_path / "ok.nc"), "--no-check")[0] == 0


def test_a_seed_out_of_range_is_a_clear_sweep_error(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text(RUN)
    rc, _, err = run_cli(capsys, "sweep", str(cfg), "-o", str(tmp_path / "sw"),
                         "--param", "initial.seed=99999999999999999999999")
    line = one_error_line(err)
    assert rc == 2 and "initial.seed" in line and "[0, 2**63)" in line
    assert not (tmp_path / "sw").exists()


def test_no_failure_prints_the_old_failed_form() -> None:
    """Every failure line of the command line starts with ``error:``."""
    root = Path(__file__).resolve().parents[2] / "solvers" / "cli"
    for path in root.glob("*.py"):
        assert 'f"failed (' not in path.read_text() and '"failed (' not in path.read_text(), path
