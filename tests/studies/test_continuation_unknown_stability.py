"""``continue --no-stability``: unchecked stability is unknown (missing values, drawn apart, said
in the summary), and the figure is written at the style's dpi."""

import struct

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from solvers.cli.main import main
from solvers.plots.bifurcation import panel_diagram

PURE = ('[domain]\nmanifold = "S1"\nresolution = 64\n[model]\nbeta = 2.0\n'
        'direction = "ascent"\nnoise = 1.0\n')


def _png_size(path):
    head = path.read_bytes()[:24]
    return struct.unpack(">II", head[16:24])


def test_no_stability_is_unknown_not_unstable(tmp_path, capsys):
    cfg = tmp_path / "pure.toml"
    cfg.write_text(PURE)
    out, png = tmp_path / "c.nc", tmp_path / "c.png"
    assert main(["continue", str(cfg), "--param", "model.noise", "--to", "0.5", "--no-stability",
                 "-o", str(out), "--figure", str(png), "--style", "paper"]) == 0
    printed = capsys.readouterr().out
    assert "stability not computed" in printed and " 0 stable" not in printed
    with xr.open_dataset(out) as ds:
        ds.load()
    assert ds.attrs["stability"] == "not computed"
    assert np.isnan(ds["stable"].values.astype(float)).all()
    fig = Figure()
    ax = fig.add_subplot()
    panel_diagram(ax, ds)
    styles = {line.get_linestyle() for line in ax.get_lines() if line.get_xdata().size > 1}
    assert styles == {":"}  # neither solid (stable) nor dashed (unstable)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "stability not computed" in labels and "unstable" not in labels
    # --style paper: 300 dpi on its 7 inch page width
    width, height = _png_size(png)
    assert width == 2100 and height == round(2100 * 0.42)


def test_computed_stability_is_still_boolean_and_drawn_solid_or_dashed(tmp_path, capsys):
    cfg = tmp_path / "pure.toml"
    cfg.write_text(PURE)
    out = tmp_path / "c.nc"
    assert main(["continue", str(cfg), "--param", "model.noise", "--to", "0.5", "-o", str(out)]) == 0
    assert "stability not computed" not in capsys.readouterr().out
    with xr.open_dataset(out) as ds:
        ds.load()
    assert ds["stable"].dtype == bool and ds.attrs["stability"] == "computed"
    fig = Figure()
    ax = fig.add_subplot()
    panel_diagram(ax, ds)
    assert ":" not in {line.get_linestyle() for line in ax.get_lines() if line.get_xdata().size > 1}
