"""The scheme registry: the discretisation of a config, looked up by ``(manifold, scheme,
representation)`` (:attr:`solvers.model.method.MethodPlan.key`).

Each manifold object declares its entries (:meth:`solvers.core.manifold.Manifold.discretizations`:
``(scheme, representation)`` -> a function that imports the class when it is chosen, so shtns
is not imported on S^1). The scheme is the plan's (:func:`solvers.model.method.plan_method`),
never ``"auto"``; the S^1 default has a scheme of its own, ``"spectral+lagrangian"``.
"""

from __future__ import annotations

from solvers.core.discretization import Discretization
from solvers.model.method import MethodPlan, plan_method
from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError
from solvers.timestepping.manifolds import MANIFOLDS, manifold_of


def registry_keys() -> set[tuple[str, str, str]]:
    """Every ``(manifold, scheme, representation)`` the registry holds."""
    return {(m.name, *key) for m in MANIFOLDS for key in m.discretizations()}


def discretization_class(plan: MethodPlan) -> type:
    """The class of ``plan``'s discretisation; :class:`ConfigError` naming the parameter when the
    registry has no entry for ``plan.key``."""
    name, scheme, representation = plan.key
    try:
        manifold = manifold_of(name)
    except ValueError:
        raise ConfigError("domain.manifold", f"unknown manifold {name!r}; use "
                          + " or ".join(sorted(m.name for m in MANIFOLDS))) from None
    entries = manifold.discretizations()
    entry = entries.get((scheme, representation))
    if entry is not None:
        return entry()
    valid = [key[1] for key in entries if key[0] == scheme]
    if not valid:
        raise ConfigError("time.scheme", f"no scheme {scheme!r} on {name}")
    raise ConfigError("atoms.representation", f"{representation!r} with scheme {scheme!r} on "
                      f"{name}: use " + " or ".join(repr(v) for v in valid))


def make_discretization(config: RunConfig, plan: MethodPlan | None = None) -> Discretization:
    """The discretisation of ``config`` under ``plan`` (None: :func:`plan_method` of ``config``),
    built from :meth:`MethodPlan.discretization_config` (the plan's scheme, representation,
    ``cfl`` and ``cfl_floor``)."""
    plan = plan_method(config) if plan is None else plan
    return discretization_class(plan)(plan.discretization_config(config))
