"""The Sd point method (``domain.manifold = "Sd"``): the kernels of
:mod:`solvers.hypersphere.points`, the starting sample of :mod:`solvers.hypersphere.initial`,
the merge of the discretisation and the config keys.

References: a plain double loop over pairs for the velocity (docs/math.md §1, written from the
formulas, not from the code), a central finite difference of the energy along the flow for the
energy identity ``dE/dt = s * dissipation``, brute-force pair distances for the close pairs, the
closed forms of the zonal harmonics (Chebyshev, Legendre, orthogonality under the weight
``(1 - t^2)^{(d-3)/2}``) and the moments of the uniform measure for the sample. The dynamics (mass,
growth rates, the two-atom ODE) are in ``test_points_dynamics.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from solvers.hypersphere import points as pts
from solvers.core.point_merge import close_pairs, merge_close
from solvers.hypersphere.discretization import MERGE_RADIUS, PointsDiscretization
from solvers.hypersphere.initial import initial_points, uniform_points, zonal
from solvers.model.config import ConfigError, config_from_text
from solvers.model.kernel import kernel_log_shift
from solvers.model.params import InitialParams, ModelParams, PerceptronParams
from solvers.model.perceptron import draw_units, half_gradient


def sd_config_text(dim: int, points: int, *, model: str = "", perceptron: str = "",
                   initial: str = "", time: str = "t_end = 1.0", output: str = "") -> str:
    """The TOML of an Sd run: ``[domain]`` from ``dim`` and ``points``, the other sections'
    bodies as given (empty: the section left out)."""
    parts = [f'[domain]\nmanifold = "Sd"\ndim = {dim}\npoints = {points}']
    for name, body in (("model", model), ("perceptron", perceptron), ("initial", initial),
                       ("time", time), ("output", output)):
        if body:
            parts.append(f"[{name}]\n{body}")
    return "\n".join(parts) + "\n"


def random_unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ------------------------------------------------------------------ velocity (reference: a loop)
def _sigma(activation: str, s: float) -> float:
    """``sigma`` of docs/math.md §1's table, written out (the reference of the loop)."""
    if activation == "relu":
        return max(s, 0.0)
    if activation == "gelu":
        return s * 0.5 * (1.0 + math.erf(s / math.sqrt(2.0)))
    if activation == "tanh":
        return math.tanh(s)
    raise AssertionError(activation)


def loop_velocity(x: np.ndarray, w: np.ndarray, model: ModelParams) -> np.ndarray:
    """``s V(x_k)`` for every point, one pair at a time (docs/math.md §1): the attention
    ``c_K sum_j w_j e^{beta x_k.x_j} P x_j`` (softmax: over ``c_K sum_j w_j e^{beta x_k.x_j}``)
    plus ``sum_u omega_u sigma(a_u.x_k + b_u) P a_u``."""
    n, d = x.shape
    c = math.exp(-model.beta) if model.kernel == "exp_shifted" else 1.0
    p = model.perceptron
    sign = 1.0 if model.direction == "ascent" else -1.0
    out = np.zeros((n, d))
    for k in range(n):
        xk = x[k]
        proj = np.eye(d) - np.outer(xk, xk)
        att, f = np.zeros(d), 0.0
        for j in range(n):
            e = c * w[j] * math.exp(model.beta * float(xk @ x[j]))
            att += e * (proj @ x[j])
            f += e
        if model.attention == "softmax":
            att = att / f
        perc = np.zeros(d)
        for u in range(p.a.shape[0]):
            perc += p.omega[u] * _sigma(p.activation, float(p.a[u] @ xk) + p.b[u]) * (proj @ p.a[u])
        out[k] = sign * (att + perc)
    return out


def paper_like_model(d: int, activation: str, attention: str, kernel: str, direction: str,
                     beta: float = 3.0) -> ModelParams:
    """A model with 3 units of ``activation`` in ``d`` dimensions (unit-free ``a``, biases)."""
    rng = np.random.default_rng(11)
    a = rng.normal(size=(3, d))
    return ModelParams(beta=beta, direction=direction, attention=attention, kernel=kernel,
                       perceptron=PerceptronParams(activation=activation, a=a,
                                                   omega=rng.normal(size=3),
                                                   b=rng.normal(scale=0.3, size=3)))


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
@pytest.mark.parametrize("activation,direction", [("relu", "descent"), ("gelu", "ascent")])
def test_velocity_equals_a_loop_over_pairs_and_is_tangent(attention, kernel, activation, direction):
    """``velocity`` (blocked matrix products) equals the pair-by-pair sum of docs/math.md §1 in
    d = 6, for both attentions, both kernels and a perceptron with biases, to round-off; every
    velocity is tangent (``x.V = 0``). Unequal weights, so a sum over the wrong index fails."""
    rng = np.random.default_rng(3)
    d, n = 6, 9
    x = random_unit(rng, n, d)
    w = rng.uniform(0.2, 1.0, n)
    model = paper_like_model(d, activation, attention, kernel, direction)
    got = pts.velocity(x, w, model, kernel_log_shift(model))
    ref = loop_velocity(x, w, model)
    scale = np.max(np.abs(ref))
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(np.sum(got * x, axis=1), 0.0, atol=1e-14 * scale)


def test_velocity_blocks_cover_every_row(monkeypatch):
    """With row blocks smaller than the point count (``BLOCK`` lowered), the pair sums and the
    velocity are the one-block ones to round-off: no row is skipped or counted twice."""
    rng = np.random.default_rng(5)
    x = random_unit(rng, 37, 5)
    w = rng.uniform(0.1, 1.0, 37)
    model = paper_like_model(5, "tanh", "softmax", "exp", "ascent")
    whole = pts.velocity(x, w, model, 0.0)
    f_whole, F_whole = pts.attention_sums(x, x, w, model.beta, 0.0)
    monkeypatch.setattr(pts, "BLOCK", 37 * 4)  # 4 rows a block, the last one short
    np.testing.assert_allclose(pts.velocity(x, w, model, 0.0), whole, rtol=1e-14, atol=1e-15)
    f, F = pts.attention_sums(x, x, w, model.beta, 0.0)
    np.testing.assert_allclose(f, f_whole, rtol=1e-14)
    np.testing.assert_allclose(F, F_whole, rtol=1e-14, atol=1e-15)


def test_attention_sums_at_other_points_and_with_the_log_factor():
    """``attention_sums(x, y, w, beta, log_c)`` at points ``x`` that are not the measure's:
    ``f_k = e^{log_c} sum_j w_j e^{beta x_k.y_j}`` and ``F_k`` the same with ``y_j``, against a
    direct evaluation."""
    rng = np.random.default_rng(8)
    x, y = random_unit(rng, 5, 7), random_unit(rng, 11, 7)
    w = rng.uniform(0.0, 1.0, 11)
    beta, log_c = 4.0, -4.0
    f, F = pts.attention_sums(x, y, w, beta, log_c)
    e = np.exp(beta * np.einsum("kd,jd->kj", x, y) + log_c) * w
    np.testing.assert_allclose(f, e.sum(axis=1), rtol=1e-14)
    np.testing.assert_allclose(F, e @ y, rtol=1e-13, atol=1e-15)


def test_velocity_of_no_points_and_of_one_point():
    """No points: an empty velocity. One point, pure attention: no self-force (``P_x x = 0``),
    so a lone atom is stationary (docs/math.md §3.3)."""
    model = ModelParams(beta=2.0, direction="ascent")
    assert pts.velocity(np.zeros((0, 4)), np.zeros(0), model, 0.0).shape == (0, 4)
    x = random_unit(np.random.default_rng(0), 1, 4)
    np.testing.assert_allclose(pts.velocity(x, np.ones(1), model, 0.0), 0.0, atol=1e-15)


# ------------------------------------------------------------------ energy and dissipation
def _energy(x: np.ndarray, w: np.ndarray, model: ModelParams) -> float:
    return pts.energy_and_dissipation(x, w, model, kernel_log_shift(model))[0]


@pytest.mark.parametrize("attention", ["unnormalized", "softmax"])
@pytest.mark.parametrize("kernel", ["exp", "exp_shifted"])
@pytest.mark.parametrize("activation,direction", [("gelu", "descent"), ("tanh", "ascent")])
def test_energy_rate_is_sign_times_dissipation(attention, kernel, activation, direction):
    """``dE/dt = s * dissipation`` (docs/math.md §1) along the flow ``x_k' = s V(x_k)``, by a
    central difference of the energy over ``x_k(+-h) = (x_k +- h x_k')/|.|`` (a curve through
    the points with that velocity; the difference is even in h, so Richardson's extrapolation of
    h = 1e-4 and 2e-4 leaves O(h^4)): relative 1e-9 (smooth activations; the plain difference
    misses by ~1e-6 here, the h^2 term). Also: the energy is eq. 2.7's double sum, the transport
    each point's speed (direct sums)."""
    rng = np.random.default_rng(21)
    d, n = 5, 12
    x = random_unit(rng, n, d)
    w = rng.uniform(0.2, 1.0, n)
    model = paper_like_model(d, activation, attention, kernel, direction)
    log_c = kernel_log_shift(model)
    e, diss, speeds = pts.energy_and_dissipation(x, w, model, log_c)
    v = pts.velocity(x, w, model, log_c)

    def central(h: float) -> float:
        return (_energy(pts.normalise(x + h * v), w, model) -
                _energy(pts.normalise(x - h * v), w, model)) / (2 * h)

    rate = (4 * central(1e-4) - central(2e-4)) / 3  # Richardson: the h^2 term cancels
    assert rate == pytest.approx(model.sign * diss, rel=1e-9)
    k = np.exp(model.beta * x @ x.T + log_c)
    p = model.perceptron
    phi_sum = 0.0
    for u in range(p.a.shape[0]):  # v(x) = sum_u omega_u phi(a_u.x + b_u), phi' = 2 sigma
        s = x @ p.a[u] + p.b[u]
        cdf, pdf = special.ndtr(s), np.exp(-s * s / 2) / math.sqrt(2 * math.pi)
        phi = 2 * np.log(np.cosh(s)) if activation == "tanh" else s * s * cdf + s * pdf - cdf
        phi_sum = phi_sum + p.omega[u] * phi
    assert e == pytest.approx(w @ k @ w / (2 * model.beta) + 0.5 * w @ phi_sum, rel=1e-13)
    unsigned = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(speeds, unsigned, rtol=1e-13, atol=0)


def test_unnormalized_dissipation_is_the_squared_gradient():
    """Unnormalised attention: ``V = grad U``, so the dissipation is ``sum_k w_k |V_k|^2 >= 0``
    (the energy rises under ascent, falls under descent)."""
    rng = np.random.default_rng(2)
    x, w = random_unit(rng, 15, 8), rng.uniform(0.1, 1.0, 15)
    model = paper_like_model(8, "relu", "unnormalized", "exp", "descent")
    _, diss, _ = pts.energy_and_dissipation(x, w, model, 0.0)
    v = pts.velocity(x, w, model, 0.0)
    assert diss > 0
    assert diss == pytest.approx(w @ np.sum(v * v, axis=1), rel=1e-13)
    e0, d0, s0 = pts.energy_and_dissipation(np.zeros((0, 8)), np.zeros(0), model, 0.0)
    assert (e0, d0, s0.size) == (0, 0, 0)


def test_lipschitz_bound_bounds_the_field():
    """``lipschitz_bound`` bounds ``|V(x) - V(y)| / |x - y|`` of the velocity field of a fixed
    measure (attention and perceptron) over random nearby pairs ``x, y`` of ``S^4``, and is
    within a factor 4 of the largest ratio seen (the measure a single atom of mass 1, where the
    attention term ``M max|K''| / beta`` is nearly attained)."""
    rng = np.random.default_rng(4)
    d = 5
    pos, w = random_unit(rng, 1, d), np.ones(1)  # one atom: the attention's largest slope
    model = paper_like_model(d, "relu", "unnormalized", "exp", "ascent", beta=5.0)

    def field(z: np.ndarray) -> np.ndarray:
        _, F = pts.attention_sums(z, pos, w, model.beta, 0.0)
        return F - np.sum(F * z, axis=1, keepdims=True) * z + half_gradient(model.perceptron, z)

    x = random_unit(rng, 2000, d)
    y = pts.normalise(x + rng.normal(scale=1e-2, size=x.shape))
    ratio = np.linalg.norm(field(x) - field(y), axis=1) / np.linalg.norm(x - y, axis=1)
    bound = pts.lipschitz_bound(1.0, model, 0.0)
    assert np.max(ratio) <= bound
    assert np.max(ratio) > 0.25 * bound


# ------------------------------------------------------------------ close pairs, groups, merge
def test_close_pairs_and_groups_against_brute_force(monkeypatch):
    """``close_pairs`` returns exactly the pairs ``i < j`` at chord distance below the radius
    (brute force), in one block and in several; ``groups`` is single linkage (a chain of close
    pairs is one group)."""
    from solvers.core import point_merge

    rng = np.random.default_rng(9)
    for d, r in ((4, 0.25), (12, 1.0)):  # the k-d tree, then the Gram matrix (d > TREE_DIM)
        x = random_unit(rng, 300, d)
        dist = np.linalg.norm(x[:, None] - x[None], axis=2)
        want = {(i, j) for i, j in zip(*np.nonzero(dist < r)) if i < j}
        assert 0 < len(want) < 300 * 299 // 2
        assert {tuple(sorted(p)) for p in close_pairs(x, r).tolist()} == want
    assert d > point_merge.TREE_DIM
    monkeypatch.setattr(point_merge, "BLOCK", 300 * 7)
    got = close_pairs(x, r)
    assert len(got) == len(want) and {tuple(p) for p in got.tolist()} == want
    # a chain: consecutive points 0.8 r apart, the ends far apart, plus one point far away
    t = np.arange(5) * 0.8 * r
    chain = np.stack([np.cos(t), np.sin(t), np.zeros(5), np.zeros(5)], axis=1)
    far = np.array([[0.0, 0.0, 0.0, 1.0]])
    k, label = pts.groups(np.concatenate([chain, far]), 2 * math.sin(r / 2))
    assert k == 2 and len(set(label[:5])) == 1 and label[5] != label[0]
    assert close_pairs(x[:1], r).shape == (0, 2)


def test_merge_keeps_mass_and_first_moment_and_the_heaviest_identity():
    """Points closer than the merge radius become one: the group's mass, its mass-weighted
    mean direction, the identity of its heaviest member that has one; points farther apart are
    untouched (the very same arrays when nothing merges)."""
    rng = np.random.default_rng(6)
    base = random_unit(rng, 3, 5)
    near = pts.normalise(base[0] + rng.normal(scale=1e-4, size=(2, 5)))
    x = np.concatenate([base, near])
    w = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    ids = np.array([4, -1, 7, 9, -1])
    mx, mw, mids = merge_close(x, w, MERGE_RADIUS, ids)
    assert mw.size == 3 and mw.sum() == pytest.approx(w.sum(), rel=1e-15)
    g = np.argmin(np.linalg.norm(mx - base[0], axis=1))
    assert mw[g] == pytest.approx(0.5, rel=1e-15)
    moment = w[[0, 3, 4]] @ x[[0, 3, 4]]
    np.testing.assert_allclose(mx[g], moment / np.linalg.norm(moment), atol=1e-15)
    assert mids[g] == 9  # mass 0.25 beats 0.1; the id-less 0.15 does not count
    assert sorted(mids.tolist()) == [-1, 7, 9]
    same = merge_close(base, w[:3], MERGE_RADIUS, ids[:3])
    assert same[0] is base


# ------------------------------------------------------------------ zonal harmonics and sample
def test_zonal_is_chebyshev_legendre_and_orthogonal():
    """``Z_j``: ``cos(j arccos t)`` at d = 2, Legendre ``P_j`` at d = 3, ``Z_j(1) = 1``, and
    orthogonal in every d under the weight ``(1 - t^2)^{(d-3)/2}`` of ``x.e_d`` on ``S^{d-1}``,
    with the mean square ``1 / dim H_j`` of the addition theorem (quadrature, 1e-9)."""
    t = np.linspace(-1, 1, 41)
    for j in range(6):
        np.testing.assert_allclose(zonal(j, 2, t), np.cos(j * np.arccos(t)), atol=1e-14)
        np.testing.assert_allclose(zonal(j, 3, t), special.eval_legendre(j, t), atol=1e-14)
    for d in (4, 5, 7, 20):
        for j in range(5):
            assert zonal(j, d, np.array([1.0]))[0] == pytest.approx(1.0, abs=1e-14)
        wgt = lambda s: (1 - s * s) ** ((d - 3) / 2)
        norm = integrate.quad(wgt, -1, 1)[0]
        for i in range(4):
            for j in range(i + 1):
                val = integrate.quad(lambda s: zonal(i, d, s) * zonal(j, d, s) * wgt(s), -1, 1,
                                     epsabs=1e-13)[0] / norm
                if i != j:
                    assert abs(val) < 1e-10, (d, i, j, val)
                else:  # the addition theorem: the mean of Z_j^2 is 1 / dim(harmonics of degree j)
                    dim = math.comb(j + d - 1, d - 1) - math.comb(j + d - 3, d - 1)
                    assert val == pytest.approx(1.0 / dim, rel=1e-9), (d, j)


@pytest.mark.parametrize("d", [2, 3, 4, 7])
def test_uniform_sample_is_unit_and_has_the_uniform_moments(d):
    """The sample: unit vectors, deterministic (the same on every call), with the uniform
    measure's first and second moments (0 and I/d) within the sample's discrepancy (N = 4096:
    2e-3)."""
    x = uniform_points(4096, d)
    assert x.shape == (4096, d)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-15)
    np.testing.assert_array_equal(x, uniform_points(4096, d))
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=2e-3)
    np.testing.assert_allclose(x.T @ x / 4096, np.eye(d) / d, atol=2e-3)


def test_initial_points_modes_and_atoms():
    """``modes``: weights proportional to ``1 + sum amp Z_j(x.e_d)``, summing to the mass; a
    negative density is refused. ``kind = "atoms"``: the atoms (normalised, identities 0..) and
    the rest of the mass as the sample (identities -1); no sample when the atoms hold it all."""
    d, n = 5, 1000
    init = InitialParams(kind="uniform", modes=((2, 0.3), (3, -0.1)), mass=2.5)
    p = initial_points(init, n, d)
    x = uniform_points(n, d)
    np.testing.assert_array_equal(p.position, x)
    want = 1 + 0.3 * zonal(2, d, x[:, -1]) - 0.1 * zonal(3, d, x[:, -1])
    np.testing.assert_allclose(p.mass, 2.5 * want / want.sum(), rtol=1e-14)
    assert p.mass.sum() == pytest.approx(2.5, rel=1e-15)
    assert np.all(p.ids == -1)
    with pytest.raises(ValueError, match="negative"):
        initial_points(InitialParams(modes=((1, 1.5),)), n, d)
    atoms = InitialParams(kind="atoms", centers=((0, 0, 0, 0, 2.0), (1.0, 1, 0, 0, 0)),
                          weights=(0.25, 0.5), mass=1.0)
    p = initial_points(atoms, 100, d)
    assert p.mass.size == 102 and p.mass.sum() == pytest.approx(1.0, rel=1e-15)
    np.testing.assert_array_equal(p.ids, [-1] * 100 + [0, 1])
    np.testing.assert_allclose(p.position[-2:], [[0, 0, 0, 0, 1], [2**-0.5, 2**-0.5, 0, 0, 0]],
                               atol=1e-15)
    assert p.mass[:100].sum() == pytest.approx(0.25, rel=1e-14)
    whole = InitialParams(kind="atoms", centers=((1.0, 0, 0, 0, 0),), weights=(1.0,), mass=1.0)
    assert initial_points(whole, 100, d).mass.tolist() == [1.0]


# ------------------------------------------------------------------ config
def test_sd_domain_needs_points_and_dim_and_refuses_resolution():
    """On Sd: ``domain.points`` and ``domain.dim`` are required, ``domain.resolution`` is
    refused; on S1 ``domain.points`` and ``domain.dim`` are refused."""
    cfg = config_from_text(sd_config_text(6, 300))
    assert (cfg.domain.manifold, cfg.domain.d, cfg.domain.resolution) == ("Sd", 6, 300)
    for text, key in (('[domain]\nmanifold = "Sd"\ndim = 4\n', "domain.points"),
                      ('[domain]\nmanifold = "Sd"\npoints = 100\n', "domain.dim"),
                      ('[domain]\nmanifold = "Sd"\ndim = 4\npoints = 100\nresolution = 64\n',
                       "domain.resolution"),
                      ('[domain]\nmanifold = "S1"\npoints = 100\n', "domain.points"),
                      ('[domain]\nmanifold = "S1"\ndim = 2\n', "domain.dim")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            config_from_text(text)


def test_drawn_units_have_d_components_and_follow_the_seed():
    """``[perceptron] seed``: ``units`` (default d) units of d components, ``a_j`` unit vectors,
    ``b = 0``, ``omega`` scaled by ``scale``; the same seed gives the same units, another seed
    others; given ``a`` rows must have d components."""
    cfg = config_from_text(sd_config_text(7, 100, perceptron='activation = "relu"\nseed = 7'))
    p = cfg.model.perceptron
    assert p.a.shape == (7, 7) and p.omega.shape == (7,)
    np.testing.assert_allclose(np.linalg.norm(p.a, axis=1), 1.0, atol=1e-15)
    np.testing.assert_array_equal(p.b, 0.0)
    a, omega = draw_units(7, 7, 7, 1.0)
    np.testing.assert_array_equal(p.a, a)
    np.testing.assert_array_equal(p.omega, omega)
    again = config_from_text(sd_config_text(7, 100, perceptron='activation = "relu"\nseed = 7'))
    np.testing.assert_array_equal(again.model.perceptron.a, p.a)
    other = config_from_text(sd_config_text(7, 100, perceptron='activation = "relu"\nseed = 8'))
    assert not np.allclose(other.model.perceptron.a, p.a)
    more = config_from_text(sd_config_text(
        4, 100, perceptron='activation = "gelu"\nseed = 7\nunits = 12\nscale = 3.0'))
    q = more.model.perceptron
    assert q.a.shape == (12, 4) and q.activation == "gelu"
    np.testing.assert_allclose(q.omega, draw_units(7, 12, 4, 3.0)[1], rtol=1e-15)
    np.testing.assert_allclose(q.omega, 3.0 * draw_units(7, 12, 4, 1.0)[1], rtol=1e-15)
    with pytest.raises(ConfigError, match=r"perceptron\.a"):
        config_from_text(sd_config_text(4, 100, perceptron='activation = "relu"\n'
                                        'a = [[1.0, 0.0, 0.0]]\nomega = [1.0]'))
    with pytest.raises(ConfigError, match=r"perceptron\.a"):
        config_from_text(sd_config_text(4, 100, perceptron='activation = "relu"\nseed = 1\n'
                                        'a = [[1.0, 0.0, 0.0, 0.0]]'))


def test_three_component_units_config_builds_the_d3_point_method():
    """A config with 3-component units (the S^2 paper's) runs its model on ``manifold = "Sd"``,
    ``dim = 3``: the discretisation's sample lies on S^2 and its velocity is the kernel's."""
    units = ('activation = "relu"\n'
             'a = [[-0.5603236705120601, 0.0453159888005312, -0.8270331585994134], '
             '[-0.8953385535255107, 0.3575716967547427, -0.2655397451433223], '
             '[0.4791171509290202, 0.151262291683874, -0.8646192658044355]]\n'
             'omega = [-0.422016341580297, -1.1095875272656244, -0.3624772545416152]')
    cfg = config_from_text(sd_config_text(3, 500, model="beta = 5.0", perceptron=units))
    assert cfg.model.perceptron.a.shape == (3, 3)
    disc = PointsDiscretization(cfg)
    state = disc.prepare_state(None, None, fresh=True)
    p = disc.particles(state)
    assert p.position.shape == (500, 3) and p.mass.sum() == pytest.approx(1.0, rel=1e-15)
    v = disc.rhs(state)[0][:1500].reshape(500, 3)
    # the rhs renormalises the positions: round-off against the attention's e^beta scale
    np.testing.assert_allclose(v, pts.velocity(p.position, p.mass, cfg.model, 0.0), rtol=0,
                               atol=1e-13)
    assert np.max(np.abs(v)) > 1e-3
    assert disc.surface == pytest.approx(4 * math.pi, rel=1e-15)


@pytest.mark.parametrize("d, beta, log_c", [(2, 5.0, -5.0), (2, 25.0, 0.0), (3, 1.0, -1.0),
                                            (3, 5.0, 0.0)])
def test_series_paths_equal_the_pair_sums(d, beta, log_c):
    """The d = 2 Fourier series and the d = 3 multinomial series give the pair sums' ``f`` and
    ``F`` to round-off (relative to their largest value)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = rng.random(300)
    f0, F0 = pts.attention_sums(x, x, w, beta, log_c, "direct")
    f1, F1 = pts.attention_sums(x, x, w, beta, log_c, "fourier" if d == 2 else "series")
    assert np.abs(f1 - f0).max() <= 1e-13 * np.abs(f0).max()
    assert np.abs(F1 - F0).max() <= 1e-13 * np.abs(F0).max()


def test_drawn_units_are_the_particle_codes():
    """``perceptron.seed`` draws the units as the paper's particle code does: its seed 777 in
    d = 2 gives the two units of ``runs/demo.toml`` (copied from that code's run) bitwise."""
    import tomllib
    from pathlib import Path

    from solvers.model.perceptron import draw_units

    demo = tomllib.loads((Path(__file__).resolve().parents[2] / "runs" / "demo.toml").read_text())
    a, omega = draw_units(777, 2, 2, 1.0)
    assert a.tolist() == demo["perceptron"]["a"]
    assert omega.tolist() == demo["perceptron"]["omega"]
