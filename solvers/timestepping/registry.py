"""The scheme registry: the discretisation of a config (manifold, scheme, representation).

Each entry is imported only when chosen (shtns is not needed on S^1). ``time.scheme = "auto"``
is made concrete first by :func:`solvers.model.method.concrete` (the default method).
"""

from __future__ import annotations

from solvers.core.discretization import Discretization
from solvers.model.params import RunConfig


def make_discretization(config: RunConfig) -> Discretization:
    """The discretisation for ``config.domain.manifold`` and ``config.time.scheme`` (``"auto"``:
    :func:`solvers.model.method.choose_method`)."""
    from solvers.model.method import concrete

    config = concrete(config)
    if config.domain.manifold == "S1" and config.time.scheme == "auto":
        from solvers.circle.handover import SpectralToCells

        return SpectralToCells(config)
    if config.domain.manifold == "S1" and config.time.scheme == "lagrangian":
        from solvers.circle.measure.lagrangian_discretization import LagrangianCircleDiscretization

        return LagrangianCircleDiscretization(config)
    if config.domain.manifold == "S1" and config.atoms.representation == "dirac":
        from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization

        return DiracCircleDiscretization(config)
    if config.domain.manifold == "S2" and config.time.scheme == "lagrangian":
        from solvers.sphere.measure.lagrangian_discretization import LagrangianSphereDiscretization

        return LagrangianSphereDiscretization(config)
    if config.domain.manifold == "S2" and config.atoms.representation == "dirac":
        from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization

        return DiracSphereDiscretization(config)
    if config.domain.manifold == "S1":
        from solvers.circle.grid.discretization import CircleDiscretization

        return CircleDiscretization(config)
    if config.domain.manifold == "S2":  # imported only here: shtns is not needed on S^1
        from solvers.sphere.grid.discretization import SphereDiscretization

        return SphereDiscretization(config)
    raise ValueError(f"domain.manifold: unknown manifold {config.domain.manifold!r}; use S1 or S2")
