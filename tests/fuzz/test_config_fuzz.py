"""Random TOML trees around valid configs: wrong types, huge, negative, NaN and infinite numbers,
unknown keys and sections, missing keys, sections that are not tables, and raw text.

Properties: the reader returns a :class:`RunConfig` or raises :class:`ConfigError` (never
another exception); an accepted config passes :func:`validate_config` as itself (the same
fields), its run checks (``check_run``) raise only ConfigError, and its cost estimate is a
number.
"""

from __future__ import annotations

import copy
import math

from fuzzing import BASE, budget, config_text, time_limit
from hypothesis import given
from hypothesis import strategies as st

from solvers.model.config import SECTIONS, ConfigError, config_from_text, section_keys
from solvers.model.cost import estimate_cost
from solvers.model.limits import check_limits
from solvers.model.params import RunConfig, flatten
from solvers.model.validate import validate_config

VARIANTS = [
    BASE,
    {**BASE, "initial": {"kind": "von_mises", "centers": [1.0], "kappas": [4.0]}},
    {**BASE, "initial": {"kind": "uniform", "modes": [[2, 0.1]]}, "time": {
        "t_end": 0.5, "scheme": "fv"}},
    {"domain": {"manifold": "S2", "resolution": 31}, "model": {"beta": 1.0},
     "time": {"t_end": 0.5}, "output": {"snapshot_interval": 0.25}},
    {**BASE, "atoms": {"representation": "dirac"}, "initial": {
        "kind": "atoms", "centers": [0.5, 2.0], "weights": [0.3, 0.2], "mass": 1.0}},
]
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.sampled_from([0, -1, 1e300, -1e300, 5e-324, math.inf, -math.inf, math.nan,
                     2**63, 10**30, 0.5, 1.0, 2.0, 64, 512]))
SCALARS = st.one_of(NUMBERS, st.booleans(), st.text(max_size=12),
                    st.sampled_from(["S1", "S2", "fv", "auto", "lagrangian", "spectral",
                                     "relu", "none", "dirac", "grid", "uniform", "von_mises",
                                     "archive", "atoms", "softmax", "exp", "land", ""]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=12)
NAMES = st.sampled_from(sorted(SECTIONS) + ["junk", "Model", ""])


@st.composite
def mutated(draw: st.DrawFn) -> dict:
    """A valid variant with 1-4 random edits."""
    doc = copy.deepcopy(draw(st.sampled_from(VARIANTS)))
    for _ in range(draw(st.integers(1, 4))):
        section = draw(NAMES)
        op = draw(st.sampled_from(["set", "set", "set", "delete", "unknown", "scalar"]))
        if op == "scalar":
            doc[section] = draw(SCALARS)
            continue
        table = doc.setdefault(section, {})
        if not isinstance(table, dict):
            continue
        keys = section_keys(section) if section in SECTIONS else ["x"]
        key = draw(st.sampled_from(keys)) if op != "unknown" else draw(st.text(min_size=1,
                                                                                max_size=8))
        if op == "delete":
            table.pop(key, None)
        else:
            table[key] = draw(VALUES)
    return doc


def check(text: str) -> None:
    with time_limit():
        try:
            config = config_from_text(text)
        except ConfigError:
            return
        assert isinstance(config, RunConfig)
        again = validate_config(config)
        left, right = flatten(config), flatten(again)
        left.pop("text"), right.pop("text")
        assert left == right, f"validate_config changed the config of {text!r}"
        try:
            check_limits(config)
        except ConfigError:
            return
        total = estimate_cost(config).total_s
        assert total >= 0 and not math.isnan(total)


@budget("config", 150)
@given(mutated())
def test_config_trees_are_read_or_refused_with_a_config_error(doc: dict) -> None:
    check(config_text(doc))


@budget("config", 50)
@given(st.one_of(st.text(max_size=200), st.text(alphabet="[]=\"'.,#\n abc123", max_size=200)))
def test_raw_text_is_read_or_refused(text: str) -> None:
    check(text)
