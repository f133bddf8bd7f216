#!/usr/bin/env bash
# capacity searches in virtual time against the profiles' own schedulers (many seeds, ~1 min)
#
# search_sim drives the adaptive search and binary search against each profile's
# discrete-event scheduler (the simulator's own SlotScheduler or TokenScheduler: one
# continuous timeline with its stalls and jitter), steps of a 2 s lead and a 3 s measured
# part (stretched to request lifetimes as the worker's runner does), many seeds. No network,
# client or steady-state detection: it isolates what the short steps' sampling noise does to
# a search (rare stalls decide whether a 3 s step passes), which the end-to-end accuracy
# benchmark shows on a few seeds at best. The truths are the accuracy benchmark's long
# references unless SEARCH_SIM_TRUTHS overrides them.
# Final line: adaptive_mae_pct=… adaptive_bias_pct=… adaptive_within_10_pct=… binary_mae_pct=…
# binary_within_10_pct=… adaptive_time_vs_binary=… (over every profile and seed).
#
# Env: SEARCH_SIM_SEEDS (per profile and strategy, default 40),
#      SEARCH_SIM_PROFILES (default "embedding nlp_encoder ranking vision llm"),
#      SEARCH_SIM_TRUTHS (profile:rps pairs, default the accuracy benchmark's references).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
seeds=${SEARCH_SIM_SEEDS:-40}
profiles=${SEARCH_SIM_PROFILES:-embedding nlp_encoder ranking vision llm}
truths=${SEARCH_SIM_TRUTHS:-embedding:4400.6 nlp_encoder:984.4 ranking:3022.7 vision:659.9 llm:30.40}
vanguard_build "$build" Release search_sim >/dev/null
declare -A truth
for pair in $truths; do truth[${pair%%:*}]=${pair#*:}; done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for profile in $profiles; do
  for strategy in adaptive binary_search; do
    "$build/bin/search_sim" --profile="$profile" --strategy="$strategy" --seeds="$seeds" \
      --truth="${truth[$profile]:-0}" | tail -1 | tee -a "$out"
  done
done
awk '
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    s = v["strategy"]; n[s] += v["seeds"]; mae[s] += v["mae_pct"] * v["seeds"];
    bias[s] += v["bias_pct"] * v["seeds"]; within[s] += v["within_10_pct"] * v["seeds"];
    t[s] += v["mean_time_s"] * v["seeds"] }
  END {
    printf "adaptive_mae_pct=%.2f adaptive_bias_pct=%.2f adaptive_within_10_pct=%.0f ", mae["adaptive"] / n["adaptive"], bias["adaptive"] / n["adaptive"], within["adaptive"] / n["adaptive"]
    printf "binary_mae_pct=%.2f binary_within_10_pct=%.0f adaptive_time_vs_binary=%.2f\n", mae["binary_search"] / n["binary_search"], within["binary_search"] / n["binary_search"], t["adaptive"] / t["binary_search"]
  }' "$out"
