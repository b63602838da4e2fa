"""A beta sweep from Python: atom counts and masses of the paper's S^1 descent (ReLU perceptron).

Run from the repository root:  python examples/beta_sweep.py
Each run returns its archive as an xarray.Dataset (nothing is written to disk).
"""

import numpy as np

import solvers

# Parameters
config = "runs/demo.toml"  # paper S^1 descent, beta = 5, ReLU, kernel exp_shifted
betas = [1.0, 2.0, 5.0]
resolution = 128  # a coarse grid: this is a quick look, not a converged study

# Main loop
print(f"{'beta':>6} {'t_stop':>8} {'reason':>10}  atoms (masses, largest first)")
for beta in betas:
    ds = solvers.run(config, model__beta=beta, domain__resolution=resolution, time__t_end=200.0)
    last = ds.isel(time=-1)
    masses = np.sort(last["atom_mass"].values[np.isfinite(last["atom_mass"].values)])[::-1]
    mass_error = abs(float(last["mass"]) - 1.0)
    assert mass_error < 1e-12, mass_error  # the finite-volume scheme conserves mass
    print(f"{beta:6g} {float(last['time']):8.1f} {ds.attrs['stop_reason']:>10}  "
          f"{int(last['n_atoms'])}: " + " ".join(f"{m:.4f}" for m in masses))
