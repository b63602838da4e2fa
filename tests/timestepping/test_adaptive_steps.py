"""Error-controlled time steps with the embedded pairs (``time.integrator = "bs32" | "dopri5" |
"ssprk3_2"``, ``time.rtol``, ``time.atol``): two Dirac atoms against their exact ODE, the error
against the tolerance, rejected steps and their bookkeeping, a stiff relaxation far beyond the
rate bound, fixed steps, resumes, and the config rules."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

from conftest import TWO_ATOMS_S1, toml_config, two_atom_distance
from solvers.io.state import initial_density
from solvers.model.config import ConfigError, load_config
from solvers.model.limits import ATOL_RANGE, RTOL_RANGE
from solvers.model.params import TimeParams
from solvers.timestepping.simulation import Solver
from solvers.timestepping.loop import simulate

PAIRS = ("bs32", "dopri5", "ssprk3_2")

# tests/circle/test_dirac.py's two atoms as Lagrangian cells
TWO_ATOMS = toml_config(TWO_ATOMS_S1, time__scheme="lagrangian")

# descent from a perturbed uniform density: it relaxes to uniform, a stiff-ish decay (the
# rate bound rate_factor / L allows 0.0067; stability alone about 0.15)
RELAX = {"domain": {"manifold": "S1", "resolution": 128}, "model": {"beta": 5.0, "direction": "descent"},
         "initial": {"kind": "uniform", "modes": [[1, 0.3], [3, 0.2]]},
         "time": {"t_end": 4.0}, "output": {"snapshot_interval": 1.0}}


def _relax(scheme: str) -> str:
    return toml_config(RELAX, time__scheme=scheme)


def _two_atoms(integrator: str, *overrides: str):
    cfg = load_config(TWO_ATOMS, [f'time.integrator="{integrator}"', *overrides])
    res = simulate(cfg, initial_density(cfg))
    x = np.sort(res.final.diagnostics.dirac_position)
    return res, abs((x[1] - x[0]) - two_atom_distance(3.0)), abs(0.5 * (x[0] + x[1]) - 1.6)


@pytest.mark.parametrize("integrator", PAIRS)
def test_two_atoms_follow_their_ode_at_the_default_tolerances(integrator):
    """Measured (rtol 5e-7, atol 1e-9): distance off by 7.1e-7 (bs32, 80 steps), 5.4e-7
    (ssprk3_2, 71), 8.9e-8 (dopri5, 28: the CFL bound of the cells limits it)."""
    assert (TimeParams().rtol, TimeParams().atol) == (5e-7, 1e-9)
    res, err, mid = _two_atoms(integrator)
    assert err < 1e-6 and mid < 1e-12
    assert res.n_rejected == 0 and res.final.n_rejected == 0 and res.time_error > 0


@pytest.mark.parametrize("integrator", PAIRS)
def test_halving_rtol_reduces_the_error(integrator):
    """Measured at rtol 1e-6 -> 5e-7: bs32 1.37e-6 -> 7.1e-7, ssprk3_2 1.04e-6 -> 5.4e-7, dopri5
    1.7e-7 -> 8.9e-8 (and 1e-5: 7.3e-6, 8.1e-6, 1.0e-6; 1e-8: 3.0e-8, 2.3e-8, 5.6e-9)."""
    coarse, e1, _ = _two_atoms(integrator, "time.rtol=1e-6")
    fine, e2, _ = _two_atoms(integrator, "time.rtol=5e-7")
    assert e2 < 0.75 * e1 and fine.n_steps >= coarse.n_steps


@pytest.mark.parametrize("integrator", PAIRS)
def test_fixed_dt_is_not_controlled(integrator):
    """A fixed ``time.dt`` takes exactly those steps with the pair's main solution (the estimate
    is still summed); with the pair's order the atoms are right to 1e-10, as test_dirac's rk4."""
    res, err, mid = _two_atoms(integrator, "time.dt=0.002", "time.rtol=1e-12")
    assert res.n_steps == 1500 and res.n_rejected == 0 and res.final.dt == 0.002
    assert err < (1e-12 if integrator == "dopri5" else 1e-9) and mid < 1e-12
    assert 0 < res.time_error < 1e-5


@pytest.mark.parametrize("scheme", ["spectral", "fv"])
@pytest.mark.parametrize("integrator", PAIRS)
def test_stiff_relaxation_rejects_steps_and_stays_stable(scheme, integrator):
    """Without the rate bound the steps run up to the stability limit of the decay (20x the
    bound) where the controller rejects some: they are counted, the snapshots carry the
    count, and the result agrees with RK4 at dt = 1e-3 to the tolerance's order (measured at
    rtol 1e-3: 1.4e-5 to 1.8e-4 with 23-42 steps, 2-8 rejected; RK4 at the rate bound: 600)."""
    cfg = load_config(_relax(scheme), [f'time.integrator="{integrator}"', "time.rtol=1e-3",
                                                    "time.atol=1e-6"])
    snaps = []
    with _quiet():
        res = simulate(cfg, initial_density(cfg), trackers=[snaps.append])
    ref_cfg = load_config(_relax(scheme), ['time.integrator="rk4"', "time.dt=0.001"])
    with _quiet():
        ref = simulate(ref_cfg, initial_density(ref_cfg))
    assert res.n_rejected > 0 and res.n_steps < 60
    assert [s.n_rejected for s in snaps] == sorted(s.n_rejected for s in snaps)
    assert snaps[-1].n_rejected == res.n_rejected and snaps[-1].time_error == res.time_error
    assert np.abs(res.final.rho - ref.final.rho).max() < 5e-4
    assert res.final.rho.min() > 0.15 and res.final.diagnostics.mass == pytest.approx(1.0, abs=1e-13)


@contextlib.contextmanager
def _quiet():
    """Silence the spectral scheme's resolution warning of these short runs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_solver_counts_and_controller():
    """The solver's bookkeeping step by step: accepted + rejected steps, the error ratio of every
    accepted step at most 1, no growth of the step right after a rejection, and the time error
    the sum of the accepted estimates."""
    cfg = load_config(_relax("spectral"), ['time.integrator="bs32"', "time.rtol=1e-3",
                                                        "time.atol=1e-6"])
    s = Solver(cfg, initial_density(cfg))
    total, before = 0.0, 0.0
    while s.t < 4.0:
        rejected, proposed = s.n_rejected, s.dt
        h = s.step(4.0)
        assert 0.0 <= s.error_ratio <= 1.0
        total += s.time_error - before
        before = s.time_error
        if s.n_rejected > rejected:  # retried shorter, then no growth
            assert h < proposed and s._dt_next <= h * (1 + 1e-12)
    assert s.n_accepted == s.n_steps and s.rejections["error"] == s.n_rejected > 0
    assert s.time_error == pytest.approx(total)


@pytest.mark.parametrize("integrator", ["bs32", "ssprk3_2"])
def test_resume_takes_the_same_steps(tmp_path, integrator):
    """The archive keeps the step the controller proposed: a resumed fv run (its snapshots
    interpolated, the archive holding the step state behind each) continues with it and ends
    bitwise where the run straight through does."""
    from solvers.api import open_run, resume, run

    text = _relax("fv")
    overrides = dict(time__integrator=integrator, time__rtol=1e-4, time__atol=1e-7)
    run(text, path=tmp_path / "a.nc", time__t_end=2.0, **overrides)
    resume(tmp_path / "a.nc", t_end=4.0)
    whole = run(text, **overrides)
    a = open_run(tmp_path / "a.nc")
    np.testing.assert_array_equal(a["step"].values, whole["step"].values)
    np.testing.assert_array_equal(a["rho"].values[-1], whole["rho"].values[-1])


@pytest.mark.parametrize("key", ["rtol", "atol"])
@pytest.mark.parametrize("bad", [0, -1e-6, 2.0, "1e-6", True, float("nan")])
def test_tolerances_are_validated(key, bad):
    with pytest.raises(ConfigError, match=f"time.{key}"):
        load_config(TWO_ATOMS, [f"time.{key}={bad!r}" if not isinstance(bad, str) else f'time.{key}="{bad}"'])


def test_tolerance_ranges():
    lo, hi = RTOL_RANGE
    assert load_config(TWO_ATOMS, [f"time.rtol={lo}", f"time.atol={ATOL_RANGE[1]}"]).time.rtol == lo
    with pytest.raises(ConfigError, match="time.rtol"):
        load_config(TWO_ATOMS, [f"time.rtol={lo / 2}"])
    with pytest.raises(ConfigError, match="time.atol"):
        load_config(TWO_ATOMS, [f"time.atol={ATOL_RANGE[0] / 2}"])
    assert load_config(TWO_ATOMS, ['time.integrator="dopri5"']).time.integrator == "dopri5"


def test_archive_records_the_bookkeeping():
    """Every record holds ``steps_rejected`` and ``time_error_estimate`` (with units and
    long_name): non-decreasing, the last equal to the run's; 0 without a pair."""
    from solvers.api import run

    text = _relax("fv")
    ds = run(text, time__integrator="bs32", time__rtol=1e-3, time__atol=1e-6)
    for name in ("steps_rejected", "time_error_estimate"):
        var = ds[name]
        assert var.dims == ("time",) and var.attrs["units"] == "1" and var.attrs["long_name"]
        assert np.all(np.diff(var.values) >= 0) and var.values[-1] > 0 and var.values[0] == 0
    cfg = load_config(text, ['time.integrator="bs32"', "time.rtol=1e-3", "time.atol=1e-6"])
    res = simulate(cfg, initial_density(cfg))
    assert ds["steps_rejected"].values[-1] == res.n_rejected
    assert ds["time_error_estimate"].values[-1] == res.time_error
    plain = run(text, time__t_end=1.0)
    assert np.all(plain["steps_rejected"].values == 0) and np.all(plain["time_error_estimate"].values == 0)
