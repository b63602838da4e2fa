"""``S^{d-1}`` for any d by weighted points (``domain.manifold = "Sd"``): the measure is a set of
weighted points that move with the exact velocity and merge into Dirac atoms.

- :mod:`~solvers.hypersphere.points`: the velocity, energy and dissipation of weighted points
  (pair sums in any dimension, series on S^1 and S^2), close pairs and single-linkage groups.
- :mod:`~solvers.hypersphere.initial`: the starting sample and the zonal Gegenbauer
  perturbations.
- :mod:`~solvers.hypersphere.discretization`: the scheme, the
  :class:`~solvers.core.measure.MeasureDiscretization` of the points.
- :mod:`~solvers.hypersphere.manifold`: the manifold object, one per d.

No counterpart of the S^1 and S^2 grid modules (``grid/``, ``cells``, ``atoms``, ``problem``):
there is no grid in d dimensions; the atoms are the merged points and the paper's clusters.
"""
