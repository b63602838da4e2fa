"""What a refinement ladder's observed orders mean (``meanfield converge``).

- :func:`design_order`: the order a ladder should show, from the scheme *and the data*. On smooth
  data fv is second order in space, spectral exponential in space, and in time the integrator's
  order. A ReLU (or leaky ReLU) perceptron has a C^1 potential only (docs/math.md §1):
  its velocity has a kink, so no ladder is exponential and the scheme's order is only an upper
  bound ("algebraic <= p"). A concentrated density (atoms detected in the finest run, or more
  than :data:`TAIL_CONCENTRATED` of its ``sum_{k>0} |rho_k|^2`` in the top third of the modes:
  a spectrum that does not decay) has the same effect: the limiter clips at extrema and the
  spectral scheme resolves no atom. Coarser runs are not asked: they are under-resolved first.
- :func:`order_flags`: ``E`` (erratic) where an observed order differs from the previous one by
  more than ``tol``; ``P`` (pre-asymptotic) where it is not yet within ``tol`` of an exact design
  order, above an upper bound by more than ``tol``, or not positive (exponential: where it does
  not grow); ``L`` (low) where an upper bound ("algebraic <= p") is not reached by more than
  ``tol``: the bound allows it, but the scheme's order is not observed (the rough data, or a
  pre-asymptotic ladder, sets the order: say which before quoting it). ``L`` alone does not
  take a ladder out of the asymptotic range (a steady order below the bound is one).
- :func:`richardson`: the limit and the error of the finest level of a scalar sequence (energy,
  atom masses) from its last three levels, ``p = log((q1 - q0) / (q2 - q1)) / log r``,
  ``q* = q2 + (q2 - q1) / (r^p - 1)``, applied only where those levels are in the asymptotic
  range (the order is unflagged, or within ``tol`` of the previous one for an algebraic bound)
  and the last difference is above round-off (:data:`ROUNDOFF` relative).
  For a distance ladder the finest run's error is ``d(u_{n-2}, u_{n-1}) / (r^p - 1)`` (the tail
  of a geometric series of successive distances).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TAIL_CONCENTRATED = 1e-3  # top-third spectral power fraction above which data is "concentrated"
ORDER_TOL = 0.3  # default tolerance of the flags (orders)
NOT_SMOOTH = ("relu", "leaky_relu")
ROUNDOFF = 1e-13  # relative size of a difference that is round-off


@dataclass(frozen=True)
class DesignOrder:
    """The order a ladder should show.

    ``kind``: ``exponential`` or ``algebraic``. ``order``: the algebraic order (exact when
    ``bound`` is False, else an upper bound; None for exponential). ``reason``: why (text).
    """

    kind: str
    order: float | None = None
    bound: bool = False
    reason: str = ""

    def label(self) -> str:
        """``exponential``, ``2``, or ``algebraic <= 2 (reason)``."""
        if self.kind == "exponential":
            return "exponential"
        text = f"{self.order:g}"
        return f"algebraic <= {text} ({self.reason})" if self.bound else text

    def attr(self) -> int | float | str:
        """NetCDF attribute: the exact order as a number, else the label."""
        exact = self.kind == "algebraic" and not self.bound and self.order is not None
        return (int(self.order) if float(self.order).is_integer() else self.order) if exact \
            else self.label()


def design_order(space: bool, scheme: str, integrator_order: int, activation: str,
                 concentrated: bool) -> DesignOrder:
    """The design order of a space (``space=True``) or time ladder (module docstring)."""
    nominal = (2 if scheme == "fv" else None) if space else integrator_order
    reasons = ([f"{activation}: C^1 potential"] if activation in NOT_SMOOTH else []) + \
        (["concentrated density"] if concentrated else [])
    if not reasons:
        return DesignOrder("exponential") if nominal is None else DesignOrder("algebraic", nominal)
    # spectral in space on rough data: algebraic with no usable bound above the fv one
    return DesignOrder("algebraic", nominal if nominal is not None else 2, True, ", ".join(reasons))


def is_concentrated(n_atoms: int, tail_energy: float) -> bool:
    """Atoms in the finest run, or its spectral tail above :data:`TAIL_CONCENTRATED`."""
    return bool(n_atoms > 0 or (np.isfinite(tail_energy) and tail_energy > TAIL_CONCENTRATED))


def order_flags(orders: Sequence[float], design: DesignOrder, tol: float = ORDER_TOL
                ) -> list[str]:
    """Per order: ``""`` or the flags ``"E"`` (erratic), ``"P"`` (pre-asymptotic), ``"L"``
    (below an upper bound) together; ``""`` where the order is NaN."""
    p = np.asarray(orders, dtype=float)
    flags, previous = [], np.nan
    for value in p:
        if not np.isfinite(value):
            flags.append("")
            continue
        erratic = np.isfinite(previous) and abs(value - previous) > tol
        low = False
        if design.kind == "exponential":
            pre = value <= 0 or (np.isfinite(previous) and value < previous - tol)
        elif design.bound:
            pre = value <= 0 or value > design.order + tol
            low = not pre and value < design.order - tol
        else:
            pre = abs(value - design.order) > tol
        flags.append("E" * bool(erratic) + "P" * bool(pre) + "L" * bool(low))
        previous = value
    return flags


def in_asymptotic_range(orders: Sequence[float], flags: Sequence[str], design: DesignOrder,
                        tol: float = ORDER_TOL) -> bool:
    """Whether the last order (three levels) is in the asymptotic range: finite, positive and
    unflagged; for an upper bound also the previous order must exist and agree within ``tol``."""
    p = np.asarray(orders, dtype=float)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0 or flags[ok[-1]].replace("L", "") or p[ok[-1]] <= 0:
        return False
    if design.kind == "algebraic" and design.bound:
        return ok.size >= 2 and abs(p[ok[-1]] - p[ok[-2]]) <= tol
    return True


def richardson(values: Sequence[float], ratio: float) -> tuple[float, float, float]:
    """``(limit, error of the last value, order)`` from the last three values of a sequence
    refined by ``ratio``; NaNs where the differences do not shrink monotonically."""
    q = np.asarray(values, dtype=float)[-3:]
    nan = (math.nan, math.nan, math.nan)
    if q.size < 3 or not np.all(np.isfinite(q)):
        return nan
    d1, d2 = q[1] - q[0], q[2] - q[1]
    if abs(d2) <= ROUNDOFF * np.max(np.abs(q)):  # round-off: no order, no estimate
        return nan
    if d1 == 0.0 or np.sign(d1) != np.sign(d2) or abs(d2) >= abs(d1):
        return nan
    p = math.log(d1 / d2) / math.log(ratio)
    err = d2 / (ratio ** p - 1.0)
    return float(q[2] + err), float(abs(err)), float(p)


def tail_error(successive: float, order: float, ratio: float) -> float:
    """Error of the finest level from the last successive distance and the order."""
    if not (np.isfinite(successive) and np.isfinite(order) and order > 0):
        return math.nan
    return float(successive / (ratio ** order - 1.0))
