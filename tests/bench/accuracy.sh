#!/usr/bin/env bash
# accuracy of the capacity strategies against the simulator's profiles, and the ablation
#
# For each named profile of the simulated predictor (tests/simulator/profiles: embedding,
# nlp_encoder, ranking, vision, llm) the true capacity under the profile's SLO comes from the
# simulator's discrete-event ground truth (--ground_truth). Every run then starts a fresh
# simulated predictor (so each strategy meets the model's warmup) and one replayer, and runs
# one capacity test through the worker's real TestRunner (accuracy_bench): strategy,
# MeasuredStepRunner (fixed warmup + steady-state detection), HealthAssessor, metrics
# scraping, StepExecutor over gRPC to the replayer, open-loop Poisson load.
#
# Every run gets only what a user gives: the model's SLO (from the profile) and a rate range,
# the same rule for every profile: [saturation/20, 1.5 x saturation], where saturation is the
# profile's nominal flat-out throughput (not the capacity under SLO). No per-profile tuning.
#
# Runs: binary_search, adaptive (the main comparison), then the ablation of the adaptive
# search: no_warmup (no fixed warmup, no steady-state detection), closed_loop (fixed
# concurrency instead of open-loop arrivals), p99_only (single-metric health check).
# ACCURACY_EXTRA="ladder sweep" adds those strategies; ACCURACY_PROFILES restricts profiles;
# ACCURACY_STEP_S (3) and ACCURACY_WARMUP_S (2) set the step and warmup lengths;
# ACCURACY_RUNS="variant:strategy ..." replaces the list of runs.
#
# Ends with: adaptive_mae_pct=… adaptive_max_err_pct=… binary_mae_pct=… adaptive_time_vs_binary=…
#            no_warmup_mae_pct=… closed_loop_mae_pct=… (and more)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
trap stop_all EXIT

build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
profiles=${ACCURACY_PROFILES:-"embedding nlp_encoder ranking vision llm"}
step_s=${ACCURACY_STEP_S:-3}
warmup_s=${ACCURACY_WARMUP_S:-2}
runs="full:binary_search full:adaptive"
for s in ${ACCURACY_EXTRA:-}; do runs="$runs full:$s"; done
runs="$runs no_warmup:adaptive closed_loop:adaptive p99_only:adaptive"
runs=${ACCURACY_RUNS:-$runs}  # e.g. "full:adaptive full:binary_search"

log "building into $build"
vanguard_build "$build" Release vanguard-sim-predictor vanguard-replayer accuracy_bench >/dev/null
bin=$build/bin
work=$(mktemp -d /tmp/vanguard-bench-accuracy.XXXXXX)
log "load on $(nproc) CPUs: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min); logs in $work"
# The load generator and the system under test get priority over whatever else runs here
# (timing is what is measured); unprivileged runs just get the default priority.
prio=(nice -n -5)
"${prio[@]}" true 2>/dev/null || prio=()

start_server replayer "$work/replayer.log" "${prio[@]}" "$bin/vanguard-replayer" serve \
  --listen=127.0.0.1:0
replayer_port=$REPLY

results=$work/results.txt
: >"$results"
bench_start=$(date +%s)
for profile in $profiles; do
  gt=$("$bin/vanguard-sim-predictor" --profile="$profile" --ground_truth)
  truth=$(sed -n 's/.*true_capacity_rps=\([0-9.]*\).*/\1/p' <<<"$gt")
  sat=$(sed -n 's/.*saturation_rps=\([0-9.]*\).*/\1/p' <<<"$gt")
  slo_ms=$(sed -n 's/.*slo_latency_ms=\([0-9.]*\).*/\1/p' <<<"$gt")
  ttft_ms=$(sed -n 's/.*slo_ttft_ms=\([0-9.]*\).*/\1/p' <<<"$gt")
  err_max=$(sed -n 's/.*slo_max_error_rate=\([0-9.]*\).*/\1/p' <<<"$gt")
  lo=$(awk -v s="$sat" 'BEGIN{printf "%.3f", s/20}')
  hi=$(awk -v s="$sat" 'BEGIN{printf "%.3f", s*1.5}')
  proto_args=()
  if [ "$profile" = llm ]; then
    proto_args=(--protocol=openai_completions --request_body='{"prompt":"Summarise the capacity report.","stream":true}')
  fi
  log "profile $profile: truth $truth rps (saturation $sat), SLO p99 ${slo_ms} ms${ttft_ms:+, TTFT p99 ${ttft_ms} ms}, range [$lo, $hi]"
  for run in $runs; do
    variant=${run%%:*}
    strategy=${run#*:}
    start_server "sim-$profile" "$work/sim-$profile-$variant-$strategy.log" "${prio[@]}" \
      "$bin/vanguard-sim-predictor" --profile="$profile" --listen=127.0.0.1:0
    sim_port=$REPLY
    sim_pid=${VANGUARD_PIDS[-1]}
    line=$("$bin/accuracy_bench" --replayer="127.0.0.1:$replayer_port" \
      --endpoint="http://127.0.0.1:$sim_port" "${proto_args[@]}" \
      --slo_p99_ms="$slo_ms" --slo_ttft_ms="${ttft_ms:-0}" --max_error_rate="$err_max" \
      --min_qps="$lo" --max_qps="$hi" --strategy="$strategy" --variant="$variant" \
      --step_seconds="$step_s" --warmup_seconds="$warmup_s" \
      2>"$work/bench-$profile-$variant-$strategy.log" || true)
    kill "$sim_pid" 2>/dev/null || true
    wait "$sim_pid" 2>/dev/null || true
    est=$(sed -n 's/.*estimate=\([-0-9.a-z]*\).*/\1/p' <<<"$line")
    secs=$(sed -n 's/.*test_s=\([0-9.]*\).*/\1/p' <<<"$line")
    conv=$(sed -n 's/.*converged=\([01]\).*/\1/p' <<<"$line")
    steps=$(sed -n 's/.*steps=\([0-9]*\).*/\1/p' <<<"$line")
    err=$(awk -v e="${est:-nan}" -v t="$truth" 'BEGIN{ if (e == "nan" || e == "") print "nan"; else printf "%.2f", (e - t) / t * 100 }')
    printf '%-12s %-10s %-14s truth=%.2f estimate=%s err_pct=%s converged=%s steps=%s test_s=%s\n' \
      "$profile" "$variant" "$strategy" "$truth" "${est:-nan}" "$err" "${conv:-0}" "${steps:-0}" "${secs:-0}" \
      | tee -a "$results"
  done
done
bench_s=$(( $(date +%s) - bench_start ))

# Aggregates: MAE = mean |err|, bias = mean signed err, time = summed test time.
agg() {  # agg VARIANT STRATEGY FIELD(mae|max|bias|time)
  awk -v v="$1" -v s="$2" -v f="$3" '
    $2 == v && $3 == s {
      split($6, a, "="); split($9, b, "="); e = a[2]; t = b[2];
      if (e == "nan") { nan = 1; next }
      n++; abs = e < 0 ? -e : e; sum += abs; bias += e; if (abs > max) max = abs; time += t }
    END {
      if (n == 0) { print "nan"; exit }
      if (f == "mae") printf "%.2f", sum / n; else if (f == "max") printf "%.2f", max;
      else if (f == "bias") printf "%.2f", bias / n; else printf "%.1f", time }' "$results"
}
echo "per-strategy summary (MAE %, max |err| %, bias %, total test time s):"
for run in $runs; do
  printf '  %-10s %-14s mae=%s max=%s bias=%s time_s=%s\n' "${run%%:*}" "${run#*:}" \
    "$(agg "${run%%:*}" "${run#*:}" mae)" "$(agg "${run%%:*}" "${run#*:}" max)" \
    "$(agg "${run%%:*}" "${run#*:}" bias)" "$(agg "${run%%:*}" "${run#*:}" time)"
done
a_time=$(agg full adaptive time)
b_time=$(agg full binary_search time)
ratio=$(awk -v a="$a_time" -v b="$b_time" 'BEGIN{ if (b + 0 > 0) printf "%.2f", a / b; else print "nan" }')
echo "wall time ${bench_s} s"
echo "adaptive_mae_pct=$(agg full adaptive mae) adaptive_max_err_pct=$(agg full adaptive max) binary_mae_pct=$(agg full binary_search mae) adaptive_time_vs_binary=$ratio no_warmup_mae_pct=$(agg no_warmup adaptive mae) closed_loop_mae_pct=$(agg closed_loop adaptive mae) p99_only_mae_pct=$(agg p99_only adaptive mae) adaptive_bias_pct=$(agg full adaptive bias) wall_s=$bench_s"
