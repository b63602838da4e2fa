"""Tests of solvers.plots.circle: the run summary figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from solvers.core.snapshot import Diagnostics, Snapshot
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run
from solvers.model.params import ModelParams, RunConfig, TimeParams
from solvers.plots.circle import run_figure
from solvers.plots.common import run_title
from solvers.plots.run import animate_run, plot_run

N = 32
THETA = 2 * np.pi * np.arange(N) / N
WEIGHT = np.full(N, 2 * np.pi / N)


def clustering_snapshot(t: float) -> Snapshot:
    """Uniform density collapsing into two atoms (masses 0.6 and 0.4) as t grows."""
    bumps = 0.6 * np.exp(-((THETA - 1.0) ** 2) * (1 + 20 * t)) + 0.4 * np.exp(
        -((THETA - 4.0) ** 2) * (1 + 20 * t)
    )
    rho = 1e-9 + (np.exp(-t) / (2 * np.pi) + bumps / (bumps * WEIGHT).sum() * (1 - np.exp(-t)))
    n = 0 if t < 1 else 2
    diag = Diagnostics(
        mass=float((rho * WEIGHT).sum()),
        min_rho=rho.min(),
        max_rho=rho.max(),
        energy=-t,
        dissipation=np.exp(-t),
        transport_rate=np.exp(-t),
        max_support_velocity=1.0,
        tail_energy=1e-6,
        n_atoms=n,
        atom_mass=np.array([0.6, 0.4])[:n],
        atom_position=np.array([1.0, 4.0])[:n],
    )
    return Snapshot(t=t, step=int(10 * t), dt=0.1, rho=rho, diagnostics=diag)


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "run.nc"
    config = RunConfig(model=ModelParams(beta=9.0, direction="ascent", attention="softmax"),
                       time=TimeParams(scheme="fv"))  # a grid run (the default is "auto")
    with ArchiveWriter(path, config, THETA, WEIGHT) as writer:
        for t in np.linspace(0.0, 4.0, 9):
            writer.write_snapshot(clustering_snapshot(float(t)))
    return path


def test_run_figure_has_three_panels(archive: Path) -> None:
    fig, panels = run_figure(open_run(archive))
    assert list(panels) == ["density", "final", "energy"]
    assert all(ax in fig.axes for ax in panels.values())
    assert panels["final"].get_yscale() == "symlog"  # negative values stay visible
    legend = [t.get_text() for t in panels["final"].get_legend().get_texts()]
    assert "Thm 3.5 term 0.5742*" in legend  # footnoted: the theorem's numerical term
    assert any("Thm 3.5 numerical term 0.5742" in t.get_text() for t in fig.texts)
    assert "5 atoms, largest 0.6000" in legend or any("largest 0.6000" in t for t in legend)
    texts = [t.get_text() for t in panels["final"].texts]
    assert texts == ["0.600", "0.400"]
    title = fig.get_suptitle()
    for word in ("S1", "beta = 9", "ascent", "softmax", "exp", "fv", "N = 32"):
        assert word in title, word


def test_plot_run_writes_png(archive: Path, tmp_path: Path) -> None:
    out = plot_run(archive)
    assert out == archive.with_suffix(".png") and out.stat().st_size > 10_000
    image = matplotlib.image.imread(out)
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 1000
    other = plot_run(archive, tmp_path / "figs" / "x.png", dpi=50)
    assert other.is_file() and other.stat().st_size < out.stat().st_size


def test_plot_single_snapshot_without_atoms(tmp_path: Path) -> None:
    path = tmp_path / "one.nc"
    with ArchiveWriter(path, RunConfig(), THETA, WEIGHT) as writer:
        writer.write_snapshot(clustering_snapshot(0.0))
    assert plot_run(path).stat().st_size > 0


def test_plot_empty_archive_fails(tmp_path: Path) -> None:
    path = tmp_path / "empty.nc"
    ArchiveWriter(path, RunConfig(), THETA, WEIGHT).close()
    with pytest.raises(ValueError, match="no snapshots"):
        plot_run(path)
    assert "N = 32" in run_title(open_run(path))


def test_animate_s1_gif_has_one_frame_per_snapshot(archive: Path, tmp_path: Path) -> None:
    from PIL import Image

    out = animate_run(archive, fps=4, dpi=40)
    assert out == archive.with_suffix(".gif")
    with Image.open(out) as image:
        assert image.format == "GIF" and image.n_frames == 9
    with pytest.raises(ValueError, match="use .gif or .mp4"):
        animate_run(archive, tmp_path / "x.png")
