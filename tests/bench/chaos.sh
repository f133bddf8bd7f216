#!/usr/bin/env bash
# N random kills of workers and orchestrators and Postgres restarts during a stream of tests: lost, duplicated, stuck
#
# usage: tests/bench/run chaos [--kills=N] [--seed=S] [driver options...]
# Builds the release binaries (in $VANGUARD_BENCH_BUILD_DIR), starts a throwaway Postgres and
# runs tests/bench/chaos_driver.py: a simulated predictor, 2 orchestrators, 3 workers (a
# replayer each), short sweeps submitted through the `vanguard` CLI, and --kills faults at
# random times from --seed (printed): SIGKILL of a worker or an orchestrator, restarted after
# a short delay, or a Postgres crash and restart. At the end it checks in Postgres that every
# submitted test finished, no step was recorded twice and none lost. Ends with:
#   chaos_tests=… kills=… lost=0 duplicated_steps=0 stuck=0 max_recovery_s=…
# (recovery: from a fault to the next progress of a test it hit). Exit 1 unless lost,
# duplicated_steps and stuck are 0; the processes' logs are kept then (or with CHAOS_KEEP_LOGS=1).
# --help lists the driver's options.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for arg in "$@"; do
  case "$arg" in
    -h | --help)
      sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'
      echo
      python3 "$here/chaos_driver.py" --help | sed -n '/^options:/,$p;/^optional arguments:/,$p'
      exit 0
      ;;
  esac
done
source "$here/../../deploy/local/lib.sh"
trap stop_all EXIT

build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
log "building into $build"
vanguard_build "$build" Release vanguard vanguard-orchestrator vanguard-worker vanguard-replayer \
  vanguard-sim-predictor >/dev/null
pg_start
work=$(mktemp -d /tmp/vanguard-bench-chaos.XXXXXX)
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"
status=0
python3 "$here/chaos_driver.py" --bin="$build/bin" --pg_bin="$PG_BIN" --pg_dir="$PG_DIR" \
  --pg_port="$PG_PORT" --work="$work" "$@" || status=$?
if [ "$status" -eq 0 ] && [ -z "${CHAOS_KEEP_LOGS:-}" ]; then rm -rf "$work"; else log "processes' logs kept in $work"; fi
exit "$status"
