"""What every manifold shares (no circle or sphere specifics, no time loop).

- :mod:`~solvers.core.discretization`: the ``Discretization`` protocol the time loop sees, and ``Rhs``.
- :mod:`~solvers.core.snapshot`: ``Diagnostics`` and ``Snapshot`` (plain arrays).
- :mod:`~solvers.core.kernel`: the (shifted) kernel as a function of the angle, its ``K''`` bound.
- :mod:`~solvers.core.limiters`: MUSCL slope limiters.
- :mod:`~solvers.core.initial`: checking and scaling an initial grid density.
"""
