#!/usr/bin/env bash
# simulated predictor: req/s on one core (trivial profile), saturation accuracy of the profiles
#
# In one run:
#  1. vanguard-sim-predictor with a trivial model (64 slots x 10 us, i.e. never the limit),
#     pinned to the last CPU, driven by wrk (one thread, 16 connections, pinned to CPU 0) for
#     SIM_BENCH_SECONDS (default 5): requests/s, and requests per CPU-second of the simulator
#     (its user+sys time from /proc, so a shared machine shows up as a lower rps but not as a
#     lower per-core figure). The quality bar is >= 20,000 req/s on one core.
#  2. each batch profile (embedding, ranking, vision, nlp_encoder) without warmup and stalls,
#     saturated by wrk with 256 connections: measured/saturation ratio.
#  3. the time the discrete-event ground truth takes for each named profile.
# Ends with: trivial_rps=… trivial_rps_per_sim_core=… saturation_max_abs_error_pct=… ground_truth_max_s=…
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
trap stop_all EXIT

build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
seconds=${SIM_BENCH_SECONDS:-5}
log "building into $build"
vanguard_build "$build" Release vanguard-sim-predictor >/dev/null
sim=$build/bin/vanguard-sim-predictor

if ! command -v wrk >/dev/null; then
  log "installing wrk"
  apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
fi
cpus=$(nproc)
pin_client=(taskset -c 0)
pin_server=(taskset -c $((cpus - 1)))
if [ "$cpus" -lt 2 ]; then pin_server=(); fi
work=$(mktemp -d /tmp/vanguard-bench-sim.XXXXXX)
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"inputs":[{"name":"input0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
wrk.headers["Content-Type"] = "application/json"
LUA
log "load on ${cpus} CPUs: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"

# cpu_ticks PID -> utime+stime in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# wrk_rps URL CONNECTIONS SECONDS -> requests/s (non-2xx make it fail loudly)
wrk_rps() {
  local out
  out=$("${pin_client[@]}" wrk -t1 -c"$2" -d"$3"s -s "$work/post.lua" "$1")
  if grep -q "Non-2xx" <<<"$out"; then echo "$out" >&2; log "wrk saw errors"; return 1; fi
  awk '/Requests\/sec/ {print $2}' <<<"$out"
}
# wait_idle BASE_URL: wait until the simulator has nothing waiting or in service. wrk closes
# its connections with up to one request each still queued; the simulator (like Triton) still
# serves those, so a measurement started at once would share the slots with the previous
# run's leftovers (256 of them are 0.35 s of vision's capacity, -6.6 % over 5 s).
wait_idle() {
  local i
  for i in $(seq 1 100); do
    if curl -fsS "$1/metrics" | awk '
        /^nv_inference_pending_request_count/ {p += $NF}
        /^vllm:num_requests_running/ {p += $NF}
        END {exit (p == 0) ? 0 : 1}'; then
      return 0
    fi
    sleep 0.05
  done
  log "simulator did not drain within 5 s"; return 1
}

# 1. Trivial profile on one core.
start_server trivial "$work/trivial.log" "${pin_server[@]}" "$sim" --listen=127.0.0.1:0 \
  --slots=64 --service_ms=0.01
port=$REPLY
pid=${VANGUARD_PIDS[-1]}
url="http://127.0.0.1:$port/v2/models/sim/infer"
wrk_rps "$url" 16 1 >/dev/null  # connections and caches warm
ticks_before=$(cpu_ticks "$pid")
trivial_rps=$(wrk_rps "$url" 16 "$seconds")
ticks_after=$(cpu_ticks "$pid")
hz=$(getconf CLK_TCK)
sim_cpu_s=$(python3 -c "print(($ticks_after - $ticks_before) / $hz)")
per_core=$(python3 -c "c=$sim_cpu_s; print(round($trivial_rps * $seconds / c) if c > 0 else 0)")
log "trivial profile: $trivial_rps req/s; simulator CPU ${sim_cpu_s}s over ${seconds}s -> $per_core req per CPU-second"
kill -TERM "$pid"

# 2. Saturation accuracy of the batch profiles.
max_err=0
for profile in embedding ranking vision nlp_encoder; do
  start_server "$profile" "$work/$profile.log" "${pin_server[@]}" "$sim" --listen=127.0.0.1:0 \
    --profile="$profile" --warmup_s=0 --stall_rate_per_s=0
  pid=${VANGUARD_PIDS[-1]}
  saturation=$(grep -o 'true_capacity_rps=[0-9.]*' "$work/$profile.log" | cut -d= -f2)
  url="http://127.0.0.1:$REPLY/v2/models/sim/infer"
  wrk_rps "$url" 256 1 >/dev/null
  wait_idle "http://127.0.0.1:$REPLY"
  measured=$(wrk_rps "$url" 256 "$seconds")
  err=$(python3 -c "print(round(100 * ($measured - $saturation) / $saturation, 2))")
  max_err=$(python3 -c "print(max($max_err, abs($err)))")
  log "$profile: measured $measured req/s, saturation $saturation req/s, error ${err}%"
  kill -TERM "$pid"
done

# 3. Ground truth cost.
max_gt=0
for profile in embedding ranking vision nlp_encoder llm; do
  start=$(date +%s.%N)
  line=$("$sim" --profile="$profile" --ground_truth)
  took=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
  max_gt=$(python3 -c "print(max($max_gt, $took))")
  log "$profile ground truth (${took}s): $line"
done

echo "trivial_rps=$trivial_rps trivial_rps_per_sim_core=$per_core saturation_max_abs_error_pct=$max_err ground_truth_max_s=$max_gt"
