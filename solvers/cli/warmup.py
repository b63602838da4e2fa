"""Compile the numba kernels once, ahead of the first run (``python -m solvers.cli.warmup``).

numba compiles a kernel the first time it is called and keeps it in the cache
(:mod:`solvers.core.numba_cache`); a first run paid that: 16 s for an S^2 run. ``make`` (scripts/
setup.sh) calls this after installing, so the first ``meanfield run`` starts compiled. Each
method runs a few steps on a small grid: the kernels do not depend on the grid size.
"""

from __future__ import annotations

import time
import warnings

from solvers.sphere.manifold import SPHERE

# TOML of each warm-up run; ``{sphere}`` is the sphere's ``name`` (configs without a manifold run
# on the default, S^1), ``{percep}`` / ``{percep3}`` the perceptrons of R^2 / R^3.
WARM = {
    "S1 default": '[domain]\nresolution = 96\n[model]\nbeta = 2.0\n{percep}[time]\nt_end = 0.5\n',
    "S1 softmax": '[domain]\nresolution = 96\n[model]\nbeta = 2.0\nattention = "softmax"\n{percep}'
                  '[time]\nt_end = 0.5\n',
    "S1 fv": '[domain]\nresolution = 96\n[model]\nbeta = 2.0\n{percep}[time]\nscheme = "fv"\nt_end = 0.5\n',
    "S1 fv Dirac": '[domain]\nresolution = 96\n[model]\nbeta = 2.0\n{percep}[atoms]\nrepresentation = "dirac"\n'
                   '[time]\nt_end = 0.5\n',
    "S2 default (descent)": '[domain]\nmanifold = "{sphere}"\nresolution = 31\n[model]\nbeta = 1.0\n{percep3}'
                            '[time]\nt_end = 0.2\n',
    "S2 fv": '[domain]\nmanifold = "{sphere}"\nresolution = 31\n[model]\nbeta = 1.0\n{percep3}[time]\n'
             'scheme = "fv"\nt_end = 0.2\n',
    "S2 default (ascent)": '[domain]\nmanifold = "{sphere}"\nresolution = 31\n[model]\nbeta = 1.0\n'
                           'direction = "ascent"\n{percep3}[time]\nt_end = 0.05\n',
    "S1 Lagrangian cells": '[domain]\nresolution = 96\n[model]\nbeta = 2.0\n{percep}[atoms]\n'
                           'representation = "dirac"\n[time]\nscheme = "lagrangian"\nt_end = 0.5\n',
    "S1 noise": '[domain]\nresolution = 96\n[model]\nbeta = 2.0\nnoise = 0.05\n{percep}[time]\nt_end = 0.5\n',
    "S2 noise": '[domain]\nmanifold = "{sphere}"\nresolution = 31\n[model]\nbeta = 1.0\nnoise = 0.05\n'
                '{percep3}[time]\nt_end = 0.05\n',
}
PERCEP = '[perceptron]\nactivation = "relu"\na = [[0.6, 0.8], [-1.0, 0.0]]\nomega = [0.5, -0.4]\n'
PERCEP3 = '[perceptron]\nactivation = "relu"\na = [[0.6, 0.8, 0.0], [0.0, -0.6, 0.8]]\nomega = [0.5, -0.4]\n'


def main() -> int:
    from solvers.io.state import initial_state
    from solvers.model.config import load_config
    from solvers.timestepping.loop import simulate

    start = time.perf_counter()
    for name, text in WARM.items():
        text = text.format(percep=PERCEP, percep3=PERCEP3, sphere=SPHERE.name)
        config = load_config(text + "[output]\nprogress = false\n")
        rho0, atoms0 = initial_state(config)
        with warnings.catch_warnings():  # a few steps to compile: their accuracy is not the point
            warnings.simplefilter("ignore", RuntimeWarning)
            simulate(config, rho0, atoms0=atoms0)
        print(f"warmup: {name} compiled ({time.perf_counter() - start:.0f} s)", flush=True)
    _point_sums()  # the S^2 atoms' sums (no atom forms in the short runs above)
    print(f"warmup: S2 point sums compiled ({time.perf_counter() - start:.0f} s)", flush=True)
    return 0


def _point_sums() -> None:
    import numpy as np

    from solvers.sphere.kernels_points_numba import point_coefficients, point_gradient

    x = np.array([[0.6, 0.0, 0.8]])
    coeffs = point_coefficients(np.array([0.6]), np.array([0.2]), np.ones(1), 2, np.ones(6))
    point_gradient(coeffs, x, 2, 1e-6, np.empty_like(x))


if __name__ == "__main__":
    raise SystemExit(main())
