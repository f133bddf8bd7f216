# deploy/local/demo --fleet: fleet tests against three simulator replicas. Sourced by the
# demo once its stack runs; uses BIN, LOGS, FLEET_PORTS (the replicas' ports) and the
# demo's VANGUARD_ORCHESTRATOR / VANGUARD_TOKEN. Defines functions only.

# Submits a fleet test (name $1, then `vanguard submit` flags), waits, prints its steps and
# its result's trials. Exits when the test did not succeed or no trial held (set -e
# semantics kept).
fleet_test() {
  local name=$1 rc
  shift
  log "submitting the $name test"
  set +e
  "$BIN/vanguard" submit --model=fleet --version=v1 --step_duration=2s --step_warmup=1s \
    --endpoint_policy=round_robin "$@" --wait --output=json >"$LOGS/test-$name.json"
  rc=$?
  set -e
  local id
  id=$(python3 -c "import json; print(json.load(open('$LOGS/test-$name.json'))['id'])")
  "$BIN/vanguard" get "$id" --output=table
  if [ $rc -ne 0 ]; then
    log "the $name test did not succeed (exit $rc); logs in $LOGS"
    exit 1
  fi
  python3 - "$LOGS/test-$name.json" <<'PY'
import json, sys
test = json.load(open(sys.argv[1]))
result = test.get("result", {})
print()
print(result.get("summary", ""))
if "replica_loss" in result:
    r = result["replica_loss"]
    print(f"survivor capacity {r.get('survivor_capacity_qps', 0):g} req/s of a fleet that held "
          f"{r.get('full_fleet_held_qps', 0):g} warm ({r['endpoints']} replicas, "
          f"{r['removed_endpoint']} lost)")
    for t in r.get("trials", []):
        after = (f"after loss: p99 {t.get('after_p99_ms', 0):.0f} ms (peak "
                 f"{t.get('after_peak_p99_ms', 0):.0f}), recovered "
                 f"{'in %.1f s' % t.get('recovery_seconds', 0) if t.get('recovered') else 'never'}"
                 if t.get("lost") else "no loss run (the whole fleet failed)")
        print(f"  {t['rate_qps']:6.1f} req/s  before: p99 {t.get('before_p99_ms', 0):.0f} ms  "
              f"{after}  -> {'held' if t.get('held') else 'failed'}")
if "version_transition" in result:
    v = result["version_transition"]
    print(f"rolling update safe up to {v.get('safe_rate_qps', 0):g} req/s; the warm fleet held "
          f"{v.get('full_fleet_held_qps', 0):g} ({v['endpoints']} replicas)")
    for t in v.get("trials", []):
        print(f"  {t['rate_qps']:6.1f} req/s  warm: p99 {t.get('before_p99_ms', 0):.0f} ms  "
              f"transition: worst window p99 {t.get('worst_window_p99_ms', 0):.0f} ms, errors "
              f"{100 * t.get('error_rate', 0):.2f}%, slowest recovery "
              f"{t.get('max_recovery_seconds', 0):.1f} s  -> "
              f"{'held' if t.get('held') else 'failed'}")
        for r in t.get("restarts", []):
            rec = f"in {r.get('recovery_seconds', 0):.1f} s" if r.get("recovered") else "never"
            print(f"      restart {r['endpoint']}: worst p99 {r.get('worst_p99_ms', 0):.0f} ms, "
                  f"errors {100 * r.get('error_rate', 0):.2f}%, recovered {rec}  -> "
                  f"{'held' if r.get('held') else 'failed'}")
print()
# A fleet that held nothing means the demo itself is broken (a replica not serving the
# model, a hook refused): fail rather than print zeros.
held = (result.get("replica_loss", {}).get("survivor_capacity_qps", 0) or
        result.get("version_transition", {}).get("safe_rate_qps", 0))
if not held:
    sys.exit("demo: no trial held; see the steps above and the logs")
PY
}

run_fleet_demo() {
  local endpoints="" restarts="" port
  for port in "${FLEET_PORTS[@]}"; do
    endpoints+="${endpoints:+,}http://127.0.0.1:$port"
    restarts+="${restarts:+,}http://127.0.0.1:$port/admin/restart?down_s=0.3&warmup_s=2&factor=4"
  done
  local lost=http://127.0.0.1:${FLEET_PORTS[2]}
  "$BIN/vanguard" models register --name=fleet --version=v1 --endpoint="$endpoints" \
    --protocol=kserve_v2_rest --p99_ms=200 --max_error_rate=0.01 --warmup=1s \
    --accelerator=cpu --output=table
  log "fleet: 3 replicas of 50 req/s (1 slot x 20 ms), SLO p99 <= 200 ms, errors <= 1%"

  # The search tolerances have no submit flag: a spec file sets them, the flags the rest.
  echo '{"replica_loss": {"tolerance_qps": 30}}' >"$LOGS/replica_loss_spec.json"
  fleet_test replica_loss --spec_file="$LOGS/replica_loss_spec.json" \
    --strategy=replica_loss --min_qps=60 --max_qps=150 \
    --remove_url="$lost/admin/down?seconds=60" --restore_url="$lost/admin/up" \
    --after_loss=4s --max_recovery=1s

  # Each replica restarts on a new version: down 0.3 s, then 4x slower, warm after 2 s.
  echo '{"version_transition": {"tolerance_qps": 30}}' >"$LOGS/version_transition_spec.json"
  fleet_test version_transition --spec_file="$LOGS/version_transition_spec.json" \
    --strategy=version_transition --min_qps=30 --max_qps=120 --restart_url="$restarts" \
    --per_replica=4s --max_recovery=1.5s
}
