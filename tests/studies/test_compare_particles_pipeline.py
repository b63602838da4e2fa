"""``compare-particles`` runs the PDE as ``meanfield run`` does (its atoms are the run's at the
same times), and on S^2 says that the particles formed no atoms."""

from pathlib import Path

import numpy as np

import solvers
from solvers.model.config import load_config
from solvers.studies.compare_particles import compare, pde_states
from solvers.studies.compare_report import format_table

DEMO = Path(__file__).resolve().parents[2] / "runs" / "demo.toml"


def test_the_pde_atoms_are_those_of_meanfield_run_at_the_same_times():
    sets = ["domain.resolution=128", "time.t_end=100"]
    states = pde_states(load_config(DEMO, sets), [50.0, 100.0])
    assert states.note == ""
    run = solvers.run(DEMO, domain__resolution=128, time__t_end=100.0,
                      time__stop_when_stationary=False)
    for j, t in enumerate((50.0, 100.0)):
        want = run.sel(time=t)["atom_mass"].values
        want = np.sort(want[np.isfinite(want)])[::-1]
        np.testing.assert_array_equal(states.atoms[j][0], want)  # bitwise: one pipeline


def test_times_off_the_snapshot_grid_are_said():
    states = pde_states(load_config(DEMO, ["domain.resolution=128", "time.t_end=20"]), [5.0, 12.5])
    assert "not all multiples of output.snapshot_interval = 10" in states.note


def test_on_the_sphere_the_report_says_the_particles_formed_no_atoms():
    cfg = load_config('[domain]\nmanifold = "S2"\nresolution = 31\n[model]\nbeta = 1.0\n'
                      'direction = "ascent"\n[initial]\nkind = "uniform"\n'
                      'modes = [[1, 0, 0.05]]\n[time]\nt_end = 0.5\n'
                      '[output]\nsnapshot_interval = 0.5\n')
    text = format_table(compare(cfg, [64, 128], [0.5]))
    assert "particles: no atoms formed" in text and "on S^1 only" in text
    assert "t=0.5  PDE 0 (no atoms)" in text
