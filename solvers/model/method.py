"""The method of a run, resolved once from its config: :class:`MethodPlan`.

A config that names no scheme (``time.scheme = "auto"``) runs the default method, chosen on
measurements (docs/methods.md, "Which method when"):

- S^1, every direction and attention: pseudo-spectral while the density is smooth and resolved
  (exponentially accurate: linear growth rates to round-off), then Lagrangian cells with Dirac
  atoms (:mod:`solvers.circle.handover`): the scheme ``"spectral+lagrangian"``. The cells carry
  mass exactly and never go negative, and no atom is held in a fixed cell, so none is trapped
  there: the fv grid's ascent trap (an atom held in one cell pulls on both faces of its cell and
  freezes) gave 3 atoms where the exact flow has 2 on the paper's S^1 ascent at beta = 10.
- S^2, ascent or softmax attention: Lagrangian particles with Dirac atoms (``"lagrangian"``;
  the same reason: the grid traps atoms under ascent).
- S^2, descent with unnormalized attention: the finite-volume grid with Dirac atoms (``"fv"``;
  descent carries atoms out of their cells rather than into them; the particles' pair sums cost
  O(n^2) per stage, 10-100x the grid at lmax 63-127).
- With noise (``model.noise > 0``), both manifolds: pseudo-spectral with the exact heat
  semigroup (``"spectral"``, Lawson steps, docs/noise.md §5). The noise keeps the density smooth
  and positive (no atoms form: a peak is about ``sqrt(nu / |U''|)`` wide), which the spectral
  scheme resolves to exponential accuracy; Dirac atoms and Lagrangian points would carry no
  diffusion.

The default method's state is measure-valued (``atoms.representation = "dirac"``), except with
noise. The values a config leaves out (None) are the method's own:

- ``time.cfl``: :data:`AUTO_CFL` for the default method's cells and particles (they need
  ``dt max|du/dx| <= 1`` to stay in order; a step that turns one inside out is retried shorter,
  and the error control sets the accuracy: the demo takes 1147 steps instead of 2422 at 0.4, the
  same atoms to 1e-5), else :data:`GRID_CFL` (the fv scheme's positivity needs <= 0.5).
- ``time.cfl_floor``: :data:`DIRAC_CFL_FLOOR` for a Dirac state, on S^1 and S^2 (the atoms hold
  the mass, so the CFL condition counts only the faces whose upwind density exceeds 1% of the
  mean; the outflow limiter keeps the thinner ones positive), else :data:`FV_CFL_FLOOR`. The
  S^1 hand-over records :data:`FV_CFL_FLOOR` (its spectral phase has no floor; its cells take
  :data:`DIRAC_CFL_FLOOR`, :mod:`solvers.circle.handover`).

:func:`plan_method` returns the plan; the solver, the scheme registry, the time loop's snapshot
mode, the verdict and the cost model read it. :func:`resolve` writes the plan's representation,
``cfl`` and ``cfl_floor`` into a new config; the config reader calls it
(:func:`solvers.model.config.build_config`), so the archive records them and a config built in
Python and validated gets the values of the same TOML file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError

SCHEME_NAMES = ("auto", "fv", "spectral", "lagrangian")  # the values of time.scheme
HANDOVER = "spectral+lagrangian"  # the S^1 default: spectral, then Lagrangian cells
GRID_SCHEMES = ("fv", "spectral")  # the schemes whose state lives on a fixed grid
# the integrator a scheme runs when time.integrator is not given (the discretisations of
# solvers.timestepping.registry run these; tests/model check it)
DEFAULT_INTEGRATORS = {"fv": "ssprk10_2", "spectral": "rk4", "lagrangian": "rk4",
                       HANDOVER: "dopri5"}
# Sd: the points' steps are error-controlled (the Lipschitz bound of d units is pessimistic)
POINTS_INTEGRATOR = "dopri5"
AUTO_CFL = 1.0  # time.cfl of the default method's cells and particles (module docstring)
GRID_CFL = 0.4  # time.cfl of every other method
# time.cfl_floor of a Dirac state (module docstring): on S^2 (runs/s2_descent_relu.toml) 540
# steps instead of 775, the atoms within 6e-6 of error-controlled steps (ssprk3_2, rtol 5e-7) as
# at 1e-6; on S^1 stationary atoms within 3e-5 of 1e-6, with 1.1-3.2x fewer steps at beta 1-10
DIRAC_CFL_FLOOR = 1e-2
FV_CFL_FLOOR = 1e-6  # time.cfl_floor of a grid density


@dataclass(frozen=True)
class MethodPlan:
    """What a run runs, resolved once from its config by :func:`plan_method`.

    Attributes
    ----------
    manifold : str
        ``domain.manifold`` (``"S1"``, ``"S2"``).
    scheme : str
        The scheme that runs, never ``"auto"``: ``"fv"``, ``"spectral"``, ``"lagrangian"`` or
        ``"spectral+lagrangian"`` (the S^1 default, :data:`HANDOVER`).
    representation : str
        The state: ``"grid"`` (a grid density) or ``"dirac"`` (density plus Dirac atoms).
    integrator : str
        The Runge-Kutta method that runs: ``time.integrator``, else the scheme's
        (:data:`DEFAULT_INTEGRATORS`).
    cfl, cfl_floor : float
        ``time.cfl`` and ``time.cfl_floor``, the method's own where the config gives none.
    snapshot_mode : str
        ``"interpolate"`` (free steps, snapshots interpolated between two step states) or
        ``"land"`` (a step ends on each snapshot time): ``output.snapshot_mode``, and for
        ``"auto"`` interpolate for the fv scheme with adaptive steps and no noise (with noise a
        straight line across a step would miss the heat semigroup's exponential decay).
    reason : str
        One sentence: why this scheme (for the archive and ``meanfield info``).
    automatic : bool
        Whether the scheme is the default method's (the config names none).
    """

    manifold: str
    scheme: str
    representation: str
    integrator: str
    cfl: float
    cfl_floor: float
    snapshot_mode: str
    reason: str
    automatic: bool

    @property
    def key(self) -> tuple[str, str, str]:
        """``(manifold, scheme, representation)``: the scheme registry's key
        (:func:`solvers.timestepping.registry.registry_keys`)."""
        return (self.manifold, self.scheme, self.representation)

    def discretization_config(self, config: RunConfig) -> RunConfig:
        """``config`` as this plan's discretisation reads it: :func:`resolve`'s values and
        ``time.scheme`` the plan's scheme (the S^1 hand-over keeps ``"auto"``: it runs the
        spectral and the Lagrangian scheme, each with a config of its own)."""
        scheme = config.time.scheme if self.scheme == HANDOVER else self.scheme
        return replace(config, time=replace(config.time, scheme=scheme, cfl=self.cfl,
                                            cfl_floor=self.cfl_floor),
                       atoms=replace(config.atoms, representation=self.representation))


def _scheme(config: RunConfig) -> tuple[str, str]:
    """The scheme that runs and why (module docstring)."""
    scheme, model, manifold = config.time.scheme, config.model, config.domain.manifold
    if scheme != "auto":
        return scheme, f"time.scheme = \"{scheme}\" given in the config"
    if model.noise > 0:
        return "spectral", (f"default with noise on {manifold}: pseudo-spectral with the exact "
                            "heat semigroup (the noise keeps the density smooth and positive: no "
                            "atoms; exponential accuracy while the peaks, about sqrt(nu/|U''|) "
                            "wide, are resolved)")
    if manifold == "Sd":
        return "lagrangian", ("the method on Sd: weighted points moved by the exact velocity, "
                              "merged into Dirac atoms (exact mass)")
    if manifold == "S1":
        return HANDOVER, ("default on S1: pseudo-spectral while the density is smooth and "
                          "resolved, then Lagrangian cells with Dirac atoms (exact mass, "
                          "rho >= 0, no atom trapped in a grid cell)")
    if model.direction == "ascent" or model.attention != "unnormalized":
        why = "ascent" if model.direction == "ascent" else "softmax attention"
        return "lagrangian", (f"default on S2 for {why}: Lagrangian particles with Dirac atoms "
                              "(no atom trapped in a grid cell)")
    return "fv", ("default on S2 for descent with unnormalized attention: finite volumes with "
                  "Dirac atoms (atoms leave their cells under descent; the particles' pair sums "
                  "cost 10-100x more)")


def plan_method(config: RunConfig) -> MethodPlan:
    """The method ``config`` runs (module docstring).

    Parameters
    ----------
    config : RunConfig
        A run configuration, resolved (:func:`resolve`) or not: the plan is the same.

    Returns
    -------
    MethodPlan
    """
    tp = config.time
    if tp.scheme not in SCHEME_NAMES:
        raise ConfigError("time.scheme", f"unknown scheme {tp.scheme!r}; use one of "
                          + ", ".join(f'"{name}"' for name in SCHEME_NAMES))
    scheme, reason = _scheme(config)
    automatic = tp.scheme == "auto"
    representation = "dirac" if automatic and not config.model.noise > 0 \
        else config.atoms.representation
    cfl = tp.cfl if tp.cfl is not None else \
        AUTO_CFL if automatic and scheme not in GRID_SCHEMES else GRID_CFL
    cfl_floor = tp.cfl_floor if tp.cfl_floor is not None else \
        DIRAC_CFL_FLOOR if representation == "dirac" and scheme != HANDOVER else FV_CFL_FLOOR
    mode = config.output.snapshot_mode
    if mode == "auto":
        free = scheme == "fv" and tp.dt is None and config.model.noise == 0
        mode = "interpolate" if free else "land"
    return MethodPlan(manifold=config.domain.manifold, scheme=scheme,
                      representation=representation,
                      integrator=tp.integrator or (POINTS_INTEGRATOR if config.domain.manifold
                                                   == "Sd" else DEFAULT_INTEGRATORS[scheme]),
                      cfl=cfl,
                      cfl_floor=cfl_floor, snapshot_mode=mode, reason=reason, automatic=automatic)


def resolve(config: RunConfig) -> RunConfig:
    """``config`` with the plan's ``atoms.representation``, ``time.cfl`` and ``time.cfl_floor``
    (a new config; ``config`` itself when it holds them already). ``time.scheme`` stays as given
    (``"auto"``: the archive records that the default method ran)."""
    plan = plan_method(config)
    tp = config.time
    if (config.atoms.representation, tp.cfl, tp.cfl_floor) == (
            plan.representation, plan.cfl, plan.cfl_floor):
        return config
    return replace(config, time=replace(tp, cfl=plan.cfl, cfl_floor=plan.cfl_floor),
                   atoms=replace(config.atoms, representation=plan.representation))
