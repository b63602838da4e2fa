"""S^2 input/output: initial cell averages, archive layout and round trip, plots, animation."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import integrate

from solvers.core.snapshot import Diagnostics, Snapshot
from solvers.io.archive import ArchiveWriter
from solvers.io.reading import open_run, read_last_state, read_snapshot
from solvers.io.state import initial_density
from solvers.model.config import ConfigError, load_config
from solvers.model.params import DomainParams, ModelParams, OutputParams, RunConfig
from solvers.sphere.cells import SphereGrid
from solvers.sphere.initial import _real_harmonic, resample_sphere, vmf_density, vmf_pdf

LMAX = 31
S2 = f'[domain]\nmanifold = "S2"\nresolution = {LMAX}\n'
CONFIG = RunConfig(domain=DomainParams("S2", LMAX), model=ModelParams(beta=2.0), text=S2,
                   output=OutputParams(spectral=True))  # the round trip checks rho_lm too
ATOMS = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, -0.6, -0.8]])


@cache
def grid(lmax: int = LMAX) -> SphereGrid:
    return SphereGrid(lmax)


def s2_snapshot(t: float, n_atoms: int = 0) -> Snapshot:
    """Known values: ``rho = (1 + t)(1/(4 pi) + 0.05 Re Y_21)``, ``n_atoms`` atoms of ATOMS."""
    g = grid()
    rho = (1.0 + t) * (1 / (4 * np.pi) + 0.05 * _real_harmonic(2, 1, g.theta[:, None], g.phi))
    diag = Diagnostics(mass=1.0 + t, min_rho=rho.min(), max_rho=rho.max(), energy=-t,
                       dissipation=2 * t, transport_rate=0.1, max_support_velocity=0.2,
                       tail_energy=1e-9, n_atoms=n_atoms, atom_mass=0.1 * (np.arange(n_atoms) + 1),
                       atom_position=ATOMS[:n_atoms])
    return Snapshot(t=t, step=int(round(100 * t)), dt=0.01, rho=rho, diagnostics=diag)


def write_s2_run(path: Path, atoms: tuple[int, ...] = (0, 3, 1), t0: float = 0.0,
                 config: RunConfig = CONFIG, **kw) -> Path:
    g = grid(config.domain.resolution)
    with ArchiveWriter(path, config, g.theta, g.area, phi=g.phi, **kw) as writer:
        for i, n in enumerate(atoms):
            assert writer.write_snapshot(s2_snapshot(t0 + 0.5 * i, n))
    return path


# --------------------------------------------------------------------------- archive

def test_archive_round_trip_with_plain_xarray(tmp_path: Path) -> None:
    path = write_s2_run(tmp_path / "run.nc")
    g = grid()
    with xr.open_dataset(path) as ds:
        # nv: CF cell bounds; dirac: the Dirac atoms of the default representation (the default
        # S^2 descent method is the fv grid with Dirac atoms; none in these snapshots);
        # restart_len: the step state's description (restart_info: no interpolated record here)
        assert dict(ds.sizes) == {"t": 3, "theta": 32, "phi": 64, "lm": g.basis.nlm, "atom": 3,
                                  "nv": 2, "dirac": 0, "restart_len": 0}
        assert ds.attrs["representation"] == "dirac" and ds["dirac_mass"].dims == ("t", "dirac")
        assert ds["rho"].dims == ("t", "theta", "phi") and ds.attrs["manifold"] == "S2"
        for i, t in enumerate(ds["t"].values):
            np.testing.assert_array_equal(ds["rho"].values[i], s2_snapshot(t).rho)
        np.testing.assert_allclose(ds["theta"], g.theta, rtol=0, atol=0)
        np.testing.assert_allclose(ds["cell_weight"].sum(), 4 * np.pi, rtol=1e-14)
        mass = (ds["rho"] * ds["cell_weight"]).sum(("theta", "phi"))
        np.testing.assert_allclose(mass, ds["mass"], rtol=1e-13)
        assert {"lat", "lon", "degree", "order"} <= set(ds.coords)
        np.testing.assert_allclose(ds["lat"], 90 - np.degrees(g.theta), rtol=1e-15)
        np.testing.assert_allclose(ds["lon"], np.degrees(g.phi), rtol=1e-15)
        assert ds["lat"].attrs["units"] == "degrees_north" and ds["lon"].dims == ("phi",)
        c = ds["rho_lm_real"].values + 1j * ds["rho_lm_imag"].values
        degree, order = ds["degree"].values, ds["order"].values
        for name in ds.variables:  # cell bounds inherit them (CF 7.1)
            if not str(name).endswith("_bounds"):
                assert "units" in ds[name].attrs and "long_name" in ds[name].attrs, name
    np.testing.assert_array_equal(degree, g.basis.degrees)
    np.testing.assert_array_equal(order, g.basis.orders)
    np.testing.assert_allclose(c, g.basis.forward(np.stack([s2_snapshot(t).rho
                                                            for t in (0.0, 0.5, 1.0)])))
    # rho = (1 + t)(1/(4 pi) + 0.05 Re Y_21): c_00 = (1 + t)/sqrt(4 pi), c_21 = 0.05 (1 + t)/2
    i00, i21 = g.basis.index(0, 0), g.basis.index(2, 1)
    np.testing.assert_allclose(c[:, i00], np.array([1.0, 1.5, 2.0]) / np.sqrt(4 * np.pi))
    np.testing.assert_allclose(c[:, i21], 0.025 * np.array([1.0, 1.5, 2.0]), rtol=1e-12)
    others = np.delete(c, [i00, i21], axis=1)
    assert np.abs(others).max() < 1e-15


def test_archive_atoms_are_nan_padded_unit_vectors(tmp_path: Path) -> None:
    path = write_s2_run(tmp_path / "run.nc")
    ds = open_run(path)
    mass, x = ds["atom_mass"].values, ds["atom_x"].values
    assert np.isnan(mass[0]).all() and np.isnan(x[0]).all()
    np.testing.assert_allclose(mass[1], [0.1, 0.2, 0.3])
    xyz = np.stack([ds[f"atom_{c}"].values[1] for c in "xyz"], axis=1)
    np.testing.assert_array_equal(xyz, ATOMS)
    np.testing.assert_allclose(np.degrees(ds["atom_colatitude"].values[1]),
                               [0.0, 90.0, 180 - np.degrees(np.arccos(0.8))], atol=1e-12)
    np.testing.assert_allclose(np.degrees(ds["atom_longitude"].values[1]), [0.0, 0.0, 270.0],
                               atol=1e-12)
    for name in ("atom_mass", "atom_y", "atom_colatitude", "atom_longitude"):
        assert np.isfinite(ds[name].values[2, 0]) and np.isnan(ds[name].values[2, 1:]).all()
    assert "atom_position" not in ds


def test_archive_readers_return_2d_states(tmp_path: Path) -> None:
    path = write_s2_run(tmp_path / "run.nc")
    t, step, dt, rho = read_last_state(path)
    assert (t, step, rho.shape) == (1.0, 100, grid().shape)
    np.testing.assert_array_equal(rho, s2_snapshot(1.0).rho)
    t, (theta, phi), rho = read_snapshot(path, 0.4)
    assert t == 0.5
    np.testing.assert_array_equal(theta, grid().theta)
    np.testing.assert_array_equal(phi, grid().phi)
    np.testing.assert_array_equal(rho, s2_snapshot(0.5).rho)


def test_archive_append_and_grid_checks(tmp_path: Path) -> None:
    path = write_s2_run(tmp_path / "run.nc")
    write_s2_run(path, atoms=(2,), t0=2.0, append=True)
    ds = open_run(path)
    np.testing.assert_allclose(ds["time"], [0.0, 0.5, 1.0, 2.0])
    assert "resumed" in ds.attrs["history"]
    wider = replace(CONFIG, domain=DomainParams("S2", 40))
    with pytest.raises(ValueError, match="theta grid"):
        write_s2_run(path, config=wider, t0=3.0, append=True)
    g = grid()
    with pytest.raises(ValueError, match="phi grid"):  # an S1 writer on an S2 archive
        ArchiveWriter(path, RunConfig(), g.theta, g.area[:, 0], append=True)


def test_archive_writer_rejects_bad_grids(tmp_path: Path) -> None:
    g = grid()
    with pytest.raises(ValueError, match="domain.manifold"):
        ArchiveWriter(tmp_path / "a.nc", RunConfig(), g.theta, g.area, phi=g.phi)
    with pytest.raises(ValueError, match="Gauss"):
        ArchiveWriter(tmp_path / "b.nc", CONFIG, np.linspace(0.1, 3, 32), g.area, phi=g.phi)
    with pytest.raises(ValueError, match=r"cell_weight \(nlat, nphi\)"):
        ArchiveWriter(tmp_path / "c.nc", CONFIG, g.theta, g.area[:, 0], phi=g.phi)
    with ArchiveWriter(tmp_path / "d.nc", CONFIG, g.theta, g.area, phi=g.phi) as writer:
        snap = s2_snapshot(0.0)
        with pytest.raises(ValueError, match="shape"):
            writer.write_snapshot(replace(snap, rho=snap.rho[:, :-1]))
        bad = replace(snap.diagnostics, n_atoms=2, atom_mass=np.ones(2), atom_position=ATOMS)
        with pytest.raises(ValueError, match="atom_position"):
            writer.write_snapshot(replace(snap, diagnostics=bad))
    assert not any(tmp_path.glob("[abc].nc"))


# --------------------------------------------------------------------------- initial


def cell_average(f, g: SphereGrid, j: int, k: int) -> float:
    """Direct adaptive quadrature of ``f(theta, phi)`` over cell (j, k), divided by its area."""
    p0 = g.phi[k] - g.dphi / 2
    value, _ = integrate.dblquad(lambda th, ph: f(th, ph) * np.sin(th), p0, p0 + g.dphi,
                                 g.theta_faces[j], g.theta_faces[j + 1], epsabs=1e-300,
                                 epsrel=1e-13)
    return value / g.area[j, k]


@pytest.mark.parametrize("text", [
    S2,
    S2 + "[initial]\nmodes = [[3, 1, 0.01], [1, 0, -0.05], [20, 17, 0.002]]\nmass = 2.5\n",
    S2 + '[initial]\nkind = "von_mises"\ncenters = [[1, 1, 1], [0, 0, -1]]\nkappas = [5, 300]\n'
         "weights = [0.2, 0.8]\nmass = 0.3\n",
])
def test_initial_mass_is_exact(text: str) -> None:
    config = load_config(text)
    rho = initial_density(config)
    assert rho.shape == grid().shape and rho.min() >= 0
    assert abs(np.sum(rho * grid().area) - config.initial.mass) <= 1e-13 * config.initial.mass


@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_mode_amplitude_recovered_within_the_cell_averaging_error(m: int) -> None:
    # The average of an eigenfunction of the Laplacian (eigenvalue -l(l+1)) over a cell of
    # area A is its centre value times about 1 - l(l+1) A / 24: at lmax 63, l = 3, ~1.2e-3.
    lmax, l, amp = 63, 3, 0.01
    config = load_config(S2.replace(str(LMAX), str(lmax))
                         + f"[initial]\nmodes = [[{l}, {m}, {amp}]]\n")
    b, area = grid(lmax).basis, grid(lmax).area
    c = b.forward(initial_density(config))
    expected = amp if m == 0 else amp / 2  # Re Y_lm = (Y_lm + (-1)^m Y_l,-m) / 2
    attenuation = 1 - c[b.index(l, m)].real / expected
    assert 0 < attenuation <= l * (l + 1) * area.max() / 24
    np.testing.assert_allclose(c[0], 1 / np.sqrt(4 * np.pi), rtol=1e-14)
    c[[0, b.index(l, m)]] = 0
    assert np.abs(c).max() < 1e-3 * amp


def test_mode_cell_averages_against_direct_quadrature() -> None:
    g = grid()
    rho = initial_density(load_config(S2 + "[initial]\nmodes = [[3, 1, 0.02], [5, 4, 0.01]]\n"))

    def f(th: float, ph: float) -> float:
        return (1 / (4 * np.pi) + 0.02 * _real_harmonic(3, 1, th, ph)
                + 0.01 * _real_harmonic(5, 4, th, ph))

    for j, k in [(0, 0), (0, 17), (9, 40), (31, 63)]:  # polar cells first and last
        assert rho[j, k] == pytest.approx(cell_average(f, g, j, k), rel=1e-12)


@pytest.mark.parametrize("kappa", [0.5, 40.0, 2000.0])
def test_vmf_cell_averages_against_direct_quadrature(kappa: float) -> None:
    g, e = grid(), np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    rho = vmf_density(g, (tuple(e),), (kappa,), (1.0,))

    def f(th: float, ph: float) -> float:
        x = np.array([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)])
        return vmf_pdf(x, e, kappa)

    j, k = np.unravel_index(np.argmax(rho), rho.shape)
    for jj, kk in [(j, k), (j + 1, k), (j, k - 1), (0, 0), (31, 5)]:
        exact = cell_average(f, g, jj, kk)
        if exact > 1e-200:
            assert rho[jj, kk] == pytest.approx(exact, rel=1e-11)


@pytest.mark.parametrize("kappa", [0.0, 1e-9, 1.0, 700.0, 1e6])
def test_vmf_pdf_is_normalised(kappa: float) -> None:
    def ring(th: float) -> float:
        return 2 * np.pi * np.sin(th) * vmf_pdf(np.array([0.0, np.sin(th), np.cos(th)]),
                                                np.array([0.0, 0.0, 1.0]), kappa)

    width = min(np.pi, 40 / np.sqrt(kappa + 1))  # the rest is below exp(-800)
    assert integrate.quad(ring, 0, width, limit=200)[0] == pytest.approx(1.0, rel=1e-10)


def test_negative_modes_name_the_key_and_the_place() -> None:
    config = load_config(S2 + "[initial]\nmodes = [[2, 0, 0.5]]\n")
    with pytest.raises(ConfigError, match=r"^initial\.modes: .*negative.*colatitude .*deg.*"
                                          r"sqrt\(4 pi \(2 l \+ 1\)\)") as info:
        initial_density(config)
    assert "\n" not in str(info.value)


def band_limited(theta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    return 1 / (4 * np.pi) + 0.05 * _real_harmonic(2, 1, theta[:, None], phi) + \
        0.02 * _real_harmonic(7, 3, theta[:, None], phi)


@pytest.mark.parametrize("lmax_new", [LMAX, 47])
def test_archive_kind_copies_or_resamples_spectrally(tmp_path: Path, lmax_new: int) -> None:
    g, new = grid(), grid(lmax_new)
    path = tmp_path / "old.nc"
    with ArchiveWriter(path, CONFIG, g.theta, g.area, phi=g.phi) as writer:
        writer(replace(s2_snapshot(0.0), rho=band_limited(g.theta, g.phi)))
        writer(replace(s2_snapshot(4.0), rho=2 * band_limited(g.theta, g.phi)))
    text = (S2.replace(str(LMAX), str(lmax_new))
            + f'[initial]\nkind = "archive"\npath = "{path}"\ntime = 0.1\nmass = 3.0\n')
    rho = initial_density(load_config(text))
    assert abs(np.sum(rho * new.area) - 3.0) <= 3e-13
    np.testing.assert_allclose(rho, 3.0 * band_limited(new.theta, new.phi), rtol=1e-12)


def test_archive_kind_clips_the_ringing_of_an_atom(tmp_path: Path) -> None:
    g = grid()
    rho = np.full(g.shape, 1e-6)
    rho[10, 20] = 1.0 / g.area[10, 20]
    path = tmp_path / "old.nc"
    with ArchiveWriter(path, CONFIG, g.theta, g.area, phi=g.phi) as writer:
        writer(replace(s2_snapshot(0.0), rho=rho))
    assert resample_sphere(rho, 40).min() < 0  # Gibbs ringing
    out = initial_density(load_config(S2.replace("31", "40") + f'[initial]\nkind = "archive"\n'
                                                               f'path = "{path}"\n'))
    assert out.min() >= 0 and abs(np.sum(out * grid(40).area) - 1) < 1e-13
    j, k = np.unravel_index(np.argmax(out), out.shape)
    assert np.dot(grid(40).points(grid(40).theta[[j]], grid(40).phi[[k]])[0, 0],
                  g.points(g.theta[[10]], g.phi[[20]])[0, 0]) > np.cos(0.15)


def test_archive_kind_wrong_manifold(tmp_path: Path) -> None:
    s2_run = write_s2_run(tmp_path / "s2.nc")
    s1_run = tmp_path / "s1.nc"
    n, snap = 32, s2_snapshot(0.0)
    diag = replace(snap.diagnostics, atom_position=np.zeros(0))
    with ArchiveWriter(s1_run, RunConfig(), 2 * np.pi * np.arange(n) / n,
                       np.full(n, 2 * np.pi / n)) as writer:
        writer(replace(snap, rho=np.full(n, 1 / (2 * np.pi)), diagnostics=diag))
    with pytest.raises(ConfigError, match=r"^initial\.path: .*does not hold an S2 run"):
        initial_density(load_config(S2 + f'[initial]\nkind = "archive"\npath = "{s1_run}"\n'))
    with pytest.raises(ConfigError, match=r"^initial\.path: .*S1 run"):
        initial_density(load_config(f'[initial]\nkind = "archive"\npath = "{s2_run}"\n'))


# --------------------------------------------------------------------------- plots, animation


def test_sphere_summary_figure(tmp_path: Path) -> None:
    from solvers.plots.run import plot_run
    from solvers.plots.sphere import sphere_run_figure

    path = write_s2_run(tmp_path / "run.nc", atoms=(0, 3, 3))
    fig, panels = sphere_run_figure(open_run(path))
    assert list(panels) == ["map", "energy", "atoms"] and panels["map"].name == "mollweide"
    title = panels["map"].get_title()
    assert "3 atoms" in title and "largest 0.3000" in title
    assert sorted(t.get_text() for t in panels["map"].texts) == ["0.100", "0.200", "0.300"]
    labels = panels["atoms"].get_legend().get_texts()
    # the 0.5742 line says what it is (the theorem's numerical term, footnoted), not "the bound"
    assert "Thm 3.5 term 0.5742*" in [t.get_text() for t in labels]
    assert any("Thm 3.5 numerical term 0.5742" in t.get_text() for t in fig.texts)
    assert "S2" in fig.get_suptitle() and "lmax = 31" in fig.get_suptitle()
    out = plot_run(path, dpi=50)
    assert out == path.with_suffix(".png") and out.stat().st_size > 10_000


@pytest.mark.parametrize("view", ["orthographic", "mollweide"])
def test_animate_gif_has_one_frame_per_snapshot(tmp_path: Path, view: str) -> None:
    from PIL import Image

    from solvers.plots.run import animate_run

    path = write_s2_run(tmp_path / "run.nc", atoms=(0, 3, 1))
    out = animate_run(path, tmp_path / "anim" / f"{view}.gif", fps=5, view=view, dpi=40)
    with Image.open(out) as image:
        assert image.format == "GIF" and image.n_frames == 3


def test_orthographic_views_show_each_atom_once(tmp_path: Path) -> None:
    from solvers.plots.sphere import sphere_animation

    fig, update = sphere_animation(open_run(write_s2_run(tmp_path / "run.nc", atoms=(3,))))
    update(0)
    texts = sorted(t.get_text() for ax in fig.axes for t in ax.texts)
    assert texts == ["0.100", "0.200", "0.300"]  # front and back hemispheres cover the sphere


def test_animate_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.animation

    from solvers.plots.run import animate_run

    path = write_s2_run(tmp_path / "run.nc", atoms=(0,))
    monkeypatch.setattr(matplotlib.animation.FFMpegWriter, "isAvailable",
                        classmethod(lambda cls: False))
    with pytest.raises(ValueError, match=r"\.mp4 needs ffmpeg on PATH.*apt-get install ffmpeg"):
        animate_run(path, tmp_path / "a.mp4")
    with pytest.raises(ValueError, match="use .gif or .mp4"):
        animate_run(path, tmp_path / "a.avi")
    with pytest.raises(ValueError, match="view"):
        animate_run(path, view="globe")
    with pytest.raises(ValueError, match="fps"):
        animate_run(path, fps=0)
    g = grid()
    ArchiveWriter(tmp_path / "empty.nc", CONFIG, g.theta, g.area, phi=g.phi).close()
    with pytest.raises(ValueError, match="no snapshots"):
        animate_run(tmp_path / "empty.nc")
    assert not list(tmp_path.glob("*.gif")) and not list(tmp_path.glob("a.*"))
