"""The embedded Runge-Kutta pairs (:data:`solvers.timestepping.integrators.PAIRS`): order
conditions from rooted trees up to order 5, the observed orders of the main and embedded
solutions and of the local error estimate on an ODE with a known solution, and the SSP
coefficients of the SSP pair (main and embedded weights)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.model.params import INTEGRATOR_NAMES
from solvers.timestepping.integrators import INTEGRATORS, PAIRS, EmbeddedPair, embedded_step, get_integrator, rk_step
from solvers.timestepping.order_conditions import order_conditions, order_residuals, rooted_trees, tree_density


def test_rooted_trees_give_the_classical_conditions():
    """1, 1, 2, 4, 9 trees of orders 1..5 (17 conditions to order 5); the densities of the nine
    order-5 trees are those written out in Hairer, Norsett & Wanner I, Table II.2.2."""
    assert [len(rooted_trees(k)) for k in range(1, 6)] == [1, 1, 2, 4, 9]
    assert len(order_conditions(5)) == 17
    assert sorted(tree_density(t) for t in rooted_trees(5)) == [5, 10, 15, 20, 20, 30, 40, 60, 120]
    assert sorted(tree_density(t) for t in rooted_trees(4)) == [4, 8, 12, 24]
    # the order-5 conditions written out, against the trees' (A, b random)
    rng = np.random.default_rng(1)
    a, b = np.tril(rng.random((5, 5)), -1), rng.random(5)
    c = a.sum(axis=1)
    by_hand = np.abs([b @ c**4 - 1 / 5, b @ (c**2 * (a @ c)) - 1 / 10, b @ (c * (a @ c**2)) - 1 / 15,
                      b @ (c * (a @ a @ c)) - 1 / 30, b @ (a @ c) ** 2 - 1 / 20, b @ a @ c**3 - 1 / 20,
                      b @ a @ (c * (a @ c)) - 1 / 40, b @ a @ a @ c**2 - 1 / 60, b @ a @ a @ a @ c - 1 / 120])
    assert np.allclose(sorted(order_residuals(a, b, 5)[8:]), sorted(by_hand), rtol=1e-12, atol=0)


def test_every_table_holds_its_order_and_no_more():
    """Each table satisfies the conditions of its order and fails one of the next (the tree
    conditions tell order 4 from order 5: RK4 is not fifth order)."""
    for name, t in {**INTEGRATORS, **PAIRS}.items():
        assert max(t.order_residuals()) < 1e-14, name
        if t.order < 5:
            assert max(order_residuals(t.a, t.b, t.order + 1)) > 1e-3, name


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_pair_weights_hold_their_orders(name):
    pair = PAIRS[name]
    assert isinstance(pair, EmbeddedPair) and pair.citation
    assert (pair.order, pair.order_hat) == {"bs32": (3, 2), "dopri5": (5, 4), "ssprk3_2": (3, 2)}[name]
    assert max(order_residuals(pair.a, pair.b, pair.order)) < 1e-14
    assert max(order_residuals(pair.a, pair.b_hat, pair.order_hat)) < 1e-14
    # b_hat is exactly of order p_hat: the estimate is O(dt^(p_hat + 1)), not smaller
    assert max(order_residuals(pair.a, pair.b_hat, pair.order_hat + 1)) > 1e-5
    assert get_integrator(name) is pair and name in INTEGRATOR_NAMES


def test_integrator_names_match_the_registries():
    assert set(INTEGRATOR_NAMES) == set(INTEGRATORS) | set(PAIRS)
    with pytest.raises(ValueError, match="dopri5"):
        get_integrator("dopri")


def test_bad_pairs_are_refused():
    bs = PAIRS["bs32"]
    with pytest.raises(ValueError, match="embedded weights"):
        EmbeddedPair("x", 3, bs.a, bs.b, "", b_hat=bs.b_hat + 0.01, order_hat=2).validate()
    with pytest.raises(ValueError, match="no error estimate"):
        EmbeddedPair("x", 3, bs.a, bs.b, "", b_hat=bs.b, order_hat=2).validate()


def _radius(a: np.ndarray, b: np.ndarray) -> float:
    """Radius of absolute monotonicity (the SSP coefficient) of ``(A, b)``, Kraaijevanger, BIT 31
    (1991): the largest ``r`` with ``K (I + r K)^-1 >= 0`` and ``r K (I + r K)^-1 e <= e``,
    ``K = [[A, 0], [b^T, 0]]``, by bisection."""
    s = b.size
    k = np.zeros((s + 1, s + 1))
    k[:s, :s], k[s, :s] = a, b

    def ok(r: float) -> bool:
        p = k @ np.linalg.inv(np.eye(s + 1) + r * k)
        return p.min() >= -1e-13 and (r * p.sum(axis=1)).max() <= 1 + 1e-13

    lo, hi = 0.0, float(s)
    for _ in range(50):
        lo, hi = ((lo + hi) / 2, hi) if ok((lo + hi) / 2) else (lo, (lo + hi) / 2)
    return lo


def test_ssp_pair_is_ssp_in_both_weights():
    """ssprk3_2: the Shu-Osher form (validated against the Butcher table) has C = 2, and so do
    its Butcher weights and its embedded weights (Fekete et al.'s pair: the embedded solution is
    an SSP method too); the other pairs are not SSP (C = 0)."""
    pair = PAIRS["ssprk3_2"]
    assert pair.alpha is not None and pair.ssp_coefficient == 2.0 and pair.stage_plan is not None
    assert _radius(pair.a, pair.b) == pytest.approx(2.0, abs=1e-9)
    assert _radius(pair.a, pair.b_hat) == pytest.approx(2.0, abs=1e-9)
    assert _radius(PAIRS["dopri5"].a, PAIRS["dopri5"].b) == 0.0


def riccati(u: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
    """``y' = -y^2 cos t`` (autonomous with ``u = [y, t]``): ``y = 1 / (1 + sin t)`` for ``y(0) = 1``."""
    return np.array([-u[0] ** 2 * np.cos(u[1]), 1.0]), 0.0


def rotation(u: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
    """``x' = -y, y' = x``: ``(cos t, sin t)`` from ``(1, 0)``."""
    return np.array([-u[1], u[0]]), 0.0


def _run(name: str, steps: int, t_end: float = 10.0) -> tuple[float, float]:
    """Errors at ``t_end`` of the main and of the embedded solution of the rotation, each
    propagated by itself (a long rotation: DOPRI5's main error constant is so small that on
    ``y' = -y^2 cos t`` over ``[0, 1]`` its observed order still reads 5.4-6 at 1e-13)."""
    pair = PAIRS[name]
    u = v = np.array([1.0, 0.0])
    dt = t_end / steps
    for _ in range(steps):
        u = embedded_step(pair, rotation, u, dt, backend="numpy")[0]
        new, err, _ = embedded_step(pair, rotation, v, dt, backend="numpy")
        v = new - err
    exact = np.array([np.cos(t_end), np.sin(t_end)])
    return float(np.abs(u - exact).max()), float(np.abs(v - exact).max())


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_observed_orders_of_main_and_embedded_solutions(name):
    """Measured (steps 50 -> 100): bs32 3.05 / 2.12, dopri5 5.10 / 4.08, ssprk3_2 3.05 / 2.02."""
    pair = PAIRS[name]
    (m1, e1), (m2, e2) = _run(name, 50), _run(name, 100)
    assert np.log2(m1 / m2) == pytest.approx(pair.order, abs=0.25)
    assert np.log2(e1 / e2) == pytest.approx(pair.order_hat, abs=0.25)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_error_estimate_is_of_order_p_hat_plus_one(name):
    """One step from ``y(0)``: the estimate ``u_new - u_hat`` scales as ``dt^(p_hat + 1)`` and is the
    embedded solution's local error to leading order (the main one's is smaller)."""
    pair = PAIRS[name]
    u0 = np.array([1.0, 0.0])
    sizes, truth = [], []
    for dt in (0.1, 0.05):
        new, err, _ = embedded_step(pair, riccati, u0, dt, backend="numpy")
        sizes.append(abs(err[0]))
        truth.append(abs(new[0] - err[0] - 1.0 / (1.0 + np.sin(dt))))
    assert np.log2(sizes[0] / sizes[1]) == pytest.approx(pair.order_hat + 1, abs=0.3)
    assert sizes[1] == pytest.approx(truth[1], rel=0.3)


@pytest.mark.parametrize("name", sorted(PAIRS))
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_main_solution_is_rk_steps(name, backend):
    """The main solution of :func:`embedded_step` is bitwise :func:`rk_step`'s (the Shu-Osher
    stages of the SSP pair, the Butcher stages of the others)."""
    rng = np.random.default_rng(2)
    u = rng.random(20000)  # above FUSE_MIN_SIZE: the numba combination path

    def decay(x: np.ndarray, dt: float | None = None) -> tuple[np.ndarray, float]:
        return -x * (1.0 + x), 1.0

    new, err, rate = embedded_step(PAIRS[name], decay, u, 0.05, backend=backend)
    ref, rate_ref = rk_step(PAIRS[name], decay, u, 0.05, backend=backend)
    assert np.array_equal(new, ref) and rate == rate_ref
    assert 0 < np.abs(err).max() < 1e-3
