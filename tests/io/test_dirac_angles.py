"""The Dirac atoms of S^2 measure-valued runs carry colatitude and longitude like the grid's
atoms (``atom_colatitude``, ``atom_longitude``), in both stores; ``mass`` of a measure-valued
run says that it counts the Dirac atoms."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_zarr_dirac import _s2_snapshot

from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run
from solvers.model.config import load_config
from solvers.model.params import OutputParams


@pytest.mark.parametrize("name", ["s.nc", "s.zarr"])
def test_s2_dirac_atoms_have_colatitude_and_longitude(tmp_path: Path, name: str) -> None:
    from solvers.sphere.cells import SphereGrid

    cfg = load_config('[domain]\nmanifold = "S2"\nresolution = 31\n[atoms]\n'
                      'representation = "dirac"\n')
    cfg = replace(cfg, output=OutputParams(sync_interval=0.0, progress=False))
    g = SphereGrid(31)
    plan = [[], [0, 1], [1, 2, 3]]
    with ArchiveWriter(tmp_path / name, cfg, g.theta, g.area, phi=g.phi) as w:
        for i, ids in enumerate(plan):
            w.write_snapshot(_s2_snapshot(0.5 * i, ids, g))
    ds = open_run(tmp_path / name)
    x, y, z = (ds[f"dirac_{c}"].values for c in "xyz")
    r = np.sqrt(x**2 + y**2 + z**2)
    colat, lon = ds["dirac_colatitude"].values, ds["dirac_longitude"].values
    alive = np.isfinite(ds["dirac_mass"].values)
    assert alive.sum(axis=1).tolist() == [0, 2, 3]
    assert np.array_equal(np.isfinite(colat), alive) and np.array_equal(np.isfinite(lon), alive)
    # the unit vector back from the angles (an independent parametrisation)
    back = np.stack([np.sin(colat) * np.cos(lon), np.sin(colat) * np.sin(lon), np.cos(colat)])
    np.testing.assert_allclose(back[:, alive], (np.stack([x, y, z]) / r)[:, alive], atol=1e-14)
    assert np.all((lon[alive] >= 0) & (lon[alive] < 2 * np.pi))
    assert ds["dirac_colatitude"].attrs["units"] == "radian"
    assert "Dirac" in ds["mass"].attrs["long_name"]
    assert "point mass" in ds["dirac_mass"].attrs["long_name"]


def test_grid_runs_keep_the_plain_mass_long_name(tmp_path: Path) -> None:
    from test_archive import THETA, WEIGHT, make_config, make_snapshot

    with ArchiveWriter(tmp_path / "g.nc", make_config(), THETA, WEIGHT) as w:
        w.write_snapshot(make_snapshot(0.0))
    ds = open_run(tmp_path / "g.nc")
    assert ds["mass"].attrs["long_name"] == "total mass: sum of rho * cell_weight"
    assert "dirac_mass" not in ds
