#!/usr/bin/env bash
# capacity searches on generated models in virtual time: held-out accuracy, ablations (~35 min)
#
# search_sim --generated draws HELDOUT_MODELS (default 300) random model servers from
# tests/simulator/model_generator.h (slots, batching, service time, warmup, stalls,
# content-dependent cost, errors, an SLO on p99/p90/p50 or errors), each with its long-run
# truth over a 5-minute horizon (four horizons pooled: the share over the limit a horizon has
# on average; about 20 of the 35 minutes) and a user-style range around it (min truth/200..truth/2,
# max 1.2..20 x truth). Every search starts with the model cold. The seed of the first model
# is HELDOUT_SEED, else taken from the clock, and printed: no change can be tuned to a fixed
# set. Variants (HELDOUT_VARIANTS): the adaptive search, binary search with the same range,
# binary search given the adaptive search's final verification (binary_verified: the
# baseline of heldout_time_vs_binary, docs/strategies.md), and the ablations (no warmup handling, closed loop, p99 only, one template request instead
# of the recorded mix, no batching awareness: no window-based tail confidence nor backlog
# trend). The same five models x 5 seeds give repeat_cv_pct (HELDOUT_REPEAT, default 20).
# HELDOUT_MODELS_DIR: search the models `search_sim --generated=N --gen_seed=S
# --write_profiles=DIR` wrote there instead of drawing them again (generation is the slow
# part); give HELDOUT_SEED=S with it so the printed seed is theirs.
# Then the five named profiles, cold, with a new user's wide range (min(5, truth/2) to
# 20 x truth): profiles_wide_mae_pct.
# Final line: heldout_mae_pct=… heldout_p95_abs_err_pct=… heldout_over5_pct=… heldout_bias_pct=…
# heldout_loa_low_pct=… heldout_loa_high_pct=… heldout_r2=… heldout_flat_tail_pct=…
# heldout_conditioned_mae_pct=… heldout_conditioned_p95_abs_err_pct=…
# heldout_conditioned_over5_pct=… (the same figures without the flat-tail models, whose SLO
# hardly defines a capacity: sim::TruthElasticity) binary_mae_pct=… binary_over5_pct=…
# binary_verified_mae_pct=… binary_verified_over5_pct=… ablation_*_mae_pct=…
# heldout_time_vs_binary=… binary_verified_holds_mean=… time_vs_binary_one_hold=… repeat_cv_pct=… profiles_wide_mae_pct=… gen_seed=… models=…
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
models=${HELDOUT_MODELS:-300}
models_dir=${HELDOUT_MODELS_DIR:-}
seed=${HELDOUT_SEED:-$(( $(date +%s) % 1000000000 ))}
variants=${HELDOUT_VARIANTS:-adaptive,binary,binary_verified,no_warmup,closed_loop,p99_only,template,no_batching_awareness}
repeat=${HELDOUT_REPEAT:-20}
vanguard_build "$build" Release search_sim >/dev/null
start=$(date +%s)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/bin/search_sim" --generated="$models" --gen_seed="$seed" --variants="$variants" \
  ${models_dir:+--models_dir="$models_dir"} --repeat_models="$repeat" --threads="$(nproc)" |
  tee "$out"
heldout=$(tail -1 "$out" | sed 's/ *gen_seed=.*//')
# The named profiles with a wide range, cold; truths are the accuracy benchmark's references.
truths=${SEARCH_SIM_TRUTHS:-embedding:4400.6 nlp_encoder:984.4 ranking:3022.7 vision:659.9 llm:30.40}
wide_sum=0
wide_n=0
for pair in $truths; do
  line=$("$build/bin/search_sim" --profile="${pair%%:*}" --truth="${pair#*:}" --range=wide --cold \
    --seeds="${HELDOUT_PROFILE_SEEDS:-5}" --first_seed="$seed" | tail -1)
  echo "$line"
  mae=$(sed -n 's/.*mae_pct=\([^ ]*\).*/\1/p' <<<"$line")
  wide_sum=$(awk -v a="$wide_sum" -v b="$mae" 'BEGIN { print a + b }')
  wide_n=$((wide_n + 1))
done
wide=$(awk -v a="$wide_sum" -v n="$wide_n" 'BEGIN { printf "%.2f", a / n }')
echo "$heldout profiles_wide_mae_pct=$wide gen_seed=$seed models=$models wall_s=$(( $(date +%s) - start ))"
