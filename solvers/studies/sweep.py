"""Parameter sweeps: the cartesian product of parameter values, run in parallel on dask.

``meanfield sweep CONFIG --param model.beta=0.5,1,5 [--param ...] [-o DIR]`` runs every
combination in its own archive ``DIR/<name>.nc`` (``name`` from the values, e.g.
``beta-0.5`` or ``beta-5_activation-gelu``) on a ``dask.distributed`` cluster: a
``LocalCluster`` of ``--workers`` single-threaded processes (default: one per core), or an
existing scheduler (``--scheduler ADDRESS``; its workers must import ``solvers`` and see DIR).

- Values: ``--param key=v1,v2,...`` (TOML values, bare words as strings; commas inside
  ``[...]`` or quotes do not split; ``a..b`` is the integer range a, a+1, ..., b). A sweep
  runs at most :data:`MAX_RUNS` (10,000) combinations: the product is counted before any
  value is expanded, and a larger one is refused with its count.
- ``initial.seed=S`` (sweep only, not a config key): the uniform initial density becomes
  ``(1 - eps) / |S| + eps * (8 von Mises (S^2: von Mises-Fisher) bumps, kappa = 20, random
  centres and weights from numpy's ``default_rng(S)``)``, ``eps = --perturbation`` (default
  0.05). A seeded ``initial.modes`` list would do for S^2 harmonics, but on S^1 the modes are
  cosines only: every such perturbation is even in theta and its atoms mirror-symmetric.
- ``perceptron.activation=none`` drops the perceptron weights of the base config.
- Failures (bad value, a grid too coarse for the kernel, a diverging run) are reported per run
  with their one-line message; the others go on. ``--auto-resolution`` raises N (S^2: lmax)
  to the smallest value :func:`solvers.model.config.check_resolution` accepts instead of failing,
  and checks it: each point runs at N and 2N (refining while they disagree, at most
  ``--max-refinements`` times, up to 4096 cells / lmax 255) until two successive grids agree on
  the atom count and on the masses within ``--mass-tol`` (:mod:`solvers.studies.resolution`);
  level runs go to ``DIR/<name>.N<res>.nc``, the result's archive is linked to ``<name>.nc``.
- A finished run (stopped at ``t_end`` or as stationary) leaves ``DIR/<name>.done.json`` (the
  stop reason, time, wall time, atoms sorted by mass, and a digest of its configuration).
  Re-running the same sweep skips runs whose sidecar matches their configuration; every other
  run (no sidecar: killed or failed; ``max_steps``) restarts from scratch.
- The folder (:func:`~solvers.studies.sweep_folder.sweep_folder`, on
  :class:`solvers.io.writer_policy.OutputFolder`): created
  when missing, never a link, writable (a read-only folder is one error before anything
  runs), and locked for the whole sweep (``DIR/.sweep.lock``: a second sweep into the same
  folder is refused at once, naming the first one's pid). Every name the sweep writes
  (archives, level archives, ``.done.json`` markers, locks, ``summary.nc``) is checked before
  any run starts: a link, a device or a file this project did not write there is refused, so
  nothing is written outside DIR or through a link. A folder holding a different sweep (its
  ``summary.nc`` has another ``sweep_digest``: the base config, ``--set`` values and swept
  values; or, without a summary, a marker of another configuration) is refused unless
  ``overwrite`` (``--overwrite``), which replaces only files this project wrote.
- ``--workers``: at most :data:`MAX_WORKERS_PER_CORE` per core (a larger count is refused:
  every worker is a process); a local cluster starts no more workers than runs to do.
- ``DIR/summary.nc``: one dimension per swept parameter (named by its key, ``beta``, or
  ``model__beta`` when two keys share a name) plus ``atom``: ``n_atoms``, ``atom_mass``
  (sorted descending, NaN padded), ``atom_position``, ``max_atom_mass``, ``energy``,
  ``mass``, ``t_final``, ``n_steps``, ``wall_time``, ``reason`` (``t_end``, ``stationary``,
  ``max_steps``, ``failed``, ``not run``), ``error``, ``name``, ``resolution`` (the N used);
  with ``--auto-resolution`` also ``refinements``, ``resolution_check`` (``passed``/``failed``),
  ``mass_difference`` and ``resolution_levels``. NaN where a run has no result.
"""

from __future__ import annotations

import copy
import hashlib
import json
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from solvers.core.manifold import Manifold
from solvers.io.summary import (
    FINISHED,
    build_summary,
    describe,
    done_path,
    failure,
    finished_record,
    result_record,
)
from solvers.model.config import (
    ConfigError,
    apply_overrides,
    build_config,
    check_keys,
    check_resolution,
    dump_toml,
    parse_override,
    show,
    tomllib,
)
from solvers.model.params import RunConfig, flatten
from solvers.studies.resolution import ResolutionCheck, refine_point, resolution_ladder
from solvers.studies.cluster import check_scheduler, dask_client  # noqa: F401  (re-exported)
from solvers.studies.sweep_folder import (  # noqa: F401  (the folder policy, re-exported)
    MAX_WORKERS_PER_CORE,
    SWEEP_LOCK,
    _claim_point,
    check_workers,
    max_workers,
    sweep_digest,
    sweep_folder,
)
from solvers.studies.sweep_params import (  # noqa: F401  (the sweep's vocabulary, re-exported)
    MAX_RUNS,
    SEED_KEY,
    SEED_MAX,
    SweepError,
    SweepParam,
    SweepPoint,
    check_run_count,
    count_runs,
    count_values,
    dim_names,
    parse_param,
    split_values,
    sweep_points,
)
from solvers.timestepping.manifolds import CIRCLE, manifold_of

EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED = 2, 1, 130
DEFAULT_PERTURBATION = 0.05
PERTURBATION_BUMPS, PERTURBATION_KAPPA = 8, 20.0


def perturbation(seed: int, manifold: Manifold, eps: float) -> dict[str, Any]:
    """``[initial]`` table of the seeded perturbation of the uniform density (module doc)."""
    if not 0.0 <= eps < 1.0:
        raise SweepError(f"--perturbation must be in [0, 1) (got {eps:g})")
    rng = np.random.default_rng(seed)
    k = PERTURBATION_BUMPS
    centers = manifold.random_centers(rng, k)
    weights = rng.random(k)
    return {"kind": "von_mises", "centers": centers, "kappas": [0.0] + [PERTURBATION_KAPPA] * k,
            "weights": [1.0 - eps] + (eps * weights / weights.sum()).tolist()}


def minimum_resolution(config: RunConfig) -> int:
    """Smallest resolution :func:`check_resolution` accepts (S^1: a multiple of 32)."""
    from spectral import kernel_bandwidth

    manifold = manifold_of(config)
    return manifold.minimum_resolution(int(kernel_bandwidth(config.model.beta, manifold.dimension)))


def point_config(base: dict[str, Any], items: Sequence[str], archive: Path,
                 auto_resolution: bool = False, eps: float = DEFAULT_PERTURBATION) -> RunConfig:
    """The validated configuration of one run: ``base`` (parsed TOML) with ``items`` applied.

    Raises ConfigError (bad value; resolution too coarse without ``auto_resolution``).
    """
    doc = copy.deepcopy(base)
    check_keys(doc)
    seeds = [parse_override(i)[2] for i in items if i.partition("=")[0] == SEED_KEY]
    apply_overrides(doc, [i for i in items if i.partition("=")[0] != SEED_KEY]
                    + [f"output.path={show(str(archive), 0)}", "output.progress=false"])
    if seeds:
        if doc.get("initial", {}).get("kind", "uniform") != "uniform":
            raise ConfigError(SEED_KEY, "perturbs a uniform start: use initial.kind = \"uniform\"")
        doc["initial"] = {"mass": doc["initial"]["mass"]} if "mass" in doc.get("initial", {}) else {}
        try:
            manifold = manifold_of(doc.get("domain", {}).get("manifold", CIRCLE.name))
        except ValueError as err:
            raise ConfigError("domain.manifold", str(err)) from None
        doc["initial"].update(perturbation(seeds[0], manifold, eps))
    if doc.get("perceptron", {}).get("activation") == "none":
        doc["perceptron"] = {"activation": "none"}
    config = build_config(doc, "# sweep: " + " ".join(items) + "\n" + dump_toml(doc))
    try:
        check_resolution(config)
    except ConfigError:
        if not auto_resolution:
            raise
        doc.setdefault("domain", {})["resolution"] = minimum_resolution(config)
        config = build_config(doc, "# sweep: " + " ".join(items) + " (auto resolution)\n"
                              + dump_toml(doc))
    return config


def config_digest(config: RunConfig) -> str:
    """Digest of everything but ``output.*`` and the text: equal digests, equal runs."""
    flat = {k: v for k, v in flatten(config).items() if k != "text" and not k.startswith("output.")}
    return hashlib.sha256(json.dumps(flat, sort_keys=True, default=str).encode()).hexdigest()[:16]


def one_thread_per_worker() -> None:
    """Compiled kernels on one thread in this (worker) process: the cores go to the points."""
    from solvers.core.backend import numba_available

    if numba_available():
        import numba

        numba.set_num_threads(1)


def run_point(config: RunConfig, archive: str, name: str, digest: str) -> dict[str, Any]:
    """Run one configuration into ``archive`` (on a worker); return its summary record.

    Never raises for a failing run: the record then has ``reason = "failed"`` and ``error``
    the last line of the traceback. The sidecar is written only for finished runs.
    """
    from solvers.io.archive import ArchiveWriter
    from solvers.io.state import grid_arrays, initial_state
    from solvers.timestepping.loop import simulate

    one_thread_per_worker()  # the sweep runs points side by side: no threads within a point
    path = Path(archive)
    done_path(path).unlink(missing_ok=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rho0, atoms0 = initial_state(config)
            theta, weight, phi = grid_arrays(config)
            with ArchiveWriter(path, config, theta, weight, phi=phi, overwrite=True) as writer:
                result = simulate(config, rho0, trackers=[writer], atoms0=atoms0)
    except Exception as err:  # noqa: BLE001 (reported per run, never lost)
        return failure(name, err, archive)
    record = result_record(result, name, archive, digest)
    record["resolution"] = int(config.domain.resolution)
    record["warnings"] = sorted({str(w.message) for w in caught})
    if record["reason"] in FINISHED:
        write_done(path, record)
    return record


def write_done(archive: Path, record: dict[str, Any]) -> None:
    """The finished run's sidecar ``NAME.done.json``, built in a private folder and renamed
    into place (:func:`solvers.io.safe_paths.write_text`: no link followed)."""
    from solvers.io.safe_paths import write_text

    write_text(done_path(archive), json.dumps(record, indent=1))


def write_summary(summary: Any, path: Path) -> None:
    """``summary.nc`` through the safe writer (:func:`solvers.io.safe_paths.write_netcdf`):
    a file there is replaced only when this project wrote it, a link never followed."""
    from solvers.io.safe_paths import write_netcdf

    encoding = {k: {"dtype": str} for k, v in summary.variables.items() if v.dtype == object}
    write_netcdf(summary, path, option="the sweep", engine="netcdf4", encoding=encoding)


def run_level(config: RunConfig, archive: str, name: str) -> dict[str, Any]:
    """One level of a resolution check: its finished sidecar record, else :func:`run_point`."""
    digest = config_digest(config)
    done = finished_record(Path(archive), digest)
    return done if done is not None else run_point(config, archive, name, digest)


def run_sweep(config: str | Path, params: Sequence[SweepParam], outdir: str | Path, *,
              overrides: Sequence[str] = (), client: Any = None, scheduler: str | None = None,
              workers: int | None = None, processes: bool = True, auto_resolution: bool = False,
              eps: float = DEFAULT_PERTURBATION, echo: Callable[[str], None] = print,
              check: ResolutionCheck | None = None,
              worker_setup: Callable[[], Any] | None = None, overwrite: bool = False) -> Any:
    """Run the sweep; write and return the summary (an :class:`xarray.Dataset`).

    ``client``: an existing dask client (else one of :func:`dask_client`). Progress lines go
    to ``echo``. The summary is written even when interrupted (unfinished runs: "not run").
    ``auto_resolution``: raise and check each point's grid with ``check`` (default
    :class:`~solvers.studies.resolution.ResolutionCheck`). ``worker_setup``: run once on every
    worker before the runs (``Client.run``), e.g. the command line's malloc tuning.
    ``overwrite``: replace a different sweep's files in ``outdir`` (only files this project
    wrote); without it such a folder is refused (module doc).
    """
    check = (check or ResolutionCheck()) if auto_resolution else None
    workers = check_workers(workers)
    text = Path(config).read_text(encoding="utf-8")
    try:
        base = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError("config", f"invalid TOML: {err}") from None
    check_keys(base)  # unknown keys are usage errors, not failed runs
    apply_overrides(copy.deepcopy(base), list(overrides) + [
        f"{p.key}={p.raw[0]}" for p in params if p.key != SEED_KEY])
    points = sweep_points(params)
    dims = dim_names(params)
    identity = sweep_digest(text, params, overrides, eps)
    keys = json.dumps({d: p.key for d, p in zip(dims, params)})
    with sweep_folder(outdir, identity, text, keys, overwrite) as folder:
        records, todo = _plan(base, points, overrides, folder, check, eps, echo)
        try:
            if todo:
                _execute(todo, records, len(points), client, scheduler, workers, processes,
                         echo, worker_setup)
        finally:
            summary = build_summary(params, dims, points, records, base_text=text)
            summary.attrs["sweep_digest"] = identity
            write_summary(summary, folder.entry("summary.nc"))
    return summary


Task = tuple[Callable[..., dict[str, Any]], tuple[Any, ...]]


def _plan(base: dict[str, Any], points: Sequence[SweepPoint], overrides: Sequence[str],
          folder: Any, check: ResolutionCheck | None, eps: float, echo: Callable[[str], None]
          ) -> tuple[dict[str, dict[str, Any]], dict[str, Task]]:
    """Records of the runs that fail validation or are already finished; the runs to do
    (``name -> (function, arguments)``, submitted as they are). Every name a run writes in
    ``folder`` (a :func:`sweep_folder`) is checked first, for all runs, before any echo."""
    records: dict[str, dict[str, Any]] = {}
    todo: dict[str, Task] = {}
    planned = []
    for point in points:
        archive = folder.path / f"{point.name}.nc"  # no link resolved: checked by name
        items = list(overrides) + list(point.items)
        try:
            cfg = point_config(base, items, archive, check is not None, eps)
            levels = _levels(base, items, archive, cfg, check, eps) if check else []
        except ConfigError as err:
            planned.append((point, archive, None, [], "", err))
            continue
        digest = config_digest(cfg) + (f"+{check.tag()}" if check else "")
        stale = _claim_point(folder, archive, digest)
        for _, level_cfg, level_path in levels:
            stale = _claim_point(folder, Path(level_path), config_digest(level_cfg)) or stale
        if stale and not folder.overwrite and not folder.has_summary:  # a killed other sweep
            raise SweepError(f"{folder.path} holds a different sweep ({done_path(archive).name} "
                             "records another configuration): pass --overwrite "
                             "(overwrite=True) to replace it, or choose another folder")
        planned.append((point, archive, cfg, levels, digest, None))
    for point, archive, cfg, levels, digest, err in planned:
        if err is not None:
            records[point.name] = failure(point.name, err)
            echo(f"[{len(records)}/{len(points)}] {point.name}: {describe(records[point.name])}")
            continue
        if (done := finished_record(archive, digest)) is not None:
            records[point.name] = done
            echo(f"[{len(records)}/{len(points)}] {point.name}: skipped (finished: "
                 f"{done['reason']} at t={done['t_final']:.6g})")
        elif check:
            todo[point.name] = (refine_point, (levels, str(archive), point.name, digest,
                                               check.mass_tol, run_level))
        else:
            todo[point.name] = (run_point, (cfg, str(archive), point.name, digest))
    return records, todo


def _levels(base: dict[str, Any], items: list[str], archive: Path, cfg: RunConfig,
            check: ResolutionCheck, eps: float) -> list[tuple[int, RunConfig, str]]:
    """The validated configs of a point's resolution ladder, with their level archives."""
    out = []
    for n in resolution_ladder(cfg.domain.resolution, manifold_of(cfg), check):
        path = archive.with_name(f"{archive.stem}.N{n}.nc")
        out.append((n, point_config(base, items + [f"domain.resolution={n}"], path, True, eps),
                    str(path)))
    return out


def _execute(todo: dict[str, Task], records: dict[str, dict[str, Any]],
             total: int, client: Any, scheduler: str | None, workers: int | None,
             processes: bool, echo: Callable[[str], None],
             worker_setup: Callable[[], Any] | None = None) -> None:
    """Submit the runs of ``todo`` and collect their records as they finish."""
    from dask.distributed import as_completed

    if client is None and not scheduler:  # no idle processes: at most one worker per run
        from solvers.model.cost import usable_cores

        workers = min(workers or usable_cores(), len(todo))
    with (dask_client(scheduler, workers, processes) if client is None else _same(client)) as c:
        if worker_setup is not None:
            c.run(worker_setup)
        futures = {c.submit(fn, *args, pure=False): name for name, (fn, args) in todo.items()}
        try:
            for future in as_completed(futures):
                name = futures[future]
                try:
                    records[name] = future.result()
                except Exception as err:  # noqa: BLE001 (the worker died, or the task failed)
                    records[name] = failure(name, err, str(todo[name][1][1]))
                echo(f"[{len(records)}/{total}] {name}: {describe(records[name])}")
        finally:
            c.cancel(list(futures))


@contextmanager
def _same(client: Any) -> Iterator[Any]:
    yield client
