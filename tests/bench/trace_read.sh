#!/usr/bin/env bash
# trace reading: CPU per request of a trace replay's shard, streaming vs through the index
#
# Builds trace_read_bench and runs it: on a generated trace with make_trace.py's size mix
# (written with its index), shard 0 of S for each S in TRACE_READ_SHARDS (default 1,2,8,32)
# calls TraceRequestSource::Next TRACE_READ_REQUESTS times (default 20000) per way of
# reading, in TRACE_READ_ROUNDS interleaved rounds (default 5; the median is printed). Ratios
# are within one run; absolute times depend on the machine and its load.
# Final line: ns_<way>_S<S>=… per way and S, ratio_<way>_S<S>=… against streaming.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
log "building into $build"
vanguard_build "$build" Release trace_read_bench >/dev/null
log "load on $(nproc) CPUs: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"
exec "$build/bin/trace_read_bench" --shards="${TRACE_READ_SHARDS:-1,2,8,32}" \
  --requests="${TRACE_READ_REQUESTS:-20000}" --rounds="${TRACE_READ_ROUNDS:-5}" "$@"
