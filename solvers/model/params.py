"""Frozen parameter dataclasses: the data contract between config, model, solver and archive.

Every run is fully described by one :class:`RunConfig`. The TOML reader
(:mod:`solvers.model.config`) builds it and validates it; the numerics read it; the
archive stores it (flattened with :func:`flatten`) as attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import numpy as np

from solvers.model.validators import ConfigError

DIRECTIONS = ("ascent", "descent")
ATTENTIONS = ("unnormalized", "softmax")
KERNELS = ("exp", "exp_shifted")
MANIFOLDS = ("S1", "S2", "Sd")  # Sd: S^{d-1} by weighted points, d = domain.dim
# Names the implementations register under (checked against their tables by the tests):
# solvers.timestepping.integrators.INTEGRATORS and solvers.core.limiters.LIMITERS.
# The embedded pairs (PAIRS there: bs32, dopri5, ssprk3_2) control the time error (rtol, atol).
INTEGRATOR_NAMES = ("euler", "ssprk2", "ssprk3", "rk4", "ssprk10_2", "bs32", "dopri5", "ssprk3_2")
LIMITER_NAMES = ("minmod", "mc", "vanleer", "none", "weno5")  # weno5: S^1 only


@dataclass(frozen=True)
class PerceptronParams:
    """Perceptron ``v(x) = sum_j omega_j phi(a_j . x + b_j)`` with ``phi' = 2 sigma`` (docs/math.md §1).

    Attributes
    ----------
    activation : str
        Name in :data:`solvers.model.activations.ACTIVATIONS` (``relu``, ``gelu``, ``linear``,
        ``tanh``, ``leaky_relu``, ``none``).
    a : ndarray, shape (n_units, d)
        Input weights, one d-vector per unit (d = 2 on S^1, 3 on S^2).
    omega : ndarray, shape (n_units,)
        Scalar output weights.
    b : ndarray, shape (n_units,)
        Biases (zeros when not given).
    """

    activation: str = "none"
    a: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    omega: np.ndarray = field(default_factory=lambda: np.zeros(0))
    b: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def n_units(self) -> int:
        return 0 if self.activation == "none" else int(self.omega.shape[0])


@dataclass(frozen=True)
class ModelParams:
    """The mean-field model (paper eq. 2.6, 2.9; docs/math.md §1).

    ``direction``: ``ascent`` (s = +1) or ``descent`` (s = -1).
    ``attention``: ``unnormalized`` (velocity ``grad (1/beta) K*rho``) or ``softmax``
    (``grad f / (beta f)``, ``f = K*rho``).
    ``kernel``: ``exp`` = ``exp(beta x.y)``; ``exp_shifted`` = ``exp(beta (x.y - 1))``.
    ``noise``: ``nu >= 0``, the diffusion ``+ nu Laplacian rho`` of the McKean-Vlasov equation
    (docs/noise.md); 0 (default) is the paper's dynamics. The grid schemes step it exactly
    (:mod:`solvers.timestepping.lawson`); its stationary states are computed by ``meanfield continue``.
    """

    beta: float = 1.0
    direction: str = "descent"
    attention: str = "unnormalized"
    kernel: str = "exp"
    perceptron: PerceptronParams = field(default_factory=PerceptronParams)
    noise: float = 0.0  # last: ModelParams(beta, direction, attention, kernel, perceptron) stays valid

    @property
    def sign(self) -> float:
        """s = +1 for ascent, -1 for descent (eq. 2.6)."""
        return 1.0 if self.direction == "ascent" else -1.0


@dataclass(frozen=True)
class DomainParams:
    """Where the measure lives.

    ``manifold``: ``"S1"`` (a grid of ``resolution`` cells), ``"S2"`` (``resolution`` = lmax) or
    ``"Sd"`` (``S^{d-1}``, ``d = dim``, the measure as ``resolution`` weighted points; the TOML
    key is ``domain.points``). ``dim``: d, the dimension of the ambient space (S1: 2, S2: 3,
    Sd: 2 to :data:`solvers.model.limits.MAX_DIM`).
    """

    manifold: str = "S1"
    resolution: int = 512  # S^1: number of cells N; S^2: lmax; Sd: number of points N
    dim: int = 0  # d; 0: the manifold's own (2 on S1, 3 on S2)

    @property
    def d(self) -> int:
        """The ambient dimension d (the manifold is ``S^{d-1}``)."""
        return self.dim or (2 if self.manifold == "S1" else 3)


@dataclass(frozen=True)
class InitialParams:
    """Initial density.

    ``kind = "uniform"``: S^1 ``rho = (1 + sum amp cos(k theta)) / (2 pi)`` with
    ``modes = ((k, amp), ...)``; S^2 ``rho = 1/(4 pi) + sum amp Re Y_lm`` with ``modes = ((l, m, amp), ...)``.
    ``kind = "von_mises"``: S^1 mixture ``sum w_i exp(kappa_i cos(theta - c_i)) / (2 pi I_0(kappa_i))``;
    S^2 von Mises-Fisher mixture with unit-vector ``centers``.
    ``kind = "archive"``: snapshot of ``path`` nearest to ``time`` (last if None), resampled.
    ``kind = "atoms"``: Dirac atoms at ``centers`` (S^1 angles, S^2 unit vectors) with masses
    ``weights`` (needs ``[atoms] representation = "dirac"``); when ``mass`` exceeds their sum
    the rest is a ``uniform`` density (with ``modes``) under them.
    """

    kind: str = "uniform"
    modes: tuple = ()
    centers: tuple = ()
    kappas: tuple = ()
    weights: tuple = ()
    path: str = ""
    time: float | None = None
    mass: float = 1.0


@dataclass(frozen=True)
class TimeParams:
    """Time stepping.

    ``scheme``: ``auto`` (the default: the method measured right for the problem, chosen by
    :func:`solvers.model.method.plan_method` and recorded in the archive; S^1: pseudo-spectral
    while the density is smooth, then Lagrangian cells with Dirac atoms), or an explicit
    choice for convergence studies: ``fv`` (finite volume + SSP-RK(10,2)), ``spectral``
    (pseudo-spectral + RK4) or ``lagrangian`` (moving cells / particles with Dirac atoms).
    ``dt``: fixed step if not None, else adaptive from ``cfl`` and ``rate_factor``
    (step <= rate_factor / L, L the Lipschitz bound of the velocity, docs/math.md §6).
    ``stop_when_stationary``: stop when, over the last ``stationary_window_time`` time units
    (at least two snapshots), (1) the stationarity measure stays ``<= stationary_tol``, (2) the
    atoms are the same (same count and identities), and (3) every atom's mass and the diffuse
    mass change by at most ``stationary_mass_rate`` per unit time (between any two snapshots of
    the window and across it). ``stationary_measure = "transport"`` (default): the transport
    rate ``||d rho/dt||_1 / M``;
    ``"velocity"``: the paper's rule (section 4), max |velocity| over the cells holding mass. On a
    grid the second never vanishes exactly (an atom's cell centre sits up to h/2 from the zero of
    the velocity, and thin tails keep moving), so it needs a tolerance of order ``h max|u'|``.
    ``rtol``, ``atol``: the tolerances of the time error when ``integrator`` is an embedded pair
    (``"bs32"``, ``"dopri5"``, ``"ssprk3_2"``) and ``dt`` is not fixed: a step is accepted when
    its local error estimate satisfies ``|err_i| <= atol + rtol max(|y_i|, |y_new_i|)`` in every
    component that counts (a Lagrangian state: the positions), else retried shorter
    (:mod:`solvers.timestepping.simulation`); ``rate_factor`` then no longer bounds the step, the
    CFL condition (``cfl``) still does. ``rtol`` in [1e-12, 0.1], ``atol`` in [1e-15, 1]
    (:data:`solvers.model.limits.RTOL_RANGE`, ``ATOL_RANGE``). Other integrators ignore them.
    The defaults (5e-7, 1e-9) follow two Dirac atoms (tests/timestepping) to 7e-7 in their
    distance with ``bs32``, 5e-7 with ``ssprk3_2``, 9e-8 with ``dopri5``.
    ``cfl_floor``: the fv CFL condition counts the faces whose upwind cell holds more than this
    fraction of the mean density (the faces that move mass); the outflow limiter keeps the
    others positive and conservative at any step (docs/methods.md §6.8).
    ``limiter``: the fv reconstruction, a MUSCL slope limiter (``mc``, ``minmod``, ``vanleer``,
    ``none``) or, on S^1, ``weno5`` (fifth-order WENO face values); default ``mc``, and
    ``weno5`` for the S^1 Dirac state (``[atoms] representation = "dirac"``) when not given.
    ``cfl`` and ``cfl_floor`` default (None) to the method's own, written into the config by the
    reader (:func:`solvers.model.method.resolve`): ``cfl_floor`` 1e-2 for a Dirac state
    (``[atoms] representation = "dirac"``, the default method's state) on S^1 and S^2, 1e-6 for
    a grid density; on S^2 the default's atoms then agree with error-controlled steps to 6e-6
    with 30% fewer steps (docs/methods.md §6.6).
    ``kink_faces`` (S^1, fv): put the face nearest each corner of the perceptron velocity (ReLU,
    leaky ReLU: ``a_j.x + b_j = 0``) on the corner (:mod:`solvers.circle.cells`,
    docs/methods.md §6.2). None (default): on for the S^1 fv scheme, off elsewhere; ``false``:
    uniform faces; ``true``: required (an error on S^2 or with the spectral scheme).
    (``one_sided_kinks`` and ``lagrangian_until`` are retired: :data:`RETIRED` names what
    replaces them.)
    ``basin_refine`` (S^2, ``scheme = "lagrangian"``): ``K > 1`` starts the cells on the
    boundaries between atoms' basins, found by a scout run (to ``t_end``, or until no particle
    moves faster than ``stationary_tol`` with ``stop_when_stationary``), as ``K x K`` particles
    (:mod:`solvers.sphere.measure.lagrangian_refine`, docs/methods.md §6.7); 1 (default): one
    particle a cell.
    """

    t_end: float = 10.0
    scheme: str = "auto"
    integrator: str | None = None  # None: scheme default (ssprk10_2 for fv, rk4 for spectral)
    cfl: float | None = None  # None: the method's own (solvers.model.method.plan_method)
    rate_factor: float = 1.0
    dt: float | None = None
    max_steps: int = 10_000_000
    stop_when_stationary: bool = False
    stationary_tol: float = 1e-6
    stationary_window_time: float = 100.0
    stationary_mass_rate: float = 1e-6
    stationary_measure: str = "transport"
    limiter: str = "mc"
    cfl_floor: float | None = None  # None: the method's own (solvers.model.method.plan_method)
    kink_faces: bool | None = None
    basin_refine: int = 1
    rtol: float = 5e-7
    atol: float = 1e-9


# keys that no longer earn their place: a config naming one gets an error with the replacement
RETIRED = {
    "time.lagrangian_until": "the hand-over from Lagrangian cells to the fv Dirac state is retired: "
                             "a config that names no time.scheme runs Lagrangian cells with Dirac "
                             "atoms for the whole run (the default method); remove the key",
    "time.one_sided_kinks": "the fv scheme's one-sided WENO5 stencils at perceptron corners are "
                            "retired: the default method (no time.scheme) carries the layers at "
                            "the corners exactly; remove the key",
}

ATOM_METHODS = ("basin", "paper")
REPRESENTATIONS = ("grid", "dirac")
SNAPSHOT_MODES = ("auto", "interpolate", "land")


@dataclass(frozen=True)
class AtomParams:
    """Atom (cluster) detection (paper section 4, Theorem 3.5; docs/math.md §5).

    ``method = "basin"`` (default, :mod:`solvers.core.atoms`): an atom is a flow basin (the
    cells whose mass drains into one sink of the velocity), split at density saddles lower than
    ``saddle_ratio`` times the smaller of the two peaks, cut at ``max_radius`` from its peak.
    ``method = "paper"``: the paper particle code's convention, cells denser than
    ``contrast * M / |S|`` grouped by single linkage within ``radius``.

    ``contrast``: a basin is an atom only if its peak density exceeds ``contrast * M / |S|``
    (so a smooth spread-out density has no atoms); ``min_mass``: and if it holds this much
    (default 0.02: lighter clumps, e.g. the slowly draining ones on the ridges of ``U`` between
    atoms, count as diffuse mass).
    ``radius``: grouping distance of ``"paper"``; None: ``min(0.5/sqrt(beta), pi/4)`` on S^1,
    ``min(0.5/sqrt(beta), pi/6)`` on S^2; never below 1.5 cells.
    ``core_radius``: radius of an atom's core (its position and ``core_mass``); None: the
    paper's ``1/(2 beta)`` (Theorem 3.5), never below 1.5 cells.
    ``max_radius``: cap on an atom's radius (None: pi/4): cells farther from the peak are diffuse.
    ``link_radius``: largest move of an atom between two snapshots for its identity to
    persist (None: pi/8).
    ``representation``: ``"grid"`` (default: the state is the grid density) or ``"dirac"``
    (the state is ``rho dx + sum_i m_i delta_{x_i}``: concentrated atoms become Dirac masses,
    :mod:`solvers.circle.measure.dirac`, :mod:`solvers.sphere.measure.dirac`; S^1 and S^2, ``fv``, unnormalized
    attention).
    ``capture_fraction``: a basin atom becomes a Dirac mass once its core (S^1: the peak cell
    and its two neighbours; S^2: the peak's finite volume and the finite volumes adjacent to
    it) holds at least this fraction of its basin mass (S^1: and the flow holds the core
    together, :func:`solvers.circle.measure.dirac_events.forms_atom`).
    """

    method: str = "basin"
    radius: float | None = None
    contrast: float = 5.0
    min_mass: float = 0.02
    saddle_ratio: float = 0.5
    core_radius: float | None = None
    max_radius: float | None = None
    link_radius: float | None = None
    representation: str = "grid"
    capture_fraction: float = 0.9


@dataclass(frozen=True)
class OutputParams:
    """Where and how a run is archived (docs/archive.md).

    ``path``: the archive, NetCDF4 (``.nc``) or a zarr store (a path ending in ``.zarr``).
    ``snapshot_interval``: model time between snapshots.
    ``sync_interval``: the most wall-clock seconds between two syncs of the archive (a
    ``kill -9`` loses at most the snapshots of that long; Ctrl-C, SIGTERM and a normal end
    lose none); 0: every snapshot synced as it comes.
    ``spectral``: also store the spectrum of every snapshot (S^1 ``rho_hat``, S^2 ``rho_lm``),
    which ``rho`` determines (default false: it doubled an S^1 file).
    ``snapshot_mode``: ``"land"`` shortens the step before each snapshot time so that the
    snapshot is a step state; ``"interpolate"`` lets the steps run free and records the linear
    interpolant in time of the two step states around each snapshot time (exact mass,
    ``rho >= 0``, second order; the archive keeps the step state, so a resume takes the same
    steps, docs/methods.md §6.8; with Dirac atoms the density and masses are interpolated on
    straight lines and the atoms along their path); ``"auto"`` (default): interpolate for the
    fv scheme with adaptive steps, land otherwise (fixed ``time.dt``, the spectral scheme's
    higher-order integrators).
    """

    path: str = "output/run.nc"
    snapshot_interval: float = 1.0
    progress: bool = True
    sync_interval: float = 5.0
    spectral: bool = False
    snapshot_mode: str = "auto"


@dataclass(frozen=True)
class RunConfig:
    """One run, every section. A config the reader built (:mod:`solvers.model.config`) holds
    the method's own ``atoms.representation``, ``time.cfl`` and ``time.cfl_floor``
    (:func:`solvers.model.method.resolve`); one built in Python may leave them at their
    defaults: :func:`solvers.model.method.plan_method` resolves either to the same plan."""

    domain: DomainParams = field(default_factory=DomainParams)
    model: ModelParams = field(default_factory=ModelParams)
    initial: InitialParams = field(default_factory=InitialParams)
    time: TimeParams = field(default_factory=TimeParams)
    atoms: AtomParams = field(default_factory=AtomParams)
    output: OutputParams = field(default_factory=OutputParams)
    text: str = ""  # the full config text as given (TOML), for provenance

    def __post_init__(self) -> None:
        for name, kind in SECTION_TYPES.items():  # dataclasses.replace(cfg, time={...})
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(name, f"must be a {kind.__name__} (got "
                                  f"{type(getattr(self, name)).__name__}); build it with "
                                  f"dataclasses.replace(config.{name}, ...)")


SECTION_TYPES = {"domain": DomainParams, "model": ModelParams, "initial": InitialParams,
                 "time": TimeParams, "atoms": AtomParams, "output": OutputParams}


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested dataclasses into ``{"model.beta": 5.0, ...}`` (arrays as lists)."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        key = f"{prefix}{f.name}"
        if is_dataclass(value):
            out.update(flatten(value, key + "."))
        elif isinstance(value, np.ndarray):
            out[key] = value.tolist()
        else:
            out[key] = value
    return out
