"""The S^1 animation draws point-mass (Dirac) atoms at their stems' tops, not at the bottom of
the log axis where the grid density of a measure-valued run is (nearly) zero."""

import numpy as np
import xarray as xr

from solvers.plots.circle import circle_animation


def _measure_run():
    n = 64
    theta = 2 * np.pi * np.arange(n) / n
    h = 2 * np.pi / n
    rho = np.full((2, n), 1e-3)  # the diffuse part; the atoms are Dirac masses
    return xr.Dataset({
        "rho": (("time", "theta"), rho),
        "cell_weight": ("theta", np.full(n, h)),
        "atom_mass": (("time", "atom"), [[0.6, 0.4], [0.7, 0.3]]),
        "atom_position": (("time", "atom"), [[1.0, 4.0], [1.0, 4.0]]),
        "dirac_mass": (("time", "dirac"), [[0.6, 0.4], [0.7, 0.3]]),
        "dirac_position": (("time", "dirac"), [[1.0, 4.0], [1.0, 4.0]]),
    }, coords={"time": [0.0, 1.0], "theta": theta}, attrs={"manifold": "S1"}), h


def test_dirac_atoms_are_drawn_at_their_height_not_at_the_floor():
    ds, h = _measure_run()
    fig, update = circle_animation(ds)
    update(1)
    ax = fig.axes[0]
    marks = next(line for line in ax.get_lines() if line.get_marker() == "v")
    np.testing.assert_allclose(marks.get_ydata(), np.array([0.7, 0.3]) / h)
    bottom, top = ax.get_ylim()
    assert np.all(marks.get_ydata() > 1e3 * bottom) and np.all(marks.get_ydata() < top)
    stems = ax.collections[0].get_segments()
    assert len(stems) == 2 and np.isclose(stems[0][1, 1], 0.7 / h)
