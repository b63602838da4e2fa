"""Small report fixes: the sensitivity figure's legend clear of its title, ``example --list``
descriptions never cut, one atom order for every printer, a real swept key stored as float."""

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg

from solvers.cli.example import first_sentence
from solvers.cli.main import main
from solvers.cli.run import _atom_rows, _sphere_atom_rows
from solvers.io.runs import named_configs
from solvers.io.summary import build_summary
from solvers.plots import sweeps as sweep_figures
from solvers.studies import sweep


def _seed_summary():
    params = [sweep.parse_param("initial.seed=0,1,2")]
    points = sweep.sweep_points(params)
    records = {p.name: {"reason": "stationary", "t_final": 5.0, "n_steps": 3, "wall_time": 1.0,
                        "n_atoms": 2, "max_atom_mass": 0.6, "energy": 0.1, "mass": 1.0,
                        "atom_mass": [0.6, 0.4], "atom_position": [1.0, 4.0]} for p in points}
    return build_summary(params, ["seed"], points, records)


def test_the_sensitivity_legend_does_not_cover_the_title():
    fig = sweep_figures.figure_sensitivity({"descent": _seed_summary()})
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    title = fig._suptitle.get_window_extent(renderer)
    assert not legend.overlaps(title)
    for ax in fig.axes:
        assert not legend.overlaps(ax.title.get_window_extent(renderer))


def test_example_list_never_cuts_a_description(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["example", "--list"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name, path in named_configs().items():
        text = first_sentence(path)
        assert text.count("(") == text.count(")"), (name, text)  # not cut inside brackets
        assert " ".join(text.split()) in out


def test_atoms_are_printed_in_one_order():
    rows = _atom_rows(np.array([0.2, 0.5, 0.3]), np.array([4.0, 1.0, 2.5]))
    positions = [float(r.split()[1]) for r in rows[1:]]
    assert positions == sorted(positions)  # S^1: by position
    rows = _sphere_atom_rows(np.array([0.2, 0.5, 0.3]), np.array([1.0, 2.0, 0.5]),
                             np.array([0.1, 0.2, 0.3]))
    masses = [float(r.split()[0]) for r in rows[1:]]
    assert masses == [0.5, 0.3, 0.2]  # S^2: by mass, largest first


def test_a_real_swept_key_given_as_integers_is_stored_as_float():
    params = [sweep.parse_param("model.beta=1,2")]
    points = sweep.sweep_points(params)
    ds = build_summary(params, ["beta"], points, {})
    assert ds["beta"].dtype == np.float64
    assert _seed_summary()["seed"].dtype.kind == "i"  # an integer key stays integer
