"""The model, independent of any grid: what a run is.

- :mod:`~solvers.model.params`: frozen dataclasses (``RunConfig`` and its sections) and the
  vocabularies (directions, attentions, kernels, integrator and limiter names).
- :mod:`~solvers.model.config`: TOML -> validated ``RunConfig`` (``load_config``), overrides,
  ``ConfigError`` (one line naming the key); :mod:`~solvers.model.config_domain`: its
  ``[domain]`` and ``[perceptron]`` sections (units given, or drawn from a seed).
- :mod:`~solvers.model.validators`, :mod:`~solvers.model.limits`: value checks and the limits
  of the numerics (``check_run``: what a run checks before it allocates).
- :mod:`~solvers.model.combinations`: settings valid alone but not together (Dirac state,
  kink faces, ``weno5``).
- :mod:`~solvers.model.method`: ``plan_method``, a config resolved once into a frozen
  ``MethodPlan`` (scheme, representation, integrator, cfl, cfl_floor, snapshot mode, why), and
  ``resolve``, the plan's values written into a new config.
- :mod:`~solvers.model.activations`: perceptron activations ``sigma`` and their potentials ``phi``.
- :mod:`~solvers.model.kernel`: the (shifted) kernel as a function of the angle, its ``K''`` bound.
- :mod:`~solvers.model.perceptron`: the perceptron potential ``v`` and its half gradient (paper eq. 2.7).
- :mod:`~solvers.model.validate`: validation of a config built in Python, and the rules of a resume.
- :mod:`~solvers.model.cost`: a run's cost estimated from its config before anything is built.
  :mod:`~solvers.model.step_count`: the time steps it counts (the step-size rule per method).
"""
