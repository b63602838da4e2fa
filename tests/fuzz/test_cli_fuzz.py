"""Property-based fuzzing of the command line, as a hostile user would: every config key and
every command's options with values that must be refused. The property: exit status 2, one
line ``error: ...`` on stderr, no traceback, within a time limit (no hang).

The default run tries a modest number of examples per test (``MEANFIELD_FUZZ_EXAMPLES=N``: its
share of N, :mod:`fuzzing`); the ``slow`` versions (``pytest -m slow``) try at least 1,000 in
all. Examples run in-process (``solvers.cli.main``).
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzzing import BASE, assert_clean, budget, config_text, run_cli, toml_value, workdir

from solvers.cli.main import main
from solvers.model.config import (
    BETA_RANGE,
    CFL_MAX,
    DT_MIN_FRACTION,
    KAPPA_MAX,
    MASS_RANGE,
    MAX_RESOLUTION,
    MAX_SNAPSHOTS,
    MAX_STEPS_LIMIT,
    RATE_FACTOR_RANGE,
    T_END_MAX,
    WEIGHT_MAX,
)

HUGE = st.sampled_from([1e300, 1e308, math.inf, 10.0**20])
TINY = st.sampled_from([1e-300, 5e-324, 1e-30])
JUNK = st.one_of(st.booleans(), st.text(max_size=20), st.lists(st.integers(), max_size=3),
                 st.just(math.nan), st.just([[[]]]), st.just({"x": 1}))


def outside(lo: float, hi: float, lo_open: bool = False) -> st.SearchStrategy:
    """Numbers outside [lo, hi] (lo itself when lo_open), nan, inf, and values of wrong types."""
    below = st.floats(max_value=lo, exclude_max=not lo_open, allow_nan=False) if lo > -math.inf \
        else st.nothing()
    above = st.floats(min_value=hi, exclude_min=True, allow_nan=False) if hi < math.inf \
        else st.nothing()
    huge = HUGE if hi < math.inf else st.nothing()
    return st.one_of(below, above, st.just(math.nan), st.just(math.inf), st.just(-math.inf),
                     huge, JUNK)


def bad_integer(lo: int, hi: int) -> st.SearchStrategy:
    return st.one_of(st.integers(max_value=lo - 1), st.integers(min_value=hi + 1),
                     st.integers(min_value=2**63 - 2, max_value=2**70),
                     st.floats(allow_nan=True), JUNK.filter(lambda v: not isinstance(v, list)))


def bad_choice() -> st.SearchStrategy:
    return st.one_of(st.text(max_size=30).filter(lambda s: s not in {
        "S1", "S2", "exp", "exp_shifted", "ascent", "descent", "fv", "spectral", "softmax",
        "unnormalized", "relu", "uniform", "von_mises", "archive", "transport", "velocity"}),
        st.integers(), st.booleans(), st.floats())


BAD_VALUES: dict[str, st.SearchStrategy] = {
    "model.beta": st.one_of(outside(*BETA_RANGE), TINY),
    "initial.mass": st.one_of(outside(*MASS_RANGE, lo_open=True), TINY),
    "time.t_end": outside(0.0, T_END_MAX, lo_open=True),
    "time.rate_factor": st.one_of(outside(*RATE_FACTOR_RANGE), TINY),
    "time.dt": st.one_of(outside(DT_MIN_FRACTION * 0.5, 0.5), TINY),
    # BASE names no scheme: the default method (cells on S1) takes cfl <= 1; the fv limit 0.5
    # is tested with time.scheme = "fv" (tests/model/test_config.py, tests/cli/test_cli.py)
    "time.cfl": outside(0.0, CFL_MAX["auto"], lo_open=True),
    "time.stationary_tol": outside(0.0, math.inf, lo_open=True),
    "output.snapshot_interval": st.one_of(outside(0.5 / MAX_SNAPSHOTS, math.inf), TINY),
    "atoms.min_mass": outside(0.0, math.inf),
    "atoms.contrast": outside(0.0, math.inf, lo_open=True),
    "domain.resolution": bad_integer(16, MAX_RESOLUTION["S1"]),
    "time.max_steps": bad_integer(1, MAX_STEPS_LIMIT),
    "time.stationary_window": bad_integer(1, 10**9).filter(lambda v: not isinstance(v, int)
                                                           or v < 1),
    "domain.manifold": bad_choice(), "model.direction": bad_choice(),
    "model.attention": bad_choice(), "model.kernel": bad_choice(), "time.scheme": bad_choice(),
    "time.integrator": bad_choice(), "time.limiter": bad_choice(),
    "time.stationary_measure": bad_choice(), "initial.kind": bad_choice(),
    "perceptron.activation": bad_choice(),
    "time.stop_when_stationary": JUNK.filter(lambda v: not isinstance(v, bool)),
    "output.progress": JUNK.filter(lambda v: not isinstance(v, bool)),
    "perceptron.omega": st.one_of(st.lists(st.floats(), min_size=3, max_size=5),
                                  st.tuples(outside(-WEIGHT_MAX, WEIGHT_MAX), st.just(1.0))
                                  .map(list), JUNK.filter(lambda v: not isinstance(v, list))),
    "perceptron.a": st.one_of(st.lists(st.lists(st.floats(), min_size=3, max_size=3),
                                       min_size=2, max_size=2), JUNK),
    "initial.modes": st.one_of(st.lists(st.tuples(st.integers(max_value=0), st.floats())
                                        .map(list), min_size=1, max_size=2),
                               st.lists(st.tuples(st.integers(1, 5), outside(-WEIGHT_MAX,
                                                                             WEIGHT_MAX))
                                        .map(list), min_size=1, max_size=1)),
    "initial.kappas": st.one_of(st.lists(outside(0.0, KAPPA_MAX), min_size=1, max_size=1),
                                st.lists(st.just(1.0), min_size=2, max_size=3)),
    "output.path": st.sampled_from(["", " ", "/proc/x.nc", "/", "{tmp}/afile/x.nc", "{tmp}",
                                    "{tmp}/" + "y" * 5000 + ".nc"]),
}
VON_MISES = {"kind": "von_mises", "centers": [0.0]}
UNKNOWN = st.tuples(st.text(min_size=1, max_size=12).filter(str.isidentifier),
                    st.text(min_size=1, max_size=12).filter(str.isidentifier))


def refuse(argv: list[str]) -> None:
    """The command must be refused: exit 2, one ``error:`` line, no traceback, no hang."""
    rc, _, err = run_cli(argv)
    assert_clean(argv, rc, err, refused=True)


@st.composite
def bad_run(draw: st.DrawFn) -> tuple[dict, list[str]]:
    """A config with one refused value: in the file or as --set; sometimes an unknown key."""
    doc = json.loads(json.dumps(BASE))
    if draw(st.integers(0, 9)) == 0:
        section, key = draw(UNKNOWN)
        if section in doc and key in doc[section]:
            key += "_x"
        doc.setdefault(section, {})[key] = 1
        return doc, []
    key = draw(st.sampled_from(sorted(BAD_VALUES)))
    value = draw(BAD_VALUES[key])
    section, name = key.split(".")
    if section == "initial" and name != "kind" and name != "modes":
        doc["initial"] = dict(VON_MISES, kappas=[1.0])
    if draw(st.booleans()):
        doc.setdefault(section, {})[name] = value
        return doc, []
    return doc, ["--set", f"{key}={toml_value(value)}"]


def check_bad_run(case: tuple[dict, list[str]]) -> None:
    doc, extra = case
    with workdir() as tmp:
        cfg = tmp / "run.toml"
        text = config_text(doc).replace("{tmp}", str(tmp))
        cfg.write_text(text)
        extra = [a.replace("{tmp}", str(tmp)) for a in extra]
        path_given = "output.path" in " ".join(extra) or "\"path\" = " in text
        out = [] if path_given else ["-o", str(tmp / "o.nc")]
        argv = ["run", str(cfg), "--no-progress", *out, *extra]
        refuse(argv)


FUZZ_SLOW = settings(budget("cli_config", 800), derandomize=False)


@budget("cli_config", 25)
@given(bad_run())
def test_run_refuses_bad_configs(case: tuple[dict, list[str]]) -> None:
    check_bad_run(case)


@pytest.mark.slow
@FUZZ_SLOW
@given(bad_run())
def test_run_refuses_bad_configs_many(case: tuple[dict, list[str]]) -> None:
    check_bad_run(case)


# --------------------------------------------------------------------------- other commands

def number_text(bad: st.SearchStrategy) -> st.SearchStrategy:
    return bad.map(lambda v: repr(v) if isinstance(v, float) else str(v))


BAD_FLOAT = st.sampled_from(["1e300", "-1", "0", "nan", "inf", "1e-300", "-inf", "abc", ""])
BAD_KAPPA = st.sampled_from(["1e300", "-1", "nan", "inf", "-inf", "abc", ""])  # 0: valid
BAD_PERTURBATION = st.sampled_from(["1e300", "-1", "0", "1", "nan", "inf", "abc", ""])
BAD_INT = st.sampled_from(["0", "-5", "1000000000", "99999999999999999999", "x", "1.5", ""])
BAD_LIST = st.sampled_from(["1e-300,1e-301,1e-302", "1e300,2e300,3e300", "nan,1,2", ",,",
                            "-1,-2,-3", "a,b,c", "1,,x", "-0.5,1,2", "64,1e12,3"])


@st.composite
def bad_command(draw: st.DrawFn) -> list[str]:
    """One command with one refused option (files under ``{tmp}`` are filled in later)."""
    cfg = "{tmp}/run.toml"
    lemma = [["--beta", draw(BAD_FLOAT)], ["--kappa", draw(BAD_KAPPA)],
             ["--lmax", draw(BAD_INT)], ["--n", draw(BAD_INT)], ["--atoms", draw(BAD_INT)],
             ["--perturbation", draw(BAD_PERTURBATION)], ["--measure", draw(bad_choice().map(str))],
             ["--sphere", "S3"], ["--table", "wide"], ["--time", "1"]]
    times = BAD_LIST.filter(lambda v: not v.startswith("1e-300"))  # tiny times are valid
    particles = [["--n", draw(BAD_LIST)], ["--times", draw(times)], ["--dt", draw(BAD_FLOAT)],
                 ["--cfl", draw(BAD_FLOAT)], ["-o", "{tmp}/x.txt"]]
    converge = [["--dts", draw(BAD_LIST)], ["--resolutions", draw(BAD_LIST)],
                ["--t", draw(BAD_FLOAT)]]
    sweep = [["--param", f"model.beta={draw(BAD_LIST)}"], ["--param", "model.bta=1,2"],
             ["--param", "model.beta=1,1"], ["--workers", draw(BAD_INT)],
             ["--param", "model.beta=1,2", "--scheduler",
              draw(st.sampled_from(["bogus", "file:///etc/passwd", "tcp://", "tcp://h:99999",
                                    "http://x:1", "tcp://127.0.0.1:notaport"]))],
             ["--param", "model.beta=1,2", "-o", "{tmp}/afile"]]
    files = ["{tmp}/afile", "{tmp}/bin.nc", "{tmp}/truncated.nc", "{tmp}", "{tmp}/missing.nc"]
    choice = draw(st.sampled_from(["lemma51", "compare-particles", "converge", "sweep", "info",
                                   "plot", "animate", "resume", "junk"]))
    if choice == "lemma51":
        return ["lemma51", "--no-plot", "-o", "{tmp}/l.nc", *draw(st.sampled_from(lemma))]
    if choice == "compare-particles":
        return [choice, cfg, *draw(st.sampled_from(particles))]
    if choice == "converge":
        return [choice, cfg, "-o", "{tmp}/c", *draw(st.sampled_from(converge))]
    if choice == "sweep":
        return [choice, cfg, "-o", "{tmp}/sw", *draw(st.sampled_from(sweep))]
    if choice in ("info", "plot", "animate"):
        return [choice, draw(st.sampled_from(files))]
    if choice == "resume":
        return ["run", "--resume", draw(st.sampled_from(files))]
    return draw(st.lists(st.text(max_size=12).filter(lambda s: s not in ("-h", "--help")),
                         min_size=0, max_size=4))


def check_bad_command(argv: list[str]) -> None:
    with workdir() as tmp:
        (tmp / "run.toml").write_text(config_text(BASE))
        (tmp / "bin.nc").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 8)
        (tmp / "truncated.nc").write_bytes(_archive_bytes()[: 9000])
        argv = [a.replace("{tmp}", str(tmp)) for a in argv]
        refuse(argv)


_ARCHIVE: list[bytes] = []


def _archive_bytes() -> bytes:
    """A small real archive (made once)."""
    if not _ARCHIVE:
        with workdir() as tmp:
            (tmp / "run.toml").write_text(config_text(BASE))
            assert main(["run", str(tmp / "run.toml"), "--no-progress", "-o",
                         str(tmp / "a.nc")]) == 0
            _ARCHIVE.append((tmp / "a.nc").read_bytes())
    return _ARCHIVE[0]


@budget("cli_command", 25)
@given(bad_command())
def test_commands_refuse_bad_arguments(argv: list[str]) -> None:
    check_bad_command(argv)


@pytest.mark.slow
@settings(FUZZ_SLOW, max_examples=400)
@given(bad_command())
def test_commands_refuse_bad_arguments_many(argv: list[str]) -> None:
    check_bad_command(argv)
