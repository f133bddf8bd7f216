#!/usr/bin/env bash
# The README's path against model servers on Node's and Python's own HTTP stacks, truth measured
#
# What a new user does with a server nobody here wrote: start the stack as deploy/local/demo
# does, `vanguard models register --p99_ms=L` (no --warmup), `vanguard submit
# --strategy=adaptive --min_qps=5 --max_qps=2000 --wait` (the default horizon, 5 minutes). The
# servers (tests/bench/foreign/) share nothing with the project's simulator: Node's llhttp with
# its 5 s keep-alive timeout, event-loop stalls and a cold start that ends at once; Python's
# http.server answering HTTP/1.0 (a connection per request).
#
# The truth is measured apart from the search: for each model, a fresh server per reading,
# `vanguard-replayer run --schedule=poisson` for FOREIGN_TRUTH_S seconds (default 300) after
# its cold start at 0.9, 1.0 and 1.1 times the estimate, the share of requests over the limit
# at each (1 - goodput with --slo_latency=L), and the rate where that share crosses 1% (log-log
# between the two readings that bracket it; from the nearest two when none does, marked
# "extrapolated"). It comes from the same replayer (not independent of the client), one
# horizon per rate (its own noise: several percent on a flat tail).
#
# The submission names no schedule, as a user's would: since the thirty-fifth session that
# means Poisson arrivals, the same as the truth readings (before, it meant constant arrivals,
# and the node model read 262.2 req/s where Poisson arrivals put it near 250).
#
#   tests/bench/run foreign                       # both models, about 1.5 hours on 2 cores
#   FOREIGN_MODELS=python tests/bench/run foreign # one of: node, python
#   FOREIGN_SUBMIT_ARGS=--sustain_horizon=20s FOREIGN_TRUTH_S=20 ...  # a quick smoke run
#
# Needs `node` (Debian's nodejs) for the node model; skipped with a message when missing.
# Final line: foreign_models=N foreign_mae_pct=... foreign_max_abs_err_pct=...
#   foreign_<model>_estimate=... foreign_<model>_truth=... foreign_<model>_err_pct=...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../../deploy/local/lib.sh
source "$root/deploy/local/lib.sh"
build=${VANGUARD_BENCH_BUILD_DIR:-$root/build-bench}
truth_s=${FOREIGN_TRUTH_S:-300}
models=${FOREIGN_MODELS:-node,python}

# model name -> "p99 limit ms|cold start s (the truth waits it out)|server command" (PORT is not passed:
# the server picks one and prints it)
declare -A spec=(
  [node]="150|90|node $here/foreign/model.js --slots=8 --service_ms=30 --sigma=0.5 --warmup_s=90 --slowdown=3 --stall_ms=40 --stall_rate=0.1"
  [python]="120|0|python3 $here/foreign/model.py 4 20"
)

if [ "${FOREIGN_BUILD:-1}" = 1 ]; then
  log "building into $build"
  vanguard_build "$build" Release vanguard vanguard-orchestrator vanguard-worker \
    vanguard-replayer >/dev/null
fi
bin=$build/bin
work=$(mktemp -d /tmp/vanguard-bench-foreign.XXXXXX)
log "logs in $work"
trap stop_all EXIT

# start_model NAME LOG: starts the model's server in the background; REPLY: its port.
start_model() {
  local cmd
  cmd=$(cut -d'|' -f3- <<<"${spec[$1]}")
  # shellcheck disable=SC2086
  start_bg "$2" $cmd
  for _ in $(seq 1 100); do
    REPLY=$(awk '/^listening/ {print $2}' "$2" 2>/dev/null)
    [ -n "$REPLY" ] && return 0
    sleep 0.1
  done
  log "the $1 server did not start: $(cat "$2")"
  return 1
}

# share_over NAME RATE LIMIT_MS COLD_S: the share of requests over the limit at RATE.
share_over() {
  local name=$1 rate=$2 limit=$3 cold=$4 port pid
  start_model "$name" "$work/$name.truth-$rate.log"
  port=$REPLY
  pid=${VANGUARD_PIDS[-1]}
  sleep "$cold"
  "$bin/vanguard-replayer" run --target="http://127.0.0.1:$port" --model="$name" --rate="$rate" \
    --schedule=poisson --seed=7 --duration="${truth_s}s" --warmup=10s --slo_latency="${limit}ms" \
    --output=json 2>>"$work/truth.log" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.6f" % (1 - float(r.get("goodput", 0))))'
  kill "$pid" 2>/dev/null || true
}

start_stack "$bin" "$work"

line=""
errors=()
IFS=, read -r -a chosen <<<"$models"
for name in "${chosen[@]}"; do
  [ -n "${spec[$name]:-}" ] || { log "no model named '$name' (node, python)"; exit 2; }
  if [ "$name" = node ] && ! command -v node >/dev/null; then
    echo "skipped node: no node binary (apt-get install nodejs)"
    continue
  fi
  IFS='|' read -r limit cold _ <<<"${spec[$name]}"
  start_model "$name" "$work/$name.log"
  "$bin/vanguard" models register --name="$name" --version=v1 \
    --endpoint="http://127.0.0.1:$REPLY" --p99_ms="$limit" >/dev/null
  started=$(date +%s)
  "$bin/vanguard" submit --model="$name" --version=v1 --strategy=adaptive --min_qps=5 \
    --max_qps=2000 ${FOREIGN_SUBMIT_ARGS:-} --wait --output=json >"$work/$name.test.json" 2>"$work/$name.submit.log" || true
  kill "${VANGUARD_PIDS[-1]}" 2>/dev/null || true
  read -r estimate converged warmup < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1])).get("result", {})
print("%.3f %s %s" % (r.get("max_sustainable_qps", 0), r.get("converged", False),
                      r.get("model_warmup", "0s")))' "$work/$name.test.json")
  echo "$name: estimate $estimate req/s (converged $converged, model warmup $warmup), $(( $(date +%s) - started )) s"
  readings=()
  for f in 0.9 1.0 1.1; do
    rate=$(awk -v e="$estimate" -v f="$f" 'BEGIN{printf "%.3f", e * f}')
    share=$(share_over "$name" "$rate" "$limit" "$cold")
    echo "  truth reading: $rate req/s over ${truth_s} s: $(awk -v s="$share" 'BEGIN{printf "%.3f%%", 100 * s}') over the limit"
    readings+=("$rate $share")
  done
  read -r truth how < <(printf '%s\n' "${readings[@]}" | python3 -c '
import math, sys
pts = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
target = 0.01
def cross(a, b):
    (r1, s1), (r2, s2) = a, b
    s1, s2 = max(s1, 1e-5), max(s2, 1e-5)
    if s1 == s2: return None
    t = (math.log(target) - math.log(s1)) / (math.log(s2) - math.log(s1))
    return math.exp(math.log(r1) + t * (math.log(r2) - math.log(r1)))
for a, b in zip(pts, pts[1:]):
    if (a[1] - target) * (b[1] - target) <= 0:
        print("%.3f bracketed" % cross(a, b)); break
else:
    pair = pts[:2] if pts[0][1] > target else pts[1:]
    c = cross(*pair)
    print("%.3f extrapolated" % (c if c else float("nan")))')
  err=$(awk -v e="$estimate" -v t="$truth" 'BEGIN{printf "%.2f", 100 * (e / t - 1)}')
  echo "  truth $truth req/s ($how): error ${err}%"
  errors+=("$err")
  line+="foreign_${name}_estimate=$estimate foreign_${name}_truth=$truth foreign_${name}_err_pct=$err "
done
summary=$(printf '%s\n' "${errors[@]}" | awk '{a = $1 < 0 ? -$1 : $1; s += a; if (a > m) m = a; n++}
  END {if (n) printf "foreign_models=%d foreign_mae_pct=%.2f foreign_max_abs_err_pct=%.2f", n, s / n, m;
       else printf "foreign_models=0"}')
echo "$summary $line"
