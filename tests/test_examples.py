"""The README's Python snippets and the scripts in examples/ run verbatim."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def readme_snippets() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python"):text.index("## Command line")]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_readme_has_python_snippets():
    assert len(readme_snippets()) >= 3


@pytest.mark.parametrize("index", range(3))
def test_readme_snippet_runs(index, monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace: dict = {"solvers": __import__("solvers")}  # the sweep snippet follows the first
    exec(compile(readme_snippets()[index], f"README.md snippet {index}", "exec"), namespace)
    if "sw" in namespace:  # the sweep snippet: one run per beta, NaN-padded atoms
        sw = namespace["sw"]
        assert sw["rho"].dims == ("beta", "time", "theta") and sw.sizes["beta"] == 2
        assert set(sw["stop_reason"].values) <= {"t_end", "stationary"}
    if "ds" in namespace:  # the API snippet: the Dataset has the archive's variables
        ds, longer = namespace["ds"], namespace["longer"]
        assert {"rho", "energy", "atom_mass", "mass"} <= set(ds.data_vars)
        t0, t1 = float(ds.time[-1]), float(longer.time[-1])
        assert t0 < t1 <= t0 + 100.0 + 1e-9  # continued (it may stop early: stationary)
        assert longer.sizes["time"] > ds.sizes["time"]
        assert (longer.time.diff("time") > 0).all()
        assert abs(float(longer["mass"][-1]) - 1.0) < 1e-12


# the sweep example starts a dask cluster (2.4 s): run with the slow tests
@pytest.mark.parametrize("script", [pytest.param(p, marks=pytest.mark.slow) if p.name == "beta_sweep.py"
                                    else p for p in EXAMPLES], ids=lambda p: p.name)
def test_example_runs(script):
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
