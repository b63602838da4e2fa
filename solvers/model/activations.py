"""Perceptron activations: ``sigma`` (velocity) and its potential ``phi`` with ``phi' = 2 sigma``.

docs/math.md §1: the perceptron potential is ``v(x) = sum_j omega_j phi(a_j.x + b_j)`` and its sphere
gradient is ``sum_j omega_j sigma(a_j.x + b_j) P_x a_j`` (the velocity ``grad v / 2``).
``lipschitz`` is ``Lip(sigma)`` and ``sigma0`` is ``|sigma(0)|`` (Theorem 3.5 constant, docs/math.md §5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

Array = np.ndarray
LEAKY_SLOPE = 0.01


def _norm_cdf(s: Array) -> Array:
    return 0.5 * special.erfc(-s / np.sqrt(2.0))


def _norm_pdf(s: Array) -> Array:
    return np.exp(-0.5 * s * s) / np.sqrt(2.0 * np.pi)


@dataclass(frozen=True)
class Activation:
    """An activation ``sigma`` with potential ``phi`` (``phi' = 2 sigma``)."""

    name: str
    sigma: Callable[[Array], Array]
    phi: Callable[[Array], Array]
    lipschitz: float
    sigma0: float
    smooth: bool  # potential C^2 or better (energy identity to round-off)


def _leaky_phi(s: Array) -> Array:
    return np.where(s > 0, s * s, LEAKY_SLOPE * s * s)


ACTIVATIONS: dict[str, Activation] = {
    "relu": Activation("relu", lambda s: np.maximum(s, 0.0),
                       lambda s: np.maximum(s, 0.0) ** 2, 1.0, 0.0, False),
    # exact GeLU sigma(s) = s Phi(s); phi(s) = s^2 Phi(s) + s phi_N(s) - Phi(s) (docs/math.md §1)
    "gelu": Activation("gelu", lambda s: s * _norm_cdf(s),
                       lambda s: s * s * _norm_cdf(s) + s * _norm_pdf(s) - _norm_cdf(s),
                       1.12890, 0.0, True),
    "linear": Activation("linear", lambda s: s, lambda s: s * s, 1.0, 0.0, True),
    # tanh: phi(s) = 2 log cosh s
    "tanh": Activation("tanh", np.tanh,
                       lambda s: 2.0 * (np.logaddexp(s, -s) - np.log(2.0)), 1.0, 0.0, True),
    "leaky_relu": Activation("leaky_relu", lambda s: np.where(s > 0, s, LEAKY_SLOPE * s),
                             _leaky_phi, 1.0, 0.0, False),
}


def get_activation(name: str) -> Activation:
    """Look up an activation by name (``none`` is handled by the caller: no perceptron)."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        allowed = ", ".join(sorted(ACTIVATIONS) + ["none"])
        raise ValueError(f"perceptron.activation: unknown activation {name!r}; use one of {allowed}") from None
