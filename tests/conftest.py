"""Shared helpers: build run configurations in a line."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.model.params import (
    AtomParams,
    DomainParams,
    ModelParams,
    OutputParams,
    PerceptronParams,
    RunConfig,
    TimeParams,
)

PAPER_A = np.array([[-0.9967456002240224, 0.0806114658969388], [-0.6198538201675943, -0.784717300448792]])
PAPER_OMEGA = np.array([0.6324575844117477, -0.4696753890279187])
# the same weights as the [perceptron] keys of a TOML config
PAPER_S1_WEIGHTS_TOML = f"a = {PAPER_A.tolist()}\nomega = {PAPER_OMEGA.tolist()}"


def ladder_s1_toml(activation: str = "gelu") -> str:
    """The S^1 refinement-ladder config of the converge tests: the paper's perceptron with
    ``activation``, beta = 5, shifted kernel, a two-mode start, N = 128, t_end = 2, fv with
    uniform faces (the converge tests' expected flags were read off those ladders; with kink
    faces the N = 80 ReLU bump peaks at 4.95 instead of 5.07 times the mean, under the atom
    contrast 5, and N = 80 reads no atom)."""
    return f"""
[domain]
manifold = "S1"
resolution = 128
[model]
beta = 5.0
direction = "descent"
kernel = "exp_shifted"
[perceptron]
activation = "{activation}"
{PAPER_S1_WEIGHTS_TOML}
[initial]
kind = "uniform"
modes = [[1, 0.5], [3, 0.3]]
[time]
t_end = 2.0
scheme = "fv"
kink_faces = false
"""


def paper_s1_toml(resolution: int = 64, beta: float = 1.0, activation: str = "relu",
                  t_end: float = 4.0, snapshot_interval: float = 2.0, extra: str = "",
                  time_keys: str = "") -> str:
    """A TOML config of the paper's S^1 setup (descent, shifted kernel, its two ReLU units);
    ``time_keys`` go into [time], ``extra`` is appended (keys of [output], or more sections)."""
    return (f'[domain]\nmanifold = "S1"\nresolution = {resolution}\n'
            f'[model]\nbeta = {beta}\ndirection = "descent"\nkernel = "exp_shifted"\n'
            f'[perceptron]\nactivation = "{activation}"\n{PAPER_S1_WEIGHTS_TOML}\n'
            f"[time]\nt_end = {t_end}\n{time_keys}\n[output]\nsnapshot_interval = "
            f"{snapshot_interval}\n{extra}")


def perceptron(activation: str = "relu", a=PAPER_A, omega=PAPER_OMEGA, b=None) -> PerceptronParams:
    a = np.asarray(a, dtype=float)
    omega = np.asarray(omega, dtype=float)
    b = np.zeros(omega.size) if b is None else np.asarray(b, dtype=float)
    return PerceptronParams(activation, a, omega, b)


def make_config(n: int = 256, beta: float = 1.0, direction: str = "descent", attention: str = "unnormalized",
                kernel: str = "exp", percep: PerceptronParams | None = None, **time_kw) -> RunConfig:
    time_kw.setdefault("t_end", 1.0)
    time_kw.setdefault("scheme", "fv")  # the grid tests' scheme (the default is "auto")
    snapshot_interval = time_kw.pop("snapshot_interval", 0.5)
    model = ModelParams(beta, direction, attention, kernel, percep or PerceptronParams())
    return RunConfig(domain=DomainParams("S1", n), model=model, time=TimeParams(**time_kw),
                     atoms=AtomParams(), output=OutputParams(snapshot_interval=snapshot_interval, progress=False))


@pytest.fixture
def grid():
    def _grid(n: int) -> np.ndarray:
        return 2 * np.pi * np.arange(n) / n
    return _grid


def random_atom_sequences(rng: np.random.Generator, dim: int, steps: int, seed: int):
    """``(t, mass, position)`` of atoms that drift, appear and end at random (S^1 angles when
    ``dim == 2``, else unit-ish 3-vectors): the fuzz input of the identity-linking tests.
    ``seed`` varies the drift (0.2 when divisible by 3) and rounds masses to one digit (ties)
    when divisible by 5."""
    n = int(rng.integers(0, 5))
    pos, mass = rng.normal(size=(n, 3)), rng.uniform(0.05, 0.5, n)
    for t in range(steps):
        if rng.random() < 0.25:  # an atom appears or ends
            if rng.random() < 0.5 and mass.size:
                keep = rng.random(mass.size) > 0.4
                pos, mass = pos[keep], mass[keep]
            else:
                pos, mass = np.vstack([pos, rng.normal(size=(1, 3))]), np.append(mass, 0.1)
        pos = pos + rng.normal(scale=0.05 if seed % 3 else 0.2, size=pos.shape)
        mass = np.round(mass * rng.uniform(0.9, 1.1, mass.size), 1 if seed % 5 == 0 else 12)
        position = np.arctan2(pos[:, 1], pos[:, 0]) % (2 * np.pi) if dim == 2 else pos
        yield float(t), mass, position

