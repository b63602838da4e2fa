"""Cell particles (solvers.studies.cell_particles) and the kernel-series path of the particle model.

References: the grid's own cell masses (placement), mass and first moment (merging), groups
built by hand (atoms), the pair sums (series path), mass and energy monotonicity (a run).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from solvers.core.point_merge import merge_close
from solvers.io.state import initial_density
from solvers.model.config import load_config
from solvers.model.params import ModelParams, PerceptronParams
from solvers.sphere.cells import SphereGrid
from solvers.studies.cell_particles import (
    cell_particles,
    particle_atoms,
    run_cell_particles,
)
from solvers.studies.particles import ParticleSystem, energy_violation, integrate

RNG = np.random.default_rng(21)
S2_RUN = str(Path(__file__).resolve().parents[2] / "runs" / "paper_s2_descent_relu.toml")


def _unit(n: int) -> np.ndarray:
    x = RNG.normal(size=(n, 3))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _relu_model(attention: str, beta: float = 1.0) -> ModelParams:
    rng = np.random.default_rng(4)
    return ModelParams(beta, "descent", attention, "exp_shifted",
                       PerceptronParams("relu", rng.normal(size=(3, 3)), rng.normal(size=3),
                                        0.1 * rng.normal(size=3)))


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
def test_series_path_equals_pair_sums(attention):
    """On S^2 with more particles than series terms the velocity and energy come from the kernel
    series; they equal the pair sums to round-off."""
    x, w = _unit(1500), RNG.uniform(0.5, 1.5, 1500) / 1500
    model = _relu_model(attention)
    series, direct = ParticleSystem(model), ParticleSystem(model, attention_method="direct")
    assert series.series(x.shape) and not direct.series(x.shape)
    ref = direct.velocity(x, w)
    np.testing.assert_allclose(series.velocity(x, w), ref, rtol=0, atol=1e-13 * np.abs(ref).max())
    assert series.energy(x, w) == pytest.approx(direct.energy(x, w), rel=1e-13, abs=1e-15)


def test_series_is_not_used_where_it_costs_more():
    model = _relu_model("unnormalized", beta=1.0)
    assert not ParticleSystem(model).series((1100, 3)) and ParticleSystem(model).series((1200, 3))  # 1140 terms at beta = 1
    assert not ParticleSystem(model).series((5000, 2))  # S^1: pair sums
    with pytest.raises(ValueError, match="attention_method"):
        ParticleSystem(model, attention_method="fast")


@pytest.mark.parametrize("lmax", [31, 63])
def test_cell_particles_hold_the_grid_masses(lmax):
    config = load_config(S2_RUN, [f"domain.resolution={lmax}"])
    g = SphereGrid(lmax)
    cell = (initial_density(config) * g.area).ravel()
    x, w = cell_particles(config)
    assert w.size == np.count_nonzero(cell) and w.sum() == pytest.approx(cell.sum(), rel=1e-14)
    np.testing.assert_allclose(np.sort(w), np.sort(cell[cell > 0]), rtol=0, atol=0)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-15)


def test_merge_keeps_mass_and_first_moment():
    """Two chains of close particles become two particles (transitive merging) whose
    (unnormalised) first moments are the chains'; a far particle is untouched."""
    base = _unit(3)
    tang = np.cross(base, [0.3, 0.5, 0.8])
    tang /= np.linalg.norm(tang, axis=1, keepdims=True)
    x = np.concatenate([base[0] + 4e-5 * np.arange(4)[:, None] * tang[0],  # links of 4e-5 < 1e-4
                        base[1] + 6e-5 * np.arange(3)[:, None] * tang[1], base[2:3]])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = RNG.uniform(0.1, 1.0, x.shape[0])
    w[1], w[3] = 0.5, 2.0  # the first chain holds atoms 5 and 2: the heavier (2) keeps its id
    y, m, ids = merge_close(x, w, 1e-4, np.array([-1, 5, -1, 2, -1, -1, -1, 9]))
    assert sorted(ids) == [-1, 2, 9]  # the second chain had none: it stays -1
    assert m.size == 3 and m.sum() == pytest.approx(w.sum(), rel=1e-15)
    for group in (slice(0, 4), slice(4, 7), slice(7, 8)):
        k = int(np.argmin(np.linalg.norm(y - x[group][0], axis=1)))
        moment = w[group] @ x[group]
        assert m[k] == pytest.approx(w[group].sum(), rel=1e-15)
        np.testing.assert_allclose(y[k], moment / np.linalg.norm(moment), atol=1e-15)


def test_particle_atoms_groups_by_links():
    centres = _unit(3)
    x = np.concatenate([c + 1e-3 * RNG.normal(size=(k, 3)) for c, k in zip(centres, (5, 3, 1))])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = np.concatenate([np.full(5, 0.1), np.full(3, 0.1), [0.2]])
    a = particle_atoms(x, w)
    np.testing.assert_allclose(a.mass, [0.5, 0.3, 0.2], rtol=1e-14)
    np.testing.assert_array_equal(a.count, [5, 3, 1])
    assert a.spread[2] < 1e-15 and 1e-4 < a.spread[0] < 5e-3
    np.testing.assert_allclose(a.position[2], x[-1], atol=1e-15)


def test_run_conserves_mass_and_descends():
    """lmax 31: mass conserved to round-off through the merges, energy non-increasing
    (descent), particles merging; a zero or negative step is refused."""
    config = load_config(S2_RUN, ["domain.resolution=31"])
    config = dataclasses.replace(config, model=dataclasses.replace(
        config.model, perceptron=dataclasses.replace(config.model.perceptron, activation="gelu")))
    run = run_cell_particles(config, [0.0, 25.0, 50.0, 100.0], 1.0)
    system = ParticleSystem(config.model)
    mass0 = run.w[0].sum()
    for x, w in zip(run.x, run.w):
        assert w.sum() == pytest.approx(mass0, rel=1e-14)
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)
    energy = [system.energy(x, w) for x, w in zip(run.x, run.w)]
    assert energy_violation(np.array(energy), -1.0) == 0.0 and energy[-1] < energy[0] - 1e-4
    assert run.w[-1].size < run.w[0].size
    with pytest.raises(ValueError, match="dt"):
        run_cell_particles(config, [1.0], 0.0)


def test_series_run_matches_pair_sum_run():
    """A short RK4 run by the series path equals the pair-sum run to round-off growth."""
    x, w = _unit(1400), np.full(1400, 1 / 1400)
    model = _relu_model("unnormalized")
    a = integrate(ParticleSystem(model), x, w, [5.0], dt=0.5, energy=False).x[0]
    b = integrate(ParticleSystem(model, attention_method="direct"), x, w, [5.0], dt=0.5, energy=False).x[0]
    np.testing.assert_allclose(a, b, atol=1e-12, rtol=0)
