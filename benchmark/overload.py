#!/usr/bin/env python3
"""Goodput under overload: one echo server worker, offered 0.5x to 3x its capacity in an open
loop, with no limit, a fixed max_concurrency and max_concurrency: auto, in both thread models.

For each handler kind (CPU-bound: 100 us of spinning; sleeping: 1 ms of waiting) the server's
capacity is measured first (closed loop, no limit), then each offered rate runs for a window
with a 100 ms caller deadline. Goodput is counted as the caller sees it (trpc_bench's
`goodput`): replies that came back OK within 100 ms of their *intended* send time, per second.
A request that waited in the load client for a free connection until its deadline is dropped
there as a timeout, and an OK reply after the deadline is counted as late, not as goodput. Also:
P99 of the accepted calls (from the intended send time), P99 of the refused ones, and (at 2x)
the P99 of a light probe in the second right after the load stops, against the unloaded P99.

  benchmark/overload.py [--build DIR] [--out DIR] [--quick | --smoke]

Writes overload.md, overload.json and overload.png to --out (default build/results; the
committed copies in benchmark/results/ are updated by hand from there). Takes ~7 minutes here
(--quick ~5). --smoke runs every step on a tiny budget (0.3 s windows) to check the script
works; its figures mean nothing. docs/overload.md explains the limiters and shows the table.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_table import (CLIENT_CPU, ROOT, SERVER_CPU, SMOKE_NOTE, Server,  # noqa: E402
                        log, machine_info, thread_model_yaml)

DEADLINE_MS = 100
LEVELS = [0.5, 1.0, 1.5, 2.0, 3.0]
KINDS = {
    # name: (tail kind, delay, server-side time of one request in seconds)
    "cpu": ("spin", "100us", 100e-6),
    "sleep": ("sleep", "1ms", 1e-3),
}


def server_yaml(model, listen_file, limit):
    extra = f"      max_concurrency: {limit}\n" if limit != "none" else ""
    return thread_model_yaml(model, 1) + f"""server:
  app: bench
  server: overload
  listen_file: {listen_file}
  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
      timeout: 60000
      max_conn_num: 100000
{extra}plugins:
  log: {{level: error}}
"""


class Runner:
    def __init__(self, build, tmp, warmup):
        self.build = build
        self.tmp = tmp
        self.warmup = warmup

    def start(self, model, limit):
        path = os.path.join(self.tmp, f"{model}_{limit}.yaml")
        listen_file = os.path.join(self.tmp, "listen.txt")
        with open(path, "w") as f:
            f.write(server_yaml(model, listen_file, limit))
        argv = [os.path.join(self.build, "examples/echo/echo_server"), "--config", path]
        return Server(argv, str(SERVER_CPU), f"{model}/{limit}", listen_file=listen_file)

    def load(self, server, kind, qps, seconds, warmup=None, connections=64, inflight=8,
             timeout_ms=DEADLINE_MS):
        warmup = self.warmup if warmup is None else warmup
        tail_kind, delay, _ = KINDS[kind]
        out = os.path.join(self.tmp, "run.json")
        cmd = ["taskset", "-c", str(CLIENT_CPU),
               os.path.join(self.build, "benchmark/trpc_bench/trpc_bench"),
               "--target", f"127.0.0.1:{server.port}", "--connections", str(connections),
               "--inflight", str(inflight), "--timeout", str(timeout_ms),
               "--tail-ratio", "1", "--tail-delay", delay, "--tail-kind", tail_kind,
               "--duration", str(seconds), "--warmup", str(warmup), "--quiet",
               "--json", out]
        if qps > 0:
            cmd += ["--qps", str(int(qps))]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def summarize(r):
    # Every request is tagged (--tail-ratio 1): the accepted calls' latency is the tail's.
    ok_lat = (r.get("tail") or {}).get("latency_us") or {}
    err_lat = r.get("error_latency_us") or {}
    errors = r.get("errors") or {}
    window = r["window_s"]
    return {
        # The plan: sent, expired in the client, or still waiting when the window ended.
        "offered": (r["requests"] + r["unsent"]) / window,
        "goodput": r["goodput"],
        "ok_per_s": r["ok"] / window,
        "late": r["late"],
        "expired": r["expired"],
        "ok_p99_us": ok_lat.get("p99"),
        "refused": errors.get("22", 0),
        "timeouts": errors.get("101", 0),
        "other_errors": sum(v for k, v in errors.items() if k not in ("22", "101")),
        "refusal_p99_us": err_lat.get("p99") if errors.get("22", 0) else None,
        "client_bottleneck": r["client"]["bottleneck"],
    }


def run(args):
    tmp = tempfile.mkdtemp(prefix="overload.")
    # Seconds: warm-up, window, window at 2x, the capacity and unloaded runs, the probe after.
    if args.smoke:
        warmup, window, window_2x, probe, after_s = 0.1, 0.3, 0.3, 0.3, 0.3
    elif args.quick:
        warmup, window, window_2x, probe, after_s = 1, 3, 4, 3, 1
    else:
        warmup, window, window_2x, probe, after_s = 1, 4, 10, 3, 1
    runner = Runner(args.build, tmp, warmup)
    res = {"machine": machine_info(), "deadline_ms": DEADLINE_MS, "smoke": args.smoke,
           "kinds": {}}
    try:
        for kind, (_, delay, service_s) in KINDS.items():
            if kind not in args.kinds:
                continue
            res["kinds"][kind] = {"delay": delay, "models": {}}
            for model in args.models:
                srv = runner.start(model, "none")
                try:
                    # Closed loop with a deadline long enough that nothing times out: the
                    # server's own rate, whatever its queue.
                    cap_run = runner.load(srv, kind, 0, probe, timeout_ms=30_000)
                    cap = cap_run["ok"] / cap_run["window_s"]
                    light = max(50, cap * 0.1)
                    unloaded = runner.load(srv, kind, light, probe)
                finally:
                    srv.stop()
                # A fixed limit sized by hand, as a user would: in-flight work for
                # --fixed-factor service times at capacity, at least 4.
                fixed = max(4, round(cap * args.fixed_factor * service_s))
                entry = {"capacity_qps": cap, "fixed_limit": fixed,
                         "unloaded_p99_us": summarize(unloaded)["ok_p99_us"], "rows": {}}
                log(f"{kind} {model}: capacity {cap:.0f} QPS, unloaded P99 "
                    f"{entry['unloaded_p99_us']} us, fixed limit {fixed}")
                for label in args.limits:
                    limit = str(fixed) if label == "fixed" else label
                    rows = []
                    for level in args.levels:
                        srv = runner.start(model, limit)
                        try:
                            secs = window_2x if level == 2.0 else window
                            row = summarize(runner.load(srv, kind, cap * level, secs))
                            row["level"] = level
                            if level == 2.0:
                                # The second right after the load stops, at the light rate.
                                after = runner.load(srv, kind, light, after_s, warmup=0)
                                row["after_p99_us"] = summarize(after)["ok_p99_us"]
                        finally:
                            srv.stop()
                        log(f"  {label:5} {level}x: goodput {row['goodput']:.0f}/s "
                            f"({row['goodput'] / cap:.0%}), OK {row['ok_per_s']:.0f}/s "
                            f"({row['late']} late), ok P99 {row['ok_p99_us']} us, "
                            f"refusal P99 {row['refusal_p99_us']} us, "
                            f"{row['expired']} expired in the client")
                        rows.append(row)
                    entry["rows"][label] = rows
                res["kinds"][kind]["models"][model] = entry
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def fmt_us(v):
    return "-" if v is None else f"{v / 1000:.2f}"


def markdown(res):
    m = res["machine"]
    out = [f"# Goodput under overload ({m['date']}, commit {m['commit']})", "",
           f"{m['cpu']}, {m['cpus']} CPUs, kernel {m['kernel']}. One server worker on CPU "
           f"{SERVER_CPU}, trpc_bench on CPU {CLIENT_CPU}, open loop, caller deadline "
           f"{res['deadline_ms']} ms. Goodput: OK replies within the deadline, counted from "
           "each request's intended send time, per second. OK/s: every OK reply, late OK: "
           "those past the deadline. Timeouts: calls that timed out, of which expired: requests "
           "that waited in the load client for a free connection (64 x 8 outstanding at most) "
           "until their deadline and were not sent. OK P99 from the intended send time. "
           "Latencies in ms. A * after the offered rate: the load client flagged that run as "
           "possibly limited by itself (its CPU, a sent rate short of the plan, or its sends' "
           "lateness P99; trpc_bench's client.bottleneck).", ""]
    if res.get("smoke"):
        out += [SMOKE_NOTE, ""]
    for kind, k in res["kinds"].items():
        for model, e in k["models"].items():
            out += [f"## {kind} handler ({k['delay']}), {model} model", "",
                    f"Capacity {e['capacity_qps']:.0f} QPS; unloaded P99 "
                    f"{fmt_us(e['unloaded_p99_us'])} ms; fixed limit {e['fixed_limit']}.", "",
                    "| limit | offered | goodput | % of capacity | OK/s | late OK | OK P99 "
                    "| refused | refusal P99 | timeouts (expired) | P99 in the second after |",
                    "|---|---|---|---|---|---|---|---|---|---|---|"]
            for label, rows in e["rows"].items():
                for r in rows:
                    flag = "*" if r["client_bottleneck"] else ""
                    out.append(
                        f"| {label} | {r['level']}x ({r['offered']:.0f}/s){flag} "
                        f"| {r['goodput']:.0f} "
                        f"| {r['goodput'] / e['capacity_qps']:.0%} | {r['ok_per_s']:.0f} "
                        f"| {r['late']} | {fmt_us(r['ok_p99_us'])} "
                        f"| {r['refused']} | {fmt_us(r['refusal_p99_us'])} "
                        f"| {r['timeouts']} ({r['expired']}) "
                        f"| {fmt_us(r.get('after_p99_us'))} |")
            out.append("")
    return "\n".join(out) + "\n"


def plot(res, path, tmp):
    gp = shutil.which("gnuplot")
    if gp is None:
        log("gnuplot not found: no plot")
        return False
    panels = []
    for kind, k in res["kinds"].items():
        for model, e in k["models"].items():
            series = []
            for label, rows in e["rows"].items():
                data = os.path.join(tmp, f"{kind}_{model}_{label}.dat")
                with open(data, "w") as f:
                    for r in rows:
                        f.write(f"{r['level']} {r['goodput'] / e['capacity_qps']}\n")
                series.append(f"'{data}' using 1:2 with linespoints lw 2 title '{label}'")
            panels.append(f"set title '{kind} handler ({k['delay']}), {model}'\n"
                          f"plot {', '.join(series)}, 1 with lines dt 2 lc 'gray' notitle\n")
    script = f"""set terminal pngcairo size 1200,900
set output '{path}'
set multiplot layout 2,2 title 'Goodput vs offered load (one worker, {res["deadline_ms"]} ms deadline)'
set xlabel 'offered load (x capacity)'
set ylabel 'goodput (x capacity)'
set yrange [0:1.2]
set xrange [0.4:3.1]
set key bottom left
set grid
{''.join(panels)}unset multiplot
"""
    subprocess.run([gp], input=script, text=True, check=True)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/results"))
    ap.add_argument("--quick", action="store_true", help="shorter runs (3 s windows)")
    ap.add_argument("--smoke", action="store_true",
                    help="every step on a tiny budget (0.3 s windows): checks the script runs; "
                         "the figures mean nothing")
    ap.add_argument("--kinds", default="cpu,sleep", help="handler kinds: cpu,sleep")
    ap.add_argument("--models", default="merge,fiber")
    ap.add_argument("--limits", default="none,fixed,auto")
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)),
                    help="offered loads, x capacity")
    ap.add_argument("--fixed-factor", type=float, default=6,
                    help="the fixed limit: this many service times of work at capacity (>= 4)")
    args = ap.parse_args()
    args.kinds = args.kinds.split(",")
    args.models = args.models.split(",")
    args.limits = args.limits.split(",")
    args.levels = [float(x) for x in args.levels.split(",")]
    res = run(args)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "overload.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(args.out, "overload.md"), "w") as f:
        f.write(md)
    with tempfile.TemporaryDirectory() as tmp:
        if plot(res, os.path.join(args.out, "overload.png"), tmp):
            md += "\n![goodput vs offered load](overload.png)\n"
    print(md)
    log(f"written to {args.out}/overload.{{md,json,png}}")


if __name__ == "__main__":
    main()
