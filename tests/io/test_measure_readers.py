"""Every reader of an archive reads the whole measure ``rho dsigma + sum_i m_i delta_{x_i}``.

A record of a measure-valued run (``[atoms] representation = "dirac"``) holds most of its mass
in the Dirac atoms (``dirac_mass``, ``dirac_position`` / ``dirac_x, y, z``), not in ``rho``.
Three readers used to take ``rho`` alone: ``solvers.resume`` of an in-memory Dataset (the
continuation lost the atoms: mass 1 -> 0.196 on the demo), ``initial.kind = "archive"`` (the
diffuse remainder rescaled to mass 1) and ``meanfield lemma51 --archive`` (the remainder
inverted as if it were the measure). Each test here fails on that code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import solvers
from conftest import config_sections, toml_config
from solvers.api import load_config
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import read_dirac, read_snapshot
from solvers.io.state import grid_arrays, initial_density, initial_state
from solvers.sphere.cells import SphereGrid
from solvers.studies.lemma51_measures import density_l2, snapshot_measure
from solvers.timestepping.loop import simulate

ROOT_DEMO = Path(__file__).resolve().parents[2] / "runs" / "demo.toml"

# Dirac atoms of masses 0.3, 0.25 and 0.2 over a uniform remainder of mass 0.25, on S^1 and S^2
S1_SOURCE = {"domain": {"manifold": "S1", "resolution": 128},
             "model": {"beta": 5.0, "direction": "descent", "kernel": "exp_shifted"},
             "initial": {"kind": "atoms", "centers": [1.0, 2.5, 4.4], "weights": [0.3, 0.25, 0.2], "mass": 1.0},
             "atoms": {"representation": "dirac"}, "time": {"t_end": 4.0}, "output": {"snapshot_interval": 2.0}}
S2_SOURCE = config_sections(S1_SOURCE, domain__manifold="S2", domain__resolution=31,
                            model={"beta": 2.0, "direction": "descent"},
                            initial__centers=[[0.0, 0.0, 1.0], [0.6, 0.0, 0.8], [0.0, -1.0, 0.0]],
                            time__t_end=1.0, output__snapshot_interval=0.5)


def _archive(source: dict, path) -> str:
    """Run ``source`` (Dirac atoms over a uniform remainder) into the NetCDF archive ``path``."""
    cfg = load_config(source)
    theta, weight, phi = grid_arrays(cfg)
    with ArchiveWriter(path, cfg, theta, weight, phi=phi) as writer:
        simulate(cfg, initial_density(cfg), trackers=[writer])
    return str(path)


@pytest.fixture(scope="module")
def s1_archive(tmp_path_factory) -> str:
    return _archive(S1_SOURCE, tmp_path_factory.mktemp("s1") / "source.nc")


@pytest.fixture(scope="module")
def s2_archive(tmp_path_factory) -> str:
    return _archive(S2_SOURCE, tmp_path_factory.mktemp("s2") / "source.nc")


def _from(source: dict, path: str, representation: str, mass: float = 1.0, time=None):
    """A config of ``source``'s domain and model that starts from ``path``'s record (nearest
    ``time``) with ``representation``."""
    initial = {"kind": "archive", "path": path, "mass": mass, **({} if time is None else {"time": time})}
    return load_config({"domain": source["domain"], "model": source["model"], "initial": initial,
                        "atoms": {"representation": representation}, "time": {"t_end": 1.0}})


def _weights(cfg) -> np.ndarray:
    """Cell weights of the run's grid (S^1: h; S^2: the fine cells' areas)."""
    if cfg.domain.manifold == "S1":
        return grid_arrays(cfg)[1]
    return SphereGrid(cfg.domain.resolution).area


def _start(which: str, s1_archive: str, s2_archive: str, representation: str):
    """``(archived atoms, archived rho, config, rho0, atoms0)`` of a run of ``representation``
    started from the last record of the S^1 or S^2 source archive."""
    path, source = (s1_archive, S1_SOURCE) if which == "s1" else (s2_archive, S2_SOURCE)
    cfg = _from(source, path, representation)
    return (read_dirac(path), read_snapshot(path)[2], cfg, *initial_state(cfg))


@pytest.mark.parametrize("which", ["s1", "s2"])
def test_dirac_run_from_an_archive_keeps_its_atoms(which, s1_archive, s2_archive):
    """Dirac target: the record's diffuse density and its atoms at their exact positions."""
    archived, rho_arch, cfg, rho, atoms = _start(which, s1_archive, s2_archive, "dirac")
    assert atoms is not None and atoms.count == 3
    np.testing.assert_array_equal(atoms.position, archived.position)
    np.testing.assert_allclose(atoms.mass, archived.mass, rtol=1e-13)
    np.testing.assert_allclose(rho, rho_arch, rtol=1e-13, atol=1e-16)
    total = float(np.sum(rho * _weights(cfg))) + float(atoms.mass.sum())
    assert abs(total - 1.0) < 1e-13
    assert float(atoms.mass.sum()) > 0.7  # the atoms hold most of the mass


@pytest.mark.parametrize("which", ["s1", "s2"])
def test_grid_run_from_an_archive_gets_the_atoms_in_their_cells(which, s1_archive, s2_archive):
    """Grid target: each atom's mass is added to the cell that holds it; the mass is exact."""
    archived, rho_arch, cfg, rho, atoms = _start(which, s1_archive, s2_archive, "grid")
    assert atoms is None
    np.testing.assert_array_equal(rho, initial_density(cfg))
    w = _weights(cfg)
    extra = ((rho - rho_arch) * w).ravel()
    assert abs(float(np.sum(rho * w)) - 1.0) < 1e-13
    # the three atoms' masses, each in one cell
    heavy = np.sort(extra[extra > 1e-9])
    np.testing.assert_allclose(heavy, np.sort(archived.mass), rtol=1e-12)
    if which == "s1":
        cells = np.rint(np.mod(archived.position, 2 * np.pi) / (2 * np.pi / rho.size)).astype(int) % rho.size
        np.testing.assert_allclose(extra[cells], archived.mass, rtol=1e-12)


def test_initial_mass_scales_the_whole_measure(s1_archive):
    """``initial.mass = 2``: density and atoms scaled by the same factor."""
    archived = read_dirac(s1_archive)
    rho1, atoms1 = initial_state(_from(S1_SOURCE, s1_archive, "dirac"))
    rho2, atoms2 = initial_state(_from(S1_SOURCE, s1_archive, "dirac", mass=2.0))
    np.testing.assert_allclose(rho2, 2 * rho1, rtol=1e-14)
    np.testing.assert_allclose(atoms2.mass, 2 * archived.mass, rtol=1e-13)


def test_archive_time_picks_the_record_of_the_atoms(s1_archive):
    """``initial.time``: the atoms of the same record as the density (t = 2, not the last)."""
    ds = solvers.open_run(s1_archive)
    i = int(np.argmin(np.abs(ds["time"].values - 2.0)))
    _, atoms = initial_state(_from(S1_SOURCE, s1_archive, "dirac", time=2.0))
    mass = ds["dirac_mass"].values[i]
    np.testing.assert_allclose(np.sort(atoms.mass), np.sort(mass[np.isfinite(mass)]), rtol=1e-13)
    pos = ds["dirac_position"].values[i]
    np.testing.assert_array_equal(np.sort(atoms.position), np.sort(pos[np.isfinite(pos)]))


def test_cli_run_from_a_dirac_archive(s1_archive, tmp_path):
    """``meanfield run`` with ``kind = "archive"``: the new run's first record is the source's
    last measure (same atoms, same total mass), not its rescaled remainder."""
    from solvers.cli.main import main

    cfg_path = tmp_path / "from.toml"
    cfg_path.write_text(toml_config(S1_SOURCE, initial={"kind": "archive", "path": s1_archive},
                                    time={"t_end": 1.0},
                                    output={"path": str(tmp_path / "out.nc"), "snapshot_interval": 0.5}))
    assert main(["-q", "run", str(cfg_path)]) == 0
    ds = solvers.open_run(tmp_path / "out.nc")
    src = solvers.open_run(s1_archive).isel(time=-1)
    first = ds.isel(time=0)
    a, b = first["dirac_mass"].values, src["dirac_mass"].values
    np.testing.assert_allclose(np.sort(a[np.isfinite(a)]), np.sort(b[np.isfinite(b)]), rtol=1e-13)
    assert abs(float(first["mass"]) - 1.0) < 1e-13


def test_resume_of_an_in_memory_dirac_run_keeps_its_atoms():
    """``solvers.resume(ds)`` continues the measure: equal to the uninterrupted run."""
    kw = dict(atoms__representation="dirac", domain__resolution=128, time__stop_when_stationary=False)
    part = solvers.run("runs/demo.toml", time__t_end=150.0, **kw)
    whole = solvers.run("runs/demo.toml", time__t_end=200.0, **kw).isel(time=-1)
    cont = solvers.resume(part, t_end=200.0).isel(time=-1)
    assert float(cont["time"]) == 200.0
    assert abs(float(cont["mass"]) - 1.0) < 1e-13
    np.testing.assert_allclose(cont["dirac_mass"].values, whole["dirac_mass"].values, atol=1e-12)
    np.testing.assert_allclose(cont["rho"].values, whole["rho"].values, atol=1e-10)


def test_lemma51_snapshot_includes_the_dirac_atoms(s1_archive):
    """``lemma51 --archive``: the measure is the cells' point masses and the Dirac atoms."""
    m = snapshot_measure(s1_archive)
    dirac = read_dirac(s1_archive)
    assert abs(m.mass - 1.0) < 1e-13
    assert m.n_cells == 128 and m.weights.size == 128 + dirac.count
    np.testing.assert_array_equal(m.angles[128:], dirac.position)
    assert density_l2(m) == float("inf")  # a measure with atoms is not L^2


def test_compare_particles_carries_the_dirac_atoms_between_its_pieces():
    """``compare-particles`` advances the PDE piece by piece: a Dirac run keeps its atoms from
    one piece to the next (it lost them: the demo's atoms read 0.17 and 0.07 at t = 100) and
    hands the distances the whole measure, the atoms as exact point masses."""
    from solvers.studies.compare_particles import distances, pde_states

    cfg = load_config(ROOT_DEMO, atoms__representation="dirac", domain__resolution=128)
    states = pde_states(cfg, [50.0, 100.0])
    whole = solvers.run(ROOT_DEMO, atoms__representation="dirac", domain__resolution=128,
                        time__t_end=100.0, time__stop_when_stationary=False,
                        output__snapshot_interval=50.0)
    h = 2 * np.pi / 128
    for rho, dirac in zip(states.rho, states.dirac):
        assert abs(float(rho.sum()) * h + float(dirac[0].sum()) - 1.0) < 1e-13
    want = np.sort(whole.isel(time=-1)["atom_mass"].values)
    got = np.sort(states.atoms[-1][0])
    np.testing.assert_allclose(got, want[np.isfinite(want)], atol=1e-12)
    # the PDE measure against particles placed on it: its Dirac atoms and one particle per cell
    rho, (m, x) = states.rho[-1], states.dirac[-1]
    cells = 2 * np.pi * np.arange(128) / 128
    pts = np.concatenate([x, cells])
    w = np.concatenate([m, rho * h])
    xy = np.stack([np.cos(pts), np.sin(pts)], axis=1)
    w1, kernel = distances(cfg, rho, xy, w, (m, x))
    assert w1 == pytest.approx(h / 4 * float(rho.sum() * h), rel=1e-6)  # cells vs their centres
    assert kernel < 2e-4  # only the cells' sinc(k / N) against their centres (measured 7.4e-5)
    assert distances(cfg, rho, xy, w)[1] > 100 * kernel  # without the atoms: most mass missing
