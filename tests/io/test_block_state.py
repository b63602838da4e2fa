"""What a NetCDF block rewrites is data, never an attribute: the record counts are 0-d
variables and the step state's description a vector (``restart_info``). netCDF-C rewrites an
attribute by deleting and re-creating it in an HDF5 object header; a kill during that flush
left archives that no longer opened. Here: the vector round-trips every kind of step state,
a damaged one reads as none, and a run's blocks leave every attribute as the first block did."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from test_archive import THETA, WEIGHT, make_snapshot
from test_blocks_zarr import buffered

from solvers.core.measure import DiracAtoms
from solvers.core.snapshot import RunState
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run, read_restart
from solvers.io.restart import (
    decode_info,
    encode_info,
    restart_atoms,
    restart_attributes,
    restart_state,
)

RNG = np.random.default_rng(7)
S1_ATOMS = DiracAtoms(np.array([0.25, 0.5]), np.array([1.0, 4.0]), np.array([3, 8]))
UNIT = RNG.normal(size=(3, 3))
S2_ATOMS = DiracAtoms(np.array([0.1, 0.2, 0.3]), UNIT / np.linalg.norm(UNIT, axis=1)[:, None],
                      np.array([0, 5, 9]))


@pytest.mark.parametrize("atoms, dim", [(None, 1), (DiracAtoms.empty(1), 1), (S1_ATOMS, 1),
                                        (S2_ATOMS, 3)])
def test_the_vector_holds_what_the_attributes_held(atoms, dim) -> None:
    restart = RunState(t=2.5, step=41, dt=0.0123, state=np.ones(4), atoms=atoms)
    attrs = restart_attributes(restart, 2.75)
    stale = np.concatenate([encode_info(attrs), RNG.normal(size=11)])  # an earlier, longer one
    back = decode_info(stale)
    assert set(back) == set(attrs)
    for name, value in attrs.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)
    found = restart_state(back, restart.rho, 2.75)
    assert (found.t, found.step, found.dt) == (2.5, 41, 0.0123)
    if atoms is not None:
        got = restart_atoms(back, 2.75, dim)
        np.testing.assert_array_equal(got.mass, atoms.mass)
        np.testing.assert_array_equal(got.position, atoms.position)
        np.testing.assert_array_equal(got.ids, atoms.ids)


@pytest.mark.parametrize("edit", ["nan_after", "width_2", "truncated", "short", "unwritten"])
def test_a_damaged_vector_is_no_step_state(edit: str) -> None:
    v = encode_info(restart_attributes(RunState(1.0, 3, 0.1, np.ones(2), atoms=S2_ATOMS), 1.5))
    damaged = {"nan_after": np.r_[np.nan, v[1:]], "width_2": np.r_[v[:5], 2.0, v[6:]],
               "truncated": v[:-2], "short": v[:4], "unwritten": np.full(v.size, np.nan)}[edit]
    assert decode_info(damaged) == {}
    assert restart_state(decode_info(damaged), np.ones(2), 1.5) is None


def _attributes(path: Path) -> dict[str, dict]:
    with netCDF4.Dataset(path, "r") as nc:
        out = {"": {k: str(nc.getncattr(k)) for k in nc.ncattrs()}}
        out.update({name: {k: str(var.getncattr(k)) for k in var.ncattrs()}
                    for name, var in nc.variables.items()})
    return out


def test_blocks_rewrite_no_attribute(tmp_path: Path) -> None:
    path = tmp_path / "run.nc"
    seen = []
    with ArchiveWriter(path, buffered(), THETA, WEIGHT) as writer:
        for i in range(6):
            snap = make_snapshot(0.5 * i)
            restart = RunState(0.5 * i - 0.01, snap.step - 1, 0.02 + i, snap.rho)
            writer.write_snapshot(replace(snap, position=restart))
            writer.flush()  # one block per record
            seen.append(_attributes(path))  # (HDF5 lets a reader in beside the writer)
    assert all(attrs == seen[0] for attrs in seen)
    assert not any(k.startswith(("records_", "after_time", "restart_"))
                   for k in seen[0][""] | seen[0]["restart_rho"])
    with netCDF4.Dataset(path, "r") as nc:
        assert int(nc["records_complete"][...]) == int(nc["records_written"][...]) == 6
    found = read_restart(path)
    t, step, dt = found.t, found.step, found.dt
    assert (t, step, dt) == (2.49, 249, 5.02)
    ds = open_run(path)  # the vector read back as restart_rho's attributes, the counts as globals
    assert ds.attrs["records_complete"] == 6 and "restart_info" not in ds.variables
    assert ds["restart_rho"].attrs["after_time"] == 2.5
    assert ds["restart_rho"].attrs["restart_step"] == 249
