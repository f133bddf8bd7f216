#!/usr/bin/env bash
# steady-state false alarms: how often a stationary run near capacity reads as drifting
#
# For each batch profile of the simulated predictor (embedding, nlp_encoder, ranking, vision)
# the discrete-event ground truth gives the capacity under the profile's SLO; a fresh
# simulated predictor is then driven by `vanguard-replayer run` at a constant offered rate
# (open-loop Poisson) of STEADY_FRACTIONS of that capacity (default "0.8 0.95"), once the
# model's own warmup has passed, for STEADY_SECONDS (default 30) of half-second windows.
# Nothing changes during the run, so every span the steady-state test calls drifting is a
# false alarm. steady_bench slides the worker's 4-window span over the windows' p50 latency
# and counts spans whose least-squares trend exceeds 20% (the bare test) and spans that
# SteadyStateDetector::Trending calls drifting (beyond the trend's own noise; what the worker
# uses). Each false alarm costs a step its measured part and more settling.
# Final line: bare_drifting_pct=… trending_pct=… (over every profile and fraction), and per
# fraction bare_drifting_pct_F=… trending_pct_F=….
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
trap stop_all EXIT

build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
fractions=${STEADY_FRACTIONS:-0.8 0.95}
seconds=${STEADY_SECONDS:-30}
profiles=${STEADY_PROFILES:-embedding nlp_encoder ranking vision}
log "building into $build"
vanguard_build "$build" Release vanguard-sim-predictor vanguard-replayer steady_bench >/dev/null
bin=$build/bin
work=$(mktemp -d /tmp/vanguard-bench-steady.XXXXXX)
log "load on $(nproc) CPUs: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min); logs in $work"
out=$work/results.txt
: >"$out"
for profile in $profiles; do
  truth=$("$bin/vanguard-sim-predictor" --profile="$profile" --ground_truth |
    sed -n 's/.*true_capacity_rps=\([0-9.]*\).*/\1/p')
  for fraction in $fractions; do
    rate=$(awk -v t="$truth" -v f="$fraction" 'BEGIN{printf "%.3f", t * f}')
    start_server "sim-$profile-$fraction" "$work/sim-$profile-$fraction.log" \
      "$bin/vanguard-sim-predictor" --profile="$profile" --listen=127.0.0.1:0
    port=$REPLY
    # The model's own warmup (at most 20 s from start in the named profiles, slower service)
    # passes without load: under load near capacity it would leave a backlog that drains
    # through the run, a real drift. Only the measured windows are read.
    sleep 22
    "$bin/vanguard-replayer" run --target="http://127.0.0.1:$port" --model=sim --rate="$rate" \
      --duration="${seconds}s" --warmup=5s --window=500ms --schedule=poisson --seed=1 \
      --output=table >"$work/run-$profile-$fraction.txt"
    stop_all
    line=$("$bin/steady_bench" --windows=4 <"$work/run-$profile-$fraction.txt")
    printf '%-12s fraction=%s rate=%s %s\n' "$profile" "$fraction" "$rate" "$line" | tee -a "$out"
  done
done
awk '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    f = v["fraction"]; n[f] += v["spans"]; b[f] += v["bare_drifting_pct"] * v["spans"];
    t[f] += v["trending_pct"] * v["spans"]; N += v["spans"];
    B += v["bare_drifting_pct"] * v["spans"]; T += v["trending_pct"] * v["spans"] }
  END {
    printf "bare_drifting_pct=%.1f trending_pct=%.1f", B / N, T / N
    for (f in n) printf " bare_drifting_pct_%s=%.1f trending_pct_%s=%.1f", f, b[f] / n[f], f, t[f] / n[f]
    printf "\n"
  }' "$out"
