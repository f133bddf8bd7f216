# Shared by deploy/local/{test,demo} and tests/bench/run: build, throwaway Postgres, process
# management. Source it; it defines functions only.

VANGUARD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
VANGUARD_PIDS=()

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# vanguard_build BUILD_DIR BUILD_TYPE [targets...]
vanguard_build() {
  local dir=$1 type=$2
  shift 2
  local jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  if [ ! -f "$dir/build.ninja" ] || ! grep -q "CMAKE_BUILD_TYPE:STRING=$type" "$dir/CMakeCache.txt" 2>/dev/null; then
    cmake -S "$VANGUARD_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" >/dev/null
  fi
  ninja -C "$dir" -j "$jobs" "$@"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# pg_start: initdb + start a throwaway server on a free loopback port. Sets PG_DIR, PG_PORT
# and PG_CONNINFO (maintenance database "postgres", superuser "postgres", trust auth).
pg_start() {
  [ -x "$PG_BIN/initdb" ] || { log "no PostgreSQL server binaries under $PG_BIN"; return 1; }
  PG_DIR=$(mktemp -d /tmp/vanguard-pg.XXXXXX)
  PG_PORT=$(free_port)
  local as=()
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$PG_DIR"
    as=(runuser -u postgres --)
  fi
  "${as[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync >"$PG_DIR/initdb.log" 2>&1 ||
    { cat "$PG_DIR/initdb.log" >&2; return 1; }
  "${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 -o \
    "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
    start >/dev/null || { cat "$PG_DIR/server.log" >&2; return 1; }
  PG_CONNINFO="host=127.0.0.1 port=$PG_PORT user=postgres dbname=postgres"
  log "postgres up on 127.0.0.1:$PG_PORT ($PG_DIR)"
}

pg_stop() {
  [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ] || return 0
  local as=()
  [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=""
}

# start_server NAME LOGFILE CMD... : runs CMD with --port_file, waits for the port, and sets
# REPLY to the bound port. The process is remembered and stopped by stop_all.
start_server() {
  local name=$1 logfile=$2
  shift 2
  local pf
  pf=$(mktemp -u /tmp/vanguard-port.XXXXXX)
  "$@" --port_file="$pf" >"$logfile" 2>&1 &
  local pid=$!
  VANGUARD_PIDS+=("$pid")
  local i
  for i in $(seq 1 300); do
    if [ -s "$pf" ]; then
      REPLY=$(tr -d '\n' <"$pf")
      rm -f "$pf"
      log "$name listening on 127.0.0.1:$REPLY (pid $pid, log $logfile)"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$name exited before listening; last lines of $logfile:"
      tail -n 20 "$logfile" >&2
      return 1
    fi
    sleep 0.1
  done
  log "$name did not start within 30 s"
  return 1
}

start_bg() {
  local logfile=$1
  shift
  "$@" >"$logfile" 2>&1 &
  VANGUARD_PIDS+=("$!")
  REPLY=$!
}

# start_stack BIN WORK [PREFIX...]: what the benchmarks run against, as deploy/local/demo
# starts it: Postgres, an orchestrator with auth (a bootstrap admin creates a worker and a
# submitter token), a replayer (run under PREFIX, e.g. nice -n -5) and a worker, logs in
# WORK. Exports VANGUARD_ORCHESTRATOR and VANGUARD_TOKEN (the submitter's). stop_all stops it.
start_stack() {
  local bin=$1 work=$2 admin_token worker_token
  shift 2
  pg_start
  admin_token=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
  start_server orchestrator "$work/orchestrator.log" env VANGUARD_BOOTSTRAP_ADMIN_TOKEN="$admin_token" \
    "$bin/vanguard-orchestrator" --listen=127.0.0.1:0 --database_url="$PG_CONNINFO"
  export VANGUARD_ORCHESTRATOR=127.0.0.1:$REPLY
  worker_token=$(VANGUARD_TOKEN=$admin_token "$bin/vanguard" tokens create --name=bench-worker --role=worker)
  VANGUARD_TOKEN=$(VANGUARD_TOKEN=$admin_token "$bin/vanguard" tokens create --name=bench-submitter --role=submitter)
  export VANGUARD_TOKEN
  start_server replayer "$work/replayer.log" "$@" "$bin/vanguard-replayer" serve --listen=127.0.0.1:0
  start_bg "$work/worker.log" env VANGUARD_TOKEN="$worker_token" "$bin/vanguard-worker" \
    --orchestrator="$VANGUARD_ORCHESTRATOR" --replayer="127.0.0.1:$REPLY" --worker_id=bench-worker
}

stop_all() {
  local pid
  for pid in "${VANGUARD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${VANGUARD_PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  VANGUARD_PIDS=()
  pg_stop
}
