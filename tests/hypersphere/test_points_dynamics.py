"""The Sd point method in time: mass, the linear growth rates about the uniform state, the
two-atom ODE.

References (docs/math.md §3): the mass is conserved to round-off (only positions move; merges add
masses); about the uniform density a zonal perturbation of degree j grows like ``exp(r_j t)``,
``r_j = s M j(j+d-2) lambda_j(beta) / (beta |S^{d-1}|)`` with ``lambda_j`` the Funk-Hecke
eigenvalue of ``spectral.kernel_eigenvalues`` (§3.2); two atoms of masses ``m1, m2`` at geodesic
distance D, pure attention and the unnormalised kernel, obey
``D' = -s (m1 + m2) exp(beta cos D) sin D`` in every dimension, each atom moving along their great
circle toward the other at ``s m_other exp(beta cos D) sin D`` (§3.3, the equal-mass form
``-2 s m ...``), integrated here by scipy's solve_ivp.

The runs go through the time loop (:func:`solvers.timestepping.loop.simulate`: the
discretisation, the integrator, merges, diagnostics); the tests at the end run the same checks
through :func:`solvers.run` and its archive.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from test_points import sd_config_text

import solvers
import spectral
from solvers import runner
from solvers.api import load_config
from solvers.core.point_merge import close_pairs
from solvers.hypersphere import points as pts
from solvers.hypersphere.discretization import MERGE_RADIUS, PointsDiscretization
from solvers.hypersphere.initial import zonal
from solvers.model.config import config_from_text
from solvers.timestepping.loop import simulate

PAPER_S2_UNITS = ('activation = "relu"\n'
                  'a = [[-0.5603236705120601, 0.0453159888005312, -0.8270331585994134], '
                  '[-0.8953385535255107, 0.3575716967547427, -0.2655397451433223], '
                  '[0.4791171509290202, 0.151262291683874, -0.8646192658044355]]\n'
                  'omega = [-0.422016341580297, -1.1095875272656244, -0.3624772545416152]')


def run_points(text: str):
    """``(discretisation, snapshots)`` of the time loop of an Sd config: every snapshot carries
    the whole point state (``snapshot.position.state``)."""
    cfg = load_config(text)
    snaps = []
    simulate(cfg, runner.fresh_start(cfg).position.rho, trackers=[snaps.append])
    return PointsDiscretization(cfg), snaps


def surface(d: int) -> float:
    return 2.0 * math.pi ** (d / 2.0) / math.gamma(d / 2.0)


# ------------------------------------------------------------------ mass
MASS_RTOL = 1e-14  # a few tens of ulps: the order of summation of 400 weights and of merges
LOOSE = "rtol = 1e-4"  # the mass is exact at any time accuracy: fewer steps


def check_mass(disc: PointsDiscretization, snaps: list, mass: float) -> list[int]:
    """Every snapshot's recorded mass and its points' summed weights equal ``mass`` to
    :data:`MASS_RTOL`; every weight is positive. Returns the point counts."""
    counts = []
    for s in snaps:
        assert s.diagnostics.mass == pytest.approx(mass, rel=MASS_RTOL, abs=0), s.t
        p = disc.particles(s.position.state)
        assert float(np.sum(p.mass)) == pytest.approx(mass, rel=MASS_RTOL, abs=0), s.t
        assert np.all(p.mass > 0), s.t
        assert np.all(np.isfinite(p.position))
        counts.append(p.count)
    return counts


def test_mass_is_exact_over_a_descent_run():
    """d = 4, N = 400, ReLU units drawn from a seed, descent (the paper's setup), mass 3: the
    mass of every snapshot equals the initial mass to round-off (1e-14 relative), no weight is
    negative (at a loose time tolerance: the mass does not depend on it)."""
    disc, snaps = run_points(sd_config_text(
        4, 400, model='beta = 5.0\ndirection = "descent"',
        perceptron='activation = "relu"\nseed = 7', initial="mass = 3.0",
        time=f"t_end = 0.3\n{LOOSE}", output="snapshot_interval = 0.1"))
    assert len(snaps) == 4
    check_mass(disc, snaps, 3.0)
    assert snaps[-1].diagnostics.energy < snaps[0].diagnostics.energy  # the points did move


def test_mass_is_exact_through_merges():
    """d = 4, N = 400, drawn ReLU units, ascent: the points collapse and merge (from 400 to a
    few dozen), and the mass of every snapshot is still the initial mass to 1e-14 relative,
    every weight positive; the merged heavy points are Dirac atoms with identities."""
    disc, snaps = run_points(sd_config_text(
        4, 400, model='beta = 5.0\ndirection = "ascent"',
        perceptron='activation = "relu"\nseed = 7', time=f"t_end = 0.8\n{LOOSE}",
        output="snapshot_interval = 0.2"))
    counts = check_mass(disc, snaps, 1.0)
    assert counts[0] == 400 and counts[-1] < 100
    last = snaps[-1].diagnostics
    assert last.dirac_mass.size > 0 and np.all(last.dirac_id >= 0)
    assert len(set(last.dirac_id.tolist())) == last.dirac_id.size
    x = disc.particles(snaps[-1].position.state).position
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)
    # no two points left closer than the merge radius after a step
    assert close_pairs(pts.normalise(x), MERGE_RADIUS).shape == (0, 2)


def test_three_component_units_run_on_sd_d3():
    """The S^2 paper's three ReLU units (3 components) run on ``manifold = "Sd"``,
    ``dim = 3``: the time loop reaches t_end with the mass kept and the energy falling."""
    disc, snaps = run_points(sd_config_text(
        3, 500, model='beta = 5.0\ndirection = "descent"', perceptron=PAPER_S2_UNITS,
        time="t_end = 0.5", output="snapshot_interval = 0.25"))
    assert snaps[-1].t == pytest.approx(0.5)
    check_mass(disc, snaps, 1.0)
    assert snaps[-1].diagnostics.energy < snaps[0].diagnostics.energy


# ------------------------------------------------------------------ growth rates (§3.2)
BETA = 5.0


def growth_rate(j: int, d: int, sign: float, beta: float = BETA, mass: float = 1.0) -> float:
    """docs/math.md §3.2, unnormalised attention: ``s M j(j+d-2) lambda_j / (beta |S^{d-1}|)``."""
    lam = spectral.kernel_eigenvalues(beta, [j], d)[0]
    return sign * mass * j * (j + d - 2) * lam / (beta * surface(d))


def test_growth_rate_table_of_the_docs():
    """The rate formula used below reproduces docs/math.md §3.2's table (S^1, S^2, and
    ``2/e`` at S^2, beta = 1, l = 1)."""
    assert growth_rate(3, 2, 1.0) == pytest.approx(18.596070304472049097, rel=1e-12)
    assert growth_rate(3, 3, 1.0) == pytest.approx(9.9780862449501068452, rel=1e-12)
    assert growth_rate(1, 3, 1.0, beta=1.0) == pytest.approx(2 / math.e, rel=1e-12)


def zonal_moment(disc: PointsDiscretization, state: np.ndarray, j: int) -> float:
    """``sum_k w_k Z_j(x_k . e_d)`` of a flat state."""
    p = disc.particles(state)
    return float(p.mass @ zonal(j, disc.d, pts.normalise(p.position)[:, -1]))


def perturbed(d: int, n: int, j: int, amp: float, direction: str = "ascent",
              t_end: float = 1.0) -> PointsDiscretization:
    return PointsDiscretization(config_from_text(sd_config_text(
        d, n, model=f'beta = {BETA}\ndirection = "{direction}"',
        initial=f"modes = [[{j}, {amp}]]", time=f"t_end = {t_end}")))


AMP = 1e-2
# the sample's quadrature error: about 1e-4 .. 1.4e-3 at N = 2048 for these (d, j)
RATE_RTOL = 3e-3


@pytest.mark.parametrize("d,j,direction", [(4, 1, "ascent"), (4, 2, "ascent"), (4, 2, "descent"),
                                           (4, 3, "ascent"), (5, 1, "ascent"), (5, 2, "ascent")])
def test_initial_growth_rate_of_a_zonal_mode(d, j, direction):
    """The uniform sample (N = 2048) with weights ``1 +- a Z_j`` (``initial.modes``, a = 1e-2):
    the time derivative of the zonal moment ``m_j = sum_k w_k Z_j(x_k.e_d)``, from the
    discretisation's rhs, is ``r_j m_j`` (§3.2) for the antisymmetric part
    ``D = (m_j(+a) - m_j(-a)) / 2``. The difference removes the sample's own moment (the
    unperturbed sample is not exactly stationary) and every even power of a, so D is linear in
    the perturbation to O(a^3). The remaining error is the sample's quadrature of the linearised
    operator: 3e-3 relative (seen: <= 1.4e-3). The descent case has ``-r_j``."""
    sign = 1.0 if direction == "ascent" else -1.0
    r = growth_rate(j, d, sign)
    parts = []
    for amp in (AMP, -AMP):
        disc = perturbed(d, 2048, j, amp, direction)
        state = disc.prepare_state(None, None, fresh=True)
        slope = disc.rhs(state)[0]
        h = 1e-7  # m_j along the straight line x + h x': the derivative to O(h^2)
        plus = zonal_moment(disc, state + h * slope, j)
        minus = zonal_moment(disc, state - h * slope, j)
        parts.append((zonal_moment(disc, state, j), (plus - minus) / (2 * h)))
    moment = (parts[0][0] - parts[1][0]) / 2
    slope = (parts[0][1] - parts[1][1]) / 2
    harmonics = math.comb(j + d - 1, d - 1) - math.comb(j + d - 3, d - 1)  # dim H_j
    assert moment == pytest.approx(AMP / harmonics, rel=0.05)  # a mean(Z_j^2): the mode is there
    assert slope / moment == pytest.approx(r, rel=RATE_RTOL)


@pytest.mark.slow
@pytest.mark.parametrize("d,j", [(4, 2), (4, 3), (5, 2), (5, 3)])
def test_zonal_mode_grows_like_the_linear_rate_over_time(d, j):
    """Through the time loop (dopri5, time.rtol = 1e-8): the uniform sample (N = 4096) with
    weights ``1 +- a Z_j`` (a = 1e-2), ascent, pure attention, beta = 5; the antisymmetric part
    D(t) of the zonal moment (see the test above) is ``D(0) exp(r_j t)`` at ``r_j t = 1/2`` and
    1, to 3e-3 relative (seen: 1.9e-3 at d = 4, j = 3, <= 8e-4 in the others; the sample is
    deterministic): the sample's quadrature error; the time error of the steps and the O(a^3)
    nonlinear terms are far below it."""
    r = growth_rate(j, d, 1.0)
    t_end = float(1.0 / r)
    series = []
    for amp in (AMP, -AMP):
        disc, snaps = run_points(sd_config_text(
            d, 4096, model=f'beta = {BETA}\ndirection = "ascent"',
            initial=f"modes = [[{j}, {amp}]]",
            time=f"t_end = {t_end!r}\nrtol = 1e-8\natol = 1e-12",
            output=f"snapshot_interval = {t_end / 2!r}"))
        assert len(snaps) == 3
        series.append([(s.position.t, zonal_moment(disc, s.position.state, j)) for s in snaps])
    times = [t for t, _ in series[0]]
    assert times[-1] > 0.9 * t_end
    moment = [(a - b) / 2 for (_, a), (_, b) in zip(*series)]
    for t, m in zip(times[1:], moment[1:]):
        assert m / moment[0] == pytest.approx(math.exp(r * t), rel=3e-3), t


# ------------------------------------------------------------------ two atoms (§3.3)
def two_atom_text(masses: tuple[float, float], direction: str, t_end: float,
                  beta: float = 2.0, d0: float = 1.2) -> str:
    """Two atoms at geodesic distance ``d0`` in d = 5 (a generic great circle), pure attention,
    unnormalised exp kernel, no sample (the atoms hold the whole mass)."""
    x1 = np.array([1.0, 2.0, 0.0, -1.0, 0.5])
    x1 /= np.linalg.norm(x1)
    u = np.random.default_rng(1).normal(size=5)
    u -= (u @ x1) * x1
    u /= np.linalg.norm(u)
    x2 = math.cos(d0) * x1 + math.sin(d0) * u
    return sd_config_text(
        5, 2, model=f'beta = {beta}\ndirection = "{direction}"',
        initial=f'kind = "atoms"\ncenters = {[x1.tolist(), x2.tolist()]}\n'
                f"weights = {list(masses)}\nmass = {sum(masses)!r}",
        time=f"t_end = {t_end}\nrtol = 1e-11\natol = 1e-13", output="snapshot_interval = 0.5")


def ode_distance(t: float, masses: tuple[float, float], sign: float, beta: float = 2.0,
                 d0: float = 1.2) -> float:
    """``D(t)`` of ``D' = -s (m1 + m2) exp(beta cos D) sin D``, to 1e-13."""
    m = sum(masses)
    if t == 0:
        return d0
    return solve_ivp(lambda _, y: [-sign * m * math.exp(beta * math.cos(y[0])) * math.sin(y[0])],
                     (0.0, t), [d0], rtol=1e-13, atol=1e-15, method="DOP853").y[0, -1]


@pytest.mark.parametrize("masses", [(0.5, 0.5), (0.3, 0.7)])
def test_two_atoms_follow_the_distance_ode_with_the_rhs(masses):
    """The discretisation's rhs integrated by solve_ivp (DOP853, rtol 1e-12), descent, d = 5:
    the distance equals the scalar ODE's at t = 0.5, 1, 2, 3 to 1e-9 (seen: 2e-13); each atom
    stays on the initial great circle and has covered the fraction ``m_other / (m1 + m2)`` of the
    change of D (the point dividing them so is fixed: the midpoint for equal masses)."""
    cfg = config_from_text(two_atom_text(masses, "descent", 3.0))
    disc = PointsDiscretization(cfg)
    state = disc.prepare_state(None, None, fresh=True)
    p0 = disc.particles(state)
    np.testing.assert_array_equal(p0.mass, masses)
    x0 = p0.position.copy()
    times = [0.5, 1.0, 2.0, 3.0]
    sol = solve_ivp(lambda _, y: disc.rhs(y)[0], (0.0, 3.0), state, t_eval=times, rtol=1e-12,
                    atol=1e-13, method="DOP853")
    plane = np.linalg.qr(x0.T)[0]  # (5, 2): the great circle's plane
    for k, t in enumerate(times):
        p = disc.particles(sol.y[:, k])
        np.testing.assert_array_equal(p.mass, masses)
        x = pts.normalise(p.position)
        dist = math.acos(float(np.clip(x[0] @ x[1], -1, 1)))
        want = ode_distance(t, masses, -1.0)
        assert dist == pytest.approx(want, abs=1e-9), t
        np.testing.assert_allclose(x - (x @ plane) @ plane.T, 0.0, atol=1e-10)
        moved = [math.acos(float(np.clip(x[i] @ x0[i], -1, 1))) for i in range(2)]
        total = want - 1.2
        assert moved[0] == pytest.approx(masses[1] / sum(masses) * total, abs=1e-9), t
        assert moved[1] == pytest.approx(masses[0] / sum(masses) * total, abs=1e-9), t


def test_two_atoms_through_the_time_loop():
    """The same ODE through the time loop (dopri5 at time.rtol = 1e-11), d = 5, descent, equal
    masses: the Dirac atoms' distance at every snapshot equals the ODE's to 1e-9 (seen: 6e-12),
    masses and identities kept."""
    masses = (0.5, 0.5)
    _, snaps = run_points(two_atom_text(masses, "descent", 3.0))
    assert len(snaps) == 7
    for s in snaps:
        dg = s.diagnostics
        np.testing.assert_array_equal(dg.dirac_mass, masses)
        np.testing.assert_array_equal(dg.dirac_id, [0, 1])
        x = np.asarray(dg.dirac_position).reshape(2, 5)
        dist = math.acos(float(np.clip(x[0] @ x[1], -1, 1)))
        assert dist == pytest.approx(ode_distance(s.t, masses, -1.0), abs=1e-9), s.t


def test_two_atoms_under_ascent_meet_and_merge_at_the_midpoint():
    """Ascent, d = 5, equal masses: the distance follows the ODE while the atoms are apart
    (1e-8), and once it falls below the merge radius (the ODE's time t_m) the two are one
    atom of mass 1 (to round-off) at their initial midpoint (1e-9), with the first's identity."""
    masses = (0.5, 0.5)
    chord = lambda t: 2 * math.sin(ode_distance(t, masses, 1.0) / 2)  # noqa: E731
    t_merge = next(t for t in np.arange(0.0, 5.0, 0.01) if chord(t) < MERGE_RADIUS)
    cfg = config_from_text(two_atom_text(masses, "ascent", 3.0))
    x0 = PointsDiscretization(cfg).particles(
        PointsDiscretization(cfg).prepare_state(None, None, fresh=True)).position
    mid = pts.normalise((x0[0] + x0[1])[None])[0]
    _, snaps = run_points(two_atom_text(masses, "ascent", round(t_merge + 1.0, 1)))
    apart = [s for s in snaps if s.t < t_merge - 0.05]
    assert len(apart) >= 2
    for s in apart:
        x = np.asarray(s.diagnostics.dirac_position).reshape(-1, 5)
        assert x.shape == (2, 5)
        dist = math.acos(float(np.clip(x[0] @ x[1], -1, 1)))
        assert dist == pytest.approx(ode_distance(s.t, masses, 1.0), abs=1e-8), s.t
    last = snaps[-1].diagnostics
    assert last.dirac_mass.tolist() == [1.0] and last.dirac_id.tolist() == [0]
    np.testing.assert_allclose(np.asarray(last.dirac_position).reshape(5), mid, atol=1e-9)


# ------------------------------------------------------------------ the public run
def test_public_run_records_the_mass_exactly_in_d4():
    """``solvers.run`` of d = 4, N = 400, drawn ReLU, ascent: every record of the archive holds
    the initial mass to 1e-14 relative, merges included."""
    ds = solvers.run(sd_config_text(4, 400, model='beta = 5.0\ndirection = "ascent"',
                                    perceptron='activation = "relu"\nseed = 7',
                                    time=f"t_end = 0.8\n{LOOSE}",
                                    output="snapshot_interval = 0.2"),
                     force=True)
    np.testing.assert_allclose(ds["mass"].values, 1.0, rtol=MASS_RTOL, atol=0)
    assert ds["mass"].size == 5  # t = 0, 0.2, ..., 0.8


def test_public_run_of_points_with_no_cluster():
    """``solvers.run`` of d = 4, N = 64 light points (each below atoms.min_mass), descent for a
    short time: no cluster, and the archive holds the mass."""
    ds = solvers.run(sd_config_text(4, 64, model='beta = 5.0\ndirection = "descent"',
                                    time="t_end = 0.01", output="snapshot_interval = 0.01"),
                     force=True)
    np.testing.assert_allclose(ds["mass"].values, 1.0, rtol=MASS_RTOL, atol=0)


def test_public_run_accepts_an_sd_runconfig():
    """``solvers.run`` takes a RunConfig as it takes the text: here an Sd config read by
    ``config_from_text`` (d = 2, where the archive takes points)."""
    cfg = config_from_text(sd_config_text(2, 64, model='beta = 5.0\ndirection = "ascent"',
                                          time="t_end = 0.1", output="snapshot_interval = 0.1"))
    ds = solvers.run(cfg, force=True)
    np.testing.assert_allclose(ds["mass"].values, 1.0, rtol=MASS_RTOL, atol=0)


def test_an_sd_run_is_not_resumed(tmp_path):
    """``solvers.resume`` of an Sd archive is refused with the reason (its archive keeps the
    atoms, not every point) and the fix, before anything is written."""
    path = tmp_path / "sd.nc"
    solvers.run(sd_config_text(4, 64, model='beta = 5.0\ndirection = "descent"',
                               time="t_end = 0.02", output="snapshot_interval = 0.01"),
                path=path, force=True)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="cannot be continued; run the config again"):
        solvers.resume(str(path), t_end=1.0)
    assert path.read_bytes() == before
