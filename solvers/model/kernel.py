"""The kernel ``K(x, y) = exp(beta x.y + log_shift)`` as a function of the angle (shared by S^1 and S^2).

See docs/math.md section 1 (the shifted kernel) and section 5 (its second derivative).
"""

from __future__ import annotations

import numpy as np

from solvers.model.params import ModelParams


def kernel_log_shift(model: ModelParams) -> float:
    """``log`` of the factor multiplying ``exp(beta x.y)``: 0 (``exp``) or ``-beta`` (``exp_shifted``)."""
    return -model.beta if model.kernel == "exp_shifted" else 0.0


def max_kernel_second_derivative(beta: float, log_shift: float, n: int = 20001) -> float:
    """``max_t |d^2/dt^2 exp(beta cos t + log_shift)|`` (docs/math.md §5: ``K''``)."""
    t = np.linspace(0.0, np.pi, n)
    k2 = np.exp(beta * np.cos(t) + log_shift) * np.abs(beta**2 * np.sin(t) ** 2 - beta * np.cos(t))
    return float(k2.max())
