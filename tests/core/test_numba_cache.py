"""Compiled kernels are cached per version of their sources (solvers/core/numba_cache.py).

numba keys a cache on the function's own file only, so a kernel calling a kernel of another
file kept the old callee after that file changed. Here: the digest follows every file that
defines compiled functions, the folder is set before numba compiles anything, the user's
``NUMBA_CACHE_DIR`` wins, and old folders are pruned.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solvers.core import numba_cache
from solvers.core.backend import numba_available

ROOT = Path(__file__).resolve().parents[2]


def copy_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "pkg"
    (tree / "core").mkdir(parents=True)
    (tree / "core" / "kernels.py").write_text("from numba import njit\n@njit\ndef f(x):\n    return x\n")
    (tree / "core" / "calls.py").write_text("from numba import njit\n@njit\ndef g(x):\n    return x + 1\n")
    (tree / "plain.py").write_text("X = 1\n")
    return tree


def test_digest_follows_every_compiled_source_and_only_those(tmp_path, monkeypatch):
    tree = copy_tree(tmp_path)
    first = numba_cache.kernel_digest(tree)
    assert first == numba_cache.kernel_digest(tree) and len(first) == 16
    (tree / "plain.py").write_text("X = 2\n")  # no compiled code: same folder
    assert numba_cache.kernel_digest(tree) == first
    (tree / "core" / "kernels.py").write_text("from numba import njit\n@njit\ndef f(x):\n    return 2 * x\n")
    assert numba_cache.kernel_digest(tree) != first  # a callee changed: a new folder for all


def test_configure_sets_the_folder_and_respects_the_user(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    folder = numba_cache.configure_numba_cache(tmp_path)
    assert folder == tmp_path / numba_cache.kernel_digest() and folder.is_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(folder)
    if "numba" in sys.modules:
        assert sys.modules["numba"].config.CACHE_DIR == str(folder)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert numba_cache.configure_numba_cache(tmp_path) is None
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "mine")


def test_old_folders_are_pruned(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    for k in range(6):
        (tmp_path / f"old{k}").mkdir()
        os.utime(tmp_path / f"old{k}", (time.time() - 1000 + k, time.time() - 1000 + k))
    folder = numba_cache.configure_numba_cache(tmp_path)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert folder.name in left and len(left) == numba_cache.KEEP
    assert "old0" not in left and "old5" in left
    monkeypatch.setattr(numba_cache, "_prune", lambda *a: pytest.fail("pruned again"))
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert numba_cache.configure_numba_cache(tmp_path) == folder  # existing folder: no pruning


@pytest.mark.slow
@pytest.mark.skipif(not numba_available(), reason="numba not installed")
def test_a_new_process_compiles_into_the_keyed_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    code = ("import os, numpy as np; from solvers.circle.grid.fv import transport; "
            "transport(np.ones(8), np.ones(8), 1.0, 'mc', 0.1, backend='numba'); "
            "print(os.environ['NUMBA_CACHE_DIR'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    folder = Path(out.stdout.split()[-1])
    assert folder == tmp_path / "meanfield-spectral" / "numba" / numba_cache.kernel_digest()
    assert any(folder.rglob("*.nbi")), "the compiled kernel was cached in the keyed folder"
    shutil.rmtree(folder)
