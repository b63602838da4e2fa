"""The Python API called with junk: configs of every type, RunConfigs with fields replaced by
junk, overrides with values the reader refuses, junk keyword arguments of run / resume /
open_run / simulate. Property: the call returns, or raises one of the project's documented
errors (``ConfigError``, ``ArchiveError``, ``FileNotFoundError`` for a missing file,
``FileExistsError`` for an archive there without ``overwrite``, ``PermissionError`` for a file
the system refuses, ``UnsafePathError``,
``ArchiveBusyError``); every file goes into a temporary folder with a one-line message; never a builtin exception
from inside, never a hang."""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from fuzzing import BASE, budget, config_text, time_limit
from hypothesis import given
from hypothesis import strategies as st
from test_cli_fuzz import BAD_VALUES

import solvers
from solvers.io.lock import ArchiveBusyError
from solvers.io.safe_paths import UnsafePathError

ALLOWED = (solvers.ConfigError, solvers.ArchiveError, FileNotFoundError, FileExistsError,
           PermissionError, UnsafePathError, ArchiveBusyError)
CONFIG = config_text(BASE)
JUNK = st.one_of(st.none(), st.integers(min_value=-(2**80), max_value=2**80),
                 st.floats(allow_nan=True), st.text(max_size=20), st.binary(max_size=10),
                 st.booleans(), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
                 st.just(object()), st.just(np.zeros((2, 2))), st.just(math.nan),
                 st.just(Path("{tmp}/missing/x.nc")), st.just(""))


def call(function, *args, **kwargs) -> None:
    """Call with a time limit; anything but the documented errors fails the property."""
    with time_limit():
        try:
            function(*args, **kwargs)
        except ALLOWED as err:
            text = str(err)
            assert text and len(text.splitlines()) == 1, repr(text)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("api-fuzz") / "run.nc"
    solvers.run(CONFIG, path=path)
    return path


@budget("api", 40)
@given(JUNK)
def test_load_config_of_junk(value: object) -> None:
    call(solvers.load_config, value)


FIELDS = [(s.name, f.name) for s in dataclasses.fields(solvers.RunConfig) if s.name != "text"
          for f in dataclasses.fields(s.type if not isinstance(s.type, str) else
                                      getattr(__import__("solvers.model.params", fromlist=["x"]),
                                              s.type))]


@budget("api", 60)
@given(st.sampled_from(FIELDS), JUNK)
def test_replaced_fields_are_checked(field: tuple[str, str], value: object) -> None:
    config = solvers.load_config(CONFIG)
    section, name = field

    def replaced() -> object:
        inner = dataclasses.replace(getattr(config, section), **{name: value})
        return solvers.load_config(dataclasses.replace(config, **{section: inner}))

    call(replaced)


@budget("api", 60)
@given(st.sampled_from(sorted(BAD_VALUES)).flatmap(
    lambda key: st.tuples(st.just(key), BAD_VALUES[key])))
def test_refused_overrides_raise_config_error(item: tuple[str, object]) -> None:
    key, value = item
    if key == "output.path":
        return  # a path: the API's path= argument, fuzzed below
    with time_limit(), pytest.raises(solvers.ConfigError):
        solvers.run(CONFIG, **{key.replace(".", "__"): value})


@budget("api", 60)
@given(st.sampled_from(["path", "overwrite", "progress", "force", "t_end", "source",
                        "rho0", "t0", "dt0", "step0", "open_run"]), JUNK)
def test_junk_arguments(archive: Path, name: str, value: object) -> None:
    config = solvers.load_config(CONFIG)
    rho = np.full(64, 1 / (2 * np.pi))
    tmp = archive.parent
    if isinstance(value, Path):
        value = Path(str(value).replace("{tmp}", str(tmp)))
    if name in ("path", "overwrite", "progress", "force"):
        if name == "path" and isinstance(value, (str, bytes)) and value.strip():
            value = tmp / "out" / (repr(value)[:12] + ".nc")  # a junk name, in the temporary folder
        elif name != "path":
            value = {name: value, "path": tmp / "out" / "x.nc"}
        else:
            value = {name: value}
        call(solvers.run, CONFIG, **(value if isinstance(value, dict) else {"path": value}))
    elif name == "t_end":
        copy = archive.with_name("copy.nc")
        shutil.copy(archive, copy)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0.5:
            value = 0.5  # a valid extension would run; the reached t_end is refused
        call(solvers.resume, copy, t_end=value)
    elif name == "source":
        call(solvers.resume, value, t_end=1.0)
    elif name == "open_run":
        call(solvers.open_run, value)
    elif name == "rho0":
        call(solvers.simulate, config, value)
    else:
        call(solvers.simulate, config, rho, **{name: value})
