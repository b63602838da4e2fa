"""``meanfield polish`` of Sd archives (solvers.studies.polish_points) and the tangent bases of
:mod:`solvers.core.point_atoms` in any dimension.

Real small Sd runs (d = 4, 5, N = 500, slow) are polished to max |grad U| <= 1e-10 near the
run's atoms; the stability read from ``hess_u_full`` is checked against a finite-difference
Hessian of U in normal coordinates; two antipodal atoms under pure attention in d = 6 have a
closed-form answer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import solvers
from solvers.cli.main import main
from solvers.core.point_atoms import AtomSystem, tangent_bases
from solvers.model.activations import get_activation
from solvers.model.config import load_config
from solvers.studies.polish_points import format_points_report, polish_points, polish_run

SD = """[domain]
manifold = "Sd"
dim = {dim}
points = {points}
[model]
beta = {beta}
direction = "{direction}"
attention = "{attention}"
kernel = "exp_shifted"
[perceptron]
activation = "{activation}"
{units}
[time]
t_end = {t_end}
stop_when_stationary = true
stationary_tol = 1e-5
[output]
snapshot_interval = {every}
"""


def sd_text(dim: int, points: int = 500, beta: float = 5.0, direction: str = "descent",
            attention: str = "unnormalized", activation: str = "relu", seed: int | None = 777,
            t_end: float = 100.0) -> str:
    return SD.format(dim=dim, points=points, beta=beta, direction=direction, attention=attention,
                     activation=activation, units="" if seed is None else f"seed = {seed}",
                     t_end=t_end, every=t_end / 4)


def old_bases(x: np.ndarray) -> np.ndarray:
    """The d = 2, 3 tangent bases as they were built before any d was supported."""
    if x.shape[1] == 2:
        return np.stack([-x[:, 1], x[:, 0]], axis=1)[:, None, :]
    axis = np.eye(3)[np.argmin(np.abs(x), axis=1)]
    e1 = axis - np.sum(axis * x, axis=1, keepdims=True) * x
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True)
    return np.stack([e1, np.cross(x, e1)], axis=1)


def unit_vectors(n: int, d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("d", [2, 3])
def test_tangent_bases_of_the_circle_and_the_sphere_are_unchanged(d):
    x = unit_vectors(50, d)
    x[0] = np.eye(d)[-1]  # a pole
    assert np.array_equal(tangent_bases(x), old_bases(x))


@pytest.mark.parametrize("d", [4, 5, 10, 50])
def test_tangent_bases_are_orthonormal_and_tangent_in_any_dimension(d):
    x = unit_vectors(20, d, seed=d)
    x[0], x[1] = np.eye(d)[0], -np.eye(d)[-1]  # coordinate axes
    b = tangent_bases(x)
    assert b.shape == (20, d - 1, d)
    assert np.abs(np.einsum("nqd,nd->nq", b, x)).max() < 1e-14
    assert np.abs(np.einsum("nqd,npd->nqp", b, b) - np.eye(d - 1)).max() < 1e-14


def potential(system: AtomSystem, x: np.ndarray, y: np.ndarray) -> float:
    """U at the point ``y`` (d,) of the atoms ``x`` (own masses included): ``(1/beta) sum_j
    c_K m_j e^{beta y.x_j} + (1/2) sum_k omega_k phi(a_k.y + b_k)``."""
    model = system.model
    u = system.c_k * float(system.m @ np.exp(model.beta * (x @ y))) / model.beta
    p = model.perceptron
    if p.n_units:
        u += 0.5 * float(get_activation(p.activation).phi(p.a @ y + p.b) @ p.omega)
    return u


def fd_hessian(system: AtomSystem, x: np.ndarray, i: int, basis: np.ndarray,
               h: float = 1e-4) -> np.ndarray:
    """The Hessian of U at atom i in normal coordinates (the exponential map along ``basis``
    (d - 1, d)) by central differences: the Riemannian Hessian."""
    q = basis.shape[0]

    def u(c: np.ndarray) -> float:
        w = c @ basis
        r = np.linalg.norm(w)
        y = x[i] if r == 0 else np.cos(r) * x[i] + np.sin(r) * w / r
        return potential(system, x, y)

    e = np.eye(q) * h
    out = np.zeros((q, q))
    for a in range(q):
        for b in range(q):
            out[a, b] = (u(e[a] + e[b]) - u(e[a] - e[b]) - u(e[b] - e[a]) + u(-e[a] - e[b])) / (4 * h * h)
    return out


def check_hessian_at_one_atom(system: AtomSystem, x: np.ndarray, i: int) -> None:
    bases = tangent_bases(x)
    exact = system.hess_u_full(x, bases)[i]
    fd = fd_hessian(system, x, i, bases[i])
    scale = np.abs(exact).max()
    assert np.abs(fd - exact).max() < 1e-5 * max(scale, 1.0)
    # the stability read off both: the same signs of the eigenvalues
    e_exact, e_fd = np.linalg.eigvalsh(0.5 * (exact + exact.T)), np.linalg.eigvalsh(0.5 * (fd + fd.T))
    far = np.abs(e_exact) > 1e-4 * scale
    assert np.array_equal(np.sign(e_exact[far]), np.sign(e_fd[far]))


def test_hess_u_full_matches_a_finite_difference_hessian_in_d5():
    """Three atoms with the seeded ReLU perceptron in d = 5: the tangential Hessian of U at
    an atom (own mass included) is the finite-difference one in normal coordinates (the
    Riemannian Hessian, at a stationary point or not)."""
    config = load_config(sd_text(5))
    system = AtomSystem(config.model, np.array([0.5, 0.3, 0.2]))
    x = unit_vectors(3, 5, seed=3)
    p = config.model.perceptron
    assert np.abs(x @ p.a.T + p.b).min() > 1e-2  # no ReLU corner within the FD stencil
    for i in range(3):
        check_hessian_at_one_atom(system, x, i)


def test_two_antipodal_atoms_in_d6_have_the_closed_form_answer():
    """Pure attention, two atoms of masses m1, m2: an antipodal pair is stationary; the
    tangential Hessian of U at atom 1 is ``c (m2 e^{-beta} - m1 e^{beta}) I`` (5-fold), the
    energy Hessian has 5 zero modes (rotations) and ``2 c e^{-beta} m1 m2`` 5-fold; under
    descent the atoms are maxima of U: not stable."""
    beta, m = 2.0, np.array([0.6, 0.4])
    config = load_config(sd_text(6, beta=beta, activation="none", seed=None))
    c = np.exp(-beta)  # the shifted kernel's factor
    x = unit_vectors(1, 6, seed=5)
    start = np.concatenate([x, -x + 0.01 * unit_vectors(1, 6, seed=6)])
    r = polish_points(config, m, start, remainder=0.0)
    assert r.converged and r.residuals[-1] <= 1e-10 and r.grad_u.max() <= 1e-10
    assert np.abs(r.x[0] + r.x[1]).max() < 1e-12
    for i, j in ((0, 1), (1, 0)):
        assert np.allclose(r.hess_u[i], c * (m[j] * np.exp(-beta) - m[i] * np.exp(beta)),
                           rtol=1e-12, atol=0)
    eig = np.sort(r.energy_hessian)
    assert np.abs(eig[:5]).max() < 1e-12
    assert np.allclose(eig[5:], 2 * c * np.exp(-beta) * m[0] * m[1], rtol=1e-10, atol=0)
    assert not r.stable and r.stability == "NOT stable"
    check_hessian_at_one_atom(AtomSystem(config.model, m), r.x, 0)
    assert "maximum" in format_points_report(r)


def test_softmax_attention_is_a_clear_error():
    config = load_config(sd_text(4, attention="softmax"))
    with pytest.raises(ValueError, match="softmax attention has no closed form"):
        polish_points(config, np.array([1.0]), unit_vectors(1, 4), remainder=0.0)


# ---------------------------------------------------------------- real runs (slow)
@pytest.fixture(scope="module", params=[(4, 777), (5, 2)], ids=["d4", "d5"])
def sd_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real Sd run (N = 500, descent with the seeded ReLU perceptron to t = 100)."""
    d, seed = request.param
    path = tmp_path_factory.mktemp("sd_polish") / f"sd{d}.nc"
    solvers.run(sd_text(d, seed=seed), path=path, force=True)
    return path


@pytest.mark.slow
def test_a_real_run_is_polished_near_its_atoms(sd_run: Path, tmp_path: Path):
    run = xr.open_dataset(sd_run)
    d = run.sizes["component"]
    result, out = polish_run(sd_run, tmp_path / "polished.nc")
    assert result.converged and result.residuals[-1] <= 1e-10
    assert result.grad_u.max() <= 1e-10
    assert result.x.shape[1] == d
    # the run's Dirac atoms, in the order polish reads them (alive columns of the last record)
    mass = run["dirac_mass"].values[-1]
    alive = np.isfinite(mass)
    assert np.array_equal(result.m, mass[alive])
    x_run = run["dirac_position"].values[-1][alive]
    moved = np.arccos(np.clip(np.sum(result.x * x_run, axis=1), -1, 1))
    assert moved.max() < 1e-3
    assert result.remainder == pytest.approx(float((run["rho"] * run["cell_weight"]).values[-1].sum()))
    # the archive: atoms as unit vectors in d components, the polish variables, atoms only
    ds = xr.open_dataset(out)
    assert ds["dirac_position"].dims == ("dirac", "component")
    assert ds["atom_position"].dims == ("t", "atom", "component")
    np.testing.assert_array_equal(ds["dirac_position"].values, result.x)
    np.testing.assert_array_equal(ds["dirac_hess_u"].values, result.hess_u)
    assert ds["dirac_hess_u"].shape == (result.m.size, d - 1)
    assert float(ds["rho"].values.max()) == 0.0
    assert "left out" in ds.attrs["polish_representation"]
    assert ds.attrs["polish_max_grad_u"] <= 1e-10
    # the stability: hess_u_full against a finite-difference Hessian of U at one atom
    config = load_config(str(run.attrs["config_text"]))
    system = AtomSystem(config.model, result.m)
    p = config.model.perceptron
    i = int(np.argmax(np.abs(result.x @ p.a.T + p.b).min(axis=1)))  # farthest from a corner
    check_hessian_at_one_atom(system, result.x, i)


@pytest.mark.slow
def test_the_cli_prints_the_table(sd_run: Path, tmp_path: Path, capsys):
    out = tmp_path / "cli.polished.nc"
    assert main(["polish", str(sd_run), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "|grad U|" in printed and "Hess U: min eig" in printed
    assert "left out" in printed and f"wrote {out}" in printed
    assert main(["info", str(out)]) == 0
    assert "Newton: converged" in capsys.readouterr().out
