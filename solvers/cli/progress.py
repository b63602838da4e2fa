"""What ``meanfield run`` watches while it runs: the progress bar (tqdm on stderr; warnings
printed through it) and the lowest density (a negative one fails the run)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from solvers.model.params import RunConfig

NEGATIVE_TOL = 1e-9  # min rho below -NEGATIVE_TOL * max rho: not a probability density


class ProgressBar:
    """``progress(t, step, dt, diagnostics)`` callback drawing a tqdm bar on stderr."""

    def __init__(self, t0: float, t_end: float, enabled: bool = True) -> None:
        self.t, self.step = t0, 0
        self.bar = None
        if enabled:
            from tqdm import tqdm

            fmt = "{percentage:3.0f}%|{bar}| t={n:.3f}/{total:g} [{elapsed}<{remaining}{postfix}]"
            self.bar = tqdm(total=t_end, initial=t0, file=sys.stderr, bar_format=fmt,
                            dynamic_ncols=True, leave=True)
        self._extra = ""

    def __call__(self, t: float, step: int, dt: float, diagnostics: Any = None) -> None:
        self.t, self.step = t, step
        if self.bar is None:
            return
        if diagnostics is not None:
            self._extra = f" E={diagnostics.energy:.6g} atoms={diagnostics.n_atoms}"
        self.bar.set_postfix_str(f"steps={step} dt={dt:.2e}{self._extra}", refresh=False)
        self.bar.update(min(t, self.bar.total) - self.bar.n)

    def show_warning(self, message: Warning | str, *args: Any, **kwargs: Any) -> None:
        """``warnings.showwarning`` replacement: one line, not through the bar."""
        text = f"warning: {message}"
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class LowestDensity:
    """Tracker of the lowest density of a run (a negative one fails the run)."""

    def __init__(self) -> None:
        self.min, self.t, self.scale = np.inf, 0.0, 0.0

    def __call__(self, snap: Any) -> None:
        d = snap.diagnostics
        self.scale = max(self.scale, abs(d.max_rho))
        if d.min_rho < self.min:
            self.min, self.t = d.min_rho, snap.t

    def verdict(self, config: RunConfig) -> int:
        if self.min >= -NEGATIVE_TOL * self.scale:
            return 0
        fix = "use time.scheme = \"fv\" (positivity preserving)" if \
            config.time.scheme != "fv" else "lower time.cfl"
        print(f"error: the density went negative (min rho = {self.min:.3g} at t = {self.t:.6g}): "
              f"not a probability density; {fix} or raise domain.resolution", file=sys.stderr)
        return 1
