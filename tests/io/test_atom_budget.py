"""The per-atom mass budget of the archive (``atom_mass_gained``/``atom_mass_lost``).

An atom's mass changes by transport through the cells it keeps, bounded by the scheme's
transport rate, plus the recorded transfers of whole cells (merges, captures, basin splits).
Checked on the paper's S^1 descent (runs/demo.toml, N = 256), where two atoms lose part of their
basin to a new sink (the future fifth atom) between t = 170 and t = 200.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers.core.atom_tracks import cell_identities, mass_budget

DEMO = Path(__file__).resolve().parents[2] / "runs" / "demo.toml"


def test_mass_budget_against_cell_by_cell_sums():
    rng = np.random.default_rng(3)
    prev_ids, ids = rng.integers(-1, 4, 200), rng.integers(-1, 5, 200)
    prev_mass, mass = rng.random(200), rng.random(200)
    gained, lost = mass_budget(prev_ids, prev_mass, ids, mass, 5)
    for j in range(5):
        assert gained[j] == pytest.approx(sum(mass[c] for c in range(200)
                                              if ids[c] == j and prev_ids[c] != j), abs=1e-13)
        assert lost[j] == pytest.approx(sum(prev_mass[c] for c in range(200)
                                            if prev_ids[c] == j and ids[c] != j), abs=1e-13)
        before = prev_mass[prev_ids == j].sum()
        now = mass[ids == j].sum()
        kept = (prev_ids == j) & (ids == j)
        assert now - before == pytest.approx(gained[j] - lost[j]
                                             + (mass - prev_mass)[kept].sum(), abs=1e-13)


def test_cell_identities_maps_labels():
    np.testing.assert_array_equal(cell_identities(np.array([-1, 0, 1, 1, -1]), np.array([7, 2])),
                                  [-1, 7, 2, 2, -1])
    assert cell_identities(None, np.array([1])) is None


# the fv grid (the demo's scheme when these tests were written): the budget follows grid cells
# by their atom labels; the default method's Dirac atoms have no cell labels (budget NaN)
FV = {"time__scheme": "fv"}


def _demo(t_end: float, **kw):
    return solvers.run(DEMO, domain__resolution=256, time__t_end=t_end,
                       time__stop_when_stationary=False, output__snapshot_interval=1.0, **FV, **kw)


@pytest.fixture(scope="module")
def demo():
    return _demo(260.0)


def test_mass_jumps_only_by_recorded_transfers(demo):
    m, t = demo.atom_mass.values, demo.time.values
    gained, lost = demo.atom_mass_gained.values, demo.atom_mass_lost.values
    rate = demo.transport_rate.values
    splits = 0
    for i in range(1, t.size):
        alive = np.isfinite(m[i]) & np.isfinite(m[i - 1])
        dm = m[i, alive] - m[i - 1, alive]
        transport = dm - gained[i, alive] + lost[i, alive]
        # what is not transferred moved through the atom's own cells: at most ||d rho/dt||_1 dt
        assert np.all(np.abs(transport) <= (t[i] - t[i - 1]) * max(rate[i], rate[i - 1]))
        big = lost[i, alive] > 0.01
        splits += int(big.sum())
        # a basin split: the drop is the transfer (transport through kept cells is small)
        assert np.all(np.abs(transport[big]) < 1e-3 * np.abs(dm[big]) + 1e-5)
    assert splits == 2  # the two basins the future fifth atom takes its mass from
    born = np.isfinite(demo.atom_birth_time.values)
    for j in np.flatnonzero(born):  # at birth an atom gains all of its mass
        i = int(np.flatnonzero(t == demo.atom_birth_time.values[j])[0])
        if i > 0:
            assert gained[i, j] == pytest.approx(m[i, j], abs=1e-15)


def test_budget_continues_across_a_resume(tmp_path, demo):
    path = tmp_path / "demo.nc"
    solvers.run(DEMO, path=path, domain__resolution=256, time__t_end=175.0,
                time__stop_when_stationary=False, output__snapshot_interval=1.0, **FV)
    whole = solvers.resume(path, t_end=260.0)
    np.testing.assert_allclose(whole.atom_mass_lost.values, demo.atom_mass_lost.values,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(whole.atom_mass_gained.values, demo.atom_mass_gained.values,
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(whole.atom_cell.values, demo.atom_cell.values)


def test_transfers_list_births_and_the_basin_splits(demo):
    from solvers.io.atom_history import history_lines, transfers

    events = transfers(demo, threshold=0.01)
    losses = [e for e in events if e["kind"] == "loss"]
    # the two splits by the sinks born at 25 and 325 degrees: t = 159 and 179 (kink faces;
    # 170-200 with uniform faces, where the sink at 325 degrees was born late)
    assert len(losses) == 2 and all(150 <= e["time"] <= 200 for e in losses)
    for e in losses:  # the entry is the archive's budget, signed
        i = int(np.flatnonzero(demo.time.values == e["time"])[0])
        assert e["mass"] == -demo.atom_mass_lost.values[i, e["atom"]]
    births = [e for e in events if e["kind"] == "birth"]
    assert {e["atom"] for e in births} == set(range(demo.sizes["atom"]))
    text = "\n".join(history_lines(demo, threshold=0.01))
    assert "atom identities:" in text and text.count(" loss ") == 2


def test_the_density_panel_marks_the_basin_splits(demo):
    import matplotlib

    matplotlib.use("Agg")
    from solvers.plots.circle import run_figure

    fig, axes = run_figure(demo)
    marks = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "basin-splits"]
    assert len(marks) == 1
    from solvers.io.atom_history import transfers

    losses = [e for e in transfers(demo) if e["kind"] == "loss"]
    np.testing.assert_allclose(marks[0].get_ydata(), [e["time"] for e in losses])


def test_budget_on_s2_and_the_marks_of_its_figure():
    """S^2 (paper_s2_descent_relu at lmax 31): the same budget identity, bounded by the
    transport rate; a basin split of the run is marked on the mass panel."""
    import matplotlib

    matplotlib.use("Agg")
    from solvers.io.atom_history import transfers
    from solvers.plots.sphere import sphere_run_figure

    ds = solvers.run(DEMO.parent / "paper_s2_descent_relu.toml", domain__resolution=31,
                     time__t_end=40.0, time__stop_when_stationary=False,
                     output__snapshot_interval=5.0)
    m, t, rate = ds.atom_mass.values, ds.time.values, ds.transport_rate.values
    gained, lost = ds.atom_mass_gained.values, ds.atom_mass_lost.values
    for i in range(1, t.size):
        alive = np.isfinite(m[i]) & np.isfinite(m[i - 1])
        transport = m[i, alive] - m[i - 1, alive] - gained[i, alive] + lost[i, alive]
        assert np.all(np.abs(transport) <= (t[i] - t[i - 1]) * max(rate[i], rate[i - 1]))
    losses = [e for e in transfers(ds) if e["kind"] == "loss"]
    assert losses and ds.atom_cell.dims == ("theta", "phi")
    fig, _ = sphere_run_figure(ds)
    (marks,) = [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_gid() == "basin-splits"]
    np.testing.assert_allclose(marks.get_xdata(), [e["time"] for e in losses])
