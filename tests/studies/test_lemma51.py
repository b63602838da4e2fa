"""solvers/lemma51.py: Lemma 5.1 checker (docs/math.md §2, 4) against exact or independent references."""

import argparse

import mpmath as mp
import numpy as np
import pytest
import xarray as xr
from scipy import special

from solvers.cli import lemma51 as cli_lemma51
from solvers.studies import lemma51 as L
from spectral.sphere import SphereBasis

BETAS = (5.0, 20.0, 50.0)
EPS = np.finfo(float).eps


@pytest.fixture(scope="module")
def results():
    """invert() for the vMF (kappa = 3) and 5-atom measures on both spheres, cached."""
    cache = {}

    def get(kind, sphere, beta):
        key = (kind, sphere, beta)
        if key not in cache:
            cache[key] = L.invert(L.make_measure(kind, sphere), beta)
        return cache[key]
    return get


# ------------------------------------------------------------------ closed forms and references

def _vmf_density_s2(kappa, e, points):
    return kappa / (4 * np.pi * np.sinh(kappa)) * np.exp(kappa * (points @ e))


@pytest.mark.parametrize("beta", [0.5, 5.0, 20.0])
def test_vmf_potential_s2_closed_form_against_quadrature(beta):
    # f(x) = (kappa / sinh kappa) sinh(r) / r (docs/math.md §4) vs int exp(beta (x.y - 1)) rho(y) dsigma(y)
    m = L.make_measure("vmf", "S2")
    th0, ph0 = m.angles[0]
    e = np.array([np.sin(th0) * np.cos(ph0), np.sin(th0) * np.sin(ph0), np.cos(th0)])
    fine = SphereBasis(90, nlat=128, nphi=256)
    rho = _vmf_density_s2(3.0, e, fine.points)
    rng = np.random.default_rng(2)
    th, ph = np.arccos(rng.uniform(-1, 1, 6)), rng.uniform(0, 2 * np.pi, 6)
    th, ph = np.append(th, th0), np.append(ph, ph0)  # include the peak
    x = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], axis=1)
    quad = [np.sum(fine.weights * rho * np.exp(beta * (fine.points @ xi - 1))) for xi in x]
    tool = L.potential(m, beta, (th, ph))
    assert np.allclose(tool, quad, rtol=1e-13, atol=0)


@pytest.mark.parametrize("beta", [5.0, 50.0])
def test_vmf_potential_s2_against_spectral_synthesis(beta):
    # f_lm = lambda_l m_lm with the closed-form m_lm = (kappa / sinh kappa) i_l(kappa) conj(Y_lm(e))
    m = L.make_measure("vmf", "S2")
    b = SphereBasis(80, nlat=96, nphi=192)
    f_spec = b.backward(b.apply_diagonal(L.exact_coefficients(m, 80, b),
                                         L.scaled_eigenvalues(beta, np.arange(81), 3)))
    f_tool = L.potential(m, beta, (b.theta[:, None], b.phi[None, :]))
    assert np.max(np.abs(f_spec - f_tool)) < 1e-14 * np.max(f_tool)


def test_vmf_potential_s1_against_quadrature():
    # S^1: e^{-beta} I_0(|beta x + kappa e|) / I_0(kappa) vs trapezoid of exp(beta cos) * rho
    m = L.make_measure("vmf", "S1")
    s = 2 * np.pi * np.arange(512) / 512
    rho = np.exp(3.0 * np.cos(s - m.angles[0])) / (2 * np.pi * special.i0(3.0))
    t = np.array([0.0, 0.7, 1.3, 3.9])
    for beta in (1.0, 20.0):
        quad = [np.sum(rho * np.exp(beta * (np.cos(ti - s) - 1))) * 2 * np.pi / 512 for ti in t]
        assert np.allclose(L.potential(m, beta, (t,)), quad, rtol=1e-13, atol=0)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("beta", [0.01, 3.0, 20.0, 50.0, 200.0])
def test_scaled_eigenvalues_against_mpmath(beta, dim):
    degrees = np.array([0, 1, 2, 5, 13, 40, 90])
    ours = L.scaled_eigenvalues(beta, degrees, dim)
    with mp.workdps(40):
        nu0 = mp.mpf(dim) / 2 - 1
        c = 2 * mp.pi if dim == 2 else 4 * mp.pi * mp.sqrt(mp.pi / (2 * mp.mpf(beta)))
        for l, v in zip(degrees, ours):
            exact = c * mp.besseli(l + nu0, beta) * mp.exp(-mp.mpf(beta))
            if exact > mp.mpf(1e-280):
                assert abs(float(v / exact - 1)) < 4e-15


def test_exact_coefficients_of_atoms_against_quadrature_of_smooth_test_functions():
    # m_lm = sum w conj(Y_lm(x_j)): check sum_lm m_lm c_lm against sum_j w_j g(x_j), g = sum c Y
    m = L.make_measure("atoms", "S2")
    b = SphereBasis(20)
    rng = np.random.default_rng(4)
    c = rng.normal(size=b.nlm) + 1j * rng.normal(size=b.nlm)
    c[b.orders == 0] = c[b.orders == 0].real
    g_at = [b._sht.SH_to_point(c, np.cos(t), p) for t, p in m.angles]  # shtns, independent
    mult = np.where(b.orders == 0, 1.0, 2.0)
    pairing = np.real(np.sum(mult * np.conj(L.exact_coefficients(m, 20, b)) * c))
    assert pairing == pytest.approx(np.dot(m.weights, g_at), rel=1e-13)


@pytest.mark.parametrize("name", ["S1", "S2"])
def test_manifold_angles_and_haversine(name):
    """The manifold's random angles, haversine and test points, against unit vectors."""
    from solvers.timestepping.manifolds import manifold_of

    m = manifold_of(name)
    assert L.make_measure("atoms", m).sphere == name and L.make_measure("vmf", m).dim == m.dimension
    a = m.uniform_angles(np.random.default_rng(1), 50)
    assert a.shape == (50,) + m.angle_axes
    ang = a.reshape(50, -1)
    x = (np.stack([np.cos(ang[:, 0]), np.sin(ang[:, 0])], 1) if name == "S1" else
         np.stack([np.sin(ang[:, 0]) * np.cos(ang[:, 1]), np.sin(ang[:, 0]) * np.sin(ang[:, 1]),
                   np.cos(ang[:, 0])], 1))
    first = tuple(ang[0])
    cols = tuple(ang.T)
    assert np.allclose(m.haversine(cols, first), (1 - x @ x[0]) / 2, atol=1e-15)
    assert np.allclose(m.haversine(cols, first, antipode=True), (1 + x @ x[0]) / 2, atol=1e-15)
    assert len(m.check_centre) == len(m.check_atom) == m.dimension - 1


def test_density_l2_closed_forms():
    assert L.density_l2(L.make_measure("vmf", "S2")) == pytest.approx(0.2399188726, abs=1e-10)
    s = 2 * np.pi * np.arange(256) / 256
    rho = np.exp(3 * np.cos(s)) / (2 * np.pi * special.i0(3))
    assert L.density_l2(L.make_measure("vmf", "S1")) == pytest.approx(
        np.sum(rho ** 2) * 2 * np.pi / 256, rel=1e-13)
    assert L.density_l2(L.make_measure("atoms", "S1")) == np.inf


# ------------------------------------------------------------------ inversion and its floor

@pytest.mark.parametrize("sphere", ["S1", "S2"])
@pytest.mark.parametrize("kind", ["vmf", "atoms"])
@pytest.mark.parametrize("beta", BETAS)
def test_round_trip_and_floor(results, kind, sphere, beta):
    r = results(kind, sphere, beta)
    exact, err, floor = r["exact_norm"], r["error"], r["floor"]
    biggest = np.max(exact)
    # where the floor is below 1e-14 max|m| (the well-conditioned degrees) the recovery is exact
    # (not "below l*": by definition the error reaches |m_l| / 2 there, ~0.1 max|m| for atoms)
    good = floor <= 1e-14 * biggest
    assert good[:5].all() and np.max(err[good]) <= 1e-13 * biggest
    # everywhere, the error is the round-off floor eps max|f| / lambda_l (within a factor 10)
    assert np.all(err <= 10 * floor + 8 * EPS * exact)
    assert 0.25 <= r["floor_ratio"] <= 4.0
    # recovered coefficients themselves, below l*: relative error within 4 floors
    below = slice(0, r["lstar_measured"])
    assert np.all(np.abs(r["recovered_norm"][below] - exact[below]) <= 4 * floor[below] + 8 * EPS * exact[below])


@pytest.mark.parametrize("sphere", ["S1", "S2"])
@pytest.mark.parametrize("kind", ["vmf", "atoms"])
def test_breakdown_degree_measured_within_one_of_prediction(results, kind, sphere):
    got = [(results(kind, sphere, b)["lstar_measured"], results(kind, sphere, b)["lstar_predicted"])
           for b in BETAS]
    for measured, predicted in got:
        assert measured is not None and predicted is not None
        assert abs(measured - predicted) <= 1, got
    assert got[0][0] < got[1][0] < got[2][0]  # grows with beta (lambda_l decays slower)


def test_breakdown_definitions_skip_zero_coefficients():
    exact = np.array([1.0, 0.0, 1e-3, 0.0, 1e-6])
    assert L.measured_breakdown(np.array([0, 1, 1e-9, 1, 1e-5]), exact) == 4
    assert L.predicted_breakdown(np.array([0, 5, 1e-3, 5, 0]), exact) == 2
    assert L.measured_breakdown(np.zeros(5), exact) is None
    assert L.measured_breakdown(np.array([1e-16, 1, 1]), np.array([1.0, 0, 0])) is None  # uniform


def test_uniform_measure_has_no_breakdown_and_exact_mass():
    r = L.invert(L.make_measure("uniform", "S2"), 20.0)
    assert r["lstar_measured"] is None and r["lstar_predicted"] is None
    assert abs(r["recovered"][0] - 1 / np.sqrt(4 * np.pi)) < 1e-15
    assert np.all(r["error"] <= 10 * r["floor"] + 8 * EPS)


def test_grid_refinement_does_not_move_the_breakdown():
    m = L.make_measure("atoms", "S2")
    base = L.invert(m, 20.0)
    fine = L.invert(m, 20.0, n=2 * base["n"])
    assert abs(fine["lstar_measured"] - base["lstar_measured"]) <= 1
    assert fine["lstar_predicted"] == base["lstar_predicted"]


# ------------------------------------------------------------------ L^2 criterion, parity, injectivity

def test_partial_sums_converge_to_int_rho_squared_for_vmf():
    ds = L.lemma51_dataset(L.make_measure("vmf", "S2"), [5.0])
    assert float(ds["partial_sum_exact"][-1]) == pytest.approx(0.2399188726, abs=1e-10)
    ls = int(ds["lstar_measured"][0])
    assert float(ds["partial_sum_recovered"][0, ls - 1]) == pytest.approx(0.2399188726, abs=1e-10)
    assert float(ds["partial_sum_recovered"][0, -1]) > 1e3  # past l* the sums are round-off
    s1 = L.lemma51_dataset(L.make_measure("vmf", "S1"), [5.0])
    assert float(s1["partial_sum_exact"][-1]) == pytest.approx(s1.attrs["density_l2"], rel=1e-13)


@pytest.mark.parametrize("sphere, power", [("S1", 1), ("S2", 2)])
def test_partial_sums_grow_for_atoms(sphere, power):
    m = L.make_measure("atoms", sphere)
    exact = L.invert(m, 5.0, lmax=160)["exact_norm"]
    c = 1 / (2 * np.pi) if sphere == "S1" else 1.0
    p = c * np.cumsum(exact ** 2)
    growth = np.log(p[160] / p[40]) / np.log(160 / 40)  # ~ L (S^1), ~ L^2 (S^2)
    assert growth == pytest.approx(power, abs=0.15)
    # S^2: |m_l|^2 averages (2l+1) sum w^2 / (4 pi)
    if sphere == "S2":
        assert p[160] / (161 ** 2 * np.sum(m.weights ** 2) / (4 * np.pi)) == pytest.approx(1, abs=0.1)


@pytest.mark.parametrize("sphere", ["S1", "S2"])
def test_parity_symmetric_atoms_have_even_f(sphere):
    sym, asym = L.make_measure("symmetric", sphere), L.make_measure("atoms", sphere)
    for beta in BETAS:
        assert L.invert(sym, beta)["odd_fraction"] <= 1e-13
    assert L.invert(asym, 5.0)["odd_fraction"] > 0.1
    assert L.invert(L.make_measure("vmf", sphere), 5.0)["odd_fraction"] > 0.1
    exact = L.exact_coefficients(sym, 30, SphereBasis(30) if sphere == "S2" else None)
    norms = L.degree_norms(sphere, exact, SphereBasis(30) if sphere == "S2" else None)
    assert np.all(norms[1::2] == 0) and np.all(norms[::2] > 0)


@pytest.mark.parametrize("sphere", ["S1", "S2"])
def test_injectivity_differences_positive_and_resolved_until_round_off(results, sphere):
    r = results("atoms", sphere, 20.0)
    exact = r["injectivity_df_exact"]
    assert np.all(exact[1:] > 0)  # lambda_l > 0 and m_l != m'_l: f differs at every degree
    vis = r["injectivity_visible"]
    assert 10 < vis < r["lmax"]
    noise = EPS * r["max_f"] * 8
    assert np.all(np.abs(r["injectivity_df"] - exact) <= noise + 1e-12 * exact)
    assert np.all(r["injectivity_df"][vis + 3:] <= noise)  # invisible past round-off


# ------------------------------------------------------------------ precision study

def test_precision_study_moves_lstar_with_digits_not_grid():
    ds = L.precision_study(L.make_measure("atoms", "S1"), [20.0], digits=(32,))
    lm = ds["p_lstar_measured"].sel(beta=20.0)
    lp = ds["p_lstar_predicted"].sel(beta=20.0)
    # in mpmath only the rounding of the samples is left (error ~ 0.15 floor, exact fdot sums):
    # the measured l* may sit up to 2 degrees past the prediction
    assert np.all(np.abs(lm - lp) <= 2)
    assert np.all(np.abs(lm.sel(refinement=1) - lm.sel(refinement=2)) <= 1)  # N vs 2N
    double, quad = int(lm.sel(precision=16, refinement=1)), int(lm.sel(precision=32, refinement=1))
    assert quad >= 1.4 * double
    # the double entry matches the plain double inversion
    assert double == L.invert(L.make_measure("atoms", "S1"), 20.0)["lstar_measured"]
    ratio = ds["p_floor_ratio"].sel(beta=20.0)
    assert float(ratio.min()) > 0.05 and float(ratio.max()) < 4


def test_precision_study_vmf_64_digits_small_beta():
    ds = L.precision_study(L.make_measure("vmf", "S1"), [5.0], digits=(64,))
    lm = ds["p_lstar_measured"].sel(beta=5.0, refinement=1)
    lp = ds["p_lstar_predicted"].sel(beta=5.0, refinement=1)
    assert np.all(np.abs(lm - lp) <= 2)
    assert int(lm.sel(precision=64)) > 2 * int(lm.sel(precision=16))
    with pytest.raises(ValueError, match="--digits"):
        L.precision_study(L.make_measure("vmf", "S2"), [5.0])
    with pytest.raises(ValueError, match="--digits"):
        L.precision_study(L.make_measure("vmf", "S1"), [5.0], digits=(8,))


# ------------------------------------------------------------------ snapshot, dataset, command line

def test_snapshot_as_point_masses(monkeypatch):
    theta = 2 * np.pi * np.arange(128) / 128
    rho = np.exp(2 * np.cos(theta - 1)) / (2 * np.pi * special.i0(2))

    def fake(path, time=None):
        return 1.5, theta, rho
    monkeypatch.setattr("solvers.io.reading.read_snapshot", fake)
    monkeypatch.setattr("solvers.io.reading.read_dirac", lambda path, time=None: None)  # a grid run
    m = L.snapshot_measure("run.nc", 1.5)
    assert m.kind == "snapshot" and m.mass == pytest.approx(1.0, rel=1e-13)
    r = L.invert(m, 20.0)
    k = np.arange(r["lmax"] + 1)
    h = 2 * np.pi / 128
    direct = np.array([np.sum(rho * h * np.exp(-1j * kk * theta)) for kk in k])
    assert np.allclose(r["exact"], direct, atol=1e-14)
    assert abs(r["lstar_measured"] - r["lstar_predicted"]) <= 1


def _minimal_archive(path, theta, rhos, times):
    from solvers.io.layout import REQUIRED_VARIABLES

    n = theta.size
    ds = xr.Dataset({"rho": (("time", "theta"), np.array(rhos)),
                     "cell_weight": (("theta",), np.full(n, 2 * np.pi / n)),
                     "step": (("time",), np.arange(len(times))),
                     "dt": (("time",), np.full(len(times), 0.1))},
                    coords={"time": list(times), "theta": theta})
    assert set(REQUIRED_VARIABLES) <= set(ds.variables)
    ds.to_netcdf(path, format="NETCDF4")


def test_command_on_an_archive_snapshot(tmp_path, capsys):
    theta = 2 * np.pi * np.arange(64) / 64
    rho0 = np.full(64, 1 / (2 * np.pi))
    rho1 = np.exp(4 * np.cos(theta - 2)) / (2 * np.pi * special.i0(4))
    path = tmp_path / "run.nc"
    _minimal_archive(path, theta, [rho0, rho1], [0.0, 7.0])
    out = tmp_path / "snap.nc"
    args = _parse(["--archive", str(path), "--time", "6", "--beta", "10", "--digits",
                   "--no-plot", "--table", "none", "-o", str(out)])
    assert args.func(args) == 0
    assert "snapshot t = 7" in capsys.readouterr().out
    ds = xr.load_dataset(out)
    assert ds.attrs["measure"] == "snapshot" and int(ds["lstar_measured"][0]) > 5
    args = _parse(["--archive", str(path), "-o", str(path)])
    assert args.func(args) == 2 and "input archive" in capsys.readouterr().err


def test_dataset_layout_and_netcdf_round_trip(tmp_path):
    ds = L.run_lemma51(L.make_measure("atoms", "S1"), [5.0, 20.0], digits=(32,))
    for name in ("error", "floor", "recovered_norm", "partial_sum_recovered", "injectivity_df"):
        assert ds[name].dims == ("beta", "degree")
    assert ds["p_error"].dims == ("beta", "precision", "refinement", "degree")
    assert list(ds["precision"].values) == [16, 32]
    assert ds["lstar_measured"].dtype == np.int32
    # per-beta lmax: NaN past it
    lm5 = int(ds["lmax"].sel(beta=5.0))
    assert np.all(np.isnan(ds["error"].sel(beta=5.0).values[lm5 + 1:]))
    path = tmp_path / "x.nc"
    ds.to_netcdf(path)
    back = xr.load_dataset(path)
    assert back.attrs["sphere"] == "S1" and "lstar_measured_definition" in back.attrs
    assert np.array_equal(back["p_lstar_measured"].values, ds["p_lstar_measured"].values)


def _parse(argv):
    parser = argparse.ArgumentParser(prog="meanfield")
    cli_lemma51.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["lemma51", *argv])


def test_command_writes_table_netcdf_and_png(tmp_path, capsys):
    out = tmp_path / "r.nc"
    args = _parse(["--sphere", "S2", "--measure", "symmetric", "--beta", "5", "20", "-o", str(out)])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "Lemma 5.1 check on S2" in text and "l*meas" in text and "[SHTns" not in text
    assert out.exists() and out.with_suffix(".png").stat().st_size > 10_000
    assert float(xr.load_dataset(out)["odd_fraction"].max()) < 1e-13


@pytest.mark.parametrize("argv, option", [
    (["--sphere", "S3"], "--sphere"),
    (["--beta", "-1"], "--beta"),
    (["--beta", "5", "5"], "--beta"),
    (["--measure", "cauchy"], "--measure"),
    (["--kappa", "0"], "--kappa"),
    (["--digits", "8"], "--digits"),
    (["--sphere", "S2", "--digits", "32"], "--digits"),
    (["--lmax", "1"], "--lmax"),
    (["--n", "8", "--digits"], "--n"),
    (["--time", "3"], "--time"),
    (["-o", "out.txt"], "--output"),
    (["--archive", "r.nc", "--sphere", "S2"], "file not found"),  # the archive's own sphere
    (["--table", "huge"], "--table"),
    (["--perturbation", "2"], "--perturbation"),
])
def test_command_user_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, option):
    monkeypatch.chdir(tmp_path)
    args = _parse(argv)
    assert args.func(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {option}") and "\n" not in err


def test_command_missing_archive(tmp_path, capsys):
    args = _parse(["--archive", str(tmp_path / "none.nc")])
    assert args.func(args) == 2
    assert "error: file not found" in capsys.readouterr().err
