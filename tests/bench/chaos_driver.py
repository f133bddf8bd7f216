#!/usr/bin/env python3
"""The chaos bench's driver (tests/bench/chaos.sh starts Postgres and runs this).

Starts a simulated predictor, two orchestrators on one database, WORKERS workers (each beside
a replayer of its own; each knows both orchestrators through one gRPC target listing the two
addresses, as a Service in front of the replicas would), then submits a stream of short
sweeps through the `vanguard` CLI (each with a request id, so a submit retried after an
error cannot queue a test twice) while it performs KILLS faults, one at a time, at random
times drawn from SEED:
  - worker:       SIGKILL of one worker, restarted after a short delay;
  - orchestrator: SIGKILL of one orchestrator, restarted on its port after a short delay;
  - postgres:     an immediate shutdown of the server (a crash: connections cut, recovery
                  at start), started again after a short delay. The server runs with
                  synchronous_commit on (PostgreSQL's default; pg_start turns it off for
                  speed), so what it acknowledged survives the crash.
Every fault's schedule (gap, kind, victim, delay) comes from one random.Random(SEED), so a
run can be repeated; what the processes do meanwhile is not deterministic.

Recovery of a fault = from the fault to the next progress (a window reported, a step stored,
the test finished) of each test it hit: the test the killed worker held, or every running
test for an orchestrator or Postgres. Progress times are the database's own timestamps
(test_progress.updated_at, steps.recorded_at, tests.finished_at) polled every 0.5 s.

At the end (no more submits; every test given --drain_s to finish) it checks in Postgres:
  stuck:            accepted tests still queued or running;
  lost:             accepted tests missing from the database, plus steps missing from a
                    succeeded test (a sweep over all-passing rates lists each of its rates);
  duplicated_steps: step rows beyond one per (test, step index) and per (test, rate),
                    interrupted steps (left behind by a dead attempt) aside; plus result
                    rows beyond one per test.
The line before the last gives the seed, the tests that failed (a test fails by design once
max_attempts = 3 of its leases were lost with killed workers; failed_unexplained counts the
failed tests with fewer such losses) and max_isolated_recovery_s (recoveries no later fault
of the same test overlapped; max_recovery_s includes the overlapped ones). The final line:
  chaos_tests=N kills=K lost=0 duplicated_steps=0 stuck=0 max_recovery_s=X
Exit status 0 when lost, duplicated_steps and stuck are all 0, else 1.
"""

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

ADMIN_TOKEN = "chaos-admin-secret-0123456789"
RATES = [20, 30, 40, 50, 60]  # req/s, far under the simulator's 400: every step passes


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Proc:
    """One of our processes, restartable; stdout and stderr appended to WORK/NAME.log."""

    def __init__(self, name, argv, env, work, port=None):
        self.name, self.argv, self.env, self.port = name, argv, env, port
        self.log_path = os.path.join(work, f"{name}.log")
        self.p = None

    def start(self, timeout=30):
        logf = open(self.log_path, "ab")
        self.p = subprocess.Popen(self.argv, stdout=logf, stderr=subprocess.STDOUT,
                                  env={**os.environ, **self.env}, start_new_session=True)
        logf.close()
        if self.port is None:
            return
        deadline = time.time() + timeout
        while not port_open(self.port):
            if self.p.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.p.returncode}); see {self.log_path}")
            if time.time() > deadline:
                raise RuntimeError(f"{self.name} not listening after {timeout} s")
            time.sleep(0.1)

    def kill9(self):
        if self.p and self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        if self.p:
            self.p.wait()

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill9()


class Postgres:
    """The server chaos.sh started (pg_start of deploy/local/lib.sh), crashed and restarted."""

    def __init__(self, pg_bin, pg_dir, port):
        self.pg_bin, self.pg_dir, self.port = pg_bin, pg_dir, port
        self.run_as = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []

    def ctl(self, *args):
        subprocess.run(self.run_as + [f"{self.pg_bin}/pg_ctl", "-D", f"{self.pg_dir}/data"]
                       + list(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)

    def crash(self):
        self.ctl("-m", "immediate", "-w", "stop")

    def start(self):
        # lib.sh's pg_start options but synchronous_commit: with it off, a commit is
        # acknowledged before its WAL is written, and a crash (immediate shutdown) loses the
        # last ones: a step the orchestrator acknowledged vanished (seed 2020). Vanguard
        # relies on the database keeping what it acknowledged, as PostgreSQL's default does.
        # fsync stays off: the operating system does not crash here, only the server.
        self.ctl("-l", f"{self.pg_dir}/server.log", "-w", "-t", "60", "-o",
                 f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.pg_dir} -c fsync=off "
                 "-c synchronous_commit=on -c full_page_writes=off -c max_connections=300",
                 "start")

    def restart_durable(self):
        """pg_start's server again with the options above."""
        self.ctl("-m", "fast", "-w", "stop")
        self.start()

    def query(self, sql, db="vanguard"):
        """Rows (lists of strings) or None when the server cannot answer."""
        r = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-h", "127.0.0.1", "-p",
                            str(self.port), "-U", "postgres", "-d", db, "-c", sql],
                           capture_output=True, text=True, env={**os.environ,
                                                                "PGCONNECT_TIMEOUT": "2"})
        if r.returncode != 0:
            return None
        return [line.split("\t") for line in r.stdout.splitlines() if line]


class Chaos:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)            # the fault schedule
        self.submit_rng = random.Random(a.seed + 1)  # the tests' rates
        self.pg = Postgres(a.pg_bin, a.pg_dir, a.pg_port)
        self.procs = []
        self.lock = threading.Lock()
        self.accepted = {}       # request id -> test id
        self.expected_rates = {}  # test id -> rates
        self.unfinished = 0
        self.pending = []        # [fault number, kind, fault time, test id]
        self.recoveries = []     # (fault number, kind, test id, seconds)
        self.hits = []           # (fault number, kind, fault time, test id, its attempt)
        self.stop_submitting = threading.Event()
        self.stop_monitor = threading.Event()

    # ---- the stack ----
    def cli(self, args, token, timeout=30):
        try:
            return subprocess.run([f"{self.a.bin}/vanguard"] + args + [
                f"--orchestrator={self.orch_target(0)}"], capture_output=True, text=True,
                timeout=timeout, env={**os.environ, "VANGUARD_TOKEN": token})
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, 124, "", "timeout")

    def orch_target(self, first):
        ports = [o.port for o in self.orchs]
        ports = ports[first:] + ports[:first]
        return "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports)

    def token(self, name, role):
        r = self.cli(["tokens", "create", f"--name={name}", f"--role={role}"], ADMIN_TOKEN)
        if r.returncode != 0:
            raise RuntimeError(f"tokens create {name}: {r.stderr}")
        return r.stdout.strip()

    def start_stack(self):
        a, work = self.a, self.a.work
        self.pg.restart_durable()
        if self.pg.query("SHOW synchronous_commit", db="postgres") != [["on"]]:
            raise RuntimeError("postgres is not answering with synchronous_commit on")
        self.pg.query("CREATE DATABASE vanguard", db="postgres")
        conninfo = f"host=127.0.0.1 port={a.pg_port} user=postgres dbname=vanguard"
        sim_port = free_port()
        sim = Proc("sim", [f"{a.bin}/vanguard-sim-predictor", f"--listen=127.0.0.1:{sim_port}",
                           "--model_name=chaos", "--slots=4", "--service_ms=10"], {}, work,
                   sim_port)
        sim.start()
        self.procs.append(sim)
        self.orchs = []
        for i in range(2):
            port = free_port()
            o = Proc(f"orchestrator{i}", [f"{a.bin}/vanguard-orchestrator",
                                          f"--listen=127.0.0.1:{port}",
                                          f"--database_url={conninfo}"],
                     {"VANGUARD_BOOTSTRAP_ADMIN_TOKEN": ADMIN_TOKEN}, work, port)
            o.start()
            self.orchs.append(o)
            self.procs.append(o)
        self.submitter = self.token("chaos-submitter", "submitter")
        r = self.cli(["models", "register", "--name=chaos", "--version=v1",
                      f"--endpoint=http://127.0.0.1:{sim_port}", "--protocol=kserve_v2_rest",
                      "--p99_ms=100", "--max_error_rate=0.01"], self.submitter)
        if r.returncode != 0:
            raise RuntimeError(f"models register: {r.stderr}")
        self.workers = []
        for i in range(a.workers):
            rport = free_port()
            rep = Proc(f"replayer{i}", [f"{a.bin}/vanguard-replayer", "serve",
                                        f"--listen=127.0.0.1:{rport}"], {}, work, rport)
            rep.start()
            self.procs.append(rep)
            wid = f"chaos-worker-{i}"
            w = Proc(wid, [f"{a.bin}/vanguard-worker", f"--orchestrator={self.orch_target(i % 2)}",
                           f"--replayer=127.0.0.1:{rport}", f"--worker_id={wid}",
                           "--poll_interval=200ms", "--steady_state_detection=false"],
                     {"VANGUARD_TOKEN": self.token(wid, "worker")}, work)
            w.start()
            self.workers.append(w)
            self.procs.append(w)
        log(f"stack up: simulator, {len(self.orchs)} orchestrators "
            f"({', '.join(str(o.port) for o in self.orchs)}), {a.workers} workers with a "
            f"replayer each, postgres on {a.pg_port}; logs in {work}")

    def stop_stack(self):
        for p in reversed(self.procs):
            p.stop()

    # ---- the stream of tests ----
    def submit_loop(self):
        n = 0
        rates = None
        while not self.stop_submitting.is_set():
            with self.lock:
                busy = self.unfinished
            if busy >= self.a.backlog:
                time.sleep(0.5)
                continue
            if rates is None:  # a failed submit is retried with the same id and rates
                k = self.submit_rng.randint(2, 3)
                rates = sorted(self.submit_rng.sample(RATES, k))
            request_id = f"chaos-{self.a.seed}-{n}"
            r = self.cli(["submit", "--model=chaos", "--version=v1",
                          "--rates=" + ",".join(str(x) for x in rates), "--step_duration=2s",
                          "--step_warmup=1s", f"--request_id={request_id}", "--output=json"],
                         self.submitter)
            if r.returncode == 0:
                test = json.loads(r.stdout)
                with self.lock:
                    self.accepted[request_id] = int(test["id"])
                    self.expected_rates[int(test["id"])] = rates
                    self.unfinished += 1
                n += 1
                rates = None
            else:
                log(f"submit {request_id} failed (will retry): {r.stderr.strip()[:160]}")
                time.sleep(1)
            time.sleep(0.3)

    # ---- progress and recovery ----
    def monitor_loop(self):
        sql = ("SELECT t.id, t.state, "
               " coalesce(extract(epoch FROM p.updated_at), 0),"
               " coalesce((SELECT extract(epoch FROM max(s.recorded_at)) FROM steps s"
               "           WHERE s.test_id = t.id), 0),"
               " coalesce(extract(epoch FROM t.finished_at), 0)"
               " FROM tests t LEFT JOIN test_progress p ON p.test_id = t.id"
               " WHERE t.state IN ('queued', 'running')"
               "    OR t.finished_at > now() - interval '120 seconds'")
        while not self.stop_monitor.is_set():
            rows = self.pg.query(sql)
            if rows is not None:
                latest = {int(r[0]): max(float(r[2]), float(r[3]), float(r[4])) for r in rows}
                with self.lock:
                    accepted = set(self.accepted.values())
                    self.unfinished = sum(1 for r in rows if r[1] in ("queued", "running")
                                          and int(r[0]) in accepted)
                    still = []
                    for fault, kind, at, test in self.pending:
                        t = latest.get(test, 0)
                        if t > at:
                            self.recoveries.append((fault, kind, test, t - at))
                        else:
                            still.append([fault, kind, at, test])
                    self.pending = still
            time.sleep(0.5)

    def running_tests(self, owner=None):
        """[(test id, attempt)] of the running tests (leased by `owner`)."""
        sql = "SELECT id, attempt FROM tests WHERE state = 'running'"
        if owner is not None:
            sql += f" AND lease_owner = '{owner}'"  # our own worker ids, not outside input
        rows = self.pg.query(sql)
        return [(int(r[0]), int(r[1])) for r in rows] if rows else []

    # ---- the faults ----
    def fault(self, number):
        a, rng = self.a, self.rng
        time.sleep(rng.uniform(a.gap_min, a.gap_max))
        kind = rng.choices(["worker", "orchestrator", "postgres"],
                           weights=[a.worker_weight, a.orchestrator_weight, a.postgres_weight])[0]
        delay = rng.uniform(a.delay_min, a.delay_max)
        if kind == "worker":
            victim = self.workers[rng.randrange(len(self.workers))]
        elif kind == "orchestrator":
            victim = self.orchs[rng.randrange(len(self.orchs))]
        else:
            victim = None
        # A killed worker hits the tests it holds when it dies (asked after the kill: a lease
        # granted at the last moment counts); an orchestrator or Postgres every running test.
        hit = self.running_tests() if kind != "worker" else []
        name = victim.name if victim is not None else "postgres"
        at = time.time()
        if victim is not None:
            victim.kill9()
            if kind == "worker":
                hit = self.running_tests(victim.name)
            log(f"fault {number}/{a.kills}: SIGKILL {name}; tests hit: "
                f"{[t for t, _ in hit] or 'none'}")
        else:
            self.pg.crash()
            log(f"fault {number}/{a.kills}: postgres crashed (immediate shutdown); "
                f"tests hit: {[t for t, _ in hit] or 'none'}")
        with self.lock:
            self.pending += [[number, kind, at, t] for t, _ in hit]
            self.hits += [(number, kind, at, t, attempt) for t, attempt in hit]
        time.sleep(delay)
        if victim is not None:
            victim.start()
        else:
            self.pg.start()
        log(f"  {name} back after {delay:.1f} s")

    # ---- the checks ----
    def corrupt(self):
        """What the checks must catch: one stored step copied under another attempt (a step
        recorded twice) and the last step of another succeeded test deleted (a step lost)."""
        log("corrupting the results on purpose: one step duplicated, one deleted")
        self.pg.query(
            "INSERT INTO steps (test_id, attempt, step_index, target_qps, achieved_qps,"
            "  error_rate, scheduled, completed, errors, timeouts, dropped, health_state,"
            "  passed, client_valid, detail)"
            " SELECT test_id, 99, step_index, target_qps, achieved_qps, error_rate, scheduled,"
            "  completed, errors, timeouts, dropped, health_state, passed, client_valid, detail"
            " FROM steps WHERE test_id = (SELECT min(id) FROM tests WHERE state = 'succeeded')"
            " ORDER BY step_index LIMIT 1")
        self.pg.query(
            "DELETE FROM steps s USING (SELECT test_id, max(step_index) AS last FROM steps"
            "  WHERE test_id = (SELECT max(id) FROM tests WHERE state = 'succeeded')"
            "  GROUP BY test_id) x"
            " WHERE s.test_id = x.test_id AND s.step_index = x.last")

    def check(self):
        with self.lock:
            accepted = dict(self.accepted)
            expected = dict(self.expected_rates)
        ids = ",".join(str(i) for i in accepted.values()) or "0"
        states = {int(r[0]): (r[1], int(r[2]), r[3]) for r in self.pg.query(
            f"SELECT id, state, attempt, coalesce(error, '') FROM tests WHERE id IN ({ids})")}
        steps = {}
        for r in self.pg.query(
                "SELECT s.test_id, s.attempt, s.step_index, s.target_qps,"
                " coalesce((s.detail->>'interrupted')::boolean, false)"
                f" FROM steps s WHERE s.test_id IN ({ids})"):
            steps.setdefault(int(r[0]), []).append(
                (int(r[1]), int(r[2]), float(r[3]), r[4] == "t"))
        results = {int(r[0]): int(r[1]) for r in self.pg.query(
            f"SELECT test_id, count(*) FROM results WHERE test_id IN ({ids}) GROUP BY test_id")}
        lost = duplicated = stuck = failed = 0
        notes = []
        # Leases each test lost with a killed worker: a dead worker's lease stays until it
        # expires, so a second kill of the restarted worker may list the same attempt again.
        worker_hits = {}
        for test, _ in {(t, att) for _, kind, _, t, att in self.hits if kind == "worker"}:
            worker_hits[test] = worker_hits.get(test, 0) + 1
        unexplained = 0
        for request_id, test in sorted(accepted.items(), key=lambda kv: kv[1]):
            if test not in states:
                lost += 1
                notes.append(f"test {test} ({request_id}) not in the database")
                continue
            state, attempt, error = states[test]
            if state in ("queued", "running"):
                stuck += 1
                notes.append(f"test {test} stuck {state} at attempt {attempt}")
                continue
            if state != "succeeded":
                failed += 1
                # max_attempts (3) leases lost to killed workers fail a test by design.
                unexplained += worker_hits.get(test, 0) < 3
                notes.append(f"test {test} {state} at attempt {attempt} ({worker_hits.get(test, 0)}"
                             f" worker kills hit it): {error[:120]}")
            measured = [s for s in steps.get(test, []) if not s[3]]
            by_index, by_rate = {}, {}
            for _, index, rate, _ in measured:
                by_index[index] = by_index.get(index, 0) + 1
                by_rate[rate] = by_rate.get(rate, 0) + 1
            dup = max(sum(c - 1 for c in by_index.values()), sum(c - 1 for c in by_rate.values()))
            dup += max(0, results.get(test, 0) - 1)
            if dup:
                duplicated += dup
                notes.append(f"test {test}: steps {sorted(steps.get(test, []))}, "
                             f"{results.get(test, 0)} results")
            listed = {(i, r) for a_, i, r, _ in measured if a_ == attempt}
            want = {(i + 1, float(r)) for i, r in enumerate(expected[test])}
            if state == "succeeded" and not want <= listed:
                lost += len(want - listed)
                notes.append(f"test {test}: steps missing {sorted(want - listed)}")
        self.unexplained_failures = unexplained
        return len(accepted), lost, duplicated, stuck, failed, notes

    def run(self):
        a = self.a
        self.start_stack()
        monitor = threading.Thread(target=self.monitor_loop, daemon=True)
        submitter = threading.Thread(target=self.submit_loop, daemon=True)
        monitor.start()
        submitter.start()
        t0 = time.time()
        for number in range(1, a.kills + 1):
            self.fault(number)
        self.stop_submitting.set()
        submitter.join()
        log(f"{a.kills} faults in {time.time() - t0:.0f} s; {len(self.accepted)} tests "
            f"submitted; waiting up to {a.drain_s} s for them to finish")
        deadline = time.time() + a.drain_s
        while time.time() < deadline:
            with self.lock:
                if self.unfinished == 0 and not self.pending:
                    break
            time.sleep(1)
        time.sleep(1)  # one more monitor pass
        self.stop_monitor.set()
        monitor.join()
        if a.corrupt_to_check_the_checks:
            self.corrupt()
        tests, lost, duplicated, stuck, failed, notes = self.check()
        with self.lock:
            recoveries = list(self.recoveries)
            unrecovered = list(self.pending)
        for note in notes:
            log(note)
        # Isolated: no other fault hit the test between this one and its recovery.
        fault_time = {f: at for f, _, at, _, _ in self.hits}
        isolated = [s for f, kind, test, s in recoveries
                    if not any(t == test and f < f2 and at2 < fault_time[f] + s
                               for f2, _, at2, t, _ in self.hits)]
        for fault, kind, at, test in unrecovered:
            log(f"fault {fault} ({kind}): test {test} never progressed again")
        by_kind = {}
        for _, kind, _, s in recoveries:
            by_kind.setdefault(kind, []).append(s)
        for kind, values in sorted(by_kind.items()):
            values.sort()
            log(f"recovery after a {kind} fault: {len(values)} tests hit, median "
                f"{values[len(values) // 2]:.1f} s, max {values[-1]:.1f} s")
        for fault, kind, test, s in sorted(recoveries, key=lambda r: -r[3])[:3]:
            log(f"slowest: fault {fault} ({kind}), test {test}: {s:.1f} s")
        requeued = self.pg.query(
            "SELECT id, attempt, coalesce(requeue_reason, '') FROM tests WHERE attempt > 1"
            " ORDER BY id") or []
        log(f"{len(requeued)} tests ran more than one attempt")
        for r in requeued:
            log(f"  test {r[0]}: attempt {r[1]}, last requeued: {r[2][:100]}")
        max_recovery = max((s for *_, s in recoveries), default=0.0)
        print(f"seed={a.seed} failed={failed} failed_unexplained={self.unexplained_failures} "
              f"max_isolated_recovery_s={max(isolated, default=0.0):.1f} faults_hitting_a_test="
              f"{len({f for f, *_ in recoveries} | {f for f, *_ in unrecovered})} "
              f"unrecovered={len(unrecovered)} elapsed_s={time.time() - t0:.0f}", flush=True)
        print(f"chaos_tests={tests} kills={a.kills} lost={lost} duplicated_steps={duplicated} "
              f"stuck={stuck} max_recovery_s={max_recovery:.1f}", flush=True)
        return 0 if lost == 0 and duplicated == 0 and stuck == 0 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kills", type=int, default=20, help="faults to inject (default 20)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the fault schedule and the tests' rates (default: random, "
                        "printed)")
    p.add_argument("--workers", type=int, default=3, help="workers, each with a replayer (3)")
    p.add_argument("--backlog", type=int, default=4,
                   help="tests kept queued or running while faults happen (4)")
    p.add_argument("--gap_min", type=float, default=2.0, help="least seconds between faults")
    p.add_argument("--gap_max", type=float, default=7.0, help="most seconds between faults")
    p.add_argument("--delay_min", type=float, default=0.5,
                   help="least seconds before a killed process is restarted")
    p.add_argument("--delay_max", type=float, default=3.0,
                   help="most seconds before a killed process is restarted")
    p.add_argument("--worker_weight", type=float, default=5, help="weight of worker kills (5)")
    p.add_argument("--orchestrator_weight", type=float, default=3,
                   help="weight of orchestrator kills (3)")
    p.add_argument("--postgres_weight", type=float, default=2,
                   help="weight of Postgres restarts (2)")
    p.add_argument("--drain_s", type=float, default=180,
                   help="seconds the tests get to finish after the last fault (180)")
    p.add_argument("--corrupt_to_check_the_checks", action="store_true",
                   help="before the checks, store one step twice and delete another: the "
                        "final line must say lost=1 duplicated_steps=1 (exit 1)")
    p.add_argument("--bin", required=True, help="directory of the release binaries")
    p.add_argument("--pg_bin", required=True, help="PostgreSQL server binaries (pg_ctl)")
    p.add_argument("--pg_dir", required=True, help="pg_start's PG_DIR")
    p.add_argument("--pg_port", type=int, required=True, help="pg_start's PG_PORT")
    p.add_argument("--work", required=True, help="directory for the processes' logs")
    a = p.parse_args()
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(1, 2**31)
    log(f"chaos: seed {a.seed}, {a.kills} faults (rerun with --seed={a.seed})")
    chaos = Chaos(a)
    try:
        return chaos.run()
    finally:
        chaos.stop_stack()


if __name__ == "__main__":
    sys.exit(main())
