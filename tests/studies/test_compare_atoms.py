"""Atoms in the PDE/particle comparison: particle grouping by the PDE's rule (hand-computable
configurations, and particles placed on cells equal the grid detector), the post-concentration
default times, and the atom report of :func:`compare`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import PAPER_A, PAPER_OMEGA, make_config, perceptron

from solvers.circle.atoms import detect_atoms
from solvers.model.params import AtomParams, InitialParams
from solvers.studies.compare_particles import DEFAULT_TIMES, compare, default_times
from solvers.studies.compare_report import format_table
from solvers.studies.particles import group_particles

TWO_PI = 2 * np.pi


def test_grouping_of_a_hand_computable_configuration():
    n_cells, h = 64, TWO_PI / 64
    a = 1.0 + np.linspace(-0.01, 0.01, 40)  # 40 x 0.01 in cell round(1 / h) = 10
    b = 40.5 * h + np.linspace(-0.01, 0.01, 30)  # 30 x 0.01 split over cells 40 and 41
    background = (np.arange(30) + 0.5) * TWO_PI / 30 + 0.05  # 0.01 per cell: below 5 / 64
    near = np.abs(np.angle(np.exp(1j * (background[:, None] - [10 * h, 40.5 * h]))))
    background = background[near.min(axis=1) > 0.3]  # none joins an atom's cells
    theta = np.concatenate([a, b, background])
    w = np.full(theta.size, 0.01)
    masses, positions = group_particles(theta, w, 5.0, AtomParams(), n_cells)
    assert masses == pytest.approx([0.40, 0.30], abs=1e-12)
    assert positions == pytest.approx([10 * h, 40.5 * h], abs=1e-12)  # centres of mass of cells


def test_particles_on_the_cells_give_the_grid_detector_atoms():
    n_cells = 128
    theta = TWO_PI * np.arange(n_cells) / n_cells
    rho = 0.02 + np.exp(40 * (np.cos(theta - 1.0) - 1)) + 0.6 * np.exp(60 * (np.cos(theta - 4.0) - 1))
    cell_mass = rho / rho.sum()
    grid = detect_atoms(theta, cell_mass, 10.0, AtomParams())
    masses, positions = group_particles(theta, cell_mass, 10.0, AtomParams(), n_cells)
    order = np.argsort(-grid.mass)
    assert grid.count == 2 and np.array_equal(masses, grid.mass[order])
    assert np.array_equal(positions, grid.position[order])


def test_default_times_are_after_concentration():
    config = make_config(64, beta=5.0, t_end=500.0)
    assert default_times(config) == list(DEFAULT_TIMES) == [50.0, 100.0, 200.0]
    assert default_times(dataclasses.replace(config, time=dataclasses.replace(
        config.time, t_end=120.0))) == [50.0, 100.0]
    assert default_times(dataclasses.replace(config, time=dataclasses.replace(
        config.time, t_end=7.0))) == [7.0]


def test_compare_reports_atoms_of_both_and_their_rate():
    percep = perceptron("relu", PAPER_A, PAPER_OMEGA)
    config = make_config(256, beta=5.0, direction="descent", kernel="exp_shifted",
                         percep=percep, t_end=30.0, cfl=0.4)
    config = dataclasses.replace(config, initial=InitialParams(kind="uniform", modes=((1, 0.05),)))
    ds = compare(config, [100, 200], None)
    from solvers.io.cf import check

    assert check(ds) == [] and ds.attrs["Conventions"] == "CF-1.8"  # the file it writes
    assert ds["time"].values.tolist() == [30.0]
    pde = int(ds["pde_n_atoms"].values[0])
    assert pde >= 1 and ds["particle_n_atoms"].values.tolist() == [[pde], [pde]]
    pde_mass = ds["pde_atom_mass"].values[0]
    assert 0.5 < np.nansum(pde_mass) <= 1.0
    for i in range(2):
        part = ds["particle_atom_mass"].values[i, 0]
        assert np.nanmax(np.abs(part[:pde] - pde_mass[:pde])) < 0.05
        assert ds["atom_mass_error"].values[i, 0] < 0.05
    assert np.isfinite(ds["atom_mass_rate"].values[0]) or ds["atom_mass_error"].values.min() == 0
    text = format_table(ds)
    assert "atoms (count: masses" in text and "rate in n" in text
