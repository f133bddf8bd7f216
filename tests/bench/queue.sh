#!/usr/bin/env bash
# Queue throughput: leases/heartbeats/step reports per second through gRPC vs raw SQL (pgbench).
#
# Starts its own PostgreSQL and one vanguard-orchestrator (auth on, worker token), seeds the
# queue (plus finished tests, so finished work is in the table as in production), then:
#   1. queue_bench with 1, 4 and 16 concurrent workers through the real gRPC path;
#   2. pgbench (16 clients) running the orchestrator's own lease statement on the same
#      database (the statement is read from the orchestrator's SQL, not retyped here);
#   3. counts double leases from the database (a test leased more than once has attempt > 1:
#      leases last 1 h, so nothing was reaped and re-leased).
# Final line: leases_per_s=… heartbeats_per_s=… reports_per_s=… pgbench_lease_tps=… ratio=…
# double_leases=… (the gRPC figures are those at the highest worker count).
#
# Env: QUEUE_BENCH_SECONDS (per phase, default 4), QUEUE_BENCH_WORKERS (default 1,4,16),
#      QUEUE_BENCH_TESTS (queued tests seeded, default 120000),
#      QUEUE_BENCH_ORCH_FLAGS (extra vanguard-orchestrator flags, e.g. --db_pool_size=16).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
seconds=${QUEUE_BENCH_SECONDS:-4}
workers=${QUEUE_BENCH_WORKERS:-1,4,16}
seed_tests=${QUEUE_BENCH_TESTS:-120000}

vanguard_build "$build" Release vanguard-orchestrator vanguard queue_bench >/dev/null
trap stop_all EXIT
pg_start
logs=$(mktemp -d /tmp/vanguard-queue-bench.XXXXXX)
psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql "$PG_CONNINFO" -c "CREATE DATABASE vanguard"
db="host=127.0.0.1 port=$PG_PORT user=postgres dbname=vanguard"

admin_token=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
start_server orchestrator "$logs/orchestrator.log" env VANGUARD_BOOTSTRAP_ADMIN_TOKEN="$admin_token" \
  "$build/bin/vanguard-orchestrator" --database_url="$db" --listen=127.0.0.1:0 \
  ${QUEUE_BENCH_ORCH_FLAGS:-}
orch=127.0.0.1:$REPLY
export VANGUARD_ORCHESTRATOR=$orch

# A worker token through the CLI, as an operator would create one.
worker_token=$(VANGUARD_TOKEN=$admin_token "$build/bin/vanguard" tokens create --role=worker \
  --name=queue-bench 2>"$logs/tokens.err") || {
  log "token creation failed (auth not available?): $(cat "$logs/tokens.err")"
  worker_token=""
}

# Seed: one model, $seed_tests queued tests over three priorities, 50,000 finished ones.
psql "$db" <<SQL
INSERT INTO models (name, version, protocol, spec) VALUES ('bench', 'v1', 'kserve_v2_rest',
  '{"name":"bench","version":"v1","protocol":"PROTOCOL_KSERVE_V2_REST","endpoints":["http://127.0.0.1:1"],"served_name":"bench","slo":{"p99_latency":"0.050s"}}');
INSERT INTO tests (model_id, spec, priority, max_attempts, state, finished_at)
  SELECT m.id, '{"model":"bench","model_version":"v1","sweep":{"rates_qps":[10,20]},"step_duration":"5s","max_attempts":3}',
         g % 3, 3, 'succeeded', now()
  FROM models m, generate_series(1, 50000) g;
INSERT INTO tests (model_id, spec, priority, max_attempts)
  SELECT m.id, '{"model":"bench","model_version":"v1","sweep":{"rates_qps":[10,20]},"step_duration":"5s","max_attempts":3}',
         g % 3, 3
  FROM models m, generate_series(1, $seed_tests) g;
VACUUM ANALYZE tests;
SQL
log "seeded $seed_tests queued and 50000 finished tests"

echo "== gRPC path (queue_bench, ${seconds}s per phase) =="
VANGUARD_TOKEN=$worker_token "$build/bin/queue_bench" --orchestrator="$orch" --workers="$workers" \
  --phase_seconds="$seconds" | tee "$logs/bench.out"
final=$(grep '^final ' "$logs/bench.out")
value() { sed -n "s/.*[ ]$1=\([0-9.]*\).*/\1/p" <<<"$final"; }
leases=$(value leases_per_s)
heartbeats=$(value heartbeats_per_s)
reports=$(value reports_per_s)
client_dups=$(sed -n 's/.*duplicate_leases=\([0-9]*\).*/\1/p' "$logs/bench.out")

# pgbench: the same lease statement the orchestrator runs (dumped by the binary itself).
"$build/bin/vanguard-orchestrator" --print_lease_sql >"$logs/lease.sql"
sed -i 's/\$1/:worker/; s/\$2::float8/3600::float8/' "$logs/lease.sql"
{ echo '\set worker random(1, 1000000)'; tr '\n' ' ' <"$logs/lease.sql"; echo ';'; } >"$logs/pgbench.sql"
echo "== pgbench (16 clients, ${seconds}s, lease statement) =="
"$PG_BIN/pgbench" -n -M prepared -c 16 -j 2 -T "$seconds" -f "$logs/pgbench.sql" "$db" \
  >"$logs/pgbench.out" 2>&1 || { cat "$logs/pgbench.out" >&2; exit 1; }
grep -E 'number of transactions actually processed|tps' "$logs/pgbench.out"
pgbench_tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$logs/pgbench.out" | head -n 1)

double=$("$PG_BIN/psql" -X -At "$db" -c "SELECT count(*) FROM tests WHERE attempt > 1")
remaining=$("$PG_BIN/psql" -X -At "$db" -c "SELECT count(*) FROM tests WHERE state = 'queued'")
echo "queued tests left: $remaining; leased more than once (db): $double; seen twice by clients: $client_dups"
double=$((double + client_dups))
ratio=$(python3 -c "print(f'{$leases / $pgbench_tps:.2f}' if $pgbench_tps > 0 else '0')")
printf 'leases_per_s=%.0f heartbeats_per_s=%.0f reports_per_s=%.0f pgbench_lease_tps=%.0f ratio=%s double_leases=%d\n' \
  "$leases" "$heartbeats" "$reports" "$pgbench_tps" "$ratio" "$double"
