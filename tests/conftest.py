"""Shared helpers: build run configurations in a line."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomli_w
from scipy.integrate import solve_ivp

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

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
# and as the [perceptron] section of a dict config (the paper's two ReLU units)
PAPER_S1_PERCEPTRON = {"activation": "relu", "a": PAPER_A.tolist(), "omega": PAPER_OMEGA.tolist()}
# the S^2 particle code's three ReLU units (runs/paper_s2_descent_relu.toml)
PAPER_S2_A = np.array([(-0.5603236705120601, 0.0453159888005312, -0.8270331585994134),
                       (-0.8953385535255107, 0.3575716967547427, -0.2655397451433223),
                       (0.4791171509290202, 0.151262291683874, -0.8646192658044355)])
PAPER_S2_OMEGA = np.array([-0.422016341580297, -1.1095875272656244, -0.3624772545416152])

# Two atoms of mass 1/2 at distance 1.2 on S^1 (beta = 2, descent, the Dirac state): their
# distance solves the ODE of :func:`two_atom_distance`, their midpoint 1.6 stays fixed.
TWO_ATOMS_S1 = {"domain": {"manifold": "S1", "resolution": 128},
                "model": {"beta": 2.0, "direction": "descent"},
                "initial": {"kind": "atoms", "centers": [1.0, 2.2], "weights": [0.5, 0.5]},
                "atoms": {"representation": "dirac"},
                "time": {"t_end": 3.0},
                "output": {"snapshot_interval": 1.0}}


def two_atom_distance(t: float) -> float:
    """docs/math.md §3.3: ``D' = -2 s m exp(beta cos D) sin D`` of :data:`TWO_ATOMS_S1`
    (``s = -1``, ``m = 1/2``, ``beta = 2``, ``D(0) = 1.2``) at time ``t``, to 1e-13."""
    return solve_ivp(lambda _, y: [2 * 0.5 * np.exp(2.0 * np.cos(y[0])) * np.sin(y[0])], (0, t),
                     [1.2], rtol=1e-13, atol=1e-14, method="DOP853").y[0, -1]


def config_sections(base: Mapping[str, Mapping[str, Any]] | Path, **keys: Any) -> dict[str, dict[str, Any]]:
    """A config's sections with some keys changed (a dict config of :func:`solvers.load_config`).

    Parameters
    ----------
    base : dict of sections or Path
        ``{"model": {"beta": 5.0}, ...}`` (not modified), or a TOML file (e.g. one of ``runs/``).
    **keys
        ``section__key=value`` sets a key (None removes it); ``section={...}`` replaces a whole
        section (None removes it).
    """
    doc = tomllib.loads(base.read_text()) if isinstance(base, Path) else copy.deepcopy(dict(base))
    for name, value in keys.items():
        section, _, key = name.partition("__")
        if key and value is None:
            doc.get(section, {}).pop(key, None)
        elif key:
            doc.setdefault(section, {})[key] = value
        elif value is None:
            doc.pop(section, None)
        else:
            doc[section] = dict(value)
    return doc


def toml_config(base: Mapping[str, Mapping[str, Any]] | Path, **keys: Any) -> str:
    """The TOML text of :func:`config_sections` ``(base, **keys)``."""
    return tomli_w.dumps(config_sections(base, **keys))


def short_s1_toml(t_end: float, snapshot_interval: float) -> str:
    """A short S^1 run as TOML: N = 64, beta = 2, the shifted kernel, two ReLU units (the default
    method); the tests of archive inputs, damaged archives and sweep inputs start from it."""
    return (f'\n[domain]\nresolution = 64\n\n[model]\nbeta = 2.0\nkernel = "exp_shifted"\n\n'
            f'[perceptron]\nactivation = "relu"\na = [[1.0, 0.0], [-0.6, -0.8]]\nomega = [0.6, -0.5]\n\n'
            f'[time]\nt_end = {t_end!r}\n\n[output]\nsnapshot_interval = {snapshot_interval!r}\n'
            f'progress = false\n')


def fixed_step_s1_toml(t_end: float, snapshot_interval: float, scheme: str = "spectral") -> str:
    """A small S^1 run with fixed steps as TOML: N = 64, beta = 2, the shifted kernel, pure
    attention, ``time.dt = 0.001`` on ``scheme``; the writer, kill and Ctrl-C tests start from it."""
    return (f'\n[domain]\nresolution = 64\n[model]\nbeta = 2.0\nkernel = "exp_shifted"\n[time]\n'
            f'scheme = "{scheme}"\nt_end = {t_end!r}\ndt = 0.001\n[output]\n'
            f'snapshot_interval = {snapshot_interval!r}\nprogress = false\n')


# four fixed spectral steps of a small S^1 run, and a pure-attention config with noise: what the
# writer tests hand to every writing command
WRITER_CONFIG_TOML = fixed_step_s1_toml(0.004, 0.002)
# pure-attention ascent on S^1 (beta = 5, N = 256): two atoms by t = 60 (the verdict tests)
DEMO_SMALL = """
[domain]
resolution = 256
[model]
beta = 5.0
direction = "ascent"
kernel = "exp_shifted"
[initial]
kind = "uniform"
modes = [[1, 1e-2], [3, 5e-3]]
[time]
t_end = 60.0
stop_when_stationary = true
stationary_tol = 1e-5
[output]
snapshot_interval = 5.0
"""


PURE_NOISE_TOML = ('[domain]\nmanifold = "S1"\nresolution = 64\n[model]\nbeta = 2.0\n'
                   'direction = "ascent"\nnoise = 1.0\n')


def writer_inputs(base: Path, betas: tuple = (1.0, 2.0)) -> Path:
    """The inputs of the writer tests in ``base``: ``c.toml`` (:data:`WRITER_CONFIG_TOML`),
    ``pure.toml`` (:data:`PURE_NOISE_TOML`), a finished run archive ``run.nc`` and a finished
    sweep folder ``sw`` over ``model.beta = betas`` (as given: ``(1, 2)`` is the sweep the
    command line's ``--param model.beta=1,2`` resumes)."""
    from solvers.cli.main import main
    from solvers.studies.sweep_data import sweep

    (base / "c.toml").write_text(WRITER_CONFIG_TOML)
    (base / "pure.toml").write_text(PURE_NOISE_TOML)
    assert main(["-q", "run", str(base / "c.toml"), "-o", str(base / "run.nc"), "--no-check"]) == 0
    sweep(str(base / "c.toml"), path=base / "sw", model__beta=list(betas))
    return base


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


def run_config(model: ModelParams, resolution: int, manifold: str = "S1",
               snapshot_interval: float | None = None, **time_kw) -> RunConfig:
    """A config of ``model`` on ``manifold`` (``resolution``: N on S^1, lmax on S^2) without
    progress output: ``time_kw`` are the [time] keys, snapshots every ``snapshot_interval``
    (default: at ``t_end`` only)."""
    time = TimeParams(**time_kw)
    interval = time.t_end if snapshot_interval is None else snapshot_interval
    return RunConfig(domain=DomainParams(manifold, resolution), model=model, time=time, atoms=AtomParams(),
                     output=OutputParams(snapshot_interval=interval, progress=False))


def make_config(n: int = 256, beta: float = 1.0, direction: str = "descent", attention: str = "unnormalized",
                kernel: str = "exp", percep: PerceptronParams | None = None, *, manifold: str = "S1",
                **time_kw) -> RunConfig:
    """A grid config (``scheme`` fv unless given, ``t_end`` 1) of the model: ``n`` cells on S^1
    (snapshots every 0.5 unless ``snapshot_interval`` is given), degree ``n`` on S^2 (snapshots
    at ``t_end`` only unless given); no perceptron unless ``percep``."""
    time_kw.setdefault("t_end", 1.0)
    time_kw.setdefault("scheme", "fv")  # the grid tests' scheme (the default is "auto")
    dim = 2 if manifold == "S1" else 3
    model = ModelParams(beta, direction, attention, kernel, percep or PerceptronParams("none", np.zeros((0, dim))))
    interval = time_kw.pop("snapshot_interval", 0.5 if manifold == "S1" else None)
    return run_config(model, n, manifold, interval, **time_kw)


def s2_config(lmax: int = 31, **kw) -> RunConfig:
    """:func:`make_config` on S^2 at degree ``lmax``."""
    return make_config(lmax, manifold="S2", **kw)


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

