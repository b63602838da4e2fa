"""Limits of config values that follow from the numerics and the machine, and the checks a run
makes before it allocates anything (the same for the Python API and the command line)."""

from __future__ import annotations

import os

from solvers.model.params import RunConfig
from solvers.model.validators import ConfigError, integer, number

MIN_RESOLUTION = 16
BETA_RANGE = (1e-6, 1e5)  # below: 1/(2 beta) in the energy overflows; above: j* > 2700 modes
MASS_RANGE = (1e-12, 1e6)  # the Lipschitz bound (and so 1/dt) grows with the mass
KAPPA_MAX = 1e8  # von Mises width 1/sqrt(kappa) must stay above round-off of the angle
WEIGHT_MAX = 1e6  # |perceptron a, omega, b|, |initial.modes amplitude|: 1/dt grows with them
T_END_MAX = 1e6
ANGLE_MAX = 1e6  # |S^1 angle| in initial.centers: its float spacing (1e-10 rad) stays far below a cell
NOISE_MAX = 1e6  # model.noise: nu, the diffusion coefficient (docs/noise.md)
RATE_FACTOR_RANGE = (1e-6, 1e3)
# time.rtol, time.atol (embedded pairs): below 1e-12 relative the error estimate is round-off
# (the controller would shrink the step to underflow); above 0.1 it controls nothing. atol is in
# the state's units (densities, angles): 1e-15 to 1
RTOL_RANGE = (1e-12, 0.1)
ATOL_RANGE = (1e-15, 1.0)
DT_MIN_FRACTION = 1e-9  # a step below DT_MIN_FRACTION * t_end is an underflow (>= 1e9 steps)
MAX_SNAPSHOTS = 100_000  # t_end / output.snapshot_interval
MAX_STEPS_LIMIT = 10**12
MAX_RESOLUTION = {"S1": 1 << 20, "S2": 2048, "Sd": 1 << 20}
MAX_DIM = 128  # Sd: domain.dim (the paper goes to d = 50)
MIN_POINTS, MAX_POINTS = 2, 1 << 20  # Sd: domain.points (pair sums cost N^2 d per evaluation)
MAX_DRAWN_UNITS = 4096  # perceptron.units drawn from perceptron.seed
MEMORY_ARRAYS = 64  # grid-sized float64 arrays a run holds at once (estimate, generous)


def check_limits(config: RunConfig) -> None:
    """Raise :class:`ConfigError` for values outside the limits of the numerics (module
    constants): those a TOML reader checks per key, and those that involve several keys."""
    tp, dom = config.time, config.domain
    number("model.beta", config.model.beta, *BETA_RANGE, lo_open=False)
    number("model.noise", config.model.noise, lo=0.0, hi=NOISE_MAX, lo_open=False)
    number("initial.mass", config.initial.mass, *MASS_RANGE, lo_open=False)
    if dom.manifold == "Sd":
        integer("domain.points", dom.resolution, MIN_POINTS, MAX_POINTS)
        integer("domain.dim", dom.dim, 2, MAX_DIM)
    else:
        integer("domain.resolution", dom.resolution, MIN_RESOLUTION, MAX_RESOLUTION.get(dom.manifold))
    number("time.t_end", tp.t_end, lo=0.0, hi=T_END_MAX)
    number("time.rate_factor", tp.rate_factor, *RATE_FACTOR_RANGE, lo_open=False)
    number("time.rtol", tp.rtol, *RTOL_RANGE, lo_open=False, why="(relative tolerance of the time error)")
    number("time.atol", tp.atol, *ATOL_RANGE, lo_open=False, why="(absolute tolerance of the time error)")
    integer("time.max_steps", tp.max_steps, 1, MAX_STEPS_LIMIT)
    if tp.dt is not None:
        number("time.dt", tp.dt, lo=DT_MIN_FRACTION * tp.t_end, hi=tp.t_end, lo_open=False,
               why=f"(at least {DT_MIN_FRACTION:g} * t_end, at most t_end)")
    interval = number("output.snapshot_interval", config.output.snapshot_interval, lo=0.0)
    if tp.t_end / interval > MAX_SNAPSHOTS:
        raise ConfigError("output.snapshot_interval", f"gives {tp.t_end / interval:.3g} snapshots "
                          f"(t_end / snapshot_interval) > {MAX_SNAPSHOTS}; use >= "
                          f"{tp.t_end / MAX_SNAPSHOTS:.3g}")


def estimated_memory(config: RunConfig) -> int:
    """Bytes a run needs, estimated as ``MEMORY_ARRAYS`` grid-sized float64 arrays."""
    n = config.domain.resolution
    if config.domain.manifold == "Sd":  # the points, and one block of pair sums (lagrangian.BLOCK)
        return MEMORY_ARRAYS * 8 * n * config.domain.d + 8 * (1 << 22)
    points = n if config.domain.manifold == "S1" else (n + 1) * (2 * n + 2)
    return MEMORY_ARRAYS * 8 * points


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 40


def check_run(config: RunConfig) -> int:
    """Everything a run checks before it allocates: :func:`check_limits`, the estimated
    memory (at most half the machine's) and :func:`check_resolution`; returns ``j*``."""
    check_limits(config)
    need, have = estimated_memory(config), _physical_memory()
    if need > have // 2:
        raise ConfigError("domain.resolution", f"{config.domain.resolution} needs about "
                          f"{need / 2**30:.1f} GiB, more than half of this machine's "
                          f"{have / 2**30:.1f} GiB")
    return check_resolution(config)


def check_resolution(config: RunConfig) -> int:
    """Check the grid resolves the kernel bandwidth ``j*`` (docs/math.md 2); return ``j*``.

    S^1 (N cells): ``j* <= N // 3`` (2/3 dealiasing rule). S^2 (lmax): ``j* <= lmax``
    (``j* = kernel_bandwidth(beta, 3)``)."""
    from spectral import kernel_bandwidth

    if config.domain.manifold == "Sd":  # weighted points: the kernel is summed exactly
        return 0
    s1, beta, n = config.domain.manifold == "S1", config.model.beta, config.domain.resolution
    jstar = int(kernel_bandwidth(beta, 2 if s1 else 3))
    if jstar > (n // 3 if s1 else n):
        what, rule = ("{n} cells do", "N // 3") if s1 else ("lmax = {n} does", "lmax on S2")
        raise ConfigError("domain.resolution", f"{what.format(n=n)} not resolve the kernel at "
                          f"beta = {beta:g} (bandwidth j* = {jstar}, need j* <= {rule}); use "
                          f"resolution >= {3 * jstar if s1 else jstar}")
    return jstar
