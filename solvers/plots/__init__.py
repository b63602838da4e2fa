"""Figures and animations (matplotlib, Agg, no pyplot state).

- :mod:`~solvers.plots.run`: ``plot_run`` and ``animate_run`` of a run archive.
- :mod:`~solvers.plots.circle`, :mod:`~solvers.plots.sphere`: the S^1 and S^2 panels and frames.
- :mod:`~solvers.plots.points`: the Sd panels and frames (atom masses and distances over time,
  a 2-D projection of the atoms).
- :mod:`~solvers.plots.common`: titles, the energy panel, constants, movie writers.
- :mod:`~solvers.plots.lemma51`: the Lemma 5.1 figure.
- :mod:`~solvers.plots.sweeps`: sweep figures (atom counts, masses against sqrt(beta), sensitivity).
- :mod:`~solvers.plots.bifurcation`: the bifurcation diagram of ``meanfield continue``.
- :mod:`~solvers.plots.labels`: atom mass labels placed where they collide with nothing.
- :mod:`~solvers.plots.converge`: the refinement-ladder figure of ``meanfield converge``.
- :mod:`~solvers.plots.style`: the ``paper`` and ``screen`` styles (fonts, palette);
  :mod:`~solvers.plots.save`: writing figures safely.
"""
