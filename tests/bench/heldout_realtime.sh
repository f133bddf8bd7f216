#!/usr/bin/env bash
# generated models through the real binaries on loopback: the adaptive search's error in real time
#
# Draws seeded random model servers (tests/simulator/model_generator.h, through
# `search_sim --generated --write_profiles`; each with its long-run truth over the sustained
# horizon) and measures each as a new user would: a throwaway Postgres, the orchestrator (auth
# on), a worker and a replayer on loopback, then per model a freshly started
# `vanguard-sim-predictor --profile=<its json>` (cold: the model's warmup happens during the
# test), `vanguard models register` with the model's SLO (no --warmup: the registry's 2 s) and
# `vanguard submit --strategy=adaptive --min_qps=.. --max_qps=.. --schedule=poisson --wait
# --output=json` with the user-style range the generator drew. The truth holds for Poisson
# arrivals (the default since the thirty-fifth session; named here all the same).
#
# Content-dependent cost: every predictor runs with --nominal_elements=256, so a request's
# service time follows the tensor elements it carries (tests/simulator/README.md). For a model
# with cost_sigma > 0 the truth assumes the lognormal size mix: tests/bench/make_trace.py
# writes a trace with that mix, which the test replays (`vanguard submit --trace=FILE`; the
# arrivals stay Poisson), and the one template request of the median size, registered as the
# model's request_template. REALTIME_TEMPLATE=1 searches every model with the template
# instead, the ablation that shows what the recorded mix is worth. Each model with
# cost_sigma > 0 is also replayed by `vanguard-replayer run` at its true capacity, once with
# the trace and once with the template (REALTIME_REPLAY_CHECK=0 skips that).
#
# Which generated models run: the first REALTIME_MODELS (8) of the seeds gen_seed,
# gen_seed+1, ... that this machine can measure: truth <= REALTIME_MAX_RPS (400; two shared
# cores carry the load generator and the server), SLO latency >= REALTIME_MIN_SLO_MS (5;
# loopback HTTP and the server's timers add 0.1-1 ms the truth does not see: about 1 ms at
# p99 under this bench's own load, docs/strategies.md, thirty-fourth session), and not an SLO
# on p90 (the registry's SLO has p50 and p99 only). Every skipped seed is printed with its
# reason.
# REALTIME_SEED (default: from the clock) is printed; REALTIME_HORIZON_S (300) is the horizon
# the truths hold over and each test's --sustain_horizon; REALTIME_TEST_TIMEOUT_S (3600) is
# how long one test may run. VANGUARD_BENCH_BUILD_DIR picks the build directory
# (REALTIME_BUILD=0 runs its binaries without building first).
#
# Prints a line per model (truth, range, estimate, error, steps, the test's wall time, SLO
# binding, cost_sigma, mix, exit code, state) and ends with (realtime_over5: estimates more
# than 5% above the truth; a model without an estimate counts as 100% error):
#   realtime_mae_pct=.. realtime_max_abs_err_pct=.. realtime_over5=.. realtime_models=..
#   gen_seed=.. wall_s=.. realtime_mix=trace|template
{  # the whole script is parsed before it runs: editing the file during a run is safe
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
trap stop_all EXIT
trap 'exit 130' INT TERM

build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
models=${REALTIME_MODELS:-8}
gen_seed=${REALTIME_SEED:-$(( $(date +%s) % 1000000000 ))}
max_rps=${REALTIME_MAX_RPS:-400}
min_slo_ms=${REALTIME_MIN_SLO_MS:-5}
horizon_s=${REALTIME_HORIZON_S:-300}
replay_check=${REALTIME_REPLAY_CHECK:-1}
template_only=${REALTIME_TEMPLATE:-0}
# A test still running then counts as no estimate. Slow models take over 30 min: their steps
# hold 200 arrivals (30-60 s at a few req/s) and every hold covers the 300 s horizon
# (search_sim's virtual time for gen-796376123, 8 req/s of 333 ms requests: 1987 s).
test_timeout_s=${REALTIME_TEST_TIMEOUT_S:-3600}
nominal_elements=256

bench_start=$(date +%s)
if [ "${REALTIME_BUILD:-1}" = 1 ]; then  # REALTIME_BUILD=0: use the binaries as they are
  log "building into $build"
  vanguard_build "$build" Release vanguard vanguard-orchestrator vanguard-worker \
    vanguard-replayer vanguard-sim-predictor search_sim >/dev/null
fi
bin=$build/bin
work=$(mktemp -d /tmp/vanguard-bench-realtime.XXXXXX)
log "load on $(nproc) CPUs: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min); logs in $work"
prio=(nice -n -5)
"${prio[@]}" true 2>/dev/null || prio=()

# Candidates: generated in batches until enough can be measured here.
gen=$work/models
mkdir -p "$gen"
chosen=()
next_seed=$gen_seed
echo "gen_seed=$gen_seed: the first $models measurable models (truth <= $max_rps req/s, SLO >= $min_slo_ms ms, not p90), horizon $horizon_s s"
while [ "${#chosen[@]}" -lt "$models" ]; do
  if [ $(( next_seed - gen_seed )) -ge $(( models * 12 )) ]; then
    log "only ${#chosen[@]} measurable models among $(( next_seed - gen_seed )) seeds"
    exit 1
  fi
  batch=$(( (models - ${#chosen[@]}) * 3 ))
  log "generating $batch models from seed $next_seed (truths over $horizon_s s)"
  rm -rf "$gen/batch" && mkdir -p "$gen/batch"
  "$bin/search_sim" --generated="$batch" --gen_seed="$next_seed" --horizon_s="$horizon_s" \
    --write_profiles="$gen/batch" >"$work/generate-$next_seed.log" 2>&1
  next_seed=$(( next_seed + batch ))
  while IFS=$'\t' read -r -u 3 name truth lo hi binding description; do
    slo_ms=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["slo"]["latency_ms"])' \
      "$gen/batch/$name.json")
    why=""
    if [ "$binding" = p90 ]; then why="SLO on p90 (the registry has p50 and p99)"
    elif awk -v t="$truth" -v m="$max_rps" 'BEGIN{exit !(t > m)}'; then why="truth $truth > $max_rps req/s"
    elif awk -v s="$slo_ms" -v m="$min_slo_ms" 'BEGIN{exit !(s < m)}'; then why="SLO $slo_ms ms < $min_slo_ms ms"
    fi
    if [ -n "$why" ]; then
      echo "  skipped $name: $why"
      continue
    fi
    [ "${#chosen[@]}" -lt "$models" ] || continue
    mv "$gen/batch/$name.json" "$gen/$name.json"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$truth" "$lo" "$hi" "$binding" "$description" \
      >>"$gen/models.tsv"
    chosen+=("$name")
  done 3<"$gen/batch/models.tsv"
done

# The stack, as deploy/local/demo starts it.
start_stack "$bin" "$work" "${prio[@]}"

# field FILE.json KEY: a top-level or slo.KEY value of a profile.
field() {
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); k=sys.argv[2]
print(p["slo"][k] if k in p.get("slo", {}) else p.get(k, 0))' "$1" "$2"
}

# replay_percentile PORT MODEL RATE PCT ARGS...: the PCT latency percentile (ms) and error
# rate of a 20 s Poisson replay (after 5 s) at RATE, printed as "P ERR".
replay_percentile() {
  local port=$1 name=$2 rate=$3 pct=$4
  shift 4
  "$bin/vanguard-replayer" run --target="http://127.0.0.1:$port" --model="$name" --rate="$rate" \
    --schedule=poisson --seed=7 --duration=20s --warmup=5s --output=json "$@" 2>/dev/null |
    python3 -c '
import json, sys
r = json.load(sys.stdin)
lat = r.get("latency", {})
key = {"50": "p50_ms", "90": "p90_ms"}.get(sys.argv[1], "p99_ms")
sched = float(r.get("scheduled", 0) or 0)
bad = float(r.get("errors", 0) or 0) + float(r.get("timeouts", 0) or 0)
print("%.2f %.4f" % (float(lat.get(key, 0)), bad / sched if sched else float("nan")))' "$pct" ||
    echo "nan nan"
}

results=$work/results.txt
: >"$results"
while IFS=$'\t' read -r -u 3 name truth lo hi binding description; do
  json=$gen/$name.json
  sigma=$(printf '%.3f' "$(field "$json" cost_sigma)")
  pct=$(field "$json" latency_percentile)
  slo_ms=$(field "$json" latency_ms)
  err_max=$(field "$json" max_error_rate)
  "$here/make_trace.py" --output="$work/$name.vtr" --model="$name" \
    --nominal_elements="$nominal_elements" --sigma="$sigma" --records=4000 --rate="$truth" \
    --seed="${name#gen-}" --template_out="$work/$name.template.json" 2>>"$work/traces.log"
  case $pct in
    50|50.0) slo_args=(--p50_ms="$slo_ms" --p99_ms=60000) ;;
    *) slo_args=(--p99_ms="$slo_ms") ;;
  esac
  mix_args=()
  mix=template
  if [ "$template_only" != 1 ] && awk -v s="$sigma" 'BEGIN{exit !(s > 0)}'; then
    mix_args=(--trace="$work/$name.vtr")
    mix=trace
  fi
  model_start=$(date +%s)
  start_server "$name" "$work/$name.sim.log" "${prio[@]}" "$bin/vanguard-sim-predictor" \
    --profile="$json" --model_name="$name" --nominal_elements="$nominal_elements" \
    --listen=127.0.0.1:0
  sim_port=$REPLY
  sim_pid=${VANGUARD_PIDS[-1]}
  "$bin/vanguard" models register --name="$name" --version=v1 \
    --endpoint="http://127.0.0.1:$sim_port" --protocol=kserve_v2_rest "${slo_args[@]}" \
    --max_error_rate="$err_max" --accelerator=cpu \
    --request_template="$(cat "$work/$name.template.json")" >/dev/null
  set +e
  timeout "$test_timeout_s" "$bin/vanguard" submit --model="$name" --version=v1 --strategy=adaptive --min_qps="$lo" \
    --max_qps="$hi" --sustain_horizon="${horizon_s}s" --schedule=poisson "${mix_args[@]}" --wait --output=json >"$work/$name.test.json" \
    2>"$work/$name.submit.log"
  rc=$?
  set -e
  wall=$(( $(date +%s) - model_start ))
  read -r est steps note < <(python3 -c '
import json, sys
try:
    t = json.load(open(sys.argv[1]))
except Exception:
    print("nan 0 no-result"); sys.exit()
r = t.get("result", {})
est = r.get("max_sustainable_qps")
note = [t.get("state", "?").replace("TEST_STATE_", "").lower()]
if r.get("at_least"): note.append("at_least")
if r and not r.get("converged"): note.append("unconverged")
print("%s %d %s" % ("nan" if est is None else "%.2f" % est, len(t.get("steps", [])), ",".join(note)))' \
    "$work/$name.test.json")
  err=$(awk -v e="$est" -v t="$truth" 'BEGIN{ if (e == "nan") print "nan"; else printf "%.2f", (e - t) / t * 100 }')
  check=""
  if [ "$replay_check" = 1 ] && awk -v s="$sigma" 'BEGIN{exit !(s > 0)}'; then
    read -r trace_p trace_e < <(replay_percentile "$sim_port" "$name" "$truth" "$pct" \
      --trace="$work/$name.vtr")
    read -r tmpl_p tmpl_e < <(replay_percentile "$sim_port" "$name" "$truth" "$pct" \
      --body="$(cat "$work/$name.template.json")")
    check=$(printf ' at_truth: trace p%s=%s ms err=%s, template p%s=%s ms err=%s (SLO %s ms, %s)' \
      "${pct%.*}" "$trace_p" "$trace_e" "${pct%.*}" "$tmpl_p" "$tmpl_e" "$slo_ms" "$err_max")
  fi
  kill "$sim_pid" 2>/dev/null || true
  wait "$sim_pid" 2>/dev/null || true
  printf '%-14s truth=%.2f range=[%.2f,%.2f] estimate=%s err_pct=%s steps=%s wall_s=%s binding=%s cost_sigma=%s mix=%s rc=%s %s%s\n' \
    "$name" "$truth" "$lo" "$hi" "$est" "$err" "$steps" "$wall" "$binding" "$sigma" "$mix" "$rc" \
    "$note" "$check" | tee -a "$results"
done 3<"$gen/models.tsv"

wall_s=$(( $(date +%s) - bench_start ))
# A model without an estimate counts as 100% error. The models with a cost mix are where
# the recorded trace and the template differ, so their MAE is printed apart.
awk -v seed="$gen_seed" -v wall="$wall_s" -v mode="$([ "$template_only" = 1 ] && echo template || echo trace)" '
  { split($5, a, "="); e = a[2]; split($9, c, "="); mix = c[2] + 0 > 0; n++
    if (e == "nan") { nan++; abs = 100 } else { abs = e < 0 ? -e : e; if (e > 5) over++ }
    sum += abs; if (abs > max) max = abs
    if (!mix) { n0++; sum0 += abs } else { n1++; sum1 += abs } }
  END {
    if (nan) printf "%d model(s) without an estimate (counted as 100%% error)\n", nan
    printf "models without a cost mix: %d, MAE %.2f%%; with one (mix=%s): %d, MAE %.2f%%\n",
      n0, n0 ? sum0 / n0 : 0, mode, n1, n1 ? sum1 / n1 : 0
    printf "realtime_mae_pct=%.2f realtime_max_abs_err_pct=%.2f realtime_over5=%d realtime_models=%d gen_seed=%s wall_s=%d realtime_mix=%s\n",
      n ? sum / n : 0, max, over, n, seed, wall, mode }' "$results"
log "logs kept in $work"
exit 0
}
