"""Config reader: defaults, overrides, round trip, validation messages, resolution check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from solvers.model.config import (
    ConfigError,
    check_resolution,
    dump_toml,
    load_config,
    parse_override,
    tomllib,
)
from solvers.model.method import resolve
from solvers.model.params import RunConfig, flatten

RUNS = Path(__file__).resolve().parents[2] / "runs"

RELU = """
[perceptron]
activation = "relu"
a = [[1.0, 0.0], [0.0, 1.0]]
omega = [0.5, -0.25]
"""


def physics(config: RunConfig) -> dict:
    flat = flatten(config)
    flat.pop("text")
    return flat


def test_empty_config_gives_params_defaults() -> None:
    assert physics(load_config("")) == physics(resolve(RunConfig()))


def test_full_config_types() -> None:
    c = load_config(RELU + "[model]\nbeta = 5\n[initial]\nmodes = [[3, 0.01]]\n")
    assert c.model.beta == 5.0 and isinstance(c.model.beta, float)
    a = c.model.perceptron.a
    assert a.dtype == float and a.shape == (2, 2)
    assert c.model.perceptron.omega.shape == (2,) and c.model.perceptron.omega.dtype == float
    np.testing.assert_array_equal(c.model.perceptron.b, [0.0, 0.0])
    assert c.model.perceptron.n_units == 2
    assert c.initial.modes == ((3, 0.01),)


def test_s2_weights_are_3_vectors() -> None:
    c = load_config('[domain]\nmanifold = "S2"\nresolution = 64\n[perceptron]\n'
                    'activation = "gelu"\na = [[0.0, 0.0, 1.0]]\nomega = [1.0]\n')
    assert c.model.perceptron.a.shape == (1, 3)
    with pytest.raises(ConfigError, match=r"^perceptron\.a: .*length 3"):
        load_config('[domain]\nmanifold = "S2"\n' + RELU)


def test_von_mises_weights_default_equal_and_normalised() -> None:
    c = load_config('[initial]\nkind = "von_mises"\ncenters = [0.0, 1.0]\nkappas = [2, 3]\n')
    assert c.initial.weights == (0.5, 0.5)
    c = load_config('[initial]\nkind = "von_mises"\ncenters = [0.0, 1.0]\nkappas = [2, 3]\n'
                    'weights = [3, 1]\n')
    assert c.initial.weights == (0.75, 0.25)


@pytest.mark.parametrize("path", sorted(RUNS.glob("*.toml")), ids=lambda p: p.name)
def test_example_configs_are_valid(path: Path) -> None:
    config = load_config(path)
    assert check_resolution(config) <= config.domain.resolution // 3
    assert config.text == path.read_text()


def test_demo_config_contents() -> None:
    c = load_config(RUNS / "demo.toml")
    assert (c.model.beta, c.model.direction, c.model.kernel) == (5.0, "descent", "exp_shifted")
    assert c.model.perceptron.activation == "relu" and c.model.perceptron.a.shape == (2, 2)
    assert (c.domain.resolution, c.output.path) == (512, "output/demo.nc")
    assert c.time.stop_when_stationary and c.time.t_end >= 1000.0
    # the demo is the paper's S^1 descent setup (runs/paper_s1_descent.toml) with another path
    paper = load_config(RUNS / "paper_s1_descent.toml")
    assert flatten(c.model) == flatten(paper.model) and c.time == paper.time and c.domain == paper.domain


def test_load_from_path_and_string_path(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[model]\nbeta = 3\n")
    assert load_config(f).model.beta == 3.0
    assert load_config(str(f)).model.beta == 3.0
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.toml")


@pytest.mark.parametrize("item, expected", [
    ("model.beta=5", ("model", "beta", 5)),
    ("model.beta = 2.5", ("model", "beta", 2.5)),
    ("perceptron.omega=[1.0,-0.5]", ("perceptron", "omega", [1.0, -0.5])),
    ("time.scheme=spectral", ("time", "scheme", "spectral")),
    ('time.scheme="spectral"', ("time", "scheme", "spectral")),
    ("output.path=out/run 1.nc", ("output", "path", "out/run 1.nc")),
    ("output.path=a=b", ("output", "path", "a=b")),
    ("time.stop_when_stationary=true", ("time", "stop_when_stationary", True)),
])
def test_parse_override(item: str, expected: tuple) -> None:
    assert parse_override(item) == expected


@pytest.mark.parametrize("item", ["model.beta", "beta=5", "model.beta.x=1", "=5"])
def test_parse_override_rejects_malformed(item: str) -> None:
    with pytest.raises(ConfigError, match="section.key=value"):
        parse_override(item)


def test_overrides_apply_and_text_round_trips() -> None:
    c = load_config(RELU, ["model.beta=5", "perceptron.omega=[1.0, -0.5]",
                           "time.scheme=spectral", "time.cfl=0.9", "time.dt=0.01"])
    assert c.model.beta == 5.0 and c.time.scheme == "spectral" and c.time.dt == 0.01
    np.testing.assert_array_equal(c.model.perceptron.omega, [1.0, -0.5])
    assert "beta = 5" in c.text and 'scheme = "spectral"' in c.text
    again = load_config(c.text)
    assert physics(again) == physics(c)
    assert load_config(c.text, ["time.dt=none"]).time.dt is None


def test_no_overrides_keeps_text_verbatim() -> None:
    text = "# a comment\n[model]\nbeta = 2  # inline\n"
    assert load_config(text).text == text


def test_dump_toml_special_values() -> None:
    doc = {"output": {"path": 'a "quoted"\\path', "progress": False},
           "model": {"beta": float("inf")}, "time": {"dt": None}}
    assert tomllib.loads(dump_toml(doc)) == {"output": doc["output"], "model": doc["model"],
                                             "time": {}}


BAD = [
    ("[modle]\nbeta = 1", "modle", "did you mean [model]"),
    ("[model]\nbta = 1", "model.bta", "did you mean model.beta"),
    ("[output]\nstop_when_stationary = true", "output.stop_when_stationary", "time."),
    ("beta = 5", "beta", "model.beta"),
    ("[model]\nbeta = true", "model.beta", "finite number in [1e-06, 100000]"),
    ("[model]\nbeta = -1", "model.beta", "(got -1)"),
    ("[model]\nbeta = 0", "model.beta", "in [1e-06, 100000]"),
    ("[model]\nbeta = inf", "model.beta", "finite"),
    ('[model]\nbeta = "5"', "model.beta", "finite"),
    ("[time]\nt_end = nan", "time.t_end", "finite"),
    ("[time]\nt_end = 0", "time.t_end", "> 0"),
    ('[time]\nscheme = "fv"\ncfl = 0.6', "time.cfl", "0.5"),
    ('[time]\nscheme = "fv"\ncfl = 0', "time.cfl", "(0, 0.5]"),
    ("[time]\ncfl = 1.5", "time.cfl", "(0, 1]"),
    ('[time]\nscheme = "spectral"\ncfl = 1.2', "time.cfl", "(0, 1]"),
    ('[time]\nscheme = "fd"', "time.scheme", '"fv", "spectral"'),
    ('[time]\nintegrator = "rk5"', "time.integrator", '"rk4"'),
    ('[time]\nlimiter = "superbee"', "time.limiter", '"minmod"'),
    ("[time]\nmax_steps = 0", "time.max_steps", "integer >= 1"),
    ("[time]\nstop_when_stationary = 1", "time.stop_when_stationary", "true or false"),
    ("[time]\ndt = -0.1", "time.dt", "> 0"),
    ("[domain]\nresolution = 512.0", "domain.resolution", "integer"),
    ("[domain]\nresolution = 8", "domain.resolution", "[16, "),
    ('[domain]\nmanifold = "S3"', "domain.manifold", '"S1", "S2"'),
    ('[model]\ndirection = "ascnt"', "model.direction", 'did you mean "ascent"'),
    ('[model]\nattention = "linear"', "model.attention", "softmax"),
    ('[model]\nkernel = "gauss"', "model.kernel", "exp_shifted"),
    ('[perceptron]\nactivation = "sigmoid"', "perceptron.activation", "relu"),
    ("[perceptron]\na = [[1.0, 0.0]]\nomega = [1.0]", "perceptron.a", "activation"),
    ('[perceptron]\nactivation = "relu"\nomega = [1.0]', "perceptron.a", "required"),
    ('[perceptron]\nactivation = "relu"\na = [[1.0, 0.0, 0.0]]\nomega = [1.0]', "perceptron.a",
     "length 2"),
    ('[perceptron]\nactivation = "relu"\na = [1.0, 0.0]\nomega = [1.0]', "perceptron.a", "vectors"),
    ('[perceptron]\nactivation = "relu"\na = [[1.0, 0.0]]\nomega = [1.0, 2.0]', "perceptron.omega",
     "one entry per row"),
    ('[perceptron]\nactivation = "relu"\na = [[1.0, 0.0]]\nomega = [1.0]\nb = [0, 0]',
     "perceptron.b", "one entry per row"),
    ('[perceptron]\nactivation = "relu"\na = [[1.0, nan]]\nomega = [1.0]', "perceptron.a[0][1]",
     "finite"),
    ('[perceptron]\nactivation = "relu"\na = [[1.0, 0.0]]\nomega = [inf]', "perceptron.omega[0]",
     "finite"),
    ('[initial]\nkind = "gaussian"', "initial.kind", "von_mises"),
    ("[initial]\nmodes = [[0, 0.1]]", "initial.modes[0]", "positive integer"),
    ("[initial]\nmodes = [[1.5, 0.1]]", "initial.modes[0]", "positive integer"),
    ("[initial]\nmodes = [[2, 0.1, 3]]", "initial.modes[0]", "pair"),
    ("[initial]\nmass = 0", "initial.mass", "1e+06]"),
    ('[initial]\nkind = "von_mises"\ncenters = [0.0, 1.0]\nkappas = [1.0]', "initial.kappas",
     "one entry per centre"),
    ('[initial]\nkind = "von_mises"\ncenters = [0.0]\nkappas = [-1.0]', "initial.kappas[0]", ">= 0"),
    ('[initial]\nkind = "von_mises"\ncenters = [0.0, 1.0]\nkappas = [1, 1]\nweights = [0, 0]',
     "initial.weights", "positive sum"),
    ('[initial]\nkind = "von_mises"\ncenters = [0.0, 1.0]\nkappas = [1, 1]\nweights = [1, -1]',
     "initial.weights[1]", ">= 0"),
    ('[initial]\nkind = "von_mises"\nkappas = [1.0]', "initial.centers", "required"),
    ('[initial]\nkind = "von_mises"\ncenters = [0.0]\nkappas = [1.0]\nmodes = [[2, 0.1]]',
     "initial.modes", 'kind = "uniform"'),
    ('[initial]\nkind = "archive"', "initial.path", "required"),
    ("[output]\nsnapshot_interval = -1", "output.snapshot_interval", "> 0"),
    ("[output]\npath = \"\"", "output.path", "non-empty"),
    ("[atoms]\nmin_mass = -1", "atoms.min_mass", ">= 0"),
    ("[model]\nbeta = [", "config", "invalid TOML"),
    ("model = 5", "model", "section"),
]

S2 = '[domain]\nmanifold = "S2"\nresolution = 31\n'
S2_VMF = S2 + '[initial]\nkind = "von_mises"\nkappas = [1.0]\n'
BAD += [
    ('[domain]\nmanifold = "S2"\nresolution = 30', "domain.resolution", "lmax on S2: must be >= 31"),
    (S2 + "[initial]\nmodes = [[2, 0.1]]", "initial.modes[0]", "triple [l, m, amplitude]"),
    (S2 + "[initial]\nmodes = [[2, 3, 0.1]]", "initial.modes[0]", "0 <= m <= l"),
    (S2 + "[initial]\nmodes = [[2, -1, 0.1]]", "initial.modes[0]", "(got [2, -1])"),
    (S2 + "[initial]\nmodes = [[0, 0, 0.1]]", "initial.modes[0]", "1 <= l"),
    (S2 + "[initial]\nmodes = [[32, 0, 0.1]]", "initial.modes[0]", "lmax = 31"),
    (S2 + "[initial]\nmodes = [[2.0, 1, 0.1]]", "initial.modes[0]", "integers"),
    (S2 + "[initial]\nmodes = [[2, true, 0.1]]", "initial.modes[0]", "integers"),
    (S2 + "[initial]\nmodes = [[2, 1, nan]]", "initial.modes[0]", "as amplitude"),
    (S2 + "[initial]\nmodes = [[2, 1, 0.1, 4]]", "initial.modes[0]", "triple"),
    (S2_VMF + "centers = [[0.0, 0.0, 0.0]]", "initial.centers[0]", "nonzero 3-vector"),
    (S2_VMF + "centers = [[1.0, 0.0]]", "initial.centers", "length 3 on S2"),
    (S2_VMF + "centers = [1.0]", "initial.centers", "vectors"),
    (S2_VMF + "centers = [[1.0, 0.0, inf]]", "initial.centers[0][2]", "finite"),
    (S2 + '[perceptron]\nactivation = "relu"\na = [[1.0, 0.0]]\nomega = [1.0]', "perceptron.a",
     "length 3 on S2"),
    (S2 + '[time]\ncfl = 0.55', "time.cfl", "0.5"),
]


@pytest.mark.parametrize("text, key, hint", BAD, ids=[b[1] for b in BAD])
def test_bad_values_raise_one_line_naming_the_key(text: str, key: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert info.value.key == key
    assert message.startswith(f"{key}: ") and "\n" not in message
    assert hint in message


@pytest.mark.parametrize("override, key", [
    ("model.beta=-1", "model.beta"), ("model.bta=1", "model.bta"), ("modl.beta=1", "modl"),
    ("time.scheme=fd", "time.scheme"), ("perceptron.omega=[1.0]", "perceptron.omega"),
])
def test_bad_overrides(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{key.replace('.', '[.]')}: "):
        load_config(RELU, [override])


@pytest.mark.parametrize("beta, n_min", [(5.0, 75), (50.0, 192)])
def test_check_resolution_uses_the_bandwidth_table(beta: float, n_min: int) -> None:
    # docs/math.md §2: j*(5) = 25, j*(50) = 64 on S^1; the rule is j* <= N // 3
    jstar = n_min // 3
    ok = load_config(f"[model]\nbeta = {beta}\n[domain]\nresolution = {n_min}\n")
    assert check_resolution(ok) == jstar
    bad = load_config(f"[model]\nbeta = {beta}\n[domain]\nresolution = {n_min - 1}\n")
    with pytest.raises(ConfigError, match=rf"^domain\.resolution: .*j\* = {jstar}.*>= {n_min}"):
        check_resolution(bad)


def test_s2_initial_modes_and_centres() -> None:
    c = load_config(S2 + "[initial]\nmodes = [[3, 1, 0.01], [2, 0, -0.02]]\n")
    assert c.initial.modes == ((3, 1, 0.01), (2, 0, -0.02))
    assert c.domain.resolution == 31 and load_config(S2).initial.modes == ()
    c = load_config(S2_VMF.replace("[1.0]", "[1.0, 2.0]") + "centers = [[0, 0, 2], [3, 4, 0]]\n")
    np.testing.assert_allclose(c.initial.centers, [[0, 0, 1], [0.6, 0.8, 0]], rtol=1e-15)
    assert c.initial.kappas == (1.0, 2.0) and c.initial.weights == (0.5, 0.5)


@pytest.mark.parametrize("beta, lmax", [(1.0, 31), (50.0, 64)])
def test_check_resolution_on_s2_is_bandwidth_at_most_lmax(beta: float, lmax: int) -> None:
    # docs/math.md §2: S^2 j*(1) = 15, j*(50) = 64; the S^2 rule is j* <= lmax
    jstar = {1.0: 15, 50.0: 64}[beta]
    ok = load_config(S2.replace("31", str(lmax)) + f"[model]\nbeta = {beta}\n")
    assert check_resolution(ok) == jstar
    if lmax == jstar:
        bad = load_config(S2.replace("31", str(lmax - 1)) + f"[model]\nbeta = {beta}\n")
        with pytest.raises(ConfigError, match=r"^domain\.resolution: lmax = 63 .*j\* = 64.*"
                                              r"<= lmax on S2.*>= 64$"):
            check_resolution(bad)
