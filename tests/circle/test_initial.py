"""Initial densities: exact cell averages, exact mass, conservative resampling, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import integrate

import solvers.io.archive
import solvers.io.reading
from solvers.circle.initial import (
    cell_centers,
    cell_width,
    resample_conservative,
    uniform_density,
    von_mises_density,
    von_mises_pdf,
)
from solvers.io.state import initial_density
from solvers.model.config import ConfigError, load_config


def mass(rho: np.ndarray) -> float:
    return float(np.sum(rho) * cell_width(rho.size))


def cell_average(f, n: int, i: int) -> float:
    h, theta = cell_width(n), cell_centers(n)[i]
    value, _ = integrate.quad(f, theta - h / 2, theta + h / 2, epsabs=1e-300, epsrel=1e-13,
                              limit=200)
    return value / h


VON_MISES = '[initial]\nkind = "von_mises"\ncenters = [1.0, 4.0]\nkappas = [{k}, 2.0]\n' \
            'weights = [0.7, 0.3]\nmass = {m}\n[domain]\nresolution = {n}\n'


@pytest.mark.parametrize("text", [
    "[domain]\nresolution = 64\n",
    "[domain]\nresolution = 100\n[initial]\nmodes = [[1, 0.3], [5, 0.2], [40, 0.1]]\nmass = 2.5\n",
    VON_MISES.format(k=0.5, m=1, n=64),
    VON_MISES.format(k=300.0, m=3.0, n=128),
    VON_MISES.format(k=1e4, m=0.1, n=512),
])
def test_mass_is_exact(text: str) -> None:
    config = load_config(text)
    rho = initial_density(config)
    assert rho.shape == (config.domain.resolution,)
    assert abs(mass(rho) - config.initial.mass) <= 1e-14 * config.initial.mass
    assert rho.min() >= 0


def test_uniform_modes_are_cell_averages() -> None:
    n, modes = 48, ((1, 0.3), (7, -0.2), (20, 0.1))
    rho = uniform_density(n, modes)

    def f(t: float) -> float:
        return (1 + sum(a * np.cos(k * t) for k, a in modes)) / (2 * np.pi)

    for i in (0, 5, 17, 47):
        assert rho[i] == pytest.approx(cell_average(f, n, i), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("n, kappa", [(64, 0.5), (64, 5.0), (64, 200.0), (16, 50.0)])
def test_von_mises_cell_averages_against_quad(n: int, kappa: float) -> None:
    rho = von_mises_density(n, (1.0, 4.0), (kappa, 2.0), (0.7, 0.3))

    def f(t: float) -> float:
        return 0.7 * von_mises_pdf(t, 1.0, kappa) + 0.3 * von_mises_pdf(t, 4.0, 2.0)

    for i in sorted({0, 3, n // 6, n // 6 + 1, n // 2, n - 1}):
        exact = cell_average(f, n, i)
        assert abs(rho[i] - exact) <= 1e-12 * exact


def test_von_mises_pdf_is_normalised_for_large_kappa() -> None:
    for kappa in (0.0, 1.0, 1e3, 1e6):
        w = min(np.pi, 40.0 / np.sqrt(kappa + 1.0))  # the rest is below exp(-800)
        value, _ = integrate.quad(von_mises_pdf, -w, w, args=(0.0, kappa), points=[0.0], limit=200)
        assert value == pytest.approx(1.0, rel=1e-10)


@pytest.mark.parametrize("n_old, n_new", [(64, 64), (64, 128), (64, 100), (100, 37), (512, 16)])
def test_resampling_conserves_mass_and_positivity(n_old: int, n_new: int) -> None:
    rng = np.random.default_rng(n_old * 1000 + n_new)
    rho = rng.random(n_old) ** 8  # rough, with near-empty cells
    rho[rng.integers(n_old)] = 0.0
    rho[5] = 1e3  # an atom
    out = resample_conservative(rho, n_new)
    assert out.shape == (n_new,)
    assert abs(mass(out) - mass(rho)) <= 1e-13 * mass(rho)
    assert out.min() >= 0.0
    if n_new == n_old:
        np.testing.assert_allclose(out, rho, rtol=1e-12, atol=1e-12)


def test_resampling_refinement_by_two() -> None:
    # new cell 2i is the middle half of old cell i; cell 2i+1 straddles old cells i and i+1
    rho = np.arange(1.0, 9.0)
    out = resample_conservative(rho, 16)
    np.testing.assert_allclose(out[::2], rho, rtol=1e-12)
    np.testing.assert_allclose(out[1::2], 0.5 * (rho + np.roll(rho, -1)), rtol=1e-12)
    assert abs(mass(out) - mass(rho)) < 1e-13


def fake_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rho: np.ndarray) -> Path:
    path = tmp_path / "old.nc"
    path.write_bytes(b"")
    calls = []

    def read_snapshot(p: str, time: float | None = None):
        calls.append((p, time))
        return 7.0, cell_centers(rho.size), rho

    monkeypatch.setattr(solvers.io.reading, "read_snapshot", read_snapshot)
    monkeypatch.setattr(solvers.io.reading, "read_dirac", lambda p, time=None: None)  # a grid run
    return path


def test_archive_kind_resamples_the_snapshot(monkeypatch, tmp_path) -> None:
    old = von_mises_density(80, (2.0,), (30.0,), (1.0,))
    path = fake_archive(monkeypatch, tmp_path, old)
    config = load_config(f'[initial]\nkind = "archive"\npath = "{path}"\ntime = 7.0\n'
                         "[domain]\nresolution = 128\n")
    rho = initial_density(config)
    assert rho.shape == (128,) and rho.min() >= 0
    assert abs(mass(rho) - 1.0) <= 1e-14
    assert abs(cell_centers(128)[np.argmax(rho)] - 2.0) < 2 * cell_width(80)


def test_archive_kind_with_a_real_archive(tmp_path) -> None:
    from solvers.core.snapshot import Diagnostics, Snapshot

    config = load_config("[domain]\nresolution = 32\n")
    rho = uniform_density(32, ((2, 0.5),))
    diag = Diagnostics(1.0, rho.min(), rho.max(), 0.0, 0.0, 0.0, 0.0, 0.0, 0,
                       np.zeros(0), np.zeros(0))
    path = tmp_path / "run.nc"
    with solvers.io.archive.ArchiveWriter(path, config, cell_centers(32),
                                       np.full(32, cell_width(32))) as writer:
        writer.write_snapshot(Snapshot(0.0, 0, 0.1, rho, diag))
        writer.write_snapshot(Snapshot(1.0, 5, 0.1, 2 * rho, diag))
    new = load_config(f'[initial]\nkind = "archive"\npath = "{path}"\ntime = 0.2\nmass = 3.0\n'
                      "[domain]\nresolution = 32\n")
    np.testing.assert_allclose(initial_density(new), 3.0 * rho / mass(rho), rtol=1e-12)


@pytest.mark.parametrize("bad, message", [
    (np.zeros(40), "no mass"), (np.full(40, np.nan), "not finite"),
    (np.where(np.arange(40) == 3, -1.0, 1.0), "negative"),
])
def test_archive_kind_errors(monkeypatch, tmp_path, bad, message) -> None:
    path = fake_archive(monkeypatch, tmp_path, bad)
    config = load_config(f'[initial]\nkind = "archive"\npath = "{path}"\n'
                         "[domain]\nresolution = 40\n")
    with pytest.raises(ConfigError, match=rf"^initial\.path: .*{message}"):
        initial_density(config)


def test_archive_missing(tmp_path) -> None:
    config = load_config(f'[initial]\nkind = "archive"\npath = "{tmp_path / "nope.nc"}"\n')
    with pytest.raises(ConfigError, match=r"^initial\.path: archive not found"):
        initial_density(config)


def test_negative_uniform_density_names_the_modes() -> None:
    config = load_config("[initial]\nmodes = [[2, 0.7], [3, 0.6]]\n[domain]\nresolution = 64\n")
    with pytest.raises(ConfigError, match=r"^initial\.modes: .*negative.*reduce the amplitudes"):
        initial_density(config)


def test_s2_gives_cell_averages_on_the_sphere_grid() -> None:
    # S^2 in detail: tests/test_sphere_io.py
    config = load_config('[domain]\nmanifold = "S2"\nresolution = 32\n')
    rho = initial_density(config)
    assert rho.shape == (34, 72)
    np.testing.assert_allclose(rho, 1 / (4 * np.pi), rtol=1e-14)
