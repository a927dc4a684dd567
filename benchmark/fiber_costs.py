#!/usr/bin/env python3
"""What each thread model does per request besides the request itself: server CPU, context
switches, epoll waits, eventfd writes and the scheduler's and reactors' counters, for the echo
server in the merge and the fiber model at a fixed rate below saturation.

On a small machine the per-request CPU of the two models at 1 worker says little about many
workers: what the fiber model adds (idle workers polling, spinning and parking, wake-ups of
parked siblings, replies handed across threads) shows only with several workers and idle time
between requests. This runs the server with 2 workers (default) on the given CPUs at a fixed
open-loop rate and divides each count by the requests served. docs/benchmark.md explains the
method and what each column means.

  benchmark/fiber_costs.py [--build DIR] [--qps N] [--seconds S] [--rounds R] [--workers N]
                           [--server-cpus 0,1] [--connections N] [--json FILE]

Syscall counts need `perf` (linux-perf) and permission to trace the server
(kernel.perf_event_paranoid <= 1, or root); without them the table has the counters, CPU time
and context switches only (from /proc). Loopback only; every run is bounded by --seconds.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT_S = 10

# perf events: the syscalls that the models' idle and hand-off paths make.
PERF_EVENTS = ["task-clock", "context-switches", "syscalls:sys_enter_epoll_pwait2",
               "syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_read",
               "syscalls:sys_enter_write", "syscalls:sys_enter_futex"]
# The admin port's counters, summed over the server's thread models.
COUNTERS = ["steals", "parks", "wakeups", "spin_ns", "loop_wakeups", "cross_thread_replies"]


def yaml_for(model, workers, listen_file):
    if model == "fiber":
        tm = (f"    fiber:\n      - instance_name: f\n        concurrency_hint: {workers}\n")
    else:
        tm = (f"    default:\n      - instance_name: m\n        io_handle_type: merge\n"
              f"        io_thread_num: {workers}\n")
    return (f"global:\n  threadmodel:\n{tm}server:\n  app: bench\n  server: echo\n"
            f"  admin_port: auto\n  listen_file: {listen_file}\n  service:\n"
            f"    - name: trpc.test.helloworld.Greeter\n      protocol: trpc\n"
            f"      ip: 127.0.0.1\n      port: 0\n      timeout: 1000\n"
            f"plugins:\n  log:\n    level: warn\n")


def read_listen_file(path, proc):
    """{'Greeter': 'ip:port', 'admin': 'ip:port'} once the server has written its listen file."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"echo_server exited with {proc.returncode} before listening")
        if os.path.exists(path) and os.path.getsize(path) > 0:
            out = {}
            with open(path) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 2:
                        out["admin" if parts[0] == "admin" else parts[0]] = parts[1]
            if "admin" in out and any(k != "admin" for k in out):
                return out
        time.sleep(0.05)
    raise RuntimeError("echo_server did not write its listen file in time")


def counters(admin):
    try:
        with urllib.request.urlopen(f"http://{admin}/cmds/stats", timeout=2) as f:
            stats = json.load(f)
    except (OSError, ValueError):
        return {}
    # A counter no thread model reports (the merged model has no steals; an older server has
    # none of the newer ones) stays out: unknown, not 0.
    out = {}
    for t in stats.get("threadmodels", []):
        for k in COUNTERS:
            if isinstance(t.get(k), (int, float)):
                out[k] = out.get(k, 0) + t[k]
    return out


def proc_switches(pid):
    """Voluntary + involuntary context switches of all the process's threads (/proc)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def perf_usable():
    if shutil.which("perf") is None:
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", "syscalls:sys_enter_read", "true"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return r.returncode == 0 and "not supported" not in r.stderr


def one_run(args, model, tmp, use_perf):
    listen = os.path.join(tmp, f"{model}.listen")
    cfg = os.path.join(tmp, f"{model}.yaml")
    with open(cfg, "w") as f:
        f.write(yaml_for(model, args.workers, listen))
    if os.path.exists(listen):
        os.remove(listen)
    server = subprocess.Popen(["taskset", "-c", args.server_cpus,
                               os.path.join(args.build, "examples/echo/echo_server"),
                               "--config", cfg], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    perf = None
    try:
        addrs = read_listen_file(listen, server)
        target = next(v for k, v in addrs.items() if k != "admin")
        c0, sw0, cpu0 = counters(addrs["admin"]), proc_switches(server.pid), proc_cpu_s(server.pid)
        perf_out = os.path.join(tmp, f"{model}.perf")
        if use_perf:
            perf = subprocess.Popen(["perf", "stat", "-x,", "-e", ",".join(PERF_EVENTS), "-p",
                                     str(server.pid), "-o", perf_out],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        js = os.path.join(tmp, f"{model}.json")
        subprocess.run([os.path.join(args.build, "benchmark/trpc_bench/trpc_bench"),
                        "--target", target, "--connections", str(args.connections),
                        "--qps", str(args.qps), "--duration", str(args.seconds),
                        "--warmup", "0", "--quiet", "--json", js],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=args.seconds + 60, check=True)
        if perf is not None:
            perf.send_signal(2)
            perf.wait(timeout=10)
        c1, sw1, cpu1 = counters(addrs["admin"]), proc_switches(server.pid), proc_cpu_s(server.pid)
        with open(js) as f:
            load = json.load(f)
    finally:
        if perf is not None and perf.poll() is None:
            perf.kill()
        server.terminate()
        server.wait(timeout=20)
    n = load.get("requests") or 0
    if n == 0:
        raise RuntimeError(f"{model}: no request was answered")
    row = {"requests": n, "p50_us": load["latency_us"]["p50"], "p99_us": load["latency_us"]["p99"],
           "cpu_us": (cpu1 - cpu0) * 1e6 / n, "switches": (sw1 - sw0) / n}
    for k in COUNTERS:
        if k in c0 and k in c1:
            row[k] = (c1[k] - c0[k]) / n
    if use_perf:
        ev = {}
        with open(perf_out) as f:
            for line in f:
                p = line.strip().split(",")
                if len(p) > 3 and p[0] and p[0][0].isdigit():
                    ev[p[2]] = float(p[0])
        row["perf_cpu_us"] = ev.get("task-clock", 0) * 1e3 / n  # task-clock is in ms
        row["perf_switches"] = ev.get("context-switches", 0) / n
        row["epoll_waits"] = (ev.get("syscalls:sys_enter_epoll_pwait2", 0) +
                              ev.get("syscalls:sys_enter_epoll_wait", 0)) / n
        row["reads"] = ev.get("syscalls:sys_enter_read", 0) / n
        row["writes"] = ev.get("syscalls:sys_enter_write", 0) / n  # eventfd (replies use sendto)
        row["futex"] = ev.get("syscalls:sys_enter_futex", 0) / n
    return row


COLUMNS = [("cpu_us", "server CPU µs", 1), ("perf_cpu_us", "task-clock µs", 1),
           ("switches", "context switches", 3), ("epoll_waits", "epoll waits", 3),
           ("writes", "eventfd writes", 3), ("reads", "reads", 3), ("futex", "futex", 3),
           ("loop_wakeups", "loop wake-ups", 3), ("cross_thread_replies", "cross-thread replies", 3),
           ("steals", "steals", 3), ("parks", "parks", 3), ("wakeups", "worker wake-ups", 3),
           ("spin_ns", "spin µs", 3)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--qps", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per model")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--server-cpus", default="0,1", help="taskset list for the server")
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    if not 1 <= args.seconds <= 600 or not 1 <= args.rounds <= 20:
        sys.exit("--seconds 1..600 and --rounds 1..20")
    use_perf = perf_usable()
    tmp = tempfile.mkdtemp(prefix="fiber_costs.")
    rows = {"merge": [], "fiber": []}
    try:
        for r in range(args.rounds):
            for model in ("merge", "fiber"):
                rows[model].append(one_run(args, model, tmp, use_perf))
                print(f"round {r + 1} {model}: " + ", ".join(
                    f"{k} {v:.3f}" for k, v in rows[model][-1].items()), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.workers} workers on CPUs {args.server_cpus}, {args.qps} requests/s for "
          f"{args.seconds} s, {args.connections} connections, {args.rounds} rounds; per request, "
          f"median of the rounds (min-max){'' if use_perf else '; no perf: syscalls not counted'}\n")
    print("| per request | merge | fiber |\n|---|---|---|")
    for key, label, digits in COLUMNS:
        cells = []
        for model in ("merge", "fiber"):
            vals = [row[key] / (1000 if key == "spin_ns" else 1) for row in rows[model]
                    if key in row]
            cells.append("" if not vals else f"{statistics.median(vals):.{digits}f} "
                         f"({min(vals):.{digits}f}-{max(vals):.{digits}f})")
        if any(cells):
            print(f"| {label} | {cells[0]} | {cells[1]} |")
    for model in ("merge", "fiber"):
        p99 = [row["p99_us"] for row in rows[model]]
        print(f"\n{model}: P99 {statistics.median(p99):.0f} µs (median of rounds)", end="")
    print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"settings": vars(args), "perf": use_perf, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
