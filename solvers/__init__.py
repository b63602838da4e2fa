"""meanfield-spectral: density-level solver for the mean-field attention + perceptron PDE.

Subpackages, lowest layer first (each imports only from the layers below it; see
tests/test_layering.py):

- ``spectral`` (top-level package): bases, transforms, kernel eigenvalues; no notion of time.
- :mod:`solvers.model`: parameters, configs, activations, the perceptron.
- :mod:`solvers.core`: what the circle and the sphere share.
- :mod:`solvers.circle`, :mod:`solvers.sphere`: the two manifolds, side by side.
- :mod:`solvers.timestepping`: integrators and the solver.
- :mod:`solvers.io`: archives and starting states.
- :mod:`solvers.plots`: figures.
- :mod:`solvers.studies`: Lemma 5.1, convergence, sweeps, particles.
- :mod:`solvers.cli`: the ``meanfield`` command (imported by nothing).
"""
