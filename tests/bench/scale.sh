#!/usr/bin/env bash
# 1, 2, 4 replayers sharing one step: merged percentiles, CPU per request, max total rate
#
# Against one fast local HTTP server (tests/bench/replayer_fast_server, pinned to the last
# CPU), with k = 1, 2, 4 `vanguard-replayer serve` processes (one event loop each, all pinned
# to CPU 0) driven by tests/bench/scale_driver, which runs each step through the worker's own
# ReplayerPool (shard i of k, Poisson, results merged exactly), in one run:
#  1. the same total rate (SCALE_BENCH_RATE, default 5000/s; 1 s warmup + SCALE_BENCH_SECONDS,
#     default 5 s) over k = 1, 2, 4, SCALE_BENCH_ROUNDS (default 2) times in the order
#     1 2 4 4 2 1: the merged p50/p99/max (means over the client-valid rounds) beside k = 1's,
#     send-skew p99 and client validity;
#  2. CPU per request of the k replayers (utime + stime from /proc/PID/stat of each replayer
#     process, read before and after the step), k = 4 over k = 1;
#  3. the highest total rate k = 4 replayers sustain with merged send-skew p99 <= 1 ms,
#     achieved >= 99% of offered and nothing dropped, undispatched or failed (doubling from
#     twice the rate above, then two bisections; a rate holds when one of two tries does).
# Ends with: scale_replayers=1,2,4 merged_p99_delta_pct=… cpu_per_req_ratio_k4=… max_total_rate=…
# (merged_p99_delta_pct: k = 4's merged p99 against k = 1's, in percent).
# The machine may be shared: figures are from one run and say so. SCALE_BENCH_PRIORITY=rt
# (default when root and chrt works) runs the server and the replayers under SCHED_FIFO 10.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
trap stop_all EXIT

build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
rate=${SCALE_BENCH_RATE:-5000}
seconds=${SCALE_BENCH_SECONDS:-5}
rounds=${SCALE_BENCH_ROUNDS:-2}
priority=${SCALE_BENCH_PRIORITY:-rt}
if [ "$priority" = rt ] && ! chrt -f 10 true 2>/dev/null; then
  log "cannot use SCHED_FIFO here; running at normal priority"
  priority=normal
fi
log "building into $build"
vanguard_build "$build" Release vanguard-replayer replayer_fast_server scale_driver >/dev/null

cpus=$(nproc)
prio=()
[ "$priority" = rt ] && prio=(chrt -f 10)
pin_client=("${prio[@]}" taskset -c 0)
pin_server=("${prio[@]}" taskset -c $((cpus - 1)))
[ "$cpus" -lt 2 ] && pin_server=("${prio[@]}")
work=$(mktemp -d /tmp/vanguard-bench-scale.XXXXXX)
start_server fast_server "$work/server.log" "${pin_server[@]}" "$build/bin/replayer_fast_server" \
  --listen=127.0.0.1:0
url="http://127.0.0.1:$REPLY"
addresses=()
pids=()
for i in 1 2 3 4; do
  start_server "replayer$i" "$work/replayer$i.log" "${pin_client[@]}" \
    "$build/bin/vanguard-replayer" serve --listen=127.0.0.1:0
  addresses+=("127.0.0.1:$REPLY")
  pids+=("${VANGUARD_PIDS[-1]}")
done
echo "machine: ${cpus} CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min); replayers on CPU 0, server on CPU $((cpus - 1)); priority $priority"

ticks=$(getconf CLK_TCK)
# cpu_ticks K: utime + stime of the first K replayers, in clock ticks.
cpu_ticks() {
  local sum=0 t
  for pid in "${pids[@]:0:$1}"; do
    t=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    sum=$((sum + t))
  done
  echo "$sum"
}
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2"; }
latency() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency"].get(sys.argv[2], 0))' "$1" "$2"; }

# step NAME K RATE SECONDS -> $work/NAME.json (the merged StepResult), $work/NAME.cpu (seconds)
step() {
  local name=$1 k=$2 r=$3 s=$4 before after
  local list
  list=$(IFS=,; echo "${addresses[*]:0:$k}")
  before=$(cpu_ticks "$k")
  "$build/bin/scale_driver" --replayers="$list" --target="$url" --rate="$r" \
    --duration="${s}s" --warmup=1s --seed=7 >"$work/$name.json" 2>"$work/$name.err" ||
    { cat "$work/$name.err" >&2; return 1; }
  after=$(cpu_ticks "$k")
  python3 -c "print(f'{($after - $before) / $ticks:.3f}')" >"$work/$name.cpu"
}

# 1 and 2. The same total rate over 1, 2, 4 replayers, in the order 1 2 4 4 2 1 (rounds=2) so
# that a drift of the machine's load weighs on every k alike; each k's figures are the mean
# over its runs.
echo "the same step (${rate}/s Poisson, 1 s warmup + ${seconds} s) over k replayers:"
order=()
for ((round = 0; round < rounds; round++)); do
  if ((round % 2 == 0)); then order+=(1 2 4); else order+=(4 2 1); fi
done
n=0
for k in "${order[@]}"; do
  n=$((n + 1))
  step "k$k.$n" "$k" "$rate" "$seconds"
  j="$work/k$k.$n.json"
  cpu=$(cat "$work/k$k.$n.cpu")
  per_req=$(python3 -c "print(f'{$cpu / ($rate * ($seconds + 1)) * 1e6:.2f}')")
  echo "  k=$k: achieved $(field "$j" achieved_qps)/s, p50 $(latency "$j" p50_ms) ms, p99 $(latency "$j" p99_ms) ms, max $(latency "$j" max_ms) ms; skew p99 $(field "$j" send_skew_p99_us) us; valid $(field "$j" client_valid); cpu ${cpu}s = ${per_req} us/request"
done
# mean K FIELD: FIELD (p50_ms, p99_ms, max_ms or cpu) of k = K, averaged over its runs; the
# latencies over its client-valid runs only (a step whose client was invalid is not judged,
# here as in the worker); nan when there is none.
mean() {
  python3 - "$work" "$1" "$2" <<'EOF2'
import glob, json, sys
work, k, what = sys.argv[1:]
if what == "cpu":
    values = [float(open(f).read()) for f in glob.glob(f"{work}/k{k}.*.cpu")]
else:
    runs = [json.load(open(f)) for f in glob.glob(f"{work}/k{k}.*.json")]
    values = [r["latency"].get(what, 0) for r in runs if r.get("client_valid")]
print(f"{sum(values) / len(values):.4f}" if values else "float('nan')")
EOF2
}
delta() {
  python3 -c "a=$(mean 1 "$2"); b=$(mean "$1" "$2"); print(f'{(b - a) / a * 100:+.1f}' if a > 0 and b == b else 'nan')"
}
for k in 1 2 4; do
  echo "  mean of k=$k: p50 $(mean "$k" p50_ms) ms, p99 $(mean "$k" p99_ms) ms, max $(mean "$k" max_ms) ms, cpu $(mean "$k" cpu) s"
done
for k in 2 4; do
  echo "  k=$k vs k=1: p50 $(delta "$k" p50_ms)%, p99 $(delta "$k" p99_ms)%, max $(delta "$k" max_ms)%"
done
p99_delta=$(delta 4 p99_ms)
cpu_ratio=$(python3 -c "a=$(mean 1 cpu); b=$(mean 4 cpu); print(f'{b / a:.2f}' if a > 0 else 'nan')")
echo "cpu per request, 4 replayers / 1: $cpu_ratio"

# 3. The highest total rate 4 replayers hold: merged skew p99 <= 1 ms, >= 99% achieved.
# holds RATE: two tries, so one stall of a shared machine does not end the search.
holds() {
  try_rate "$1" a || try_rate "$1" b
}
try_rate() {
  local r=$1
  step "rate$r$2" 4 "$r" 3 || return 1
  python3 - "$work/rate$r$2.json" "$r" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); rate = float(sys.argv[2])
ok = (r.get("send_skew_p99_us", 0) <= 1000 and r.get("achieved_qps", 0) >= 0.99 * rate
      and int(r.get("dropped", 0)) == 0 and int(r.get("never_dispatched", 0)) == 0
      and int(r.get("errors", 0)) == 0)
print(f"  rate {rate:>9.0f}/s: achieved {r.get('achieved_qps', 0):>9.0f}/s  skew p99 "
      f"{r.get('send_skew_p99_us', 0):>8.1f} us  p99 {r['latency'].get('p99_ms', 0):7.3f} ms  "
      f"-> {'holds' if ok else 'fails'}", flush=True)
sys.exit(0 if ok else 1)
EOF
}
echo "searching the highest total rate 4 replayers hold with skew p99 <= 1 ms:"
best=0
low=0
high=0
r=$((rate * 2))
while [ "$r" -le 320000 ]; do
  if holds "$r"; then best=$r; low=$r; r=$((r * 2)); else high=$r; break; fi
done
if [ "$high" -gt 0 ] && [ "$low" -gt 0 ]; then
  for _ in 1 2; do
    mid=$(((low + high) / 2))
    if holds "$mid"; then best=$mid; low=$mid; else high=$mid; fi
  done
fi
echo "highest total rate held by 4 replayers: $best/s"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "scale_replayers=1,2,4 merged_p99_delta_pct=$p99_delta cpu_per_req_ratio_k4=$cpu_ratio max_total_rate=$best"
