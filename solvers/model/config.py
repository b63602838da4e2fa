"""Read and validate a run configuration (TOML) into a :class:`~solvers.model.params.RunConfig`.

Sections and keys are exactly the fields of :mod:`solvers.model.params` (``[perceptron]`` fills
``model.perceptron``). Every problem raises :class:`ConfigError`, whose message is one line
naming the offending key and how to fix it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from solvers.model.combinations import check_combinations
from solvers.model.limits import (  # noqa: F401  (public names re-exported)
    ANGLE_MAX,
    ATOL_RANGE,
    BETA_RANGE,
    DT_MIN_FRACTION,
    KAPPA_MAX,
    MASS_RANGE,
    MAX_RESOLUTION,
    MAX_SNAPSHOTS,
    MAX_STEPS_LIMIT,
    MIN_RESOLUTION,
    NOISE_MAX,
    RATE_FACTOR_RANGE,
    RTOL_RANGE,
    T_END_MAX,
    WEIGHT_MAX,
    check_limits,
    check_resolution,
    check_run,
    estimated_memory,
)
from solvers.model.method import resolve
from solvers.model.config_domain import (  # noqa: F401  (ACTIVATIONS, S2_MIN_LMAX re-exported)
    ACTIVATIONS,
    S2_MIN_LMAX,
    _domain,
    _perceptron,
    _scalars,
)
from solvers.model.params import (
    ATOM_METHODS,
    ATTENTIONS,
    DIRECTIONS,
    INTEGRATOR_NAMES,
    KERNELS,
    LIMITER_NAMES,
    MANIFOLDS,
    REPRESENTATIONS,
    SNAPSHOT_MODES,
    AtomParams,
    DomainParams,
    InitialParams,
    ModelParams,
    OutputParams,
    RETIRED,
    PerceptronParams,
    RunConfig,
    TimeParams,
)
from solvers.model.validators import (  # noqa: F401  (public names re-exported)
    ConfigError,
    _positive,
    boolean,
    bounded,
    choice,
    clip,
    dump_toml,
    integer,
    matrix,
    number,
    number_list,
    show,
    string,
    toml_value,
)

INITIAL_KINDS = ("uniform", "von_mises", "archive", "atoms")
INTEGRATORS = INTEGRATOR_NAMES
LIMITERS = LIMITER_NAMES
CFL_MAX = {"auto": 1.0, "fv": 0.5, "spectral": 1.0, "lagrangian": 1.0}
# naming one of these (or [atoms] representation) without time.scheme keeps the finite-volume
# grid they tune, as before the default method existed
FV_KNOBS = ("limiter", "cfl_floor", "kink_faces")
# the S^1 Dirac state's limiter when [atoms] representation = "dirac" is given and time.limiter
# is not (docs/methods.md §6.2, the Dirac state): weno5, whose diffuse density gives the same
# demo atoms at N = 128 ... 1024 to 8e-4 ("mc": 2.3e-3)
DIRAC_S1_LIMITER = "weno5"
# Limits that follow from the numerics and the machine (docs/math.md; the README lists them).
KIND_KEYS = {"uniform": ("modes",), "von_mises": ("centers", "kappas", "weights"),
             "archive": ("path", "time"), "atoms": ("centers", "weights", "modes")}

SECTIONS: dict[str, type] = {"domain": DomainParams, "model": ModelParams, "perceptron":
                             PerceptronParams, "initial": InitialParams, "time": TimeParams,
                             "atoms": AtomParams, "output": OutputParams}


# keys read into another field: domain.points is Sd's domain.resolution (its number of points);
# perceptron.units/seed/scale draw perceptron.a and perceptron.omega (:func:`_drawn_units`)
ALIAS_KEYS = {"domain": ("points",), "perceptron": ("units", "seed", "scale")}


def section_keys(section: str) -> list[str]:
    """Valid keys of a config section (the dataclass field names, and :data:`ALIAS_KEYS`)."""
    return [f.name for f in fields(SECTIONS[section]) if f.name != "perceptron"] + \
        list(ALIAS_KEYS.get(section, ()))


def _unknown(section: str, key: str | None = None) -> ConfigError:
    """Error for an unknown section (key None) or key, naming the closest valid one."""
    name = section if key is None else key
    valid = list(SECTIONS) if key is None else section_keys(section)
    close = difflib.get_close_matches(name, valid, n=1)
    home = [s for s in SECTIONS if name in section_keys(s)]
    if close:
        hint = "did you mean " + (f"[{close[0]}]?" if key is None else f"{section}.{close[0]}?")
    elif home:
        hint = f"it belongs in [{home[0]}]: {home[0]}.{name}"
    else:
        hint = "valid " + ("sections" if key is None else "keys") + ": " + ", ".join(valid)
    return ConfigError(name if key is None else f"{section}.{key}",
                       f"unknown {'section' if key is None else 'key'} ({hint})")


def check_keys(doc: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` for unknown sections or keys, with the closest valid name."""
    for name, table in doc.items():
        if name not in SECTIONS:
            raise _unknown(name)
        if not isinstance(table, dict):
            raise ConfigError(name, f"must be a section [{name}] (got {show(table)})")
        for key in table:
            if f"{name}.{key}" in RETIRED:
                raise ConfigError(f"{name}.{key}", f"is retired: {RETIRED[f'{name}.{key}']}")
            if key not in section_keys(name):
                raise _unknown(name, key)


def parse_override(item: str) -> tuple[str, str, Any]:
    """Split ``"section.key=value"``; the value is read as TOML, else kept as a bare string."""
    lhs, sep, raw = item.partition("=")
    section, dot, key = lhs.strip().partition(".")
    if not sep or not dot or not section or not key or "." in key:
        raise ConfigError(lhs.strip() or "--set",
                          f"expected section.key=value, e.g. model.beta=5 (got {item!r})")
    raw = raw.strip()
    try:
        doc = tomllib.loads(f"v = {raw}")
        value = doc["v"] if len(doc) == 1 else raw
    except (ValueError, RecursionError):  # TOMLDecodeError; a 5000-digit integer; deep nesting
        value = raw
    return section, key, value


def apply_overrides(doc: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` overrides to a parsed document (in place; returns it).

    A bare ``none`` removes a key whose default is None (e.g. ``time.dt=none``).
    """
    for item in overrides:
        section, key, value = parse_override(item)
        if f"{section}.{key}" in RETIRED:
            raise ConfigError(f"{section}.{key}", f"is retired: {RETIRED[f'{section}.{key}']}")
        if section not in SECTIONS or key not in section_keys(section):
            raise _unknown(section, key if section in SECTIONS else None)
        table = doc.setdefault(section, {})  # a table: check_keys ran before
        default = next((f.default for f in fields(SECTIONS[section]) if f.name == key), 0)
        if value == "none" and default is None:
            table.pop(key, None)
        else:
            table[key] = value
    return doc


def _model(t: dict[str, Any], perceptron: PerceptronParams) -> ModelParams:
    return ModelParams(perceptron=perceptron, **_scalars("model", t, {
        "beta": bounded(*BETA_RANGE), "direction": lambda k, v: choice(k, v, DIRECTIONS),
        "attention": lambda k, v: choice(k, v, ATTENTIONS),
        "kernel": lambda k, v: choice(k, v, KERNELS),
        "noise": lambda k, v: number(k, v, lo=0.0, hi=NOISE_MAX, lo_open=False)}))


def _modes(value: Any, domain: DomainParams) -> tuple:
    """S^1: ``[[k, amplitude], ...]``, 1 <= k <= N // 2 (the grid's highest mode, N =
    ``domain.resolution``); S^2: ``[[l, m, amplitude], ...]``, 0 <= m <= l <= lmax."""
    s2, lmax = domain.manifold == "S2", domain.resolution
    form = "a triple [l, m, amplitude] on S2, e.g. [3, 1, 0.01]" if s2 else \
        "a pair [k, amplitude], e.g. [3, 0.01]"
    rows = value if isinstance(value, list) else [value]
    for i, row in enumerate(rows):
        key = f"initial.modes[{i}]"
        if not isinstance(row, list) or len(row) != 2 + s2:
            raise ConfigError(key, f"must be {form} (got {show(row)})")
        ints = row[:-1]
        ok = all(isinstance(x, int) and not isinstance(x, bool) for x in ints) and ints[0] >= 1
        if not (ok and (not s2 or 0 <= ints[1] <= ints[0] <= lmax)):
            need = f"[l, m] must be integers, 0 <= m <= l, 1 <= l <= lmax = {lmax}" if s2 else \
                "k must be a positive integer"
            raise ConfigError(key, f"{need} (got {show(ints if s2 else ints[0])})")
        if not s2 and ints[0] > lmax // 2:  # S^1: lmax is N, the grid's highest mode N // 2
            raise ConfigError(key, f"k = {ints[0]} is above the grid's highest mode N//2 = "
                              f"{lmax // 2} (domain.resolution = {lmax} cells): lower k, or "
                              f"raise domain.resolution to at least {2 * ints[0]}")
        number(key, row[-1], lo=-WEIGHT_MAX, hi=WEIGHT_MAX, lo_open=False, why="as amplitude")
    return tuple(tuple(int(x) for x in row[:-1]) + (float(row[-1]),) for row in rows)


def _centers(value: Any, domain: DomainParams) -> tuple:
    """S^1: angles (radians); S^2 and Sd: d-vectors, normalised to unit length."""
    if domain.manifold == "S1":
        angles = number_list("initial.centers", value)
        for i in np.flatnonzero(np.abs(angles) > ANGLE_MAX)[:1]:  # 1e300: every cos(x - c) equal
            raise ConfigError(f"initial.centers[{i}]", f"{angles[i]:g} is not a representable "
                              f"angle (|angle| <= {ANGLE_MAX:g} radians); give it in [0, 2 pi)")
        return tuple(angles.tolist())
    centers = matrix("initial.centers", value, domain.d, domain.manifold)
    norms = np.linalg.norm(centers, axis=1)
    if not np.all(norms > 0):
        raise ConfigError(f"initial.centers[{np.argmin(norms)}]",
                          f"must be a nonzero {domain.d}-vector")
    return tuple(map(tuple, (centers / norms[:, None]).tolist()))


def _von_mises(t: dict[str, Any], domain: DomainParams) -> dict[str, Any]:
    for k in (k for k in ("centers", "kappas") if t.get(k, []) == []):
        raise ConfigError(f"initial.{k}", "required (one entry per component) with kind = "
                                          "\"von_mises\"")
    centers = _centers(t["centers"], domain)
    n = (len(centers), "one entry per centre in initial.centers")
    kappas = number_list("initial.kappas", t["kappas"], lo=0.0, length=n, hi=KAPPA_MAX)
    weights = number_list("initial.weights", t.get("weights", [1.0] * n[0]), lo=0.0, length=n)
    if not weights.sum() > 0:
        raise ConfigError("initial.weights", "must have a positive sum")
    return {"centers": centers, "kappas": tuple(kappas.tolist()),
            "weights": tuple((weights / weights.sum()).tolist())}


def _dirac_atoms(t: dict[str, Any], domain: DomainParams) -> dict[str, Any]:
    """``kind = "atoms"``: Dirac atoms at ``centers`` with masses ``weights`` (not normalised);
    ``initial.mass`` (default: their sum) minus their sum is a uniform density under them."""
    if t.get("centers", []) == []:
        raise ConfigError("initial.centers", "required (one entry per atom) with kind = \"atoms\"")
    centers = _centers(t["centers"], domain)
    n = (len(centers), "one entry per centre in initial.centers")
    weights = number_list("initial.weights", t.get("weights", [1.0 / n[0]] * n[0]), lo=0.0, length=n)
    mass = float(t.get("mass", weights.sum()))
    if not weights.sum() > 0 or weights.sum() > mass * (1 + 1e-12):
        raise ConfigError("initial.weights", f"must have a positive sum <= initial.mass ({mass:g})")
    return {"centers": centers, "weights": tuple(weights.tolist()), "mass": mass,
            "modes": _modes(t.get("modes", []), domain)}


def _initial(t: dict[str, Any], domain: DomainParams) -> InitialParams:
    kind = choice("initial.kind", t.get("kind", "uniform"), INITIAL_KINDS)
    for key in t:
        if key not in ("kind", "mass") + KIND_KEYS[kind]:
            owner = next((k for k, keys in KIND_KEYS.items() if key in keys), "atoms")
            raise ConfigError(f"initial.{key}", f"is only used with kind = {json.dumps(owner)}: "
                              f"remove it or set initial.kind = {json.dumps(owner)}")
    out: dict[str, Any] = {"kind": kind}
    if "mass" in t:
        out["mass"] = number("initial.mass", t["mass"], lo=MASS_RANGE[0], hi=MASS_RANGE[1])
    if kind == "uniform":
        out["modes"] = _modes(t.get("modes", []), domain)
    elif kind == "von_mises":
        out.update(_von_mises(t, domain))
    elif kind == "atoms":
        out.update(_dirac_atoms(t, domain))
    elif "path" not in t:
        raise ConfigError("initial.path", "required with kind = \"archive\" (a .nc run file)")
    else:
        out["path"] = string("initial.path", t["path"])
        if "time" in t:
            out["time"] = number("initial.time", t["time"], lo=0.0, lo_open=False)
    return InitialParams(**out)


def _time(t: dict[str, Any]) -> TimeParams:
    params = TimeParams(**_scalars("time", t, {
        "t_end": _positive, "rate_factor": _positive, "dt": _positive, "stationary_tol": _positive,
        "scheme": lambda k, v: choice(k, v, CFL_MAX),
        "integrator": lambda k, v: choice(k, v, INTEGRATORS),
        "max_steps": lambda k, v: integer(k, v, 1), "stop_when_stationary": boolean,
        "stationary_window_time": _positive, "stationary_mass_rate": _positive,
        "stationary_measure": lambda k, v: choice(k, v, ("transport", "velocity")),
        "limiter": lambda k, v: choice(k, v, LIMITERS),
        "cfl_floor": lambda k, v: number(k, v, lo=0.0, hi=0.5, lo_open=False,
                                         why="(a fraction of the mean density)"),
        "kink_faces": boolean,
        "basin_refine": lambda k, v: integer(k, v, 1, 16),
        "rtol": lambda k, v: number(k, v, *RTOL_RANGE, lo_open=False,
                                    why="(relative tolerance of the time error)"),
        "atol": lambda k, v: number(k, v, *ATOL_RANGE, lo_open=False,
                                    why="(absolute tolerance of the time error)")}))
    why = "(positivity of the finite-volume scheme needs cfl <= 0.5)" if params.scheme == "fv" \
        else f"for scheme {json.dumps(params.scheme)}"
    if "cfl" not in t:
        return params  # None: the method's own (solvers.model.method.resolve)
    cfl = number("time.cfl", t["cfl"], lo=0.0, hi=CFL_MAX[params.scheme], why=why)
    return replace(params, cfl=cfl)


def _atoms(t: dict[str, Any]) -> AtomParams:
    return AtomParams(**_scalars("atoms", t, {
        "method": lambda k, v: choice(k, v, ATOM_METHODS),
        "representation": lambda k, v: choice(k, v, REPRESENTATIONS),
        "capture_fraction": lambda k, v: number(k, v, lo=0.0, hi=1.0),
        "radius": _positive, "contrast": _positive, "core_radius": _positive,
        "max_radius": _positive, "link_radius": _positive,
        "saddle_ratio": lambda k, v: number(k, v, lo=0.0, hi=1.0, lo_open=False),
        "min_mass": lambda k, v: number(k, v, lo=0.0, lo_open=False)}))


def _output(t: dict[str, Any]) -> OutputParams:
    return OutputParams(**_scalars("output", t, {
        "path": string, "snapshot_interval": _positive, "progress": boolean,
        "sync_interval": lambda k, v: number(k, v, lo=0.0, lo_open=False),
        "spectral": boolean,
        "snapshot_mode": lambda k, v: choice(k, v, SNAPSHOT_MODES)}))


def build_config(doc: dict[str, Any], text: str = "") -> RunConfig:
    """Validate a parsed TOML document and build the :class:`RunConfig`."""
    check_keys(doc)
    sec = {name: doc.get(name, {}) for name in SECTIONS}
    domain = _domain(sec["domain"])
    model = _model(sec["model"], _perceptron(sec["perceptron"], domain))
    atoms, time = _atoms(sec["atoms"]), _time(sec["time"])
    if "scheme" not in sec["time"] and ("representation" in sec["atoms"]
                                        or any(k in sec["time"] for k in FV_KNOBS)):
        time = replace(time, scheme="fv")
    if atoms.representation == "dirac" and domain.manifold == "S1" and "limiter" not in sec["time"]:
        time = replace(time, limiter=DIRAC_S1_LIMITER)
    config = resolve(RunConfig(domain=domain, model=model, initial=_initial(sec["initial"], domain),
                               time=time, atoms=atoms, output=_output(sec["output"]), text=text))
    check_limits(config)
    check_combinations(config)
    return config


def load_config(path_or_text: str | Path, overrides: Iterable[str] = ()) -> RunConfig:
    """Read, override and validate a run configuration.

    Parameters
    ----------
    path_or_text : str or Path
        A TOML file (a Path, or a string naming a file) or TOML text.
    overrides : iterable of str
        ``section.key=value`` items; ``value`` is a TOML value, else a bare string.

    Returns
    -------
    RunConfig
        ``text`` is the given text, or its re-serialisation when there are overrides. Raises
        :class:`ConfigError` (FileNotFoundError for a missing file).
    """
    text = path_or_text  # a Path, or a string without "=" or a newline, names a file
    if isinstance(text, Path) or ("\n" not in text and "=" not in text and text.strip()):
        text = _read_text(Path(text))
    return config_from_text(text, overrides)


def config_from_text(text: str, overrides: Iterable[str] = ()) -> RunConfig:
    """:func:`load_config` of TOML text that is never read as a file name (an archive's
    ``config_text``: a hostile ``"/etc/passwd"`` is invalid TOML, not a file to open)."""
    if not isinstance(text, str):
        raise ConfigError("config_text", f"must be TOML text (got {type(text).__name__})")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError("config", f"invalid TOML: {err}") from None
    except (ValueError, RecursionError) as err:  # a 5000-digit integer, a 500-deep array
        raise ConfigError("config", f"invalid TOML: {type(err).__name__}: {err}") from None
    if overrides := list(overrides):
        check_keys(doc)
        header = "# overrides: " + " ".join(overrides).replace("\n", " ") + "\n"
        text = header + dump_toml(apply_overrides(doc, overrides))
    return build_config(doc, text)


def _read_text(path: Path) -> str:
    """The UTF-8 text of a config file; ConfigError for folders, binary or non-UTF-8 files."""
    if "\0" in str(path):
        raise ConfigError("config", f"{str(path)!r:.80} is neither TOML text nor a file name "
                          "(it holds a NUL character)")
    if path.is_dir():
        raise ConfigError("config", f"{path} is a folder, not a TOML file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError("config", f"{path} is not UTF-8 text (byte {err.start}: "
                          f"{err.reason}); save the config as UTF-8 TOML") from None
