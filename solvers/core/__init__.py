"""What every manifold shares (no circle or sphere specifics, no time loop).

The protocol and plain-array records:

- :mod:`~solvers.core.discretization`: the ``Discretization`` base the solver sees (its contract), and ``Rhs``.
- :mod:`~solvers.core.manifold`: ``Manifold``, the contract of a manifold (grid, initial states,
  atoms, resolutions, cost figures) that the layers above ask instead of comparing names.
- :mod:`~solvers.core.snapshot`: ``Diagnostics``, ``Snapshot``, ``RunState`` (where a run is) and ``Tracker``.
- :mod:`~solvers.core.measure`: a measure-valued state (density plus Dirac atoms) as one flat vector,
  and ``MeasureDiscretization``.
- :mod:`~solvers.core.dirac_state`: ``DiracState``, the base of the grid Dirac states: the events
  between steps (capture at a cadence of ``capture_every`` steps, absorption, merging), the atom
  identities and the whole mass of the CFL floor.
- :mod:`~solvers.core.initial`: checking and scaling an initial grid density.

Numerics on any ``S^{d-1}``:

- :mod:`~solvers.core.noise`: the noisy dynamics' free energy and the exponential integrators'
  ``phi`` functions.
- :mod:`~solvers.core.limiters`: MUSCL slope limiters and WENO5 reconstruction (numpy references).
- :mod:`~solvers.core.point_atoms`: Dirac atoms in closed form (gradient, Jacobian, energy, Hessian).
- :mod:`~solvers.core.point_merge`: merging weighted points closer than a radius.
- :mod:`~solvers.core.atoms`: basin atoms of a grid density on any cell graph;
  :mod:`~solvers.core.atoms_numba`: the same, compiled.
- :mod:`~solvers.core.atom_tracks`: identities of atoms across snapshots;
  :mod:`~solvers.core.atom_tracks_numba`: its fast path, compiled.

Compiled kernels and their set-up (each manifold's own kernels live with the manifold; every
compiled kernel keeps its numpy reference in production, because numba is optional at run time
and ``MEANFIELD_NUMPY=1`` selects the references, which the tests compare with the kernels):

- :mod:`~solvers.core.backend`: numba or the numpy reference, threads, the memory allocator.
- :mod:`~solvers.core.numba_cache`: the compiled kernels' cache, keyed by their sources.
- :mod:`~solvers.core.kernels_numba`: limited slopes and state extremes, compiled.
- :mod:`~solvers.core.kernels_stages`: Shu-Osher Runge-Kutta stage combinations, compiled.
"""
