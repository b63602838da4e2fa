"""``manifold_of``: the :class:`~solvers.core.manifold.Manifold` object of a config or a name.

The manifolds are the objects ``CIRCLE`` (:mod:`solvers.circle.manifold`), ``SPHERE``
(:mod:`solvers.sphere.manifold`) and, for ``S^{d-1}`` by weighted points, one object per d
(:func:`solvers.hypersphere.manifold.hypersphere`; ``HYPERSPHERE`` where only the name ``"Sd"``
is known); a config's ``domain.manifold`` and an archive's ``manifold``
attribute hold the ``name`` of one of them. Importing them is cheap: each method imports its
manifold's numerics when called, so an S^1 run never imports the sphere's transforms.
"""

from __future__ import annotations

from solvers.circle.manifold import CIRCLE
from solvers.core.manifold import Manifold
from solvers.hypersphere.manifold import HYPERSPHERE, hypersphere
from solvers.model.params import RunConfig
from solvers.sphere.manifold import SPHERE

MANIFOLDS: tuple[Manifold, ...] = (CIRCLE, SPHERE, HYPERSPHERE)


def manifold_of(source: RunConfig | str) -> Manifold:
    """The manifold of ``source``: a config (its ``domain.manifold``) or a manifold's name.

    Raises
    ------
    ValueError
        For a name no manifold has.
    """
    name = source if isinstance(source, str) else source.domain.manifold
    if name == HYPERSPHERE.name and not isinstance(source, str):
        return hypersphere(source.domain.d)
    for known in MANIFOLDS:
        if known.name == name:
            return known
    raise ValueError(f"unknown manifold {name!r}: one of {', '.join(m.name for m in MANIFOLDS)}")
