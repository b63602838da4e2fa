"""Every figure type, in both styles, drawn from small real outputs: no two texts overlap by
more than 2 px and no text reaches more than 2 px outside the canvas (layout_check.py); the
check itself fails on a figure built to overlap; vector output stays vector."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pytest
from figure_cases import build, cases, make_outputs
from layout_check import drawn_texts, layout_problems
from matplotlib.figure import Figure


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """S^1 grid and Dirac runs, an S^2 run, lemma51 on S^1 and S^2, converge, a sweep."""
    return make_outputs(tmp_path_factory.mktemp("figure_outputs"))


def _marked(name: str, style: str) -> object:
    """The paper style in the default run; the screen style (same code, other sizes) is run by
    the slow step."""
    return pytest.param(name, style, marks=[pytest.mark.slow] if style == "screen" else [])


@pytest.mark.parametrize(("name", "style"), [_marked(*case) for case in cases()])
def test_no_text_overlaps_or_leaves_the_canvas(outputs: dict[str, Path], name: str,
                                               style: str) -> None:
    fig, dpi = build(name, style, outputs)
    problems = layout_problems(fig, f"{name} ({style})", dpi=dpi)
    assert not problems, "\n".join(problems)
    assert len(drawn_texts(fig)) >= 5  # titles, labels and ticks were seen


def test_the_check_finds_overlaps_and_clipped_texts() -> None:
    fig = Figure(figsize=(3.0, 2.0), dpi=100)
    ax = fig.add_subplot()
    ax.set_axis_off()  # no ticks: only the three texts
    ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
    ax.text(0.52, 0.52, "second label", transform=ax.transAxes)  # on top of the first
    fig.text(0.95, 0.5, "beyond the right edge")
    problems = layout_problems(fig, "built to fail")
    assert any("'first label'" in p and "'second label'" in p and "overlap by" in p
               for p in problems), problems
    assert any("'beyond the right edge'" in p and "outside the 300x200 px canvas" in p
               for p in problems), problems
    assert all(p.startswith("built to fail: ") for p in problems)
    ax.texts[1].set_position((0.1, 0.1))  # moved apart and inside: clean
    fig.texts[0].set_position((0.05, 0.9))
    assert layout_problems(fig, "fixed") == []


def test_overlap_below_the_tolerance_passes() -> None:
    fig = Figure(figsize=(3.0, 2.0), dpi=100)
    a = fig.text(0.1, 0.5, "left", va="center")
    fig.canvas = None
    (box,) = [t.box for t in drawn_texts(fig)]
    # the second text starts 1 px inside the first one's right edge: below the 2 px limit
    fig.text((box.x1 - 1.0) / 300.0, 0.5, "right", va="center")
    assert layout_problems(fig, "touching") == []
    a.set_x((box.x0 + 10.0) / 300.0)  # now 9 px deep into "right"
    assert len(layout_problems(fig, "touching")) == 1


def _pdf_streams(data: bytes) -> bytes:
    """The PDF with its Flate streams inflated (images and fonts declared in them too)."""
    out = [data]
    for match in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
        try:
            out.append(zlib.decompress(match.group(1)))
        except zlib.error:
            pass
    return b"\n".join(out)


@pytest.mark.parametrize("name", ["converge", "sweep_atom_masses",
                                  pytest.param("lemma51_S1", marks=pytest.mark.slow)])
def test_line_plots_save_as_vector_pdf_and_svg(outputs: dict[str, Path], tmp_path: Path,
                                               name: str) -> None:
    from solvers.plots.save import save_figure
    from solvers.plots.style import style_context

    fig, _ = build(name, "paper", outputs)
    with style_context("paper"):
        pdf = save_figure(tmp_path / f"{name}.pdf", lambda tmp: fig.savefig(tmp))
        svg = save_figure(tmp_path / f"{name}.svg", lambda tmp: fig.savefig(tmp))
    content = _pdf_streams(pdf.read_bytes())
    assert content.startswith(b"%PDF-") and b"/Subtype /Image" not in content
    assert content.count(b" l\n") + content.count(b" l ") > 20  # line segments: vector paths
    text = svg.read_text()
    assert "<image" not in text and "<path" in text and "<text" in text  # text stays text


def test_plot_run_writes_pdf_with_the_density_as_the_only_rasters(outputs: dict[str, Path],
                                                                 tmp_path: Path) -> None:
    from solvers.plots.run import plot_run

    out = plot_run(outputs["fv"], tmp_path / "run.pdf")
    content = _pdf_streams(out.read_bytes())
    assert content.startswith(b"%PDF-")
    # panel (a)'s density image and its colour bar's gradient; lines and texts are vectors
    assert content.count(b"/Subtype /Image") == 2
