"""``kill -9`` at random moments, then ``meanfield run --resume``: the finished archive must equal
the uninterrupted run's bitwise, every variable (and the exact state a further resume would
continue from: the valid one of the two resume slots, :mod:`solvers.io.resume_slots`).

Six cases: a NetCDF file and a zarr store, each for the fv grid (``time.scheme = "fv"``,
adaptive steps, records interpolated between steps), the fv grid with Dirac atoms
(``[atoms] representation = "dirac"``) and the default method (spectral, then Lagrangian cells
with Dirac atoms). Each kill starts ``meanfield run`` in a subprocess, waits until its archive
holds a complete record, sends SIGKILL after a further random wall time (uniform over the
time the uninterrupted run took from its first record to its last), resumes the archive until it finishes, and compares. A kill may
also be placed exactly inside a block's write (``--between``): at its ``records_complete``
count (records, resume state and marker synced; the default), or with ``--points
records_written`` at its marker (the block's records synced, its resume state written into
the slot that does not hold the counted records' state, the block not yet counted).

    python benchmarks/kill_resume.py --kills 9 --seed 1            # 9 kills per case
    python benchmarks/kill_resume.py --kills 2 --between --points records_complete,records_written

Prints one line per kill and a table of the counts; exit status 1 if any archive differs.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PERCEPTRON = """[perceptron]
activation = "relu"
a = [[-0.9967456002240224, 0.0806114658969388], [-0.6198538201675943, -0.784717300448792]]
omega = [0.6324575844117477, -0.4696753890279187]
"""
BASE = f"""[domain]
manifold = "S1"
resolution = 256
[model]
beta = 5.0
direction = "descent"
kernel = "exp_shifted"
{PERCEPTRON}[initial]
kind = "uniform"
modes = [[1, 0.05], [3, 0.02]]
[time]
t_end = {{t_end}}
{{scheme}}
[output]
snapshot_interval = 0.5
sync_interval = {{sync}}
progress = false
{{extra}}"""
DIRAC = '[atoms]\nrepresentation = "dirac"\n'
# name: (suffix, scheme line, t_end, sync_interval, more sections); each writes its records over
# a few seconds (NetCDF blocks are cheaper than zarr's: a longer run), so most kills land mid-run
CASES = {
    "nc-fv": (".nc", 'scheme = "fv"', 80.0, 0, ""),
    "zarr-fv": (".zarr", 'scheme = "fv"', 12.0, 0, ""),
    "nc-dirac": (".nc", 'scheme = "fv"', 80.0, 0, DIRAC),
    "zarr-dirac": (".zarr", 'scheme = "fv"', 12.0, 0, DIRAC),
    "nc-default": (".nc", "", 80.0, 0, ""),
    "zarr-default": (".zarr", "", 12.0, 0, ""),
}
# runs a `meanfield run` whose store exits at its count update of block K (after the data sync)
BETWEEN = """
import os, sys
import solvers.io.netcdf_store as n, solvers.io.zarr_store as z
K = int(os.environ["KILL_AT_BLOCK"])
ATTR = os.environ["KILL_AT_ATTRIBUTE"]  # records_written (after the records' sync) or _complete
blocks = [0]

class Attrs(dict):
    def __init__(self, inner): self.inner = inner
    def __setitem__(self, k, v):
        if k == ATTR and blocks[0] >= K: os._exit(137)
        self.inner[k] = v
    def __getattr__(self, a): return getattr(self.inner, a)
    def get(self, *a): return self.inner.get(*a)

class Proxy:
    def __init__(self, inner): self.__dict__["inner"] = inner
    def __getattr__(self, a):
        if a == "attrs": return Attrs(self.inner.attrs)
        return getattr(self.inner, a)
    def __getitem__(self, k): return self.inner[k]
    def __contains__(self, k): return k in self.inner
    def setncattr(self, k, v):
        if k == ATTR and blocks[0] >= K: os._exit(137)
        return self.inner.setncattr(k, v)

def hook(cls, name):
    write = cls.write_block
    def write_block(self, *args, **kwargs):
        blocks[0] += 1
        inner = getattr(self, name)
        setattr(self, name, Proxy(inner))
        try:
            return write(self, *args, **kwargs)
        finally:
            setattr(self, name, inner)
    cls.write_block = write_block

hook(n.NetCDFStore, "nc")
hook(z.ZarrStore, "group")
set_count = n.NetCDFStore._set_count  # NetCDF: the counts are 0-d variables

def _set_count(self, name, value):
    if name == ATTR and blocks[0] >= K: os._exit(137)
    return set_count(self, name, value)

n.NetCDFStore._set_count = _set_count
from solvers.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@dataclass
class Tally:
    kills: int = 0
    before_first_record: int = 0
    finished_first: int = 0
    resumes: int = 0
    equal: int = 0
    different: list[str] = field(default_factory=list)


def meanfield(*args: str, cwd: Path, env: dict | None = None,
              script: str | None = None) -> subprocess.Popen:
    """``python -m solvers ARGS`` (or ``python -c script ARGS``) in ``cwd``."""
    full = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    head = ["-c", script] if script else ["-m", "solvers"]
    return subprocess.Popen([sys.executable, *head, *args], cwd=cwd, env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, what: str) -> None:
    _, err = proc.communicate(timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}): {err[-600:]}")


def records(path: Path) -> int:
    """Complete records of the archive (0 when unreadable or absent)."""
    from solvers.io.reading import read_run_counts  # noqa: F401  (imports the readers)
    from solvers.io.reading import open_run

    try:
        return int(open_run(path).sizes.get("time", 0))
    except (OSError, ValueError):
        return 0


def unreadable(path: Path) -> str:
    """Why ``path`` cannot be opened as a run archive ("readable": it can)."""
    from solvers.io.reading import open_run

    try:
        open_run(path)
    except Exception as err:  # noqa: BLE001  (reported, whatever it is)
        return f"{type(err).__name__}: {str(err)[:160]}"
    return "readable"


def variables(path: Path) -> dict[str, np.ndarray]:
    from solvers.io.reading import open_run

    ds = open_run(path)
    return {name: np.asarray(ds[name].values) for name in ds.variables}


def valid_slot(path: Path) -> np.ndarray:
    """The archive's valid resume slot, re-encoded (empty: none); which of the two slots holds
    it, and what the other holds, depend on how the records were blocked."""
    from solvers.io import resume_slots
    from solvers.io.reading import open_run, read_last_state

    return resume_slots.valid_vector(open_run(path), read_last_state(path)[0])


def differences(a: Path, b: Path) -> list[str]:
    """Names of the variables that differ (values, shapes or dtypes; NaN equals NaN), the raw
    resume slots left out and their valid one compared (``resume state``)."""
    from solvers.io.resume_slots import SLOTS

    va, vb = variables(a), variables(b)
    for slot in SLOTS:
        va.pop(slot, None), vb.pop(slot, None)
    va["resume state"], vb["resume state"] = valid_slot(a), valid_slot(b)
    out = sorted(set(va) ^ set(vb))
    for name in sorted(set(va) & set(vb)):
        x, y = va[name], vb[name]
        same = x.shape == y.shape and x.dtype == y.dtype and (
            np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
        if not same:
            gap = ""
            if x.shape == y.shape and x.dtype.kind == "f":
                gap = f" (max |diff| {np.nanmax(np.abs(x - y)):.2e})"
            out.append(name + gap)
    return out


def complete(cfg: Path, out: Path, cwd: Path, tally: Tally) -> None:
    """Resume ``out`` until it finishes (a fresh run when it holds no record)."""
    if records(out) == 0:
        tally.before_first_record += 1
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        finish(meanfield("run", str(cfg), "-o", str(out), "--no-check", cwd=cwd), "rerun")
        return
    proc = meanfield("run", "--resume", str(out), "--no-check", cwd=cwd)
    _, err = proc.communicate(timeout=1800)
    if proc.returncode == 2 and "already reached" in err:  # killed after its last record
        tally.finished_first += 1
        return
    if proc.returncode != 0:
        raise RuntimeError(f"resume failed ({proc.returncode}): {err[-600:]}")
    tally.resumes += 1


def first_record(proc: subprocess.Popen, out: Path) -> float:
    """Wall seconds until the archive ``out`` of the running ``proc`` holds a complete record
    (or ``proc`` ended), polled every 0.05 s."""
    start = time.perf_counter()
    while proc.poll() is None and records(out) == 0:
        time.sleep(0.05)
    return time.perf_counter() - start


def records_span(proc: subprocess.Popen, out: Path) -> float:
    """Wall seconds from the first complete record of the running ``proc``'s archive ``out`` to
    its last (the part of the run that writes records), polled every 0.05 s."""
    first_record(proc, out)
    start = last = time.perf_counter()
    held = records(out)
    while proc.poll() is None:
        time.sleep(0.05)
        now = records(out)
        if now > held:
            held, last = now, time.perf_counter()
    return last - start


def kill_once(case: str, cfg: Path, reference: Path, span: float, k: int, work: Path,
              rng: random.Random, tally: Tally, between: bool,
              points: tuple[str, ...] = ("records_complete",)) -> None:
    suffix = CASES[case][0]
    out = work / f"{case}-{k}{suffix}"
    if between:
        block = rng.randint(2, 12)
        attr = points[k % len(points)]
        proc = meanfield("run", str(cfg), "-o", str(out), "--no-check", cwd=work,
                         env={"KILL_AT_BLOCK": str(block), "KILL_AT_ATTRIBUTE": attr},
                         script=BETWEEN)
        proc.communicate(timeout=1800)
        when = f"block {block} {attr.split('_')[1]}"
    else:
        proc = meanfield("run", str(cfg), "-o", str(out), "--no-check", cwd=work)
        first_record(proc, out)
        delay = rng.uniform(0.0, span)  # over the records of the uninterrupted run
        start = time.perf_counter()
        while proc.poll() is None and time.perf_counter() - start < delay:
            records(out)  # (polled as records_span polled the reference: the same load)
            time.sleep(0.05)
        when = f"record 1 + {delay:.2f} s"
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=1800)
    tally.kills += 1
    held = records(out)
    if held == 0 and out.exists():  # say why the killed archive cannot be read
        when += f" ({unreadable(out)})"

    if proc.returncode == 0:
        tally.finished_first += 1
    else:
        complete(cfg, out, work, tally)
    diff = differences(out, reference)
    tally.equal += not diff
    if diff:
        tally.different.append(f"{case}-{k}: {', '.join(diff[:6])}")
    print(f"{case:13s} kill {k:3d} at {when:>16s}: {held:3d} records kept, "
          f"{'bitwise equal' if not diff else 'DIFFERS: ' + ', '.join(diff[:4])}", flush=True)
    shutil.rmtree(out) if out.is_dir() else out.unlink(missing_ok=True)


def run_case(case: str, kills: int, work: Path, rng: random.Random, between: bool,
             points: tuple[str, ...] = ("records_complete",)) -> Tally:
    """``kills`` kills of one case in the folder ``work``, each compared with the case's
    uninterrupted run."""
    work.mkdir(parents=True, exist_ok=True)
    suffix, scheme, t_end, sync, extra = CASES[case]
    cfg = work / f"{case}.toml"
    cfg.write_text(BASE.format(t_end=t_end, scheme=scheme, sync=sync, extra=extra))
    reference = work / f"{case}-whole{suffix}"
    proc = meanfield("run", str(cfg), "-o", str(reference), "--no-check", cwd=work)
    span = records_span(proc, reference)
    finish(proc, "reference")
    tally = Tally()
    for k in range(kills):
        kill_once(case, cfg, reference, span, k, work, rng, tally, between, points)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=14, help="kills per case (default 14)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--between", action="store_true",
                        help="exit between a block's data sync and its count sync")
    parser.add_argument("--points", default="records_complete",
                        help="with --between: where, comma-separated: records_complete (after "
                             "the block's marker), records_written (its state written, "
                             "not yet synced: the window that remains)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    tallies = {}
    with tempfile.TemporaryDirectory(prefix="kill-resume-") as tmp:
        for case in args.cases.split(","):
            tallies[case] = run_case(case, args.kills, Path(tmp), rng, args.between,
                                     tuple(args.points.split(",")))
    print(f"\n{'case':13s} {'kills':>5s} {'none kept':>9s} {'finished':>8s} {'resumed':>7s} "
          f"{'bitwise':>7s}")
    for case, t in tallies.items():
        print(f"{case:13s} {t.kills:5d} {t.before_first_record:9d} {t.finished_first:8d} "
              f"{t.resumes:7d} {t.equal:7d}")
    different = [d for t in tallies.values() for d in t.different]
    for line in different:
        print("DIFFERS", line)
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
