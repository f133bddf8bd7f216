#!/usr/bin/env bash
# replayer send skew at low rates, quiet and under CPU contention from other processes, two
# replayer binaries (or two flag sets) side by side in one run, with what the scheduler saw.
#
# Against tests/bench/replayer_fast_server (not pinned: on a small box the model server, the
# worker and Postgres share the CPUs with the replayer), for ROUNDS rounds, each condition
# (quiet; contended = HOGS busy-looping processes at normal priority, default nproc + 1), each
# rate of RATES and each variant (A, then B) in turn:
#   vanguard-replayer run --protocol=http --rate=R --warmup=1s --duration=${DURATION_S}s
# and prints one line per run: send skew p50/p99/max, the validity verdict and its cause (if
# the binary reports one), and — read from outside, so it works for any binary — the
# replayer's threads' run-queue wait (/proc/PID/task/*/schedstat field 2) and involuntary
# context switches over the measured part.
#
#   REPLAYER_A=/path/old-vanguard-replayer tests/bench/replayer_contention.sh
#   ARGS_A="--timer_slack_ns=1000" ARGS_B="" tests/bench/replayer_contention.sh
#   PREFIX_B="chrt -f 10" CONDITIONS=contended tests/bench/replayer_contention.sh
#
# Variables: REPLAYER_A, REPLAYER_B (default: both the build's binary), ARGS_A, ARGS_B
# (extra flags), PREFIX_A, PREFIX_B (a command to run the replayer under, e.g. "chrt -f 10"
# to take it out of the CPU contention: the control that shows whose the skew is), RATES (default "49 77 488"), DURATION_S (10), ROUNDS (2), HOGS, CONDITIONS
# ("quiet contended"). Ends with one summary line per condition and variant:
#   summary condition=… variant=… runs=… skew_p99_us_median=… skew_max_us_median=… invalid=…
# The machine may be shared with other work: the figures are ratios within one run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../deploy/local/lib.sh"
trap stop_all EXIT

build=${VANGUARD_BENCH_BUILD_DIR:-$VANGUARD_ROOT/build-bench}
log "building into $build"
vanguard_build "$build" Release vanguard-replayer replayer_fast_server >/dev/null
replayer_b=${REPLAYER_B:-$build/bin/vanguard-replayer}
replayer_a=${REPLAYER_A:-$replayer_b}
work=$(mktemp -d /tmp/vanguard-bench-contention.XXXXXX)
start_server fast_server "$work/server.log" "$build/bin/replayer_fast_server" --listen=127.0.0.1:0
url="http://127.0.0.1:$REPLY"
echo "machine: $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A: ${PREFIX_A:-} $replayer_a ${ARGS_A:-}"
echo "B: ${PREFIX_B:-} $replayer_b ${ARGS_B:-}"

python3 - "$url" "$replayer_a" "$replayer_b" "${ARGS_A:-}" "${ARGS_B:-}" \
  "${PREFIX_A:-}" "${PREFIX_B:-}" \
  "${RATES:-49 77 488}" "${DURATION_S:-10}" "${ROUNDS:-2}" "${HOGS:-$(($(nproc) + 1))}" \
  "${CONDITIONS:-quiet contended}" "$work" <<'EOF'
import glob, json, os, shlex, statistics, subprocess, sys, time

(url, bin_a, bin_b, args_a, args_b, prefix_a, prefix_b, rates, seconds, rounds, hogs,
 conditions, work) = sys.argv[1:]
rates = [float(r) for r in rates.split()]
seconds, rounds, hogs = int(seconds), int(rounds), int(hogs)
variants = [("A", shlex.split(prefix_a) + [bin_a], shlex.split(args_a)),
            ("B", shlex.split(prefix_b) + [bin_b], shlex.split(args_b))]
warmup = 1.0

def threads_of(pid):
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(task + "/schedstat") as f:
                cpu, wait, slices = (int(x) for x in f.read().split())
            with open(task + "/status") as f:
                nv = next(int(l.split()[1]) for l in f if l.startswith("nonvoluntary_ctxt"))
            out[task] = (cpu, wait, slices, nv)
        except (OSError, ValueError, StopIteration):
            pass
    return out

def run(command, extra, rate, name):
    cmd = command + ["run", f"--target={url}", "--protocol=http", f"--rate={rate:g}",
           f"--duration={seconds}s", f"--warmup={warmup:g}s", "--timeout=2s",
           "--output=json"] + extra
    with open(f"{work}/{name}.json", "w") as out, open(f"{work}/{name}.err", "w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        start = time.monotonic()
        first = last = None
        while p.poll() is None:
            snap = threads_of(p.pid)
            if snap:
                if first is None and time.monotonic() - start >= warmup:
                    first = snap
                if first is not None and time.monotonic() - start <= warmup + seconds:
                    last = snap
            time.sleep(0.05)
    if p.returncode != 0:
        print(open(f"{work}/{name}.err").read(), file=sys.stderr)
        return None
    r = json.load(open(f"{work}/{name}.json"))
    wait = nv = slices = 0
    for task, end in (last or {}).items():
        if first and task in first:
            wait += end[1] - first[task][1]
            slices += end[2] - first[task][2]
            nv += end[3] - first[task][3]
    r["_outside"] = (wait / 1e6, slices, nv)
    return r

def start_hogs(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]

results = {}
for rnd in range(rounds):
    for condition in conditions.split():
        procs = start_hogs(hogs) if condition == "contended" else []
        try:
            time.sleep(0.5 if procs else 0)
            for rate in rates:
                for tag, command, extra in variants:
                    name = f"r{rnd}-{condition}-{rate:g}-{tag}"
                    r = run(command, extra, rate, name)
                    if r is None:
                        print(f"{name}: failed"); continue
                    wait_ms, slices, nv = r["_outside"]
                    cc = r.get("client_conditions", {})
                    cause = "" if r.get("client_valid") else r.get("client_invalid_cause", "")
                    print(f"{condition:9s} rate {rate:5g} {tag}: skew p50 {r.get('send_skew_p50_us', 0):7.0f} "
                          f"p99 {r.get('send_skew_p99_us', 0):7.0f} max {r.get('send_skew_max_us', 0):7.0f} us  "
                          f"threads' run-queue wait {wait_ms:7.1f} ms over {slices} slices, "
                          f"{nv} involuntary  valid={r.get('client_valid', False)}"
                          + (f"  wake-late p99 {cc.get('wakeup_late_p99_us', 0):.0f} us" if cc else "")
                          + (f"  cause={cause}" if cause else ""), flush=True)
                    if r.get("client_invalid_reason"):
                        print(f"          reason: {r['client_invalid_reason']}", flush=True)
                    results.setdefault((condition, tag), []).append(r)
        finally:
            for p in procs:
                p.kill()
                p.wait()

for (condition, tag), rs in sorted(results.items()):
    p99 = statistics.median(r.get("send_skew_p99_us", 0) for r in rs)
    mx = statistics.median(r.get("send_skew_max_us", 0) for r in rs)
    invalid = sum(1 for r in rs if not r.get("client_valid", False))
    print(f"summary condition={condition} variant={tag} runs={len(rs)} "
          f"skew_p99_us_median={p99:.0f} skew_max_us_median={mx:.0f} invalid={invalid}")
EOF
