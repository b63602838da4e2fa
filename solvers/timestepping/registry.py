"""The scheme registry: the discretisation of a config, one table keyed on ``(manifold, scheme,
representation)`` (:attr:`solvers.model.method.MethodPlan.key`).

Each entry is a function that imports its class when it is chosen (shtns is not imported on
S^1). The scheme is the plan's (:func:`solvers.model.method.plan_method`), never ``"auto"``;
the S^1 default has a scheme of its own, ``"spectral+lagrangian"``.
"""

from __future__ import annotations

from collections.abc import Callable

from solvers.core.discretization import Discretization
from solvers.model.method import MethodPlan, plan_method
from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError


def _handover() -> type:
    from solvers.circle.handover import SpectralToCells

    return SpectralToCells


def _circle_cells() -> type:
    from solvers.circle.measure.lagrangian_discretization import LagrangianCircleDiscretization

    return LagrangianCircleDiscretization


def _circle_dirac() -> type:
    from solvers.circle.measure.dirac_discretization import DiracCircleDiscretization

    return DiracCircleDiscretization


def _circle_grid() -> type:
    from solvers.circle.grid.discretization import CircleDiscretization

    return CircleDiscretization


def _sphere_particles() -> type:
    from solvers.sphere.measure.lagrangian_discretization import LagrangianSphereDiscretization

    return LagrangianSphereDiscretization


def _sphere_dirac() -> type:
    from solvers.sphere.measure.dirac_discretization import DiracSphereDiscretization

    return DiracSphereDiscretization


def _sphere_grid() -> type:
    from solvers.sphere.grid.discretization import SphereDiscretization

    return SphereDiscretization


# (manifold, scheme, representation) -> the discretisation class, imported when called
DISCRETIZATIONS: dict[tuple[str, str, str], Callable[[], type]] = {
    ("S1", "spectral+lagrangian", "dirac"): _handover,
    ("S1", "lagrangian", "dirac"): _circle_cells,
    ("S1", "fv", "dirac"): _circle_dirac,
    ("S1", "fv", "grid"): _circle_grid,
    ("S1", "spectral", "grid"): _circle_grid,
    ("S2", "lagrangian", "dirac"): _sphere_particles,
    ("S2", "fv", "dirac"): _sphere_dirac,
    ("S2", "fv", "grid"): _sphere_grid,
    ("S2", "spectral", "grid"): _sphere_grid,
}


def discretization_class(plan: MethodPlan) -> type:
    """The class of ``plan``'s discretisation; :class:`ConfigError` naming the parameter when the
    registry has no entry for ``plan.key``."""
    entry = DISCRETIZATIONS.get(plan.key)
    if entry is not None:
        return entry()
    manifold, scheme, representation = plan.key
    if not any(key[0] == manifold for key in DISCRETIZATIONS):
        raise ConfigError("domain.manifold", f"unknown manifold {manifold!r}; use "
                          + " or ".join(sorted({key[0] for key in DISCRETIZATIONS})))
    if not any(key[:2] == (manifold, scheme) for key in DISCRETIZATIONS):
        raise ConfigError("time.scheme", f"no scheme {scheme!r} on {manifold}")
    valid = [key[2] for key in DISCRETIZATIONS if key[:2] == (manifold, scheme)]
    raise ConfigError("atoms.representation", f"{representation!r} with scheme {scheme!r} on "
                      f"{manifold}: use " + " or ".join(repr(v) for v in valid))


def make_discretization(config: RunConfig, plan: MethodPlan | None = None) -> Discretization:
    """The discretisation of ``config`` under ``plan`` (None: :func:`plan_method` of ``config``),
    built from :meth:`MethodPlan.discretization_config` (the plan's scheme, representation,
    ``cfl`` and ``cfl_floor``)."""
    plan = plan_method(config) if plan is None else plan
    return discretization_class(plan)(plan.discretization_config(config))
