"""docs/tutorial.md, executed: every shell command block and every Python block runs, in the
order of the text, in a temporary folder (``runs/`` linked in, ``output/`` and ``/tmp/`` paths
written there), and what the tutorial claims is checked: each printed output block appears in
the output of the commands above it (wall times, ``...`` and round-off figures
excepted: numbers below 1e-7 differ between machines), a block that shows an
``error:`` line exits with status 2 and every other command with 0, every ``-o`` target
exists, and the numbers the prose quotes are in the output (:data:`CLAIMS`).

Slow (the whole tutorial: several minutes); run by ``make test-slow``. The parser is tested
in the default run on the tutorial's text."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
COMMANDS = ("bash ", "make ", "meanfield ", "source ", "$ ")
SKIPPED = {  # command -> why the test does not run it as written
    "bash scripts/dev.sh setup": "installs the package: the test runs in the installed venv",
    "source .venv/bin/activate": "the test puts .venv/bin on PATH",
    "meanfield run runs/paper_s2_descent_relu_particles.toml --set time.basin_refine=4 "
    "-o output/s2_refined.nc": "over 30 minutes on two cores (benchmarks/s2_basin_refine.py)",
    "meanfield polish output/s2_refined.nc": "polishes the run above",
}
# numbers and words the prose quotes: (a command of a block, or one the prose names, which is
# then run at the end; a regex its output must match)
CLAIMS = [
    ("meanfield info output/demo_fv.nc", r"t = 170\s+atom 2\s+loss\s+-0\.0158"),  # 0.016
    ("meanfield info output/demo_fv.nc", r"t = 190\s+atom 3\s+loss\s+-0\.0314"),  # 0.031
    ("meanfield info output/demo_fv.nc", r"t = 660\s+atom 4\s+birth"),
    ("--set time.t_end=20 -o output/s2.nc", r"NOT TRUSTED"),
    ("--set time.t_end=20 -o output/s2.nc", r"is 0\.0091 in mass"),
    ("--set time.t_end=20 -o output/s2.nc", r"state: not yet stationary at t = 20 "),
    ("particles.toml -o output/s2_particles.nc", r"masses within 0\.0018, positions within 0\.013 rad"),
    ("meanfield polish output/s2_particles.nc", r"max \|grad U\| at the atoms 1\.39e-14"),
    ("meanfield polish output/s2_particles.nc", r"descent: stable stationary point"),
    ("meanfield polish output/s2_particles.nc", r"\s3\.[0-2]\d\s.*\n.*\s3\.[0-2]\d\s(.*\n)+.*\s19\.9\s"),
    ("--measure vmf --beta 5 20 50", r"int rho\^2 = 0\.2399188726"),
    ("--measure vmf --beta 5 20 50", r"\n\s+5\s+\d+\s+\d+\s+14\s+14\s"),  # l* = 14, 14
    ('initial.path="output/demo_polished.nc"', r"finished \(stationary\) at t = 100 "),
]


@dataclass
class Block:
    """A command block (``kind = "sh"``: one command a line, continuations joined), an output
    block shown after it (``"out"``), or a Python block (``"py"``)."""

    kind: str
    lines: list[str] = field(default_factory=list)


def blocks(text: str) -> list[Block]:
    """The tutorial's code blocks in order: indented chunks (commands, then what they print)
    and fenced ```python blocks."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```python"):
            j = lines.index("```", i + 1)
            out.append(Block("py", lines[i + 1:j]))
            i = j + 1
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and lines[j].startswith("    "):
                j += 1
            out += _indented([x[4:] for x in lines[i:j]])
            i = j
        else:
            i += 1
    return out


def _indented(chunk: list[str]) -> list[Block]:
    """An indented chunk: its leading command lines (continuations joined), then output."""
    commands: list[str] = []
    k = 0
    while k < len(chunk) and (chunk[k].startswith(COMMANDS)
                              or (commands and commands[-1].endswith("\\"))):
        if commands and commands[-1].endswith("\\"):
            commands[-1] = commands[-1][:-1].rstrip() + " " + chunk[k].strip()
        else:
            commands.append(chunk[k].strip())
        k += 1
    found = [Block("sh", commands)] if commands else []
    return found + ([Block("out", chunk[k:])] if chunk[k:] else [])


def _strip_comment(command: str) -> str:
    """The command without a ``$ `` prompt and a trailing ``# comment`` (quotes respected)."""
    command = command.removeprefix("$ ")
    return command[:_comment_start(command)].rstrip()


def _comment_start(command: str) -> int:
    quote = ""
    for k, ch in enumerate(command):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or command[k - 1].isspace()):
            return k
    return len(command)


NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]\d+)?"
ROUND_OFF = 1e-7  # below this, a figure is round-off (mass error, min rho, sub-1e-7 moves)


def _shown(line: str) -> str:
    """A shown line with its wall time (``in 9.5 s``) as ``...``."""
    return re.sub(r"in \d+(\.\d+)? s", "in ... s", line.strip())


def _pattern(line: str) -> str:
    """A printed line as a regex: wall times and ``...`` match anything, every number is a
    group (compared by :func:`_same_numbers`)."""
    parts = re.split(f"({NUMBER})", _shown(line))
    text = "".join(f"({NUMBER})" if k % 2 else re.escape(part) for k, part in enumerate(parts))
    text = text.replace(r"\.\.\.", ".*")
    return re.sub(r"(\\ )+", r"[ \\t]+", text)  # within one printed line


def _same_numbers(line: str, found: re.Match) -> bool:
    """The numbers of a shown line against those printed: the same text, or both round-off
    (below :data:`ROUND_OFF` in magnitude), which differs between machines."""
    shown = re.findall(NUMBER, _shown(line))
    return all(a == b or max(abs(float(a)), abs(float(b))) < ROUND_OFF
               for a, b in zip(shown, found.groups(), strict=True))


def missing_lines(shown: list[str], printed: str) -> list[str]:
    """The lines of an output block that the printed text does not hold."""
    return [line for line in shown if line.strip() and line.strip() != "..."
            and not any(_same_numbers(line, m)
                        for m in re.finditer(_pattern(line), printed))]


def demo_commands() -> list[str]:
    """What ``bash scripts/dev.sh demo`` runs (its ``demo)`` case), for the venv on PATH."""
    text = (ROOT / "scripts" / "dev.sh").read_text()
    case = text[text.index("    demo)"):]
    case = case[:case.index(";;")]
    return [line.strip().replace('"$VENV/bin/meanfield"', "meanfield")
            for line in case.splitlines()[1:] if "meanfield" in line]


def _targets(command: str) -> list[str]:
    words = shlex.split(command)
    return [words[k + 1] for k, w in enumerate(words[:-1]) if w in ("-o", "--output")]


# ----------------------------------------------------------------------------- the parser


def test_the_parser_finds_every_block():
    found = blocks(TUTORIAL.read_text())
    sh = [c for b in found if b.kind == "sh" for c in b.lines]
    assert any(c.startswith("meanfield sweep") and "--workers 2" in c for c in sh)  # joined
    assert all(not c.endswith("\\") for c in sh)
    assert sum(b.kind == "py" for b in found) >= 5 and sum(b.kind == "out" for b in found) >= 6
    assert _strip_comment("bash scripts/dev.sh demo         # or: make demo") == \
        "bash scripts/dev.sh demo"
    assert _strip_comment("meanfield run x --set 'a=\"#b\"'") == "meanfield run x --set 'a=\"#b\"'"
    assert demo_commands()[0].startswith("meanfield run runs/demo.toml")
    printed = "finished (stationary) at t = 2140 after 1285 steps in 12.25 s\n  128   1.3e-05  17  3.2\n"
    assert missing_lines(["finished (stationary) at t = 2140 after 1285 steps in 9.5 s",
                          "   128   1.3e-05   17    ..."], printed) == []
    assert missing_lines(["finished (stationary) at t = 2141 after 1285 steps in 9.5 s"],
                         printed)
    # round-off figures (below 1e-7) differ between machines; other numbers must agree
    assert missing_lines(["mass error 4.44e-16 (relative), min rho 2.456e-15",
                          "   0.075922    4.712e-08   ..."],
                         "mass error 2.22e-16 (relative), min rho 2.6e-15\n"
                         "   0.075922    0.000e+00     2.5\n") == []
    assert missing_lines(["   0.075922    4.712e-08"], "   0.075923    4.712e-08\n")
    assert missing_lines(["   0.075922    4.712e-06"], "   0.075922    4.470e-06\n")
    assert missing_lines(["  17    0.36", "256   3.176e-06"], "  17\n0.36 256\n3.176e-06\n") == \
        ["  17    0.36", "256   3.176e-06"]  # a shown line is one printed line


# ----------------------------------------------------------------------------- the run


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", "timed out after 1200 s")


@pytest.mark.slow
def test_tutorial_runs_as_written(tmp_path, monkeypatch):
    (tmp_path / "runs").symlink_to(ROOT / "runs")
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
               MPLBACKEND="Agg", COLUMNS="100")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    printed: dict[str, str] = {}  # command -> its stdout + stderr
    last = ""  # the output of the last command block
    problems: list[str] = []
    for block in blocks(TUTORIAL.read_text()):
        if block.kind == "py":
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile("\n".join(block.lines), "tutorial.md", "exec"), namespace)
            _check_python(namespace, buffer.getvalue(), problems)
            continue
        if block.kind == "out":
            expect_error = any(line.startswith("error:") for line in block.lines)
            if expect_error != last.startswith("[exit 2]"):
                problems.append(f"exit status: {last[:80]!r} for a block {block.lines[0]!r}")
            problems += [f"not printed: {line!r}" for line in missing_lines(block.lines, last)]
            continue
        last = ""
        for raw in block.lines:
            command = _strip_comment(raw)
            if command in SKIPPED:
                continue
            for one in demo_commands() if command == "bash scripts/dev.sh demo" else [command]:
                one = one.replace("/tmp/", f"{tmp_path}/")
                start = time.perf_counter()
                done = _run(one, tmp_path, env)
                print(f"{time.perf_counter() - start:7.1f} s  exit {done.returncode}  {one}")
                text = done.stdout + done.stderr
                printed[command] = printed.get(command, "") + text
                last += f"[exit {done.returncode}]\n{text}"
                wanted = 2 if raw.startswith("$ ") else 0  # "$ ": the tutorial shows a failure
                if done.returncode != wanted:
                    problems.append(f"{one}: exit {done.returncode}\n{text[-2000:]}")
                problems += [f"{one}: {t} not written" for t in _targets(one)
                             if done.returncode == 0 and not Path(t).exists()]
    for command, pattern in CLAIMS:
        got = next((v for k, v in printed.items() if command in k), None)
        if got is None and command.startswith("meanfield "):  # quoted in the prose only
            done = _run(command, tmp_path, env)
            got = printed[command] = done.stdout + done.stderr
        if got is None or not re.search(pattern, got):
            problems.append(f"claim {pattern!r} not in the output of {command!r}")
    assert not problems, "\n".join(problems)


def _check_python(namespace: dict, out: str, problems: list[str]) -> None:
    """The claims in the comments of the Python blocks."""
    if "transport" in namespace and "bound" in namespace and "fv_ratio" not in namespace:
        ratio = float(out.split()[-1])
        namespace["fv_ratio"] = ratio
        if not ratio <= 1.0:
            problems.append(f"§4: transport / bound = {ratio} > 1")
    if "final" in namespace and "diffuse" not in namespace:
        final, ds = namespace["final"], namespace["ds"]
        diffuse = float((final.rho * ds.cell_weight).sum("theta"))
        namespace["diffuse"] = diffuse
        if abs(float(final.mass) - 1.0) > 1e-12 or round(diffuse, 4) != 0.0008:
            problems.append(f"§3: mass {float(final.mass)}, diffuse {diffuse} (0.0008 claimed)")
        if int(final.n_atoms) != 5 or np.isfinite(final.atom_mass.values).sum() != 5:
            problems.append("§3: not five atoms")
    if "sw" in namespace and "sweep_checked" not in namespace:
        sw = namespace["sweep_checked"] = namespace["sw"]
        if sw["rho"].dims != ("beta", "time", "theta") or sw.sizes["beta"] != 4:
            problems.append(f"§8: the sweep Dataset has rho{sw['rho'].dims}, {sw.sizes}")
    if "f" in namespace and "s2_mass" not in namespace and "phi" in namespace["f"].dims:
        namespace["s2_mass"] = float(namespace["f"].mass)
        if abs(namespace["s2_mass"] - 1.0) > 1e-12:
            problems.append(f"§6: mass {namespace['s2_mass']}")
