"""Every run states its accuracy: the verdict the archive carries and ``meanfield info`` prints first.

A verdict answers, for the atoms a run reports (their count, masses and positions):

- **method**: what ran when, and why (:func:`solvers.model.method.plan_method`; the default
  method's hand-over from the spectral grid to the Lagrangian cells);
- **time**: the integrator's own estimate of the time error (error-controlled steps); for steps
  that are not error-controlled (CFL- and rate-bound steps, a fixed ``time.dt``), a Richardson
  estimate: the coarsest run of the resolution check (below) repeated with every step bound
  halved (:func:`time_check_config`), whose atoms differ from that run's by about ``(1 - 2^-p)`` times
  the time error of a method of order ``p``: the estimate is ``2^p / (2^p - 1)`` times the
  largest difference of the atoms' masses (and positions). The coarser grid takes grid-bound
  steps longer than the run's and the same rate-bound steps, so its time error is at least the
  run's: the estimate errs on the safe side. A time error above the tolerances
  below is a warning;
- **resolution**: the same run at half the resolution (N/2 cells on S^1, lmax/2 on S^2), to the
  same final time: the atom count must agree, and the differences of the masses and positions
  give the error bar of the atoms. A lucky small difference (a convergence that is not
  monotone in the resolution) is guarded by a third level, the run at a quarter of the
  resolution (:func:`ladder_config`): the error bar is the larger of the difference ``d1``
  between the run and its half and half the difference ``d2`` between the half and the
  quarter. A method of order ``q >= 1`` has ``e(N) <= d1`` once ``d1`` is in its asymptotic
  range, and ``e(N) <= d2 / 2^q <= d2 / 2`` once ``d2`` is: whichever level is asymptotic, the
  bar bounds the error. A quarter level with another atom count (pre-asymptotic), or none (too
  coarse for the kernel), leaves ``d1`` alone, and the verdict says so.
  Where half the resolution is below the manifold's ``min_coarse_resolution`` or no longer
  resolves the kernel, the check runs at twice the resolution instead
  (:meth:`~solvers.core.manifold.Manifold.refine`: 2N on S^1, 2 (lmax + 1) - 1 on S^2, at most
  ``max_check_resolution``). A run with atoms whose resolution was not checked (``--no-check``,
  or no grid at half or twice its resolution) is not trusted: the verdict says so;
- **stationarity**: for a run that says it stopped at a stationary state, the speed of each
  atom under the exact velocity field of the final measure (closed-form sums over its cells and
  atoms, not the grid's stencil): an atom still moving faster than ``MOVING`` is reported;
- **warnings**: plain sentences for every number that cannot be trusted (the atom count changes
  with resolution or time step, the atoms move by more than ``MASS_TOL`` / ``POSITION_TOL``
  between resolutions or under the time estimate, a stationary stop whose atoms still move).

``trusted`` is true when there is no warning: it is a statement about the **accuracy** of the
numbers at the run's final time ``T``. The **state** at ``T`` is stated apart: "stationary at
t = T" or "not yet stationary at t = T" (the run ended at ``t_end`` or ``max_steps`` while its
atoms still moved), with notes such as a large diffuse mass. A run that mirrors a figure at the
paper's final time is trusted when its atoms at that time are accurate, whether or not they are
still moving; the state line says whether they are (docs/verdict.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from types import SimpleNamespace
from typing import Any


from solvers.model.method import plan_method
from solvers.model.params import RunConfig
from solvers.studies.verdict_runs import (_atoms_of, coarse_config, compare_atoms, controlled_steps,
                                          ladder_config, richardson_factor, time_check_base,
                                          time_check_config)
from solvers.timestepping.manifolds import manifold_of

__all__ = ["MASS_TOL", "POSITION_TOL", "MOVING", "DIFFUSE_WARN", "Verdict", "VERDICT_ATTRIBUTES",
           "judge", "run_verdict", "compare_atoms", "coarse_config", "ladder_config",
           "controlled_steps", "time_check_base", "time_check_config", "richardson_factor",
           "exact_atom_speed", "resumed_history", "as_dict"]

MOVING = 1e-4  # an atom faster than this (rad per unit time) is not at rest
MASS_TOL = 1e-3  # atom masses that move more than this between resolutions are flagged
POSITION_TOL = 1e-2  # ... and positions (rad)
DIFFUSE_WARN = 0.05  # more diffuse mass than this is reported


@dataclass(frozen=True)
class Verdict:
    """The accuracy statement of one run (module docstring); every field is archived."""

    method: str
    method_reason: str
    method_history: list = field(default_factory=list)
    time_error: float | None = None
    time_control: str = ""
    resolution: int | None = None
    coarse_resolution: int | None = None
    coarse_atoms: int | None = None
    atom_mass_error: float | None = None
    atom_position_error: float | None = None
    max_atom_speed: float | None = None
    warnings: list = field(default_factory=list)
    ladder_resolution: int | None = None
    ladder_mass: float | None = None  # the half against the quarter (None: not compared)
    ladder_position: float | None = None
    ladder_note: str = ""
    time_position_error: float | None = None
    time_check_resolution: int | None = None
    final_time: float | None = None
    stationary: bool | None = None  # None: no atoms, nothing to say of the state
    ended: str = ""
    state_notes: list = field(default_factory=list)

    def state_lines(self) -> list[str]:
        """The state at the final time (module docstring): stationary or not, and its notes."""
        if self.final_time is None:
            return []
        if self.stationary is None:
            head = f"state at t = {self.final_time:.6g}: no atoms"
        elif self.stationary:
            head = f"state: stationary at t = {self.final_time:.6g}"
        else:
            head = (f"state: not yet stationary at t = {self.final_time:.6g} (the run ended at "
                    f"{self.ended}): the atoms may still move after it; the accuracy above is "
                    "that of the atoms at this time")
        return [head] + [f"  note: {n}" for n in self.state_notes]

    @property
    def trusted(self) -> bool:
        return not self.warnings

    def lines(self) -> list[str]:
        """The verdict as ``meanfield info`` prints it."""
        head = "accuracy: trusted" if self.trusted else \
            f"accuracy: NOT TRUSTED ({len(self.warnings)} warning{'s' * (len(self.warnings) > 1)})"
        out = [head, f"  method: {self.method} ({self.method_reason})"]
        for t, method, why in self.method_history[1:]:
            out.append(f"    from t = {t:.6g}: {method} ({why})")
        out.append(f"  time error: {self.time_control}")
        if self.atom_mass_error is not None and self.ladder_mass is not None:
            out.append(f"  resolution: atoms at {self.resolution} against {self.coarse_resolution} "
                       f"and {self.ladder_resolution}: masses within {self.atom_mass_error:.2g}, "
                       f"positions within {self.atom_position_error:.2g} rad (the larger of the "
                       f"difference with {self.coarse_resolution} and half that of "
                       f"{self.coarse_resolution} with {self.ladder_resolution})")
        elif self.atom_mass_error is not None:
            out.append(f"  resolution: atoms at {self.resolution} against {self.coarse_resolution}: "
                       f"masses within {self.atom_mass_error:.2g}, positions within "
                       f"{self.atom_position_error:.2g} rad" +
                       (f" ({self.ladder_note})" if self.ladder_note else ""))
        elif self.coarse_resolution is None:
            out.append("  resolution: not checked")
        else:
            out.append(f"  resolution: {self.coarse_atoms} atoms at {self.coarse_resolution}, "
                       f"against those at {self.resolution}")
        if self.max_atom_speed is not None:
            out.append(f"  stationarity: atoms move at most {self.max_atom_speed:.2g} rad per unit "
                       "time under the exact velocity of the final measure")
        out += [f"  warning: {w}" for w in self.warnings]
        return out + self.state_lines()

    def attributes(self) -> dict[str, Any]:
        """Global archive attributes (NetCDF-safe: strings and numbers)."""
        nan = float("nan")
        return {
            "verdict": "\n".join(self.lines()),
            "verdict_trusted": int(self.trusted),
            "verdict_warnings": "\n".join(self.warnings),
            "method": self.method, "method_reason": self.method_reason,
            "method_history": json.dumps(self.method_history),
            "time_error_estimate": nan if self.time_error is None else float(self.time_error),
            "resolution_check_resolution": -1 if self.coarse_resolution is None else int(self.coarse_resolution),
            "resolution_check_atom_mass": nan if self.atom_mass_error is None else float(self.atom_mass_error),
            "resolution_check_atom_position": nan if self.atom_position_error is None
            else float(self.atom_position_error),
            "max_atom_speed": nan if self.max_atom_speed is None else float(self.max_atom_speed),
            "resolution_check_ladder_resolution": -1 if self.ladder_resolution is None
            else int(self.ladder_resolution),
            "resolution_check_ladder_mass": nan if self.ladder_mass is None else float(self.ladder_mass),
            "resolution_check_ladder_position": nan if self.ladder_position is None
            else float(self.ladder_position),
            "time_error_position": nan if self.time_position_error is None
            else float(self.time_position_error),
            "time_check_resolution": -1 if self.time_check_resolution is None
            else int(self.time_check_resolution),
            "verdict_state": "\n".join(self.state_lines()),
            "verdict_stationary": -1 if self.stationary is None else int(self.stationary),
            "verdict_state_notes": "\n".join(self.state_notes),
        }


# the global attributes a verdict sets (Verdict.attributes)
VERDICT_ATTRIBUTES = tuple(Verdict(method="", method_reason="").attributes())


def _time_line(config: RunConfig, time_error: float | None) -> str:
    tp = config.time
    return (f"at most {time_error:.2g} (the sum of the local error estimates of the "
            f"error-controlled steps, rtol = {tp.rtol:g}, atol = {tp.atol:g}; a bound while "
            "the flow does not amplify errors)")


def _time_check(config: RunConfig, base: Any, halved: Any, check: RunConfig
                ) -> tuple[dict[str, Any], str, list[str]]:
    """The Richardson estimate of :func:`time_check_config`: ``(fields, line, warnings)``."""
    count, dm, dx = compare_atoms(base, halved)
    why = "fixed steps, time.dt" if config.time.dt is not None else "CFL- and rate-bound steps"
    where = f"resolution {check.domain.resolution}"
    if dm is None:
        n = _atoms_of(base)[0].size
        return ({"time_check_resolution": check.domain.resolution},
                f"not estimated: the atom count depends on the time step ({n} atoms, {count} at "
                f"half the steps, at {where})",
                [f"the atom count depends on the time step ({n} at {where}, {count} with every "
                 "step bound halved): lower time.cfl and time.rate_factor (or time.dt)"])
    f = richardson_factor(config)
    em, ex = f * dm, f * dx
    line = (f"{em:.2g} in mass, {ex:.2g} rad in position (Richardson estimate, {why}: the run at "
            f"{where} repeated with every step bound halved; order "
            f"{round(math.log2(f / (f - 1)))})")
    warnings = []
    if em > MASS_TOL or ex > POSITION_TOL:
        warnings.append(f"time error: the atoms move by {em:.2g} in mass and {ex:.2g} rad under "
                        "the Richardson estimate; lower time.cfl and time.rate_factor (or time.dt)")
    return ({"time_error": em, "time_position_error": ex,
             "time_check_resolution": check.domain.resolution}, line, warnings)


def judge(config: RunConfig, final: Any, reason: str, *, history: list | None = None,
          time_error: float | None = None, coarse: Callable[[RunConfig, float], Any] | None = None,
          atom_speed: float | None = None) -> Verdict:
    """The :class:`Verdict` of a finished run.

    Parameters
    ----------
    final : Snapshot
        The run's last snapshot.
    reason : str
        Why the run ended (``"stationary"``, ``"t_end"``, ...).
    history : list of (t, method, reason), optional
        The method changes during the run (the default method's hand-over).
    time_error : float, optional
        The error-controlled steps' own estimate (None: the steps were not error-controlled,
        and ``coarse`` runs the Richardson time check, :func:`time_check_config`).
    coarse : callable, optional
        ``coarse(config_check, t) -> Snapshot``: the run under ``config_check`` (the
        resolution check, :func:`coarse_config`: half, else twice the run's resolution; the time
        check) to ``t``; None: the checks were skipped (a run with atoms is then not trusted).
    atom_speed : float, optional
        Largest speed of an atom under the exact velocity of the final measure.
    """
    plan = plan_method(config)
    warnings: list[str] = []
    diag = final.diagnostics
    n_atoms = _atoms_of(diag)[0].size
    checked: dict[str, Any] = {}
    done: list[tuple[RunConfig, Any]] = []

    def final_of(check: RunConfig) -> Any:
        """The diagnostics of the check run ``check`` at the run's final time (once each)."""
        for cfg, found in done:
            if cfg == check:
                return found
        done.append((check, coarse(check, float(final.t)).diagnostics))
        return done[-1][1]

    half = coarse_config(config) if coarse is not None and n_atoms else None
    if n_atoms and half is None:
        why = "--no-check" if coarse is None else \
            f"no grid at half or twice resolution {config.domain.resolution} for this kernel"
        warnings.append(f"resolution not checked ({why}): the atoms have no error bar; run "
                        "with the check, at a resolution whose half or double the check accepts")
    if half is not None:
        half_final = final_of(half)
        count, dm, dx = compare_atoms(diag, half_final)
        checked = dict(coarse_resolution=half.domain.resolution, coarse_atoms=count,
                       atom_mass_error=dm, atom_position_error=dx)
        quarter = ladder_config(config) if dm is not None else None
        if quarter is not None:
            n2, dm2, dx2 = compare_atoms(half_final, final_of(quarter))
            checked["ladder_resolution"] = quarter.domain.resolution
            if dm2 is None:
                checked["ladder_note"] = (f"{n2} atoms at {quarter.domain.resolution}: that level "
                                          "is not used")
            else:
                checked.update(ladder_mass=dm2, ladder_position=dx2)
                dm, dx = max(dm, dm2 / 2), max(dx, dx2 / 2)
                checked.update(atom_mass_error=dm, atom_position_error=dx)
        key = manifold_of(config).resolution_key
        if dm is None:
            warnings.append(f"the atom count depends on the resolution ({n_atoms} at "
                            f"{config.domain.resolution}, {count} at {half.domain.resolution}): "
                            f"raise {key} before trusting it")
        elif dm > MASS_TOL or dx > POSITION_TOL:
            lo, hi = sorted((half.domain.resolution, config.domain.resolution))
            third = f" and {quarter.domain.resolution}" if "ladder_mass" in checked else ""
            warnings.append(f"under-resolved: the atoms' error bar at resolution {hi} (against "
                            f"{lo}{third}) is {dm:.2g} in mass and {dx:.2g} rad; raise "
                            f"{key}")
    if time_error is not None:
        control = _time_line(config, time_error)
    else:
        check = time_check_config(config) if coarse is not None and n_atoms else None
        if check is None:
            why = f"fixed steps, time.dt = {config.time.dt:g}" if config.time.dt is not None \
                else "steps limited by the CFL and stability bounds only"
            control = f"not estimated ({why}, no time check)"
            if n_atoms:
                warnings.append(f"the time error is not estimated ({why}): run with the "
                                "check (without --no-check)")
        else:
            base = time_check_base(config)
            found, control, more = _time_check(
                config, diag if base is None else final_of(base), final_of(check), check)
            checked.update(found)
            time_error = found.get("time_error")
            warnings += more
    if atom_speed is not None and reason == "stationary" and atom_speed > MOVING:
        warnings.append(f"stopped as stationary, but an atom still moves at {atom_speed:.2g} rad "
                        "per unit time under the exact velocity")
    notes = []
    diffuse = float(getattr(diag, "diffuse_mass", math.nan))
    if n_atoms and math.isfinite(diffuse) and diffuse > DIFFUSE_WARN * abs(diag.mass):
        notes.append(f"{diffuse:.3g} of the mass is in no atom (diffuse): the atoms carry "
                     f"{abs(diag.mass) - diffuse:.3g}")
    checked["time_error"] = time_error
    return Verdict(method=plan.scheme, method_reason=plan.reason,
                   method_history=[list(h) for h in (history or [])],
                   time_control=control, resolution=config.domain.resolution,
                   max_atom_speed=atom_speed, warnings=warnings, final_time=float(final.t),
                   stationary=(reason == "stationary") if n_atoms else None, ended=reason,
                   state_notes=notes, **checked)


def as_dict(verdict: Verdict) -> dict[str, Any]:
    return asdict(verdict)


def exact_atom_speed(config: RunConfig, final: Any) -> float | None:
    """Largest speed of an atom of ``final`` under the exact velocity of its measure
    (:meth:`~solvers.core.manifold.Manifold.exact_atom_speed`: on S^1 the closed-form field of
    the cells and Dirac atoms; None on S^2 and without atoms)."""
    return manifold_of(config).exact_atom_speed(config, final)


def resumed_history(earlier: Any, new: Any, t0: float) -> list:
    """The method history of a run resumed at ``t0``: the archived entries ``earlier`` before
    ``t0``, then the resumed segment's ``new`` (the entry of the state the segment was prepared
    with, dated ``t0``, says so)."""
    if t0 <= 0.0:
        return [list(h) for h in new]
    out = [list(h) for h in earlier or () if float(h[0]) < t0]
    return out + [[t0, method, f"resumed: {why}"] if float(t) <= t0 else [float(t), method, why]
                  for t, method, why in new]


def run_verdict(config: RunConfig, result: Any, check_resolution: bool = True, *,
                t0: float = 0.0, history0: Any = (), companion: Any = None) -> Verdict:
    """:func:`judge` of a finished :func:`~solvers.timestepping.loop.simulate` result, with
    the resolution check's companion run (``check_resolution``; :func:`coarse_config`) and the
    exact atom speed. A resumed
    run (from ``t0``) passes its archived method history ``history0``; its time error is the
    archived estimate plus this segment's when simulate continued the count (``time_error0``).
    ``companion``: the :class:`~solvers.studies.companion.Companion` processes started beside
    the run (:func:`solvers.studies.companion.start_companions`: the resolution check, the time
    check), each answering for its own config (its atoms at the final time; where none
    answers, that check runs here)."""
    from solvers.io.state import initial_state
    from solvers.timestepping.loop import simulate

    def coarse(half: RunConfig, t: float) -> Any:
        child = [c for c in companion or () if c.half == half]
        found = child[0].atoms_at(t) if child else None
        if found is not None:  # the companion's atoms at t, read as a snapshot's diagnostics
            return SimpleNamespace(t=found.t, diagnostics=found)
        half = replace(half, time=replace(half.time, t_end=max(t, 1e-12), stop_when_stationary=False))
        rho0, atoms0 = initial_state(half)
        return simulate(half, rho0, atoms0=atoms0).final

    run_coarse = coarse if check_resolution and float(result.final.t) > 0 else None
    history = resumed_history(history0, result.method_history, float(t0))
    return judge(config, result.final, result.reason, history=history,
                 time_error=result.time_error if getattr(result, "controlled", False) else None,
                 coarse=run_coarse,
                 atom_speed=exact_atom_speed(config, result.final))
