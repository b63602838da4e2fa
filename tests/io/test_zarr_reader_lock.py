"""zarr ``--overwrite`` never swaps data under a lazy reader: a Dataset from
:func:`solvers.io.zarr_store.open_zarr_run` holds a shared lock on the store, and replacing
the store is refused (exit 2, the store left as it was) until the reader is closed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import toml_config

import solvers
from solvers.cli.main import main
from solvers.io.lock import ArchiveBusyError
from solvers.io.zarr_store import open_zarr_run

CONFIG = toml_config({
    "domain": {"resolution": 64}, "model": {"beta": 2.0},
    "initial": {"kind": "uniform", "modes": [[2, 0.1]]},
    "time": {"t_end": 0.5, "scheme": "fv"},
    "output": {"snapshot_interval": 0.1, "progress": False},
})


def run(cfg: Path, out: Path, *extra: str) -> int:
    return main(["run", str(cfg), "-o", str(out), "--no-check", "-q", *extra])


def test_overwrite_is_refused_while_a_lazy_reader_holds_the_store(tmp_path: Path, capsys) -> None:
    cfg, out = tmp_path / "run.toml", tmp_path / "x.zarr"
    cfg.write_text(CONFIG)
    assert run(cfg, out) == 0
    lazy = open_zarr_run(out)
    rho = lazy["rho"]  # a lazy variable taken from it: reads the old store's chunks later
    capsys.readouterr()
    assert run(cfg, out, "--overwrite", "--set", "time.t_end=0.2") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out} is open for reading") and "ds.close()" in err
    old = solvers.open_run(out)  # the store as it was
    np.testing.assert_array_equal(rho.values, old["rho"].values)
    assert lazy.sizes["time"] == old.sizes["time"] == 6
    with pytest.raises(ArchiveBusyError):
        solvers.run(CONFIG, path=out, overwrite=True)
    lazy.close()
    assert run(cfg, out, "--overwrite", "--set", "time.t_end=0.2") == 0
    assert solvers.open_run(out).sizes["time"] == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no scratch left


@pytest.mark.slow
def test_readers_that_load_do_not_block_an_overwrite(tmp_path: Path) -> None:
    """open_run loads the data and lets go; a collected lazy Dataset lets go too."""
    cfg, out = tmp_path / "run.toml", tmp_path / "x.zarr"
    cfg.write_text(CONFIG)
    assert run(cfg, out) == 0
    loaded = solvers.open_run(out)
    lazy = open_zarr_run(out)
    del lazy
    assert run(cfg, out, "--overwrite", "--set", "time.t_end=0.2") == 0
    assert loaded.sizes["time"] == 6 and solvers.open_run(out).sizes["time"] == 3
    assert float(loaded["time"][-1]) == pytest.approx(0.5)
