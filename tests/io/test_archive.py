"""Tests of solvers.io.archive: round trip, readers, append/resume, overwrite, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

from solvers.core.snapshot import Diagnostics, Snapshot
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run, read_config_text, read_last_state, read_snapshot
from solvers.model.params import ModelParams, PerceptronParams, RunConfig, TimeParams

REPO = Path(__file__).resolve().parents[2]
N = 32
THETA = 2 * np.pi * np.arange(N) / N
WEIGHT = np.full(N, 2 * np.pi / N)
TOML = '[model]\nbeta = 4.0\ndirection = "ascent"\n[time]\nscheme = "fv"\n'  # a grid archive


def make_config(**time_kw: object) -> RunConfig:
    """A config with non-default values of every attribute kind (str, float, None, list, bool)."""
    perceptron = PerceptronParams("relu", np.array([[1.0, 0.0]]), np.array([0.5]), np.zeros(1))
    model = ModelParams(beta=4.0, direction="ascent", perceptron=perceptron)
    time_kw.setdefault("scheme", "fv")  # the grid archive these tests write (the default is "auto")
    return RunConfig(model=model, time=TimeParams(stop_when_stationary=True, **time_kw), text=TOML)


def make_snapshot(t: float, n_atoms: int = 0) -> Snapshot:
    """A snapshot with known values: rho with mass 1 + t, ``n_atoms`` atoms of mass 0.1 (k+1)."""
    rho = (1.0 + t) * (1.0 + 0.5 * np.cos(2 * THETA + t)) / (2 * np.pi)
    diag = Diagnostics(
        mass=1.0 + t,
        min_rho=rho.min(),
        max_rho=rho.max(),
        energy=-t,
        dissipation=2.0 * t,
        transport_rate=0.1,
        max_support_velocity=0.2,
        tail_energy=1e-9,
        n_atoms=n_atoms,
        atom_mass=0.1 * (np.arange(n_atoms) + 1),
        atom_position=np.linspace(0.5, 5.0, n_atoms),
    )
    return Snapshot(t=t, step=int(round(100 * t)), dt=0.01 * (1 + t), rho=rho, diagnostics=diag)


def write_run(
    path: Path, atoms: tuple[int, ...] = (0, 3, 1), t0: float = 0.0, **kw: object
) -> None:
    with ArchiveWriter(path, make_config(), THETA, WEIGHT, **kw) as writer:
        for i, n in enumerate(atoms):
            assert writer.write_snapshot(make_snapshot(t0 + 0.5 * i, n))


def test_round_trip_values(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "run.nc"
    write_run(path)
    with xr.open_dataset(path) as ds:  # on disk the record dimension is "t" (CF: no "time")
        assert ds.sizes["t"] == 3 and ds.sizes["theta"] == N and ds.sizes["atom"] == 3
        assert "time" not in ds.variables and "time" not in ds.dims
        np.testing.assert_allclose(ds["t"], [0.0, 0.5, 1.0])
        np.testing.assert_allclose(ds["theta"], THETA)
        for i, t in enumerate(ds["t"].values):
            snap = make_snapshot(t)
            np.testing.assert_array_equal(ds["rho"].values[i], snap.rho)
            assert ds["step"].values[i] == snap.step and ds["dt"].values[i] == snap.dt
        assert ds["step"].dtype == np.int32 and ds["n_atoms"].dtype == np.int32
        np.testing.assert_allclose((ds["rho"] * ds["cell_weight"]).sum("theta"), ds["mass"])
        np.testing.assert_allclose(ds["energy"], [0.0, -0.5, -1.0])
        np.testing.assert_array_equal(ds["n_atoms"], [0, 3, 1])
        np.testing.assert_allclose(ds["max_atom_mass"], [0.0, 0.3, 0.1])
        np.testing.assert_allclose(ds["theorem_3_5_bound"], 0.5742, atol=1e-4)


def test_atoms_are_nan_padded(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    write_run(path)
    with xr.open_dataset(path) as ds:
        mass, pos = ds["atom_mass"].values, ds["atom_position"].values
    assert np.isnan(mass[0]).all() and np.isnan(pos[0]).all()
    np.testing.assert_allclose(mass[1], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(pos[1], [0.5, 2.75, 5.0])
    np.testing.assert_allclose(mass[2, :1], [0.1])
    assert np.isnan(mass[2, 1:]).all() and np.isnan(pos[2, 1:]).all()


def test_spectral_coefficients(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    config = replace(make_config(), output=replace(make_config().output, spectral=True))
    with ArchiveWriter(path, config, THETA, WEIGHT) as writer:  # output.spectral: stored
        writer.write_snapshot(make_snapshot(0.0, 0))
    with xr.open_dataset(path) as ds:
        c = ds["rho_hat_real"].values[0] + 1j * ds["rho_hat_imag"].values[0]
        rho = ds["rho"].values[0]
    assert c.shape == (N // 2 + 1,)
    np.testing.assert_allclose(c, np.fft.rfft(rho) / N)
    np.testing.assert_allclose(c[0], 1 / (2 * np.pi))  # mean of rho = mass / (2 pi)
    np.testing.assert_allclose(c[2], 0.25 / (2 * np.pi))  # 0.5 cos(2 theta) = (e^{2i} + e^{-2i})/4
    np.testing.assert_allclose(np.fft.irfft(c * N, n=N), rho, atol=1e-14)


def test_attributes(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    write_run(path)
    with xr.open_dataset(path) as ds:
        attrs = ds.attrs
        for name in ds.variables:  # cell bounds inherit them (CF 7.1)
            if not str(name).endswith("_bounds"):
                assert "units" in ds[name].attrs and "long_name" in ds[name].attrs, name
    assert attrs["model__beta"] == 4.0 and attrs["model__direction"] == "ascent"
    assert attrs["model__perceptron__activation"] == "relu"
    assert json.loads(attrs["model__perceptron__a"]) == [[1.0, 0.0]]
    assert attrs["time__stop_when_stationary"] == 1 and attrs["output__progress"] == 1
    assert attrs["time__dt"] == "null" and json.loads(attrs["initial__modes"]) == []
    assert attrs["config_text"] == TOML and attrs["scheme"] == "fv" and attrs["manifold"] == "S1"
    assert attrs["kernel"].startswith("exp:")
    for key in ("version", "created", "history", "python", "numpy"):
        assert isinstance(attrs[key], str) and attrs[key], key
    assert "text" not in attrs


def test_readers(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    write_run(path)
    t, step, dt, rho = read_last_state(path)
    last = make_snapshot(1.0)
    assert (t, step, dt) == (1.0, last.step, last.dt)
    np.testing.assert_array_equal(rho, last.rho)
    t, theta, rho = read_snapshot(path, 0.6)
    assert t == 0.5
    np.testing.assert_array_equal(theta, THETA)
    np.testing.assert_array_equal(rho, make_snapshot(0.5).rho)
    assert read_snapshot(path)[0] == 1.0
    assert read_config_text(path) == TOML
    ds = open_run(path)  # the record dimension "t" read as "time"
    assert ds.sizes["time"] == 3 and ds.attrs["model__beta"] == 4.0 and "t" not in ds.variables
    np.testing.assert_array_equal(ds["rho"].sel(time=0.5).values, make_snapshot(0.5).rho)


def test_reader_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.nc"):
        read_last_state(tmp_path / "missing.nc")
    text = tmp_path / "notes.nc"
    text.write_text("not a netcdf file")
    with pytest.raises(ValueError, match="notes.nc"):
        open_run(text)
    other = tmp_path / "other.nc"
    with netCDF4.Dataset(other, "w") as nc:
        nc.createDimension("x", 2)
        nc.createVariable("x", "f8", ("x",))
    with pytest.raises(ValueError, match="not a meanfield-spectral archive"):
        read_snapshot(other)
    empty = tmp_path / "empty.nc"
    ArchiveWriter(empty, make_config(), THETA, WEIGHT).close()
    assert open_run(empty).sizes["time"] == 0
    with pytest.raises(ValueError, match="no snapshots"):
        read_last_state(empty)


def test_append_keeps_old_records(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    write_run(path)
    config = make_config(t_end=20.0)
    with ArchiveWriter(path, config, THETA, WEIGHT, append=True) as writer:
        assert writer.n_records == 3
        assert not writer.write_snapshot(make_snapshot(1.0))  # repeated last time: skipped
        writer.write_snapshot(make_snapshot(1.5, n_atoms=5))
        with pytest.raises(ValueError, match="precedes"):
            writer.write_snapshot(make_snapshot(0.2))
    ds = open_run(path)
    np.testing.assert_allclose(ds["time"], [0.0, 0.5, 1.0, 1.5])
    # columns are identities: the resumed run continues atom 0 (alive at t = 1, position 0.5);
    # atoms 1 and 2 ended at t = 1, so the four other atoms at t = 1.5 are new identities 3..6
    assert ds.sizes["atom"] == 7 and np.isnan(ds["atom_mass"].values[1, 3:]).all()
    np.testing.assert_allclose(ds["atom_mass"].values[3, [0, 3, 4, 5, 6]], [0.1, 0.2, 0.3, 0.4, 0.5])
    np.testing.assert_allclose(ds["atom_birth_time"], [0.5, 0.5, 0.5, 1.5, 1.5, 1.5, 1.5])
    np.testing.assert_allclose(ds["atom_end_time"].values[:3], [np.nan, 1.0, 1.0])
    np.testing.assert_array_equal(ds["rho"].values[3], make_snapshot(1.5).rho)
    history = ds.attrs["history"].splitlines()
    assert len(history) == 2 and "resumed" in history[1] and "time__t_end" in history[1]
    assert ds.attrs["config_text"] == TOML


def test_append_checks(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    with pytest.raises(FileNotFoundError):
        ArchiveWriter(path, make_config(), THETA, WEIGHT, append=True)
    write_run(path)
    theta = 2 * np.pi * np.arange(2 * N) / (2 * N)
    with pytest.raises(ValueError, match="theta"):
        ArchiveWriter(path, make_config(), theta, np.full(2 * N, np.pi / N), append=True)


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    write_run(path)
    with pytest.raises(FileExistsError, match="--overwrite"):
        ArchiveWriter(path, make_config(), THETA, WEIGHT)
    assert open_run(path).sizes["time"] == 3  # untouched
    write_run(path, atoms=(2,), overwrite=True)
    assert open_run(path).sizes["time"] == 1


def test_interrupt_leaves_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    with pytest.raises(KeyboardInterrupt):
        with ArchiveWriter(path, make_config(), THETA, WEIGHT) as writer:
            writer(make_snapshot(0.0, 2))
            raise KeyboardInterrupt
    assert open_run(path).sizes["time"] == 1


WRITER_SCRIPT = """
import sys, time
sys.path.insert(0, {repo!r})
sys.path.insert(0, {tests!r})
from test_archive import THETA, WEIGHT, make_config, make_snapshot
from solvers.io.archive import ArchiveWriter
writer = ArchiveWriter({path!r}, make_config(), THETA, WEIGHT)
for i in range({k}):
    writer.write_snapshot(make_snapshot(0.5 * i, i % 4))
print("WROTE", flush=True)
time.sleep(60)
"""


def test_kill_9_leaves_every_synced_snapshot(tmp_path: Path) -> None:
    path, k = tmp_path / "killed.nc", 7
    script = WRITER_SCRIPT.format(repo=str(REPO), tests=str(REPO / "tests" / "io"), path=str(path), k=k)
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "WROTE"
        assert open_run(path).sizes["time"] == k  # readable while the writer holds it
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    with xr.open_dataset(path) as ds:
        assert ds.sizes["t"] >= k
        np.testing.assert_array_equal(ds["rho"].values[k - 1], make_snapshot(0.5 * (k - 1)).rho)
        np.testing.assert_array_equal(ds["n_atoms"], np.arange(k) % 4)
    write_run(path, atoms=(1,), t0=10.0, append=True)  # resume after the crash
    assert read_last_state(path)[0] == 10.0 and open_run(path).sizes["time"] == k + 1


def test_partial_record_is_ignored_and_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    write_run(path)
    with netCDF4.Dataset(path, "a") as nc:  # a record killed before its time was written
        nc["rho"][3, :] = np.ones(N)
    assert open_run(path).sizes["time"] == 3 and read_last_state(path)[0] == 1.0
    write_run(path, atoms=(0,), t0=2.0, append=True)
    ds = open_run(path)
    np.testing.assert_allclose(ds["time"], [0.0, 0.5, 1.0, 2.0])
    np.testing.assert_array_equal(ds["rho"].values[3], make_snapshot(2.0).rho)


def test_writer_rejects_wrong_shape(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path / "run.nc", make_config(), THETA, WEIGHT) as writer:
        snap = make_snapshot(0.0)
        with pytest.raises(ValueError, match="shape"):
            writer.write_snapshot(replace(snap, rho=snap.rho[:-1]))


def test_resume_overwrites_a_trailing_partial_record(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    write_run(path)
    with netCDF4.Dataset(path, "a") as nc:  # a writer killed inside record 4: no time yet
        nc["rho"][3, :] = make_snapshot(9.0).rho
    assert np.isnan(xr.load_dataset(path)["t"].values[-1])
    with ArchiveWriter(path, make_config(t_end=20.0), THETA, WEIGHT, append=True) as writer:
        assert writer.n_records == 3
        writer.write_snapshot(make_snapshot(1.5))
    times = xr.load_dataset(path)["t"].values  # a plain reader: no partial record left
    np.testing.assert_allclose(times, [0.0, 0.5, 1.0, 1.5])


def test_second_writer_of_a_path_is_refused(tmp_path: Path) -> None:
    from solvers.io.lock import ArchiveBusyError, lock_path

    path = tmp_path / "run.nc"
    with ArchiveWriter(path, make_config(), THETA, WEIGHT) as first:
        first.write_snapshot(make_snapshot(0.0))
        assert lock_path(path).read_text().strip() == str(os.getpid())
        for mode in ({"overwrite": True}, {"append": True}):
            with pytest.raises(ArchiveBusyError, match="being written by another process"):
                ArchiveWriter(path, make_config(), THETA, WEIGHT, **mode)
    assert not lock_path(path).exists()
    assert open_run(path).sizes["time"] == 1
