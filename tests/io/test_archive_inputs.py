"""Archives as inputs: a zarr store seeds a run as a NetCDF file does, and a damaged store
names the variable it cannot read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import short_s1_toml

import solvers
from solvers.io.state import initial_density
from solvers.model.config import ConfigError, config_from_text

BASE = short_s1_toml(t_end=1.0, snapshot_interval=0.5)


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> tuple[Path, Path]:
    """The same short S^1 run, as a NetCDF file and as a zarr store."""
    folder = tmp_path_factory.mktemp("archives")
    nc, store = folder / "run.nc", folder / "run.zarr"
    solvers.run(BASE, path=nc)
    solvers.run(BASE, path=store)
    return nc, store


def seeded(path: Path, time: float | None = None) -> str:
    extra = "" if time is None else f"time = {time}\n"
    return BASE + f'\n[initial]\nkind = "archive"\npath = "{path}"\nmass = 1.0\n{extra}'


def test_a_zarr_store_seeds_a_run_as_its_netcdf_twin(archives) -> None:
    nc, store = archives
    from_nc = initial_density(config_from_text(seeded(nc)))
    from_zarr = initial_density(config_from_text(seeded(store)))
    np.testing.assert_array_equal(from_zarr, from_nc)
    assert np.sum(from_zarr) * 2 * np.pi / 64 == pytest.approx(1.0, rel=1e-13)
    early = initial_density(config_from_text(seeded(store, 0.5)))
    np.testing.assert_array_equal(early, initial_density(config_from_text(seeded(nc, 0.5))))
    assert not np.array_equal(early, from_zarr)  # the snapshot at t = 0.5, not the last


def test_a_missing_zarr_store_is_a_one_line_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"initial\.path.*archive not found.*\.zarr"):
        initial_density(config_from_text(seeded(tmp_path / "none.zarr")))
