#!/usr/bin/env bash
# every strategy on the five named profiles through the real TestRunner, and the ablation (~70 min)
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
# Runs, per profile: the four searches (binary_search, adaptive, sweep of 10 rates, ladder),
# then direct_controller (verifies the rate an autoscaler targets, fetched as JSON over HTTP
# from a file server: 80% of the profile's saturation, what a utilisation-target autoscaler
# would claim; it is not an estimate of capacity, so it is reported as verified or not) and
# stability (6 segments at 90% of the true capacity: drift flags expected 0), then the
# ablation of the adaptive search: no_warmup (no fixed warmup, no steady-state detection),
# closed_loop (fixed concurrency instead of open-loop arrivals), p99_only (single-metric
# health check). The variant confirm_best runs the adaptive search with its confirmation hold
# (AdaptiveStrategy.confirm_best); it is not in the default list: name it in ACCURACY_RUNS,
# e.g. ACCURACY_RUNS="full:adaptive confirm_best:adaptive full:binary_search".
# ACCURACY_PROFILES restricts profiles; ACCURACY_STEP_S (3) and
# ACCURACY_WARMUP_S (2) set the step and warmup lengths; ACCURACY_RUNS="variant:strategy ..."
# replaces the list of runs. ACCURACY_SEEDS ("1") lists seeds of the simulated models'
# randomness (jitter, stalls) and of the load schedules: every run is repeated per seed, and
# the aggregates (MAE, max, bias, time) are over every profile and seed; with more than one
# seed the adaptive search's mean error per profile is printed too. A profile whose capacity
# hangs on rare events (ranking's stalls, once every 10 s on average) reads differently from
# one seed to the next, so one seed says little about "on average".
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
seeds=${ACCURACY_SEEDS:-1}
runs="full:binary_search full:adaptive full:sweep full:ladder full:direct_controller"
runs="$runs full:stability no_warmup:adaptive closed_loop:adaptive p99_only:adaptive"
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
# The "autoscaler" the direct controller asks: a static JSON file per profile.
mkdir -p "$work/controller"
controller_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$controller_port" --bind 127.0.0.1 --directory "$work/controller" \
  >"$work/controller.log" 2>&1 &
VANGUARD_PIDS+=($!)

results=$work/results.txt
: >"$results"
bench_start=$(date +%s)
# Ground truth and range per profile first; then run-major (every profile's binary search,
# then every profile's adaptive search, ...), so the headline comparison comes in first.
declare -A TRUTH SAT SLO_MS TTFT_MS ERR_MAX
# The simulator's default ground truth (30 s judged after 5 s, 4 replications) is itself a
# sample: profiles whose tail comes from rare stalls (ranking, vision, nlp_encoder) or from
# few long requests (llm) move by 2-6% between its seeds. The reference here is the mean of
# two independent truths (model and arrival seeds 1.. and 101..), each 16 replications of
# 60 s judged after 10 s; their spread is printed so an error below it reads as noise.
truth_args=(--ground_truth --ground_truth_seconds=60 --ground_truth_settle_s=10
  --ground_truth_replications=16)
declare -A TRUTH_SPREAD
for profile in $profiles; do
  "$bin/vanguard-sim-predictor" --profile="$profile" "${truth_args[@]}" --seed=101 \
    --ground_truth_seed=101 >"$work/truth-$profile-b.txt" &
  gt=$("$bin/vanguard-sim-predictor" --profile="$profile" "${truth_args[@]}" --seed=1 \
    --ground_truth_seed=1)
  wait $!
  t1=$(sed -n 's/.*true_capacity_rps=\([0-9.]*\).*/\1/p' <<<"$gt")
  t2=$(sed -n 's/.*true_capacity_rps=\([0-9.]*\).*/\1/p' "$work/truth-$profile-b.txt")
  TRUTH[$profile]=$(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.3f", (a + b) / 2}')
  TRUTH_SPREAD[$profile]=$(awk -v a="$t1" -v b="$t2" \
    'BEGIN{d = a - b; if (d < 0) d = -d; printf "%.2f", d / ((a + b) / 2) * 100}')
  SAT[$profile]=$(sed -n 's/.*saturation_rps=\([0-9.]*\).*/\1/p' <<<"$gt")
  SLO_MS[$profile]=$(sed -n 's/.*slo_latency_ms=\([0-9.]*\).*/\1/p' <<<"$gt")
  TTFT_MS[$profile]=$(sed -n 's/.*slo_ttft_ms=\([0-9.]*\).*/\1/p' <<<"$gt")
  ERR_MAX[$profile]=$(sed -n 's/.*slo_max_error_rate=\([0-9.]*\).*/\1/p' <<<"$gt")
  awk -v s="${SAT[$profile]}" 'BEGIN{printf "{\"target_qps\": %.3f}\n", 0.8 * s}' \
    >"$work/controller/$profile.json"
  log "profile $profile: truth ${TRUTH[$profile]} rps (two truths $t1 and $t2, spread ${TRUTH_SPREAD[$profile]}%; saturation ${SAT[$profile]}), SLO p99 ${SLO_MS[$profile]} ms${TTFT_MS[$profile]:+, TTFT p99 ${TTFT_MS[$profile]} ms}, range [$(awk -v s="${SAT[$profile]}" 'BEGIN{printf "%.3f, %.3f", s/20, s*1.5}')]"
done
for seed in $seeds; do
  for run in $runs; do
    variant=${run%%:*}
    strategy=${run#*:}
    for profile in $profiles; do
      truth=${TRUTH[$profile]}
      sat=${SAT[$profile]}
      ttft_ms=${TTFT_MS[$profile]}
      lo=$(awk -v s="$sat" 'BEGIN{printf "%.3f", s/20}')
      hi=$(awk -v s="$sat" 'BEGIN{printf "%.3f", s*1.5}')
      proto_args=()
      if [ "$profile" = llm ]; then
        proto_args=(--protocol=openai_completions --request_body='{"prompt":"Summarise the capacity report.","stream":true}')
      fi
      start_server "sim-$profile" "$work/sim-$profile-$variant-$strategy-s$seed.log" "${prio[@]}" \
        "$bin/vanguard-sim-predictor" --profile="$profile" --seed="$seed" --listen=127.0.0.1:0
      sim_port=$REPLY
      sim_pid=${VANGUARD_PIDS[-1]}
      line=$("$bin/accuracy_bench" --replayer="127.0.0.1:$replayer_port" \
        --endpoint="http://127.0.0.1:$sim_port" "${proto_args[@]}" \
        --slo_p99_ms="${SLO_MS[$profile]}" --slo_ttft_ms="${ttft_ms:-0}" \
        --max_error_rate="${ERR_MAX[$profile]}" \
        --min_qps="$lo" --max_qps="$hi" --strategy="$strategy" --variant="$variant" \
        --step_seconds="$step_s" --warmup_seconds="$warmup_s" --test_id="$seed" \
        --direct_json_url="http://127.0.0.1:$controller_port/$profile.json" \
        --stability_qps="$(awk -v t="$truth" 'BEGIN{printf "%.3f", 0.9 * t}')" \
        2>"$work/bench-$profile-$variant-$strategy-s$seed.log" || true)
      kill "$sim_pid" 2>/dev/null || true
      wait "$sim_pid" 2>/dev/null || true
      est=$(sed -n 's/.*estimate=\([-0-9.a-z]*\).*/\1/p' <<<"$line")
      secs=$(sed -n 's/.*test_s=\([0-9.]*\).*/\1/p' <<<"$line")
      conv=$(sed -n 's/.*converged=\([01]\).*/\1/p' <<<"$line")
      steps=$(sed -n 's/.*steps=\([0-9]*\).*/\1/p' <<<"$line")
      drift=$(sed -n 's/.*drift_flags=\([0-9]*\).*/\1/p' <<<"$line")
      err=$(awk -v e="${est:-nan}" -v t="$truth" 'BEGIN{ if (e == "nan" || e == "") print "nan"; else printf "%.2f", (e - t) / t * 100 }')
      printf '%-12s %-10s %-17s truth=%.2f estimate=%s err_pct=%s converged=%s steps=%s test_s=%s drift_flags=%s seed=%s\n' \
        "$profile" "$variant" "$strategy" "$truth" "${est:-nan}" "$err" "${conv:-0}" "${steps:-0}" "${secs:-0}" "${drift:-0}" "$seed" \
        | tee -a "$results"
    done
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
if [ "$(wc -w <<<"$seeds")" -gt 1 ]; then
  echo "adaptive search per profile over seeds $seeds (mean err %, mean |err| %, max |err| %):"
  awk '$2 == "full" && $3 == "adaptive" {
      split($6, a, "="); e = a[2]; if (e == "nan") next
      n[$1]++; s[$1] += e; abs = e < 0 ? -e : e; m[$1] += abs; if (abs > x[$1]) x[$1] = abs }
    END { for (p in n) printf "  %-12s err=%.2f abs=%.2f max=%.2f (%d runs)\n", p, s[p] / n[p], m[p] / n[p], x[p], n[p] }' \
    "$results"
fi
echo "per-strategy summary over every profile and seed (MAE %, max |err| %, bias %, total test time s):"
for run in $runs; do
  case $run in full:direct_controller|full:stability) continue ;; esac
  printf '  %-10s %-14s mae=%s max=%s bias=%s time_s=%s\n' "${run%%:*}" "${run#*:}" \
    "$(agg "${run%%:*}" "${run#*:}" mae)" "$(agg "${run%%:*}" "${run#*:}" max)" \
    "$(agg "${run%%:*}" "${run#*:}" bias)" "$(agg "${run%%:*}" "${run#*:}" time)"
done
a_time=$(agg full adaptive time)
b_time=$(agg full binary_search time)
ratio=$(awk -v a="$a_time" -v b="$b_time" 'BEGIN{ if (b + 0 > 0) printf "%.2f", a / b; else print "nan" }')
# direct_controller: the autoscaler's target verified (estimate > 0) on how many profiles;
# stability: drift flags raised at 90% of the true capacity (expected none).
direct_ok=$(awk '$3 == "direct_controller" {n++; split($5, a, "="); if (a[2] != "nan" && a[2] + 0 > 0) ok++}
  END {printf "%d/%d", ok, n}' "$results")
drift_total=$(awk '$3 == "stability" {split($10, a, "="); d += a[2]} END {print d + 0}' "$results")
stability_ok=$(awk '$3 == "stability" {n++; split($5, a, "="); if (a[2] != "nan" && a[2] + 0 > 0) ok++}
  END {printf "%d/%d", ok, n}' "$results")
echo "  direct_controller: autoscaler target (80% of saturation) verified on $direct_ok profiles"
echo "  stability at 90% of the true capacity: held on $stability_ok profiles, $drift_total drift flag(s)"
truth_spread=$(for p in $profiles; do echo "${TRUTH_SPREAD[$p]}"; done | sort -g | tail -1)
echo "  ground truth: two independent long truths per profile differ by at most ${truth_spread}%"
echo "wall time ${bench_s} s"
echo "adaptive_mae_pct=$(agg full adaptive mae) adaptive_max_err_pct=$(agg full adaptive max) binary_mae_pct=$(agg full binary_search mae) adaptive_time_vs_binary=$ratio no_warmup_mae_pct=$(agg no_warmup adaptive mae) closed_loop_mae_pct=$(agg closed_loop adaptive mae) p99_only_mae_pct=$(agg p99_only adaptive mae) confirm_best_mae_pct=$(agg confirm_best adaptive mae) adaptive_bias_pct=$(agg full adaptive bias) sweep_mae_pct=$(agg full sweep mae) ladder_mae_pct=$(agg full ladder mae) direct_verified=$direct_ok stability_held=$stability_ok stability_drift_flags=$drift_total truth_spread_max_pct=$truth_spread wall_s=$bench_s"
