#!/usr/bin/env python3
"""Reproduces the anchor benchmark table (docs/benchmark.md) on this machine: fiber vs merge
as a pure echo server, as a forward proxy, and the long-tail test (fixed 10k QPS, 1% of
requests slowed by 5 ms), plus the raw-epoll baseline, gRPC rows and, with enough cores, a
worker-scaling section and an uneven-load section (half the requests on one connection; 5% of
requests spinning 200 µs), with the scheduler's counters per request.

Everything runs on loopback with the framework's own load client (trpc_bench --json) and the
echo service of examples/echo. The machine's shape is a setting: which CPUs the servers and the
load client get, how many server workers and client threads; the default adapts to the machine
(2 cores: server on CPU 1, client on CPU 0, 1 worker; 16 or more: the anchor's 8 server workers
on CPUs 0-7, the client on the rest). Results go to build/results/latest.{md,json} (and a PNG of
the long-tail latency CDFs); --publish also updates the committed benchmark/results/latest.*.
docs/benchmark.md explains the method.

  benchmark/seed_table.py [--build DIR] [--quick | --smoke] [--out DIR] [--publish]
                          [--server-cpus 0-7] [--client-cpus 8-15] [--workers N]
                          [--client-threads N] [--tail-rounds N] [--uneven] [--dry-run]

--dry-run prints every command and server YAML without running anything; --smoke runs every
step with the real binaries on a tiny budget (0.2 s per load run, one round, one open-loop step)
to check that the script works end to end: its figures mean nothing. The uneven-load section
runs when the servers have at least 4 CPUs, or with --uneven.
"""

import argparse
import datetime
import json
import math
import os
import random
import re
import select
import statistics
import urllib.request
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Pinning on a 2-core machine (docs/benchmark.md): the server on CPU 1, the load client on CPU 0.
# With fewer CPUs everything shares CPU 0 (and the table says so). Other scripts use these two;
# the seed table itself takes its shape from Shape (settings below).
NCPU = os.cpu_count() or 1
SERVER_CPU = 1 if NCPU > 1 else 0
CLIENT_CPU = 0

P999_LIMIT_US = 10_000  # "QPS at caller P999 <= 10 ms"
TAIL_QPS = 10_000
TAIL_RATIO = 0.01
TAIL_DELAY = "5ms"
TAIL_BOUND_PCT = 20.0  # the long-tail claims are judged against a 20% P99 rise
CONNECTIONS_PER_THREAD = 100
NOISE_LIMIT_PCT = 10.0  # baseline drift between start and end that makes figures indicative
# The uneven-load section (docs/benchmark.md): where work stealing should pay. It runs by default
# when the servers have this many CPUs (below, a worker has too few siblings to take work from).
UNEVEN_MIN_SERVER_CPUS = 4
HOT_SHARE = 0.5     # case (a): one connection carries this share of all requests,
HOT_INFLIGHT = 64   # with this many calls in flight on it at most (trpc_bench's default)
UNEVEN_CASES = {
    "hot": {"extra": ("--hot-share", str(HOT_SHARE), "--hot-inflight", str(HOT_INFLIGHT))},
    "spin": {"tail_ratio": 0.05, "tail_delay": "200us", "tail_kind": "spin"},
}
UNEVEN_COMMON_SHARE = 0.7  # the common rate: this share of the lower of the two models' maxima
# The scheduler's counters in /cmds/stats ("threadmodels" entries; docs/admin.md): the fiber
# models' steals, remote steals, parks, wake-ups of parked workers and spinning time (ns), and
# every model's replies written off the connection's reactor and reactor wake-ups.
SCHED_COUNTERS = ("steals", "remote_steals", "parks", "wakeups", "spin_ns",
                  "cross_thread_replies", "loop_wakeups")
# The line a --smoke run's report starts with (this script's and the others that import it).
SMOKE_NOTE = ("**Smoke run (`--smoke`): every step on a tiny budget, to check the script "
              "works; the figures mean nothing.**")


def parse_cpus(spec):
    """'0-7', '1', '0,2,4-5' -> sorted list of CPU numbers."""
    cpus = set()
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    if not cpus:
        raise ValueError(f"no CPUs in '{spec}'")
    return sorted(cpus)


def cpu_list(cpus):
    """[0,1,2,3] -> '0-3'; [0,2] -> '0,2' (what taskset -c and trpc_bench --cpus accept)."""
    if cpus == list(range(cpus[0], cpus[-1] + 1)) and len(cpus) > 1:
        return f"{cpus[0]}-{cpus[-1]}"
    return ",".join(str(c) for c in cpus)


class Shape:
    """Where the servers and the load client run, and how many threads each has."""

    def __init__(self, server_cpus, client_cpus, workers, client_threads, longtail_pinned=True):
        self.server_cpus = server_cpus
        self.client_cpus = client_cpus
        self.workers = workers
        self.client_threads = client_threads
        # The long-tail test needs two workers at least (one slow request must not be all).
        self.longtail_workers = max(2, workers)
        # On a 2-core machine the long-tail test's two workers and the client share both CPUs.
        self.longtail_pinned = longtail_pinned

    @staticmethod
    def default(ncpu):
        if ncpu >= 16:  # the anchor's setting: 8 server workers on 8 cores, the client on the rest
            return Shape(list(range(8)), list(range(8, ncpu)), 8, ncpu - 8)
        if ncpu >= 4:
            half = ncpu // 2
            return Shape(list(range(half)), list(range(half, ncpu)), half, ncpu - half)
        if ncpu >= 2:
            return Shape([1], [0], 1, 1, longtail_pinned=False)
        return Shape([0], [0], 1, 1, longtail_pinned=False)

    def describe(self):
        return (f"server CPUs {cpu_list(self.server_cpus)} ({self.workers} worker"
                f"{'s' if self.workers > 1 else ''}), load client CPUs "
                f"{cpu_list(self.client_cpus)} ({self.client_threads} thread"
                f"{'s' if self.client_threads > 1 else ''}, {CONNECTIONS_PER_THREAD} connections "
                "each)")

    def as_dict(self):
        return {"server_cpus": cpu_list(self.server_cpus),
                "client_cpus": cpu_list(self.client_cpus), "workers": self.workers,
                "client_threads": self.client_threads,
                "longtail_workers": self.longtail_workers,
                "longtail_pinned": self.longtail_pinned}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# How long a server may take to start listening.
START_TIMEOUT_S = 10.0


def read_listen_file(path, proc, timeout_s=START_TIMEOUT_S):
    """The addresses a framework server listens on, from its server.listen_file (written whole
    once every listener is up, docs/config.md): {service name or "admin": (ip, port)}."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
            raise RuntimeError(f"server exited with {proc.returncode} before listening: {err}")
        if os.path.exists(path):
            with open(path) as f:
                lines = [l.split() for l in f if l.strip()]
            return {name: (addr.rsplit(":", 1)[0], int(addr.rsplit(":", 1)[1]))
                    for name, addr in lines}
        time.sleep(0.02)
    raise RuntimeError(f"no {path} after {timeout_s} s: the server did not start")


def read_ready_line(proc, timeout_s=START_TIMEOUT_S):
    """The port of a server that prints "... ready on IP:PORT" on stdout (benchmark/baseline's,
    started with --port 0)."""
    deadline = time.monotonic() + timeout_s
    line = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break  # it exited
            line += chunk
            m = re.search(rb" ready on [^\s]*:(\d+)\n", line)
            if m:
                return int(m.group(1))
    proc.poll()
    raise RuntimeError(f"server (exit status {proc.returncode}) printed no ready line: "
                       f"{line.decode(errors='replace')[-500:]}")


def thread_model_yaml(model, workers):
    if model == "fiber":
        return ("global:\n  threadmodel:\n    fiber:\n      - instance_name: bench\n"
                f"        concurrency_hint: {workers}\n")
    return ("global:\n  threadmodel:\n    default:\n      - instance_name: bench\n"
            f"        io_handle_type: merge\n        io_thread_num: {workers}\n")


def echo_yaml(model, workers, listen_file, protocol="trpc", admin=False, tls=None):
    admin_port = "  admin_port: auto\n" if admin else ""
    ssl = (f"      ssl: {{enable: true, cert_path: {tls[0]}, private_key_path: {tls[1]}}}\n"
           if tls else "")
    return thread_model_yaml(model, workers) + f"""server:
  app: bench
  server: echo
  listen_file: {listen_file}
{admin_port}  service:
    - name: trpc.test.helloworld.Greeter
      protocol: {protocol}
      ip: 127.0.0.1
      port: 0
      timeout: 60000
      max_conn_num: 100000
{ssl}plugins:
  log: {{level: warn}}
"""


def forward_yaml(model, workers, listen_file, backend_port):
    callees = "".join(f"""    - name: {name}
      target: 127.0.0.1:{backend_port}
      timeout: 60000
""" for name in ("trpc.test.helloworld.Greeter", "trpc.test.helloworld.Greeter2"))
    return thread_model_yaml(model, workers) + f"""server:
  app: bench
  server: forward
  listen_file: {listen_file}
  service:
    - name: trpc.test.forward.Forward
      ip: 127.0.0.1
      port: 0
      timeout: 60000
      max_conn_num: 100000
client:
  service:
{callees}plugins:
  log: {{level: warn}}
"""


class Server:
    """A server process, pinned, stopped with SIGTERM. Its ports are the kernel's picks: a
    framework server (`listen_file`: the server.listen_file of its YAML) says them in that file,
    benchmark/baseline's servers (started with --port 0) in their ready line. With `record` (a
    list), nothing starts: the command is appended to it (a dry run; the ports stay 0)."""

    def __init__(self, argv, cpus, name, record=None, listen_file=None):
        self.name = name
        self.port = 0
        self.admin_port = 0
        self.proc = None
        cmd = ["taskset", "-c", cpus] + argv if cpus else argv
        if record is not None:
            record.append({"server": name, "cmd": cmd})
            return
        if listen_file:
            if os.path.exists(listen_file):
                os.unlink(listen_file)  # not one an earlier server left
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            addrs = read_listen_file(listen_file, self.proc)
            self.port = next(port for name, (_, port) in addrs.items() if name != "admin")
            self.admin_port = addrs.get("admin", (None, 0))[1]
        else:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.port = read_ready_line(self.proc)

    @property
    def pid(self):
        return self.proc.pid if self.proc else 0

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def echo_server_path(build):
    """examples/echo's server (the benchmark's echo service)."""
    return os.path.join(build, "examples/echo/echo_server")


class Bench:
    def __init__(self, build, quick, tmp, shape=None, dry_run=False, smoke=False):
        self.build = build
        self.quick = quick
        self.smoke = smoke
        self.tmp = tmp
        self.shape = shape or Shape([SERVER_CPU], [CLIENT_CPU], 1, 1)
        self.record = [] if dry_run else None  # the commands a dry run would run
        self.bin = {
            "trpc_bench": os.path.join(build, "benchmark/trpc_bench/trpc_bench"),
            "echo": echo_server_path(build),
            "forward": os.path.join(build, "examples/forward/forward_server"),
            "baseline": os.path.join(build, "benchmark/baseline/raw_echo_server"),
            "grpc": os.path.join(build, "benchmark/baseline/grpc_echo_server"),
        }
        self.duration = 0.2 if smoke else 2 if quick else 3
        self.warmup = 0.05 if smoke else 1
        self.runs = []  # every trpc_bench run, for the JSON
        self.started = 0  # servers started (names their YAML and listen files)
        # (certificate, key) PEM files: echo and grpc++ servers serve TLS, the client checks
        # the certificate (its own CA); None = plaintext.
        self.tls = None

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, kind, model=None, workers=1, cpus=None, backend_port=None, protocol="trpc",
              extra=(), admin=False):
        self.started += 1
        listen_file = os.path.join(self.tmp, f"listen_{self.started}.txt")
        yaml = None
        if kind == "baseline":
            argv = [self.bin["baseline"], "--port", "0", "--threads", str(workers)]
        elif kind == "grpc":
            argv = [self.bin["grpc"], "--port", "0", "--threads", str(workers)] + list(extra)
            if self.tls:
                argv += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        elif kind == "echo":
            yaml = echo_yaml(model, workers, listen_file, protocol, admin, self.tls)
            argv = [self.bin["echo"], "--config",
                    self.write(f"echo_{model}_{self.started}.yaml", yaml)]
        else:
            yaml = forward_yaml(model, workers, listen_file, backend_port)
            argv = [self.bin["forward"], "--config",
                    self.write(f"fwd_{model}_{self.started}.yaml", yaml)]
        name = f"{kind}:{model}" if model else kind
        if self.record is not None:
            self.record.append({"yaml": yaml, "for": name}) if yaml else None
        return Server(argv, cpus, name, self.record, listen_file if yaml else None)

    def load(self, server, label, func=None, qps=0, duration=None, connections=None,
             tail_ratio=0.0, tail_kind="sleep", pid=None, cpus="shape",
             protocol="trpc", inflight=1, threads=None, tail_delay=TAIL_DELAY, extra=()):
        out = os.path.join(self.tmp, f"run{len(self.runs)}.json")
        if cpus == "shape":  # the load client's CPUs from the machine's shape
            cpus = cpu_list(self.shape.client_cpus)
        if threads is None:
            threads = self.shape.client_threads
        if connections is None:
            connections = CONNECTIONS_PER_THREAD * threads
        def run(duration_s, warmup_s):
            cmd = [self.bin["trpc_bench"], "--target", f"127.0.0.1:{server.port}",
                   "--protocol", protocol, "--connections", str(connections),
                   "--inflight", str(inflight), "--threads", str(threads),
                   "--duration", str(duration_s), "--warmup", str(warmup_s),
                   "--payload-size", "10", "--timeout", "5000", "--quiet", "--json", out]
            if cpus:
                cmd = ["taskset", "-c", cpus] + cmd + [
                    "--cpus", ",".join(str(c) for c in parse_cpus(cpus))]
            if func:
                cmd += ["--func", func]
            if qps:
                cmd += ["--qps", str(int(qps))]
            if tail_ratio:
                cmd += ["--tail-ratio", str(tail_ratio), "--tail-delay", tail_delay,
                        "--tail-kind", tail_kind]
            cmd += list(extra)
            if self.tls:
                cmd += ["--tls", "--tls-ca", self.tls[0]]
            cmd += ["--server-pid", str(pid or server.pid)]
            if self.record is not None:
                self.record.append({"load": label, "cmd": cmd})
                return dry_result(qps)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            with open(out) as f:
                return json.load(f)

        r = run(duration or self.duration, self.warmup)
        if self.smoke and self.record is None and r["requests"] == 0:
            # A smoke window is a fraction of a second: a loaded machine that does not run the
            # server (or the client) for that long leaves it empty, which says nothing about the
            # script. Once more with a window that such a stall does not fill.
            log(f"  {label}: nothing measured in {duration or self.duration} s; again with 1 s")
            r = run(1.0, 0.5)
        r["label"] = label
        self.runs.append(r)
        lat = r["latency_us"]
        srv = r.get("server") or {}
        log(f"  {label:<40} {r['qps']:>9.0f} QPS  p50 {lat['p50']:>6} p99 {lat['p99']:>6} "
            f"p999 {lat['p999']:>6} us  server {srv.get('cpu_us_per_request', 0):.2f} us/req"
            + ("  [client-bound]" if r["client"]["bottleneck"] else ""))
        return r

    def max_qps(self, server, label, func=None, pid=None, protocol="trpc", **load_args):
        """The highest offered rate whose achieved rate is >= 99% of it and whose caller P999 is
        <= 10 ms (of the tagged requests too, if any): a closed-loop run (100 connections per
        client thread, depth 1) finds the ceiling, then open-loop runs step down from it until one
        qualifies. `load_args` go to every run (the uneven-load cases' tail and hot-connection
        settings)."""
        closed = self.load(server, f"{label} closed loop", func=func, pid=pid, protocol=protocol,
                           **load_args)
        ceiling = closed["qps"]
        steps = [1.0, 0.9, 0.8, 0.65, 0.5]
        if self.smoke:
            steps = [0.5]
        elif self.quick:
            steps = [0.9, 0.6]
        for f in steps:
            rate = int(ceiling * f)
            r = self.load(server, f"{label} open {rate}/s", func=func, qps=rate, pid=pid,
                          protocol=protocol, **load_args)
            tail = r.get("tail") or {"latency_us": {"p999": 0}}
            if r["qps"] >= 0.99 * rate and r["latency_us"]["p999"] <= P999_LIMIT_US \
                    and tail["latency_us"]["p999"] <= P999_LIMIT_US and not r["errors"]:
                r["found_by"] = f"open loop at {f:.0%} of the closed-loop ceiling {ceiling:.0f}/s"
                return r, closed
        closed["found_by"] = "no open-loop rate qualified; closed-loop figure shown"
        return closed, closed


def dry_result(qps):
    """A stand-in result for a dry run: plausible numbers that keep every later step going."""
    rate = qps or 100000
    return {"qps": rate, "errors": 0, "requests": rate,
            "latency_us": {"avg": 100, "p50": 90, "p90": 120, "p99": 150, "p999": 300},
            "server": {"cpu_us_per_request": 10.0}, "client": {"bottleneck": False,
                                                                "warnings": []},
            "spectrum": [[50.0, 90], [99.0, 150]]}


def sched_counters(server):
    """The scheduler counters (SCHED_COUNTERS) of a server with an admin port, each summed over
    its thread models, and "requests": the requests its methods have served. A counter that no
    thread model reports (a merged model has no steals; an older server has none of the newer
    ones) is None: unknown. All None when there is no admin port or it does not answer."""
    out = {k: None for k in SCHED_COUNTERS + ("requests",)}
    if server.admin_port == 0 or server.proc is None:
        return out
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.admin_port}/cmds/stats",
                                    timeout=2) as f:
            stats = json.load(f)
    except (OSError, ValueError):
        return out
    for tm in stats.get("threadmodels", []):
        for k in SCHED_COUNTERS:
            if isinstance(tm.get(k), (int, float)):
                out[k] = (out[k] or 0) + tm[k]
    out["requests"] = sum(m.get("requests_total", 0) for svc in stats.get("services", [])
                          for m in svc.get("methods", []))
    return out


def per_request(before, after):
    """Each counter's change from `before` to `after` (sched_counters) per request the server
    served meanwhile; None where unknown at either end or when nothing was served."""
    served = (after["requests"] or 0) - (before["requests"] or 0)
    return {k: (after[k] - before[k]) / served
            if served > 0 and after[k] is not None and before[k] is not None else None
            for k in SCHED_COUNTERS}


def counter_cells(c):
    """The markdown cells of the counter columns (COUNTER_COLUMNS) from per_request()."""
    def cell(v, scale=1.0):
        return "n/a" if v is None else f"{v * scale:.3g}"
    return " | ".join(cell(c.get(k), scale) for k, _, scale in COUNTER_COLUMNS)


# The counter columns of the scaling and uneven-load tables: key, heading, scale.
COUNTER_COLUMNS = (("steals", "steals/req", 1.0), ("parks", "parks/req", 1.0),
                   ("wakeups", "wake-ups/req", 1.0), ("spin_ns", "spin µs/req", 1e-3),
                   ("cross_thread_replies", "cross-thread replies/req", 1.0))


def machine_info():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return {"cpu": model, "cpus": NCPU, "kernel": os.uname().release,
            "commit": commit + ("-dirty" if dirty else ""),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def pct(a, b):
    return (a - b) / b * 100.0 if b else float("nan")


def bootstrap_ci(values, level=0.90, n=2000, seed=1):
    """A bootstrap interval of the median of `values` (rounds resampled with replacement; a
    fixed seed, so the same rounds give the same interval)."""
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n))
    lo = meds[int((1 - level) / 2 * n)]
    hi = meds[min(n - 1, int((1 + level) / 2 * n))]
    return lo, hi


def verdict(claim, lo, hi, bound=TAIL_BOUND_PCT):
    """'met', 'missed' or 'undecided at this noise' for a claim on a rise whose interval is
    [lo, hi]: 'le' = the rise is at most `bound` %, 'gt' = it is more than `bound` %."""
    if claim == "le":
        if hi <= bound:
            return "met"
        if lo > bound:
            return "missed"
    else:
        if lo > bound:
            return "met"
        if hi <= bound:
            return "missed"
    return "undecided at this noise"


# What each long-tail row claims (docs/benchmark.md): in the fiber model a request sleeping 5 ms
# parks only its fiber, so the others' P99 rises by at most 20%; in the merged model it holds its
# worker (the model's known weakness), and a CPU-bound delay holds a worker in both models.
TAIL_CLAIMS = {("fiber", "sleep"): "le", ("merge", "sleep"): "gt",
               ("fiber", "spin"): "gt", ("merge", "spin"): "gt"}


def uneven(b, res, servers):
    """The uneven-load section into res["uneven"]; `servers` collects what it starts."""
    shape = b.shape
    uw = shape.longtail_workers
    ucpus = cpu_list(shape.server_cpus) if shape.longtail_pinned else None
    uclient = "shape" if shape.longtail_pinned else None
    log(f"== uneven load ({uw} workers: {HOT_SHARE:.0%} of requests on one connection with "
        f"{HOT_INFLIGHT} in flight; 5% spinning 200 µs)")
    out = {"workers": uw, "pinned": shape.longtail_pinned, "hot_share": HOT_SHARE,
           "hot_inflight": HOT_INFLIGHT, "common_share": UNEVEN_COMMON_SHARE, "cases": {}}
    for case, load_args in UNEVEN_CASES.items():
        entry = {}
        for model in ("merge", "fiber"):
            s = b.start("echo", model, uw, ucpus, admin=True)
            servers.append(s)
            c0 = sched_counters(s)
            best, _ = b.max_qps(s, f"uneven {case} {model}", cpus=uclient, **load_args)
            entry[model] = {"max": best, "max_counters_per_request":
                            per_request(c0, sched_counters(s))}
            s.stop()
        common = int(UNEVEN_COMMON_SHARE * min(entry[m]["max"]["qps"] for m in entry))
        for model in ("merge", "fiber"):
            s = b.start("echo", model, uw, ucpus, admin=True)
            servers.append(s)
            c0 = sched_counters(s)
            entry[model]["at_common_load"] = b.load(s, f"uneven {case} {model} at {common}/s",
                                                    qps=common, cpus=uclient, **load_args)
            entry[model]["counters_per_request"] = per_request(c0, sched_counters(s))
            s.stop()
        entry["common_qps"] = common
        merge_qps = entry["merge"]["max"]["qps"]
        entry["fiber_merge_qps"] = entry["fiber"]["max"]["qps"] / merge_qps if merge_qps else None
        out["cases"][case] = entry
    res["uneven"] = out


def run(args):
    tmp = tempfile.mkdtemp(prefix="seed_table.")
    shape = args.shape
    b = Bench(args.build, args.quick, tmp, shape, args.dry_run, args.smoke)
    scpus = cpu_list(shape.server_cpus)
    ccpus = cpu_list(shape.client_cpus)
    W = shape.workers
    res = {"machine": machine_info(),
           "settings": {"shape": shape.as_dict(), "server_cpu": scpus, "client_cpu": ccpus,
                        "connections": CONNECTIONS_PER_THREAD * shape.client_threads,
                        "inflight": 1, "payload_bytes": 10,
                        "duration_s": b.duration, "warmup_s": b.warmup,
                        "p999_limit_us": P999_LIMIT_US, "smoke": args.smoke,
                        "tail_qps": TAIL_QPS, "tail_ratio": TAIL_RATIO, "tail_delay": TAIL_DELAY,
                        "tail_bound_pct": TAIL_BOUND_PCT},
           "pure": {}, "grpc": {}, "forward": {}, "longtail": {}, "scaling": {}, "uneven": {},
           "noise": {}}
    servers = []
    try:
        # 1. Pure server.
        log(f"== pure server ({shape.describe()})")
        kinds = [("baseline", None), ("echo", "merge"), ("echo", "fiber")]
        maxima = {}
        for kind, model in kinds:
            name = model or kind
            s = b.start(kind, model, W, scpus)
            servers.append(s)
            best, closed = b.max_qps(s, name)
            maxima[name] = best
            s.stop()
        # Server CPU per request at one offered load for all (docs/benchmark.md): 60% of the
        # lowest ceiling, so nobody saturates. The servers alternate (A B C A B C ...) and each
        # figure is the median of its rounds: this machine drifts by tens of percent within
        # minutes. The baseline's first round is also the noise guard's start.
        common = int(0.6 * min(r["qps"] for r in maxima.values()))
        rounds = 1 if args.quick or args.smoke else 3
        cpu = {name: [] for name in maxima}
        for i in range(rounds):
            for kind, model in kinds:
                name = model or kind
                s = b.start(kind, model, W, scpus)
                servers.append(s)
                cpu[name].append(b.load(s, f"{name} at {common}/s (CPU/request, round {i + 1})",
                                        qps=common))
                s.stop()
        for name in maxima:
            runs = sorted(cpu[name], key=lambda r: r["server"]["cpu_us_per_request"])
            res["pure"][name] = {"max": maxima[name], "at_common_load": runs[len(runs) // 2],
                                 "cpu_rounds": [r["server"]["cpu_us_per_request"]
                                                for r in cpu[name]]}
        res["settings"]["common_load_qps"] = common
        res["settings"]["cpu_rounds"] = rounds
        res["noise"]["baseline_start"] = cpu["baseline"][0]["server"]["cpu_us_per_request"]

        # 2. gRPC: our echo service with protocol grpc in both models, and grpc++'s
        # completion-queue server when it was built, under the same load settings.
        log("== gRPC (unary over h2c)")
        grpc_kinds = [("ours grpc merge", "echo", "merge", ()),
                      ("ours grpc fiber", "echo", "fiber", ())]
        if b.record is not None or os.path.exists(b.bin["grpc"]):
            grpc_kinds.append(("grpc++ async (cq)", "grpc", None, ("--mode", "cq")))
        else:
            res["settings"]["grpc_peer"] = "not built (libgrpc++-dev missing)"
        saved_quick, b.quick = b.quick, True  # two open-loop steps: the rows are for comparison
        try:
            for label, kind, model, extra in grpc_kinds:
                s = b.start(kind, model, W, scpus, protocol="grpc", extra=extra)
                servers.append(s)
                best, _ = b.max_qps(s, label, protocol="grpc")
                # A server whose own ceiling is below the common rate is measured at 60% of that
                # ceiling instead: offered more than it can do, the open loop's warm-up backlog
                # holds every connection through the short window, which then measures no
                # request at all (docs/benchmark.md, "The grpc++ baseline").
                rate = common if best["qps"] >= common else int(0.6 * best["qps"])
                at = b.load(s, f"{label} at {rate}/s (CPU/request)", qps=rate, protocol="grpc")
                res["grpc"][label] = {"max": best, "at_common_load": at, "cpu_rate": rate}
                s.stop()
        finally:
            b.quick = saved_quick

        # 3. Forward: client -> forward (server CPUs) -> echo backend (merge, on the client's
        # CPUs: the proxy's own cost is what the column measures).
        log(f"== forward (forward on CPUs {scpus}, echo backend and client on CPUs {ccpus})")
        for model in ("merge", "fiber"):
            backend = b.start("echo", "merge", W, ccpus)
            servers.append(backend)
            fwd = b.start("forward", model, W, scpus, backend_port=backend.port)
            servers.append(fwd)
            best, _ = b.max_qps(fwd, f"forward {model}", func="/trpc.test.forward.Forward/Route")
            res["forward"][model] = {"max": best}
            fwd.stop()
            backend.stop()

        # 4. Long tail: fixed 10k QPS open loop, A (no tail) then B (1% tagged, 5 ms sleep or
        # spin); percentiles of untagged requests only. The P99s are ~0.1 ms, where tens of µs
        # of machine noise decide a 20% rise, so the three kinds alternate for many rounds
        # (none, sleep, spin, none, ...), each round's rise is taken against the same round's
        # A, and a claim is decided only when the bootstrap interval of the median rise lies
        # wholly on one side of the bound.
        lw = shape.longtail_workers
        lt_cpus = scpus if shape.longtail_pinned else None
        lt_client = "shape" if shape.longtail_pinned else None
        log(f"== long tail ({lw} workers, {TAIL_QPS} QPS, {TAIL_RATIO * 100:.0f}% tagged "
            f"{TAIL_DELAY})")
        lt_duration = b.duration if args.smoke else 2
        lt_rounds = args.tail_rounds or (1 if args.smoke else 3 if args.quick else 9)
        res["settings"]["tail_rounds"] = lt_rounds
        res["settings"]["tail_duration_s"] = lt_duration
        for model in ("merge", "fiber"):
            s = b.start("echo", model, lw, lt_cpus)
            servers.append(s)
            runs = {"none": [], "sleep": [], "spin": []}
            for i in range(lt_rounds):
                for kind in runs:
                    tail = {} if kind == "none" else {"tail_ratio": TAIL_RATIO, "tail_kind": kind}
                    runs[kind].append(b.load(s, f"{model} tail {kind} (round {i + 1})",
                                             qps=TAIL_QPS, duration=lt_duration, cpus=lt_client,
                                             **tail))
            entry = {}
            for kind, rs in runs.items():
                ordered = sorted(rs, key=lambda r: r["latency_us"]["p99"])
                entry[kind] = ordered[len(ordered) // 2]
                entry[kind + "_p99_rounds"] = [r["latency_us"]["p99"] for r in rs]
            for kind in ("sleep", "spin"):
                rises = [pct(bk["latency_us"]["p99"], a["latency_us"]["p99"])
                         for bk, a in zip(runs[kind], runs["none"])]
                lo, hi = bootstrap_ci(rises)
                entry[kind + "_rises"] = rises
                entry[kind + "_rise_median"] = statistics.median(rises)
                entry[kind + "_rise_interval"] = [lo, hi]
                entry[kind + "_claim"] = TAIL_CLAIMS[(model, kind)]
                entry[kind + "_verdict"] = verdict(TAIL_CLAIMS[(model, kind)], lo, hi)
            res["longtail"][model] = entry
            s.stop()

        # 5. Worker scaling: 1, 2, 4, ... server workers on as many of the server CPUs, both
        # models, with the whole client; the scheduler's counters per request (and fiber steals
        # per second) from the admin port, over the runs of the QPS search.
        steps = []
        w = 1
        while w <= len(shape.server_cpus):
            steps.append(w)
            w *= 2
        if len(shape.server_cpus) < 2 or len(shape.client_cpus) < 2:
            res["scaling"] = {"skipped": f"needs at least 2 server CPUs and 2 client CPUs (this "
                                         f"run has {len(shape.server_cpus)} and "
                                         f"{len(shape.client_cpus)}); see docs/benchmark.md for "
                                         "the 16-core setting"}
        else:
            log(f"== worker scaling ({', '.join(map(str, steps))} workers)")
            for model in ("merge", "fiber"):
                res["scaling"][model] = {}
                for w in steps:
                    s = b.start("echo", model, w, cpu_list(shape.server_cpus[:w]), admin=True)
                    servers.append(s)
                    t0, c0 = time.monotonic(), sched_counters(s)
                    best, _ = b.max_qps(s, f"{model} {w} workers")
                    elapsed = max(time.monotonic() - t0, 1e-9)
                    c1 = sched_counters(s)
                    steals = (None if c0["steals"] is None or c1["steals"] is None
                              else (c1["steals"] - c0["steals"]) / elapsed)
                    res["scaling"][model][w] = {"max": best, "steals_per_s": steals,
                                                "counters_per_request": per_request(c0, c1)}
                    s.stop()

        # 6. Uneven load, where work stealing should pay: (a) one connection carries half of all
        # requests, (b) 5% of the requests spin 200 µs. Both models at the shape's workers (two
        # at least, as the long-tail test); QPS at P999 <= 10 ms, then both at one common rate
        # (70% of the lower maximum) for latency, CPU and the scheduler's counters per request.
        if len(shape.server_cpus) >= UNEVEN_MIN_SERVER_CPUS or args.uneven:
            uneven(b, res, servers)
        else:
            res["uneven"] = {"skipped": f"needs at least {UNEVEN_MIN_SERVER_CPUS} server CPUs "
                                        f"(this run has {len(shape.server_cpus)}; --uneven runs "
                                        "it anyway); see docs/benchmark.md"}

        # 7. Noise guard: the baseline again at the common load, as at the start.
        s = b.start("baseline", None, W, scpus)
        servers.append(s)
        end = b.load(s, f"baseline at {common}/s (noise guard, end)", qps=common)
        s.stop()
        res["noise"]["baseline_end"] = end["server"]["cpu_us_per_request"]
        res["noise"]["drift_pct"] = pct(res["noise"]["baseline_end"],
                                        res["noise"]["baseline_start"])
        res["noise"]["indicative"] = abs(res["noise"]["drift_pct"]) > NOISE_LIMIT_PCT
    finally:
        for s in servers:
            s.stop()
    res["runs"] = b.runs
    res["dry_run_commands"] = b.record
    shutil.rmtree(tmp, ignore_errors=True)
    return res


def fmt_lat(r):
    lat = r["latency_us"]
    return (f"{lat['avg']/1000:.2f} | {lat['p90']/1000:.2f} | {lat['p99']/1000:.2f} | "
            f"{lat['p999']/1000:.2f}")


COUNTERS_NOTE = ("Scheduler counters from the server's admin port (`/cmds/stats`, summed over its "
                 "thread models), each per request the server served: fibers stolen by an idle "
                 "worker, parks and wake-ups of idle workers, µs workers spent spinning for "
                 "work, and replies written by a thread other than the connection's reactor. "
                 "n/a: the server does not report it (a merged model has no steals, parks or "
                 "spinning; older servers have none of these but steals).")


def uneven_markdown(u):
    """The uneven-load section's markdown lines (res["uneven"])."""
    out = ["## Uneven load" + (f" ({u['workers']} workers; in (a) the hot connection keeps up to "
                               f"{u['hot_inflight']} calls in flight)" if "cases" in u else ""),
           ""]
    if not u:
        return out + ["Not run.", ""]
    if "skipped" in u:
        return out + [f"Skipped: {u['skipped']}.", ""]
    out += [f"{u['workers']} workers{'' if u['pinned'] else ' (not pinned)'}, where work stealing "
            "should pay: (a) one connection carries "
            f"{u['hot_share']:.0%} of all requests, with up to {u['hot_inflight']} calls in flight "
            "on it (the others spread over the other connections as usual); (b) 5% of the "
            "requests, spread over all connections, spin 200 µs on the server's CPU "
            "(`--tail-ratio 0.05 --tail-delay 200us --tail-kind spin`; P99 and P999 are of the "
            "other requests, while the QPS criterion holds both to P999 <= 10 ms). QPS at "
            "P999 <= 10 ms as in the pure-server table; then both models at one common rate, "
            f"{u['common_share']:.0%} of the lower maximum, for latency, server CPU and counters. "
            + COUNTERS_NOTE + " Here at the common rate.", "",
            "| case | model | QPS at P999 <= 10 ms | fiber/merge QPS | common rate | P99 | P999 "
            "| server µs/request | " + " | ".join(h for _, h, _ in COUNTER_COLUMNS) + " |",
            "|---|---|---|---|---|---|---|---|" + "---|" * len(COUNTER_COLUMNS)]
    names = {"hot": f"(a) {u['hot_share']:.0%} on one connection ({u['hot_inflight']} in flight)",
             "spin": "(b) 5% spin 200 µs"}
    for case, e in u["cases"].items():
        ratio = e.get("fiber_merge_qps")
        for model in ("merge", "fiber"):
            mx, at = e[model]["max"], e[model]["at_common_load"]
            bound = " (client-bound)" if mx["client"]["bottleneck"] else ""
            if mx.get("found_by", "").startswith("no open-loop rate"):
                bound += " (closed loop: no open-loop rate qualified)"
            lat = at["latency_us"]
            out.append(f"| {names.get(case, case)} | {model} | {mx['qps']:.0f}{bound} | "
                       f"{'' if model == 'merge' or ratio is None else f'{ratio:.2f}x'} | "
                       f"{e['common_qps']} | {lat['p99']/1000:.2f} | {lat['p999']/1000:.2f} | "
                       f"{at['server']['cpu_us_per_request']:.2f} | "
                       f"{counter_cells(e[model].get('counters_per_request', {}))} |")
    return out + [""]


def markdown(res):
    m, s = res["machine"], res["settings"]
    sh = s["shape"]
    out = ["# Seed table: fiber vs merge", "",
           f"Machine: {m['cpu']}, {m['cpus']} CPUs, Linux {m['kernel']}. Commit {m['commit']}, "
           f"{m['date']}.", "",
           f"Shape: server on CPUs {sh['server_cpus']} ({sh['workers']} worker(s)); load client "
           f"(`trpc_bench`) on CPUs {sh['client_cpus']} ({sh['client_threads']} thread(s)); "
           f"{s['connections']} connections, 1 request in flight each, {s['payload_bytes']}-byte "
           f"body; {s['duration_s']} s per run after {s['warmup_s']} s warm-up. Latencies in ms, "
           "measured by the caller from the intended send time (open loop, coordinated-omission "
           "corrected).", ""]
    if s.get("smoke"):
        out += [SMOKE_NOTE, ""]
    n = res.get("noise", {})
    if n:
        line = (f"Noise guard: the baseline's server CPU per request was {n['baseline_start']:.2f} "
                f"µs at the start and {n['baseline_end']:.2f} µs at the end "
                f"({n['drift_pct']:+.1f}%).")
        if n["indicative"]:
            line += (f" **More than {NOISE_LIMIT_PCT:.0f}%: the machine's speed changed during "
                     "the run, so every figure below is indicative only.**")
        else:
            line += f" Within {NOISE_LIMIT_PCT:.0f}%: the figures stand."
        out += [line, ""]
    out += [f"## Pure server ({sh['workers']} worker(s))", "",
            "| server | QPS at P999 <= 10 ms | avg | P90 | P99 | P999 | server µs/request "
            f"at {s['common_load_qps']}/s (median of {s.get('cpu_rounds', 1)} alternating rounds, "
            "min-max) | vs baseline (CPU) | how the QPS was found |",
            "|---|---|---|---|---|---|---|---|---|"]
    base_cpu = res["pure"]["baseline"]["at_common_load"]["server"]["cpu_us_per_request"]
    base_qps = res["pure"]["baseline"]["max"]["qps"]
    for name, e in res["pure"].items():
        mx, cl = e["max"], e["at_common_load"]
        cpu = cl["server"]["cpu_us_per_request"]
        bound = " (client-bound)" if mx["client"]["bottleneck"] else ""
        rounds = e.get("cpu_rounds", [cpu])
        out.append(f"| {name} | {mx['qps']:.0f}{bound} ({mx['qps']/base_qps:.0%} of baseline) | "
                   f"{fmt_lat(mx)} | {cpu:.2f} ({min(rounds):.2f}-{max(rounds):.2f}) | "
                   f"{cpu/base_cpu:.2f}x | {mx.get('found_by', '')} |")
    merge_cpu = res["pure"]["merge"]["at_common_load"]["server"]["cpu_us_per_request"]
    fiber_cpu = res["pure"]["fiber"]["at_common_load"]["server"]["cpu_us_per_request"]
    per_round = lambda a, b: ", ".join(
        f"{x / y:.2f}x" for x, y in zip(res["pure"][a].get("cpu_rounds", []),
                                         res["pure"][b].get("cpu_rounds", [])))
    out += ["", "Server CPU per request, round by round: merge/baseline "
            f"{per_round('merge', 'baseline')}; fiber/merge {per_round('fiber', 'merge')}."]
    out += ["", f"Fiber/merge server CPU per request (medians): {fiber_cpu/merge_cpu:.2f}x. "
            f"Fiber/merge QPS: {res['pure']['fiber']['max']['qps']/res['pure']['merge']['max']['qps']:.0%}.", ""]
    if res.get("grpc"):
        out += [f"## gRPC (unary over h2c, {sh['workers']} worker(s), same load settings)", "",
                "| server | QPS at P999 <= 10 ms | avg | P90 | P99 | P999 | server µs/request at "
                f"{s['common_load_qps']}/s | vs trpc merge (CPU) |", "|---|---|---|---|---|---|---|---|"]
        for label, e in res["grpc"].items():
            mx, at = e["max"], e["at_common_load"]
            cpu = at["server"]["cpu_us_per_request"]
            bound = " (client-bound)" if mx["client"]["bottleneck"] else ""
            rate = e.get("cpu_rate", s["common_load_qps"])
            own = f" (at {rate}/s)" if rate != s["common_load_qps"] else ""
            out.append(f"| {label} | {mx['qps']:.0f}{bound} | {fmt_lat(mx)} | {cpu:.2f}{own} | "
                       f"{cpu / merge_cpu:.2f}x |")
        if any(e.get("cpu_rate", s["common_load_qps"]) != s["common_load_qps"]
               for e in res["grpc"].values()):
            out += ["", "A rate in brackets: that server's ceiling is below the common rate, so "
                    "its CPU per request is taken at 60% of its own ceiling."]
        if s.get("grpc_peer"):
            out += ["", f"grpc++ row: {s['grpc_peer']}."]
        out += [""]
    out += [f"## Forward (proxy, {sh['workers']} worker(s))", "",
            "| model | QPS at P999 <= 10 ms | avg | P90 | P99 | P999 | server µs/request | "
            "vs pure server QPS |", "|---|---|---|---|---|---|---|---|"]
    for model, e in res["forward"].items():
        mx = e["max"]
        pure = res["pure"][model]["max"]["qps"]
        out.append(f"| {model} | {mx['qps']:.0f} | {fmt_lat(mx)} | "
                   f"{mx['server']['cpu_us_per_request']:.2f} | {mx['qps']/pure:.0%} |")
    out += ["", f"## Long tail ({sh['longtail_workers']} workers, 10k QPS; 1% of requests "
            "delayed 5 ms by the server)", "",
            "Percentiles of the untagged requests only (tagged ones are excluded by their tag). "
            f"{s.get('tail_rounds', 1)} alternating rounds of {s.get('tail_duration_s', 2)} s per "
            "kind (none, sleep, spin, none, ...). Each round's rise compares its P99 with the same "
            "round's 'none'; the row gives the median rise and a bootstrap 90% interval of it "
            f"over the rounds, and judges the row's claim against {s['tail_bound_pct']:.0f}%: "
            "met or missed when the whole interval is on one side, else undecided at this noise. "
            "Latency columns are from the round with the median P99.",
            "", "| model | delay kind | avg | P99 | P999 | claim | median P99 rise | 90% interval "
            "| verdict | P99 by round |", "|---|---|---|---|---|---|---|---|---|---|"]
    claim_text = {"le": f"rise ≤ {s['tail_bound_pct']:.0f}%",
                  "gt": f"rise > {s['tail_bound_pct']:.0f}%"}
    for model, e in res["longtail"].items():
        a = e["none"]["latency_us"]
        by_round = lambda kind: ", ".join(f"{v / 1000:.3f}"
                                          for v in e.get(kind + "_p99_rounds", []))
        out.append(f"| {model} | none | {a['avg']/1000:.3f} | {a['p99']/1000:.3f} | "
                   f"{a['p999']/1000:.3f} | | | | | {by_round('none')} |")
        for kind in ("sleep", "spin"):
            bl = e[kind]["latency_us"]
            lo, hi = e[kind + "_rise_interval"]
            out.append(f"| {model} | {kind} | {bl['avg']/1000:.3f} | {bl['p99']/1000:.3f} | "
                       f"{bl['p999']/1000:.3f} | {claim_text[e[kind + '_claim']]} | "
                       f"{e[kind + '_rise_median']:+.1f}% | {lo:+.1f}% .. {hi:+.1f}% | "
                       f"**{e[kind + '_verdict']}** | {by_round(kind)} |")
    out += [""]
    sc = res.get("scaling", {})
    out += ["## Worker scaling", ""]
    if "skipped" in sc:
        out += [f"Skipped: {sc['skipped']}.", ""]
    else:
        out += [COUNTERS_NOTE + " Here over all the runs of the row's QPS search.", "",
                "| model | workers | QPS at P999 <= 10 ms | P999 | server µs/request | "
                + " | ".join(h for _, h, _ in COUNTER_COLUMNS) + " |",
                "|---|---|---|---|---|" + "---|" * len(COUNTER_COLUMNS)]
        for model, steps in sc.items():
            for w, e in steps.items():
                mx = e["max"]
                out.append(f"| {model} | {w} | {mx['qps']:.0f} | "
                           f"{mx['latency_us']['p999']/1000:.2f} | "
                           f"{mx['server']['cpu_us_per_request']:.2f} | "
                           f"{counter_cells(e.get('counters_per_request', {}))} |")
        out += [""]
    out += uneven_markdown(res.get("uneven", {}))
    out += ["Anchor (docs/benchmark.md, 8 EPYC cores): pure fiber 508k / merge 578k QPS; forward "
            "207k both; long tail P99 rise fiber +38.9%, merge +376%.", "",
            "![long-tail latency CDFs](latest_longtail.png)", ""]
    warnings = [f"- {r['label']}: " + "; ".join(r["client"]["warnings"])
                for r in res["runs"] if r["client"].get("warnings")]
    if warnings:
        out += ["## Load-client warnings", ""] + warnings + [""]
    return "\n".join(out)


def plot(res, path, tmp):
    """Long-tail CDFs (fiber vs merge, none vs sleep) with gnuplot, from the spectra."""
    gp = shutil.which("gnuplot")
    if gp is None:
        log("gnuplot not found: no plot")
        return False
    series = []
    for model, e in res["longtail"].items():
        for kind in ("none", "sleep", "spin"):
            data = os.path.join(tmp, f"{model}_{kind}.dat")
            with open(data, "w") as f:
                for p, v in e[kind]["spectrum"]:
                    frac = p / 100.0 if p > 1.0 else p
                    if frac >= 0.99999:  # the last point is at 100%: infinite nines
                        continue
                    # y = nines: 1 at P90, 2 at P99, 3 at P99.9, so the tail gets the room.
                    f.write(f"{max(v, 1) / 1000.0} {-math.log10(1.0 - frac)}\n")
            series.append((data, f"{model}, {kind}"))
    plots = ", ".join(f"'{d}' using 1:2 with lines lw 2 title '{t}'" for d, t in series)
    script = f"""set terminal pngcairo size 1000,600
set output '{path}'
set title 'Long tail: untagged request latency at 10k QPS (1% of requests delayed 5 ms)'
set xlabel 'latency (ms, log)'
set ylabel 'percentile'
set logscale x
set ytics ("0%%" 0, "50%%" 0.30103, "90%%" 1, "99%%" 2, "99.9%%" 3, "99.99%%" 4)
set yrange [0:4.2]
set key top left
set grid
plot {plots}
"""
    subprocess.run([gp], input=script, text=True, check=True)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None,
                    help="where the table goes (default: <build>/results, untracked)")
    ap.add_argument("--publish", action="store_true",
                    help="also update the committed benchmark/results/latest.* and plot")
    ap.add_argument("--quick", action="store_true", help="shorter runs, fewer rounds")
    ap.add_argument("--smoke", action="store_true",
                    help="every step on a tiny budget (0.2 s runs, one round): checks the script "
                         "works; the figures mean nothing")
    ap.add_argument("--server-cpus", help="CPUs of the servers, e.g. 0-7 (default: by machine)")
    ap.add_argument("--client-cpus", help="CPUs of the load client, e.g. 8-15")
    ap.add_argument("--workers", type=int, help="server workers (default: one per server CPU)")
    ap.add_argument("--client-threads", type=int,
                    help="load-client threads (default: one per client CPU)")
    ap.add_argument("--tail-rounds", type=int, default=0,
                    help="alternating long-tail rounds per kind (default 9; --quick 3)")
    ap.add_argument("--uneven", action="store_true",
                    help=f"run the uneven-load section even with fewer than "
                         f"{UNEVEN_MIN_SERVER_CPUS} server CPUs (its figures then mean little)")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the commands (and server YAML) it would run, run nothing")
    args = ap.parse_args()
    shape = Shape.default(NCPU)
    if args.server_cpus or args.client_cpus or args.workers or args.client_threads:
        server = parse_cpus(args.server_cpus) if args.server_cpus else shape.server_cpus
        client = parse_cpus(args.client_cpus) if args.client_cpus else shape.client_cpus
        workers = args.workers or len(server)
        threads = args.client_threads or len(client)
        # Explicit CPUs: everything pinned, the long-tail test included.
        shape = Shape(server, client, workers, threads)
    args.shape = shape
    res = run(args)
    if args.dry_run:
        markdown(res)  # the table's code runs on the stand-in results too
        for c in res["dry_run_commands"]:
            if "yaml" in c:
                print(f"# yaml for {c['for']}:\n" + "\n".join("#   " + l for l in
                                                             c["yaml"].splitlines()))
            else:
                print(("server: " if "server" in c else "load:   ") + " ".join(c["cmd"]))
        return
    outs = [args.out or os.path.join(args.build, "results")]
    if args.publish:
        outs.append(os.path.join(ROOT, "benchmark/results"))
    md = markdown(res)
    for out in outs:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "latest.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(out, "latest.md"), "w") as f:
            f.write(md)
        with tempfile.TemporaryDirectory() as tmp:
            plot(res, os.path.join(out, "latest_longtail.png"), tmp)
    print(md)
    log("wrote " + " and ".join(f"{o}/latest.{{md,json}}" for o in outs))


if __name__ == "__main__":
    main()
