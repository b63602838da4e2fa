"""The order conditions of Runge-Kutta methods, one per rooted tree (Butcher, Numerical Methods
for Ordinary Differential Equations, 3rd ed., 2016, sections 30-31).

A method ``(A, b)`` has order ``p`` when ``b . Phi(t) = 1 / gamma(t)`` for every rooted tree ``t``
of at most ``p`` nodes: :func:`order_residuals` gives the residuals, which
:meth:`solvers.timestepping.integrators.ButcherTable.validate` checks against :data:`ORDER_TOL`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

ORDER_TOL = 1e-14  # largest residual of an order condition in floating point


Tree = tuple  # a rooted tree: the sorted tuple of its root's subtrees (() is the single node)


@lru_cache(maxsize=None)
def rooted_trees(order: int) -> tuple[Tree, ...]:
    """The rooted trees with ``order`` nodes (1, 1, 2, 4, 9 for orders 1..5; Butcher, Numerical
    Methods for ODEs, 2016, section 30): a root with a multiset of subtrees whose orders sum
    to ``order - 1``."""
    if order == 1:
        return ((),)
    out: set[Tree] = set()

    def forests(left: int, smallest: Tree | None) -> list[tuple[Tree, ...]]:
        # multisets of trees with ``left`` nodes in all, each subtree >= ``smallest`` (canonical)
        if left == 0:
            return [()]
        found = []
        for k in range(1, left + 1):
            for t in rooted_trees(k):
                if smallest is not None and _key(t) < _key(smallest):
                    continue
                found += [(t,) + rest for rest in forests(left - k, t)]
        return found

    for f in forests(order - 1, None):
        out.add(tuple(sorted(f, key=_key)))
    return tuple(sorted(out, key=_key))


def _key(tree: Tree) -> tuple:
    """A total order of trees (node count first), for canonical forms."""
    return (tree_order(tree), tuple(_key(t) for t in tree))


def tree_order(tree: Tree) -> int:
    return 1 + sum(tree_order(t) for t in tree)


def tree_density(tree: Tree) -> int:
    """``gamma(t) = |t| prod gamma(t_i)``: the condition of ``t`` is ``b . Phi(t) = 1 / gamma(t)``."""
    out = tree_order(tree)
    for t in tree:
        out *= tree_density(t)
    return out


def stage_weights(a: np.ndarray, tree: Tree) -> np.ndarray:
    """``Phi(t)`` per stage: ones for the single node, else ``prod_i A Phi(t_i)`` (so that the
    elementary weight of ``t`` is ``b . Phi(t)``)."""
    out = np.ones(a.shape[0])
    for t in tree:
        out = out * (a @ stage_weights(a, t))
    return out


def order_conditions(order: int) -> list[Tree]:
    """Every rooted tree up to ``order`` nodes, by order (1, 2, 4, 8, 17 conditions up to 1..5)."""
    return [t for k in range(1, order + 1) for t in rooted_trees(k)]


def order_residuals(a: np.ndarray, b: np.ndarray, order: int) -> list[float]:
    """``|b . Phi(t) - 1/gamma(t)|`` for every rooted tree of at most ``order`` nodes."""
    return [abs(float(b @ stage_weights(a, t)) - 1.0 / tree_density(t)) for t in order_conditions(order)]
