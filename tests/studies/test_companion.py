"""The verdict's companion run in a child process: the same atoms as the companion run in the
parent (bitwise), at any of its snapshot times; None where it has no snapshot; the child is
gone once asked; the CLI's verdict does not depend on where the companion ran."""

from dataclasses import replace

import numpy as np
import pytest

from solvers.cli.main import main
from solvers.io.state import initial_state
from solvers.model.config import load_config
from solvers.studies import companion as comp
from solvers.studies.verdict import coarse_config
from solvers.timestepping.loop import simulate

from test_verdict import DEMO_SMALL  # (tests/studies is on the path: pytest prepends it)

pytestmark = pytest.mark.skipif(comp.usable_cores() < 2, reason="the child runs on a second core")


def _in_parent(half, t):
    """The companion as the verdict runs it without a child: to t, no stationary stop."""
    half = replace(half, time=replace(half.time, t_end=t, stop_when_stationary=False))
    rho0, atoms0 = initial_state(half)
    return simulate(half, rho0, atoms0=atoms0).final.diagnostics


@pytest.mark.parametrize("t", [50.0, 60.0])
def test_child_atoms_equal_the_parents_companion_bitwise(t):
    config = load_config(DEMO_SMALL)
    child = comp.Companion.start(config)
    assert child is not None
    with child:
        got = child.atoms_at(t)
    assert not child._process.is_alive()
    want = _in_parent(coarse_config(config), t)
    assert got is not None and got.t == t
    np.testing.assert_array_equal(got.atom_mass, np.asarray(want.atom_mass, float))
    np.testing.assert_array_equal(got.atom_position, np.asarray(want.atom_position, float))
    assert np.isfinite(got.atom_mass).any()


def test_no_snapshot_there_gives_none():
    config = load_config(DEMO_SMALL)
    with comp.Companion.start(config) as child:
        assert child.atoms_at(12.5) is None  # between the snapshots (interval 5)
    assert not child._process.is_alive()


def test_a_failing_child_gives_none(monkeypatch):
    config = load_config(DEMO_SMALL)

    def broken(half):
        raise RuntimeError("boom")

    monkeypatch.setattr("solvers.io.state.initial_state", broken)  # (the forked child sees it)
    monkeypatch.setattr(comp, "_start_method", lambda: "fork")  # (a spawned one would not)
    with comp.Companion.start(config) as child:
        assert child.atoms_at(60.0) is None
    assert child._state == "error"


def test_cli_verdict_is_the_same_with_and_without_the_child(tmp_path, monkeypatch, capsys):
    """The archived resolution check of a run is the same whether its companion ran in a child
    or in the parent after the run (one core)."""
    cfg = tmp_path / "run.toml"
    cfg.write_text(DEMO_SMALL)
    found = {}
    for cores in (2, 1):
        monkeypatch.setattr(comp, "usable_cores", lambda cores=cores: cores)
        out = tmp_path / f"c{cores}.nc"
        assert main(["run", str(cfg), "-o", str(out), "--no-progress"]) in (0, 3)
        import xarray as xr

        with xr.open_dataset(out) as ds:
            found[cores] = (ds.attrs["resolution_check_atom_mass"], ds.attrs["resolution_check_atom_position"])
    assert np.isfinite(found[1][0]) and found[1] == found[2]


def test_spawned_child_gives_the_same_atoms(monkeypatch):
    """Where fork is not safe (numba's thread pool runs) the child is spawned: same atoms."""
    monkeypatch.setattr(comp, "_start_method", lambda: "spawn")
    config = load_config(DEMO_SMALL)
    with comp.Companion.start(config) as child:
        got = child.atoms_at(60.0)
    want = _in_parent(coarse_config(config), 60.0)
    assert got is not None
    np.testing.assert_array_equal(got.atom_mass, np.asarray(want.atom_mass, float))


@pytest.mark.slow
def test_child_ends_when_its_parent_is_killed(tmp_path):
    """``kill -9`` of ``meanfield run``: its companion child stops within seconds, no orphan runs on."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cfg = tmp_path / "long.toml"
    cfg.write_text(DEMO_SMALL.replace("t_end = 60.0", "t_end = 1e5").replace(
        "stop_when_stationary = true", "stop_when_stationary = false").replace(
        "resolution = 256", "resolution = 2048"))
    proc = subprocess.Popen([sys.executable, "-m", "solvers", "run", str(cfg), "-o",
                             str(tmp_path / "r.nc"), "--no-progress", "--force"])
    children: list[int] = []
    for _ in range(300):  # the child starts before the first step
        time.sleep(0.05)
        found = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
        children = [int(p) for p in found.stdout.split()]
        if children:
            break
    assert children, "no companion child started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for _ in range(200):
        time.sleep(0.05)
        try:
            os.kill(children[0], 0)
        except ProcessLookupError:
            return
        if open(f"/proc/{children[0]}/stat").read().split()[2] == "Z":  # (reaped by init later)
            return
    pytest.fail("the companion child outlived its killed parent by 10 s")
