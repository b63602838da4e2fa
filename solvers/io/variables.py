"""The archive's variable tables: the diagnostics, the atoms and Dirac atoms of each manifold,
the per-identity atom records (name -> type, units, long name). :mod:`solvers.io.layout` builds
the variables from them.
"""

from __future__ import annotations

_DENSITY = "density"  # placeholder unit of density-valued diagnostics (radian-1 or sr-1)

# name -> (netCDF type, units, long_name)
DIAGNOSTIC_VARIABLES: dict[str, tuple[str, str, str]] = {
    "mass": ("f8", "1", "total mass: sum of rho * cell_weight"),
    "min_rho": ("f8", _DENSITY, "minimum of the grid density"),
    "max_rho": ("f8", _DENSITY, "maximum of the grid density"),
    "energy": ("f8", "1", "energy E = (1/(2 beta)) iint K drho drho + (1/2) int v drho"),
    "dissipation": ("f8", "1", "dissipation int |g|^2 drho (dE/dt = s * dissipation)"),
    "free_energy": ("f8", "1", "free energy E - s nu int rho log rho, nu = model.noise (E when "
                    "nu = 0): increases under ascent, decreases under descent"),
    "transport_rate": ("f8", "1", "transport rate ||d rho / dt||_1 of the scheme"),
    "max_support_velocity": ("f8", "radian", "max |velocity| over cells holding mass"),
    "tail_energy": ("f8", "1", "fraction of sum |rho_k|^2 in the top third of resolved modes"),
    "n_atoms": ("i4", "1", "number of detected atoms (clusters)"),
    "diffuse_mass": ("f8", "1", "mass in no atom"),
    "max_atom_mass": ("f8", "1", "largest atom mass (0 without atoms)"),
    "theorem_3_5_bound": ("f8", "1", "16 / (16 + 3 e^(11/8)), paper Theorem 3.5"),
}
# name -> (units, long_name), all (time, atom): column = atom identity, NaN where not alive
_ATOM_MASSES = {
    "atom_mass": ("1", "atom mass (whole basin)"),
    "atom_core_mass": ("1", "atom mass within the core radius of its position"),
}
_ATOM_BUDGET = {
    "atom_mass_gained": ("1", "mass now in cells that joined the atom since the previous "
                         "record (merges, captures; the whole mass at birth)"),
    "atom_mass_lost": ("1", "mass that cells leaving the atom since the previous record held "
                       "there (merges: the whole mass; basin splits: to the diffuse part)"),
}
CIRCLE_ATOM_VARIABLES = _ATOM_MASSES | {
    "atom_position": ("radian", "atom position: circular centre of mass of the core in [0, 2 pi)"),
} | _ATOM_BUDGET
SPHERE_ATOM_VARIABLES = _ATOM_MASSES | {
    "atom_x": ("1", "atom position: x of the unit vector (normalised centre of mass)"),
    "atom_y": ("1", "atom position: y of the unit vector"),
    "atom_z": ("1", "atom position: z of the unit vector"),
    "atom_colatitude": ("radian", "atom colatitude arccos(z) in [0, pi]"),
    "atom_longitude": ("radian", "atom longitude atan2(y, x) in [0, 2 pi)"),
} | _ATOM_BUDGET

POINT_ATOM_VARIABLES = _ATOM_MASSES | {
    "atom_position": ("1", "atom position: unit vector of R^d (normalised centre of mass of the "
                      "cluster)"),
} | _ATOM_BUDGET
POINT_DIRAC_VARIABLES = {
    "dirac_mass": ("1", "mass of the Dirac atom (a point mass at dirac_position; exact)"),
    "dirac_position": ("1", "position of the Dirac atom: unit vector of R^d (exact)"),
}
COMPONENT = "component"  # Sd: the axis of a unit vector of R^d

# Dirac atoms of a measure-valued run ([atoms] representation = "dirac"), all (time, dirac):
# column = the Dirac atom's identity (birth order), NaN where it is not alive
RAGGED_DIMS = ("atom", "dirac")  # unlimited, one column per identity, NaN padded
CIRCLE_DIRAC_VARIABLES = {
    "dirac_mass": ("1", "mass of the Dirac atom (a point mass at dirac_position; exact)"),
    "dirac_position": ("radian", "position of the Dirac atom in [0, 2 pi) (exact)"),
}
SPHERE_DIRAC_VARIABLES = {
    "dirac_mass": ("1", "mass of the Dirac atom (a point mass at dirac_x, dirac_y, dirac_z; exact)"),
} | {f"dirac_{c}": ("1", f"position of the Dirac atom: {c} of the unit vector (exact)")
     for c in "xyz"} | {
    "dirac_colatitude": ("radian", "Dirac atom colatitude arccos(z) in [0, pi]"),
    "dirac_longitude": ("radian", "Dirac atom longitude atan2(y, x) in [0, 2 pi)"),
}
# the total mass of a measure-valued run counts its Dirac atoms
DIRAC_MASS_LONG_NAME = "total mass: sum of rho * cell_weight plus the Dirac atoms' dirac_mass"


# per identity, (atom): name -> (netCDF type, units, long_name)
ATOM_TRACK_VARIABLES: dict[str, tuple[str, str, str]] = {
    "atom_birth_time": ("f8", "1", "time of the first snapshot holding the atom"),
    "atom_end_time": ("f8", "1", "time of the first snapshot without the atom (NaN: alive)"),
    "atom_parent": ("i4", "1", "identity the atom split from at its birth (-1: none)"),
    "atom_merged_into": ("i4", "1", "identity the atom merged into at its end (-1: none)"),
}
