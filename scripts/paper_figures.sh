#!/usr/bin/env bash
# The paper's summary figures at PDE level (S^1), from beta sweeps on dask (issue 5):
#   Fig. 4.7  atom count at convergence against beta: ascent with/without ReLU, descent ReLU/GeLU
#   Fig. 2    atom masses against sqrt(beta), with the Theorem 3.5 constant 0.5742
#   Fig. 4.8  sensitivity to the initial state: ten perturbed starts at beta = 10 (GeLU),
#             pure attention, ascent and descent, atom positions overlaid
# Usage: bash scripts/dev.sh setup && bash scripts/paper_figures.sh [OUT]   (default OUT = output/paper; about 20 minutes on 2 cores)
# Sweeps already finished are skipped on a re-run (meanfield sweep resumes).
set -euo pipefail
cd "$(dirname "$0")/.."
MF=.venv/bin/meanfield
OUT="${1:-output/paper}"
BETAS=0.01,0.05,0.1,0.5,1,3,5,7,10,15,25,35,50
COMMON=(--set domain.resolution=256 --set time.t_end=1000 --auto-resolution)

# Fig. 4.7 and Fig. 2: one sweep per setup (ascent starts are perturbed: the uniform density is
# stationary for pure attention)
# descent with ReLU coarsens slowly: give it longer (runs at large beta still end at t_end)
$MF sweep runs/paper_s1_descent_relu_beta5.toml --param model.beta=$BETAS -o "$OUT/beta/descent_relu" "${COMMON[@]}" --set time.t_end=5000 || true
$MF sweep runs/paper_s1_descent_gelu.toml --param model.beta=$BETAS -o "$OUT/beta/descent_gelu" "${COMMON[@]}" || true
$MF sweep runs/paper_s1_ascent_relu.toml --param model.beta=$BETAS --param initial.seed=0 -o "$OUT/beta/ascent_relu" "${COMMON[@]}" || true
$MF sweep runs/paper_s1_ascent_attention.toml --param model.beta=$BETAS --param initial.seed=0 -o "$OUT/beta/ascent_attention" "${COMMON[@]}" || true
$MF sweep-figures "$OUT/beta/ascent_attention" "$OUT/beta/ascent_relu" "$OUT/beta/descent_relu" "$OUT/beta/descent_gelu" \
    --label "ascent, attention only" --label "ascent, ReLU" --label "descent, ReLU" --label "descent, GeLU" -o "$OUT/figures"

# Fig. 4.8: ten perturbed initial densities at beta = 10, GeLU
SEEDS=0,1,2,3,4,5,6,7,8,9
SENS=(--set model.beta=10 --set domain.resolution=256 --set time.t_end=1000)
$MF sweep runs/paper_s1_ascent_attention.toml --param initial.seed=$SEEDS -o "$OUT/seeds/attention" "${SENS[@]}" || true
$MF sweep runs/paper_s1_ascent_relu.toml --set 'perceptron.activation="gelu"' --param initial.seed=$SEEDS -o "$OUT/seeds/ascent_gelu" "${SENS[@]}" || true
$MF sweep runs/paper_s1_descent_gelu.toml --param initial.seed=$SEEDS -o "$OUT/seeds/descent_gelu" "${SENS[@]}" || true
$MF sweep-figures "$OUT/seeds/attention" "$OUT/seeds/ascent_gelu" "$OUT/seeds/descent_gelu" \
    --label "attention only" --label "ascent, GeLU" --label "descent, GeLU" -o "$OUT/figures"
echo "figures in $OUT/figures"
