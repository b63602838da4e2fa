"""Small real outputs of every figure command, and the figures drawn from them.

:func:`make_outputs` runs, in a folder: an S^1 grid run (``time.scheme = "fv"``), an S^1 run
of the default method (Dirac atoms), an S^2 run at lmax 31, ``lemma51`` on S^1 and S^2, a
``converge`` study and a tiny beta x seed sweep; :data:`FIGURES` builds each figure type from
them (a :class:`matplotlib.figure.Figure`, inside the style's rc settings). Used by
``test_figure_layout.py`` and to draw every figure type for a look:
``PYTHONPATH=.:tests .venv/bin/python tests/plots/figure_cases.py OUTDIR`` writes
``OUTDIR/NAME_STYLE.png``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from conftest import ladder_s1_toml, paper_s1_toml
from matplotlib.figure import Figure

from solvers.plots.style import style_context

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "runs" / "demo.toml"
S2 = ROOT / "runs" / "paper_s2_descent_relu.toml"
STYLES = ("paper", "screen")


def make_outputs(folder: Path) -> dict[str, Path]:
    """Run the small cases into ``folder``; ``{case: path}``."""
    import solvers
    from solvers.io.safe_paths import write_netcdf

    folder.mkdir(parents=True, exist_ok=True)
    out = {"fv": folder / "fv.nc", "dirac": folder / "dirac.nc", "s2": folder / "s2.nc"}
    short = {"time__t_end": 200.0, "time__stop_when_stationary": False,
             "output__snapshot_interval": 10.0}
    solvers.run(DEMO, path=out["fv"], domain__resolution=128, time__scheme="fv", **short)
    solvers.run(DEMO, path=out["dirac"], domain__resolution=128, **short)
    solvers.run(S2, path=out["s2"], domain__resolution=31, time__t_end=100.0,
                time__stop_when_stationary=False, output__snapshot_interval=5.0)
    for sphere in ("S1", "S2"):
        out[f"lemma51_{sphere}"] = folder / f"lemma51_{sphere}.nc"
        write_netcdf(_lemma51(sphere), out[f"lemma51_{sphere}"])
    out["converge"] = folder / "converge.nc"
    write_netcdf(_converge(folder), out["converge"])
    out["sweep"] = _sweep(folder)
    return out


def _lemma51(sphere: str):
    from solvers.studies.lemma51 import make_measure, run_lemma51

    measure = make_measure("atoms" if sphere == "S1" else "vmf", sphere)
    return run_lemma51(measure, (5.0, 20.0), (32,) if sphere == "S1" else ())


def _converge(folder: Path):
    from solvers.studies.converge import converge
    from solvers.studies.converge_report import to_dataset

    (folder / "ladder.toml").write_text(ladder_s1_toml("relu"))
    ladders = converge(folder / "ladder.toml", "96,192,384", "0.02,0.01,0.005")
    return to_dataset(ladders, [lad.table() for lad in ladders])


def _sweep(folder: Path) -> Path:
    from solvers.studies import sweep

    (folder / "tiny.toml").write_text(paper_s1_toml(activation="gelu"))
    params = [sweep.parse_param("model.beta=1,3"), sweep.parse_param("initial.seed=0..1")]
    with sweep.dask_client(workers=1, processes=False) as client:
        sweep.run_sweep(folder / "tiny.toml", params, folder / "sweep", client=client,
                        echo=lambda line: None)
    return folder / "sweep"


# --------------------------------------------------------------------------- figures


def _run(case: str) -> Callable[[dict[str, Path], str], Figure]:
    def make(paths: dict[str, Path], style: str) -> Figure:
        from solvers.io.reading import open_run
        from solvers.plots.circle import run_figure
        from solvers.plots.sphere import sphere_run_figure

        ds = open_run(paths[case])
        return (sphere_run_figure if "phi" in ds.dims else run_figure)(ds, style)[0]
    return make


def _lemma51_fig(case: str) -> Callable[[dict[str, Path], str], Figure]:
    def make(paths: dict[str, Path], style: str) -> Figure:
        import xarray as xr

        from solvers.plots.lemma51 import lemma51_figure

        with xr.open_dataset(paths[case]) as ds:
            return lemma51_figure(ds.load(), style)
    return make


def _converge_fig(paths: dict[str, Path], style: str) -> Figure:
    import xarray as xr

    from solvers.plots.converge import converge_figure

    with xr.open_dataset(paths["converge"]) as ds:
        return converge_figure(ds.load(), style)


def _sweep_fig(name: str) -> Callable[[dict[str, Path], str], Figure]:
    def make(paths: dict[str, Path], style: str) -> Figure:
        from solvers.plots import sweeps

        summaries = sweeps.load_summaries([paths["sweep"]], ["tiny sweep"])
        dim = "seed" if name == "sensitivity" else "beta"
        return getattr(sweeps, f"figure_{name}")(summaries, dim, style)
    return make


def _animation(case: str, view: str = "orthographic") -> Callable[[dict[str, Path], str], Figure]:
    def make(paths: dict[str, Path], style: str) -> Figure:
        from solvers.io.reading import open_run
        from solvers.plots.circle import circle_animation
        from solvers.plots.sphere import sphere_animation

        ds = open_run(paths[case])
        fig, update = (sphere_animation(ds, view) if "phi" in ds.dims else circle_animation(ds))
        update(ds.sizes["time"] - 1)
        return fig
    return make


# name -> (build(paths, style), styled: whether it takes the paper/screen styles)
FIGURES: dict[str, tuple[Callable[[dict[str, Path], str], Figure], bool]] = {
    "plot_s1_fv": (_run("fv"), True),
    "plot_s1_dirac": (_run("dirac"), True),
    "plot_s2": (_run("s2"), True),
    "lemma51_S1": (_lemma51_fig("lemma51_S1"), True),
    "lemma51_S2": (_lemma51_fig("lemma51_S2"), True),
    "converge": (_converge_fig, True),
    "sweep_atom_counts": (_sweep_fig("atom_counts"), True),
    "sweep_atom_masses": (_sweep_fig("atom_masses"), True),
    "sweep_sensitivity": (_sweep_fig("sensitivity"), True),
    "animate_s1_frame": (_animation("dirac"), False),
    "animate_s2_orthographic_frame": (_animation("s2"), False),
    "animate_s2_mollweide_frame": (_animation("s2", "mollweide"), False),
}


def cases() -> list[tuple[str, str]]:
    """``(figure, style)`` pairs: every styled figure in both styles, the others once."""
    return [(name, style) for name, (_, styled) in FIGURES.items()
            for style in (STYLES if styled else ("frame",))]


def build(name: str, style: str, paths: dict[str, Path]) -> tuple[Figure, int]:
    """The figure ``name`` in ``style`` and the dpi it is saved at."""
    from solvers.plots.style import STYLES as SPECS

    make, styled = FIGURES[name]
    context: AbstractContextManager = style_context(style) if styled else nullcontext()
    with context:
        fig = make(paths, style if styled else "paper")
    return fig, SPECS[style]["dpi"] if styled else 80


def draw_all(outdir: Path, paths: dict[str, Path]) -> list[Path]:
    """Every case as ``outdir/NAME_STYLE.png`` (at the style's dpi)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, style in cases():
        fig, dpi = build(name, style, paths)
        FigureCanvasAgg(fig)
        out = outdir / f"{name}_{style}.png"
        context = style_context(style) if style in STYLES else nullcontext()
        with context:
            fig.savefig(out, dpi=dpi)
        written.append(out)
    return written


if __name__ == "__main__":  # python tests/plots/figure_cases.py OUTDIR [RUNS]
    target = Path(sys.argv[1])
    made = make_outputs(Path(sys.argv[2]) if len(sys.argv) > 2 else target / "outputs")
    for path in draw_all(target, made):
        print(path)
