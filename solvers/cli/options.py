"""Options shared by several commands, declared without importing what they configure.

The parsers must stay cheap (``meanfield --help`` imports no study module), so the choices
and defaults that the studies define are repeated here; tests/cli/test_startup.py checks
that they equal the studies' own.
"""

from __future__ import annotations

import argparse

STYLES = ("paper", "screen")  # solvers.plots.style.STYLES
PLACEMENTS = ("quantiles", "sample")  # solvers.studies.particles.PLACEMENTS
MERGE_TOL = 1e-3  # solvers.studies.polish.MERGE_TOL
DEFAULT_MASS_TOL = 0.02  # solvers.studies.resolution.DEFAULT_MASS_TOL
MAX_REFINEMENTS = 3  # solvers.studies.resolution.MAX_REFINEMENTS
MAX_CHECK_CELLS = 4096  # solvers.circle.manifold.CIRCLE.max_check_resolution
MAX_CHECK_LMAX = 255  # solvers.sphere.manifold.SPHERE.max_check_resolution
DEFAULT_PERTURBATION = 0.05  # solvers.studies.sweep.DEFAULT_PERTURBATION
MAX_SWEEP_RUNS = 10_000  # solvers.studies.sweep.MAX_RUNS


def add_style(parser: argparse.ArgumentParser) -> None:
    """``--style paper|screen`` (figures: see :mod:`solvers.plots.style`)."""
    parser.add_argument("--style", choices=STYLES, default="paper",
                        help="figure style: paper (page width, 8 pt, 300 dpi; default) or "
                             "screen (13 in wide, larger text, 120 dpi)")


def add_dry_run(parser: argparse.ArgumentParser) -> None:
    """``--dry-run``: print the run's plan and estimate, write nothing (``meanfield run``)."""
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (method, resolution, integrator, estimated steps, "
                             "time and output size) and exit without running or writing anything")
