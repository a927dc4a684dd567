#!/usr/bin/env python3
"""Stream cost: what one stream message costs the server, over trpc and gRPC, against a unary
trpc call and against grpc++'s streaming echo, all driven by the same client (trpc_bench
--stream) with the same settings.

The servers: helloworld_server (examples/helloworld) in the merged and the fiber model, one
worker, serving the Greeter over trpc and gRPC at once (BidiStream echoes each message; SayHello
is the unary call), and grpc_echo_server (benchmark/baseline, grpc++'s callback API, one core)
serving the same BidiStream. The server is pinned to one core, trpc_bench to the other. 64-byte
messages (HelloRequest.msg), three loads:

  (a) one stream (one connection), closed loop: one message in flight, the echo sends the next;
  (b) one stream at a fixed 20,000 messages/s (open loop: each message is written at its
      intended time, whatever is in flight; latency counts from the intended time);
  (c) 1,000 streams (10 connections x 100) at 10 messages/s each, 10,000 messages/s in all.

(a) and (b) also run unary trpc calls (SayHello, one connection; closed loop with one call in
flight, and 20,000 calls/s with up to 100 in flight). Each row gives messages/s, the server's
CPU time per message (from /proc, read by trpc_bench --server-pid) and the latency, the median
over alternating rounds (the range of the CPU figure in brackets). Two goals are checked: a
trpc stream message costs <= 0.5x a unary trpc call, and our gRPC stream message costs <= 0.5x
grpc++'s.

Usage: benchmark/stream_bench.py [--build DIR] [--rounds N] [--duration S] [--warmup S]
                                 [--out DIR] [--smoke]
Writes streams.md and streams.json into --out (default benchmark/results). --smoke runs every
step on a tiny budget (one round of 0.3 s runs; (b) at 2,000/s; (c) 2 x 10 streams at 200/s)
to check the script works; its figures mean nothing.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # (no __pycache__ left in the checkout by the import below)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_table import (CLIENT_CPU, ROOT, SERVER_CPU, SMOKE_NOTE, Server, log,  # noqa: E402
                        machine_info, read_listen_file, thread_model_yaml)

PAYLOAD = 64
FUNC_STREAM = "/trpc.test.helloworld.Greeter/BidiStream"
FUNC_UNARY = "/trpc.test.helloworld.Greeter/SayHello"
TIMEOUT_MS = 2000
UNARY_OPEN_INFLIGHT = 100  # unary calls in flight on the one connection at most in (b)
GOAL_RATIO = 0.5
# raw_echo_server (benchmark/baseline): epoll and read/write by hand, nothing of the framework,
# driven as the unary rows are: what the kernel alone costs per message at that load, the floor
# under any server's figure.
FLOOR = "raw epoll echo (kernel floor)"

# (label, server, protocol, stream): the rows; a server is started once per round and serves
# all of its rows.
ROWS = [
    ("trpc stream, merge", "merge", "trpc", True),
    ("trpc stream, fiber", "fiber", "trpc", True),
    ("trpc unary, merge", "merge", "trpc", False),
    ("trpc unary, fiber", "fiber", "trpc", False),
    ("our gRPC stream, merge", "merge", "grpc", True),
    ("our gRPC stream, fiber", "fiber", "grpc", True),
    ("grpc++ stream (callback)", "grpc++", "grpc", True),
    (FLOOR, "raw", "trpc", False),
]
SERVERS = ["merge", "fiber", "grpc++", "raw"]
SECTIONS = ("a", "b", "c")


def hello_yaml(model, listen_file):
    """helloworld_server, one worker: the Greeter over trpc and over gRPC."""
    return thread_model_yaml(model, 1) + f"""server:
  app: bench
  server: helloworld
  listen_file: {listen_file}
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      max_conn_num: 100000
    - name: greeter_grpc
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      max_conn_num: 100000
plugins:
  log: {{level: warn}}
"""


def shown(cmd, build):
    """A command as the report shows it: paths from the checkout's root."""
    return [os.path.relpath(a, ROOT) if a.startswith(build + os.sep) else a for a in cmd]


class StreamBench:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        b = args.build
        self.bin = {
            "trpc_bench": os.path.join(b, "benchmark/trpc_bench/trpc_bench"),
            "hello": os.path.join(b, "examples/helloworld/helloworld_server"),
            "grpc++": os.path.join(b, "benchmark/baseline/grpc_echo_server"),
            "raw": os.path.join(b, "benchmark/baseline/raw_echo_server"),
        }
        self.started = 0
        self.runs = []  # every trpc_bench run's JSON, labelled
        self.commands = {}  # (section, row) -> the client command, and server -> its command
        self.yaml = {}  # model -> the server YAML (as run)

    def start(self, server):
        """Starts `server` pinned; returns (Server, {protocol: port})."""
        self.started += 1
        if server in ("grpc++", "raw"):
            argv = [self.bin[server], "--port", "0", "--threads", "1"]
            srv = Server(argv, str(SERVER_CPU), server)
            self.commands[server] = shown(["taskset", "-c", str(SERVER_CPU)] + argv,
                                          self.args.build)
            return srv, {"grpc" if server == "grpc++" else "trpc": srv.port}
        listen = os.path.join(self.tmp, f"listen_{self.started}.txt")
        yaml = hello_yaml(server, listen)
        path = os.path.join(self.tmp, f"hello_{server}_{self.started}.yaml")
        with open(path, "w") as f:
            f.write(yaml)
        self.yaml[server] = hello_yaml(server, "listen.txt")  # (as shown)
        argv = [self.bin["hello"], "--config", path]
        srv = Server(argv, str(SERVER_CPU), server, listen_file=listen)
        self.commands[server] = shown(["taskset", "-c", str(SERVER_CPU), self.bin["hello"],
                                       "--config", f"hello_{server}.yaml"], self.args.build)
        addrs = read_listen_file(listen, srv.proc)
        return srv, {"trpc": addrs["trpc.test.helloworld.Greeter"][1],
                     "grpc": addrs["greeter_grpc"][1]}

    def load_args(self, section, stream):
        """trpc_bench's load options for a section."""
        smoke = self.args.smoke
        if section == "a":
            return ["--connections", "1"] + ([] if stream else ["--inflight", "1"])
        if section == "b":
            rate = 2000 if smoke else self.args.rate
            return ["--connections", "1", "--qps", str(rate)] + (
                [] if stream else ["--inflight", str(UNARY_OPEN_INFLIGHT)])
        conns, per_conn, rate = (2, 10, 200) if smoke else (
            self.args.c_connections, self.args.c_streams // self.args.c_connections,
            self.args.c_streams * self.args.c_rate)
        return ["--connections", str(conns), "--streams-per-connection", str(per_conn),
                "--qps", str(rate)]

    def load(self, srv, port, section, label, protocol, stream):
        out = os.path.join(self.tmp, f"run{len(self.runs)}.json")
        args = [self.bin["trpc_bench"], "--target", f"127.0.0.1:{port}", "--protocol", protocol,
                "--func", FUNC_STREAM if stream else FUNC_UNARY]
        if stream:
            args.append("--stream")
        args += self.load_args(section, stream)
        args += ["--payload-size", str(PAYLOAD), "--duration", str(self.args.duration),
                 "--warmup", str(self.args.warmup), "--timeout", str(TIMEOUT_MS),
                 "--cpus", str(CLIENT_CPU), "--quiet"]
        cmd = ["taskset", "-c", str(CLIENT_CPU)] + args
        display = shown(cmd + ["--server-pid", "PID"], self.args.build)
        display[display.index("--target") + 1] = "127.0.0.1:PORT"
        self.commands[(section, label)] = display
        cmd += ["--server-pid", str(srv.pid), "--json", out]
        load_before = os.getloadavg()[0]
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{label} ({section}): trpc_bench exited {p.returncode}: "
                               f"{p.stderr[-2000:]}")
        with open(out) as f:
            r = json.load(f)
        r["label"] = label
        r["section"] = section
        r["loadavg_before"] = load_before
        self.runs.append(r)
        lat = r["latency_us"]
        srv_cpu = (r.get("server") or {}).get("cpu_us_per_request", 0)
        errors = sum(r["errors"].values())
        log(f"  ({section}) {label:<26} {r['qps']:>9.0f} msg/s  p50 {lat['p50']:>6} "
            f"p99 {lat['p99']:>6} us  server {srv_cpu:.2f} us/msg"
            + (f"  errors {r['errors']}" if errors else "")
            + ("  [client-bound]" if r["client"]["bottleneck"] else ""))
        return r


def summary(r):
    """What the tables show of one run."""
    srv = r.get("server") or {}
    streams = r.get("streams") or {}
    return {"qps": r["qps"], "target_qps": r["target_qps"],
            "cpu_us_per_msg": srv.get("cpu_us_per_request", 0.0),
            "server_cpu_percent": srv.get("cpu_percent", 0.0),
            "p50_us": r["latency_us"]["p50"], "p99_us": r["latency_us"]["p99"],
            "p999_us": r["latency_us"]["p999"], "client_cpu_percent": r["client"]["cpu_percent"],
            "client_bound": r["client"]["bottleneck"], "errors": r["errors"],
            "ok": r["ok"], "requests": r["requests"],
            "streams_dropped": streams.get("dropped", 0),
            "open_failures": streams.get("open_failures", {}),
            "loadavg_before": r["loadavg_before"]}


def run(args):
    tmp = tempfile.mkdtemp(prefix="stream_bench_")
    bench = StreamBench(args, tmp)
    servers = list(SERVERS)
    rows = list(ROWS)
    if not os.path.exists(bench.bin["grpc++"]):
        if os.environ.get("CI") in ("true", "1"):
            # A missing peer fails under CI rather than passing with a row left out.
            sys.exit("stream_bench: grpc_echo_server not built (libgrpc++-dev); CI=true needs it")
        log("stream_bench: grpc_echo_server not built (libgrpc++-dev): the grpc++ row is left out")
        servers.remove("grpc++")
        rows = [r for r in rows if r[1] != "grpc++"]
    results = {s: {label: [] for label, _, _, stream in rows if s != "c" or stream}
               for s in SECTIONS}
    for rnd in range(args.rounds):
        order = servers if rnd % 2 == 0 else list(reversed(servers))
        log(f"round {rnd + 1}/{args.rounds}")
        for server in order:
            srv, ports = bench.start(server)
            try:
                for section in SECTIONS:
                    for label, s, protocol, stream in rows:
                        if s != server or (section == "c" and not stream):
                            continue
                        r = bench.load(srv, ports[protocol], section, label, protocol, stream)
                        results[section][label].append(summary(r))
            finally:
                srv.stop()
    # The servers, then the loads by section in the rows' order.
    commands = {f"server {k}": bench.commands[k] for k in servers}
    for section in SECTIONS:
        for label, _, _, _ in rows:
            if (section, label) in bench.commands:
                commands[f"({section}) {label}"] = bench.commands[(section, label)]
    return {"machine": machine_info(), "smoke": args.smoke, "rounds": args.rounds,
            "duration_s": args.duration, "warmup_s": args.warmup, "payload_bytes": PAYLOAD,
            "rate_b": 2000 if args.smoke else args.rate,
            "c": {"connections": 2 if args.smoke else args.c_connections,
                  "streams": 20 if args.smoke else args.c_streams,
                  "rate_per_stream": 10 if args.smoke else args.c_rate},
            "server_cpu": SERVER_CPU, "client_cpu": CLIENT_CPU,
            "results": results, "medians": medians(results), "goals": goals(medians(results)),
            "floors": floors(medians(results)),
            "commands": commands, "server_yaml": bench.yaml, "runs": bench.runs}


def medians(results):
    out = {}
    for section, rows in results.items():
        out[section] = {}
        for label, runs in rows.items():
            if not runs:
                continue
            m = {k: statistics.median(r[k] for r in runs)
                 for k in ("qps", "cpu_us_per_msg", "server_cpu_percent", "p50_us", "p99_us",
                           "p999_us", "client_cpu_percent")}
            m["cpu_min"] = min(r["cpu_us_per_msg"] for r in runs)
            m["cpu_max"] = max(r["cpu_us_per_msg"] for r in runs)
            m["errors"] = sum(sum(r["errors"].values()) for r in runs)
            m["error_codes"] = sorted({c for r in runs for c in r["errors"]})
            m["requests"] = sum(r["requests"] for r in runs)
            m["streams_dropped"] = sum(r["streams_dropped"] for r in runs)
            m["client_bound_runs"] = sum(1 for r in runs if r["client_bound"])
            m["target_qps"] = runs[0]["target_qps"]
            out[section][label] = m
    return out


def ratio(a, b):
    return a / b if b else None


def goals(med):
    """The two goals, per model and section: (ratio, met)."""
    out = []
    for section in ("a", "b"):
        rows = med.get(section, {})
        for model in ("merge", "fiber"):
            for what, ours, peer in (
                    ("trpc stream message / unary trpc call", f"trpc stream, {model}",
                     f"trpc unary, {model}"),
                    ("our gRPC stream message / grpc++ stream message",
                     f"our gRPC stream, {model}", "grpc++ stream (callback)")):
                if ours not in rows or peer not in rows:
                    continue
                valid = rows[ours]["errors"] == 0 and rows[peer]["errors"] == 0
                x = ratio(rows[ours]["cpu_us_per_msg"], rows[peer]["cpu_us_per_msg"])
                out.append({"section": section, "goal": what, "ours": ours, "peer": peer,
                            "ratio": x, "met": None if x is None or not valid
                            else x <= GOAL_RATIO})
    return out


def floors(med):
    """Per section and model: the unary call's cost, half of it (the stream goal), and the
    kernel floor a raw epoll echo pays at the same load."""
    out = []
    for section in ("a", "b"):
        rows = med.get(section, {})
        if FLOOR not in rows:
            continue
        for model in ("merge", "fiber"):
            unary = rows.get(f"trpc unary, {model}")
            if unary is None:
                continue
            out.append({"section": section, "model": model,
                        "unary": unary["cpu_us_per_msg"],
                        "goal": unary["cpu_us_per_msg"] * GOAL_RATIO,
                        "floor": rows[FLOOR]["cpu_us_per_msg"],
                        "stream": rows.get(f"trpc stream, {model}", {}).get("cpu_us_per_msg")})
    return out


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}x"


def errors_cell(m):
    if not m["errors"]:
        return "0"
    return f"{m['errors']} ({', '.join(m['error_codes'])})"


def markdown(res):
    m = res["machine"]
    med = res["medians"]
    c = res["c"]
    lines = [
        "# Streams: server CPU per message",
        "",
        f"{m['cpu']} ({m['cpus']} CPUs), kernel {m['kernel']}, commit {m['commit']}, "
        f"{m['date']}. Server pinned to CPU {res['server_cpu']} (one worker, or grpc++ confined "
        f"to one core), the client (trpc_bench) to CPU {res['client_cpu']}; "
        f"{res['payload_bytes']}-byte messages (HelloRequest.msg, echoed); "
        f"{res['rounds']} alternating rounds of {res['duration_s']} s runs after "
        f"{res['warmup_s']} s of warm-up. Each figure is the median over the rounds; server CPU "
        "per message (from /proc) with its range in brackets. `benchmark/stream_bench.py` "
        "made this; the commands are at the end.",
        "",
    ]
    if res.get("smoke"):
        lines += [SMOKE_NOTE, ""]
    loads = [r["loadavg_before"] for r in res["runs"]]
    if loads:
        lines += [f"Load average (1 min) before the runs: {min(loads):.1f} to {max(loads):.1f} "
                  f"on {m['cpus']} CPUs (the machine is shared: other work on it disturbs the "
                  "latency figures more than the CPU ones).", ""]
    head = ("| row | messages/s | server CPU µs/message | server CPU % | p50 µs | p99 µs | "
            "client CPU % | errors |")
    sep = "|---|---|---|---|---|---|---|---|"

    def row(label, x):
        flag = " (client-bound)" if x["client_bound_runs"] else ""
        return (f"| {label} | {x['qps']:.0f}{flag} | {x['cpu_us_per_msg']:.2f} "
                f"({x['cpu_min']:.2f}-{x['cpu_max']:.2f}) | {x['server_cpu_percent']:.0f} | "
                f"{x['p50_us']:.0f} | {x['p99_us']:.0f} | {x['client_cpu_percent']:.0f} | "
                f"{errors_cell(x)} |")

    lines += ["## (a) One stream, closed loop", "",
              "One connection, one stream, one message in flight (unary rows: one call in "
              "flight).", "", head, sep]
    lines += [row(label, x) for label, x in med.get("a", {}).items()]
    lines += ["", f"## (b) One stream at {res['rate_b']:,} messages/s", "",
              "Open loop: each message is written at its intended time on the one stream "
              "(unary rows: one connection, up to "
              f"{UNARY_OPEN_INFLIGHT} calls in flight); latency from the intended send time.",
              "", head, sep]
    lines += [row(label, x) for label, x in med.get("b", {}).items()]
    total = c["streams"] * c["rate_per_stream"]
    lines += ["", f"## (c) {c['streams']:,} streams at {c['rate_per_stream']} messages/s each "
              f"({total:,} messages/s)", "",
              f"{c['connections']} connections x {c['streams'] // c['connections']} streams, "
              "open loop over the streams in turn; P99 per-message latency from the intended "
              "send time.", "",
              "| row | messages/s | P99 µs | p50 µs | server CPU µs/message | server CPU % | "
              "errors | streams dropped |", "|---|---|---|---|---|---|---|---|"]
    for label, x in med.get("c", {}).items():
        lines.append(f"| {label} | {x['qps']:.0f} | {x['p99_us']:.0f} | {x['p50_us']:.0f} | "
                     f"{x['cpu_us_per_msg']:.2f} ({x['cpu_min']:.2f}-{x['cpu_max']:.2f}) | "
                     f"{x['server_cpu_percent']:.0f} | {errors_cell(x)} | "
                     f"{x['streams_dropped']} |")
    failed = [f"({section}) {label}" for section in SECTIONS
              for label, x in med.get(section, {}).items() if x["errors"]]
    if failed:
        lines += ["", f"Rows with errors ({', '.join(failed)}) are not measurements of the "
                  "server: their messages failed (the codes, framework ret codes, are in the "
                  "table; 301: the connection was lost)."]
    lines += ["", "## Goals", "",
              f"Server CPU per message, ours / theirs; the goal is <= {GOAL_RATIO}x. A ratio "
              "whose runs had errors is not judged.", "",
              "| section | goal | ours | peer | ratio | met |", "|---|---|---|---|---|---|"]
    for g in res["goals"]:
        met = "n/a" if g["met"] is None else "yes" if g["met"] else "no"
        lines.append(f"| ({g['section']}) | {g['goal']} | {g['ours']} | {g['peer']} | "
                     f"{fmt_ratio(g['ratio'])} | {met} |")
    if res.get("floors"):
        lines += ["", "### The kernel floor", "",
                  f"`{FLOOR}` serves the unary load with no framework at all: epoll, read and "
                  "write by hand. Its CPU per message is what the kernel alone costs at that load, "
                  "under any server. A stream message at one message in flight pays the same "
                  "syscalls as a unary call, so where half the unary cost is below the floor, "
                  "the stream goal cannot be met by any implementation at that load.", "",
                  "| section | model | unary µs/call | goal (0.5x) µs | kernel floor µs | "
                  "trpc stream µs/message | stream above the floor µs | unary above the floor µs |",
                  "|---|---|---|---|---|---|---|---|"]
        for f in res["floors"]:
            st = f["stream"]
            stream_cells = ("n/a | n/a" if st is None
                            else f"{st:.2f} | {st - f['floor']:.2f}")
            lines.append(
                f"| ({f['section']}) | {f['model']} | {f['unary']:.2f} | {f['goal']:.2f} | "
                f"{f['floor']:.2f} | {stream_cells} | {f['unary'] - f['floor']:.2f} |")
    lines += ["", "## Commands", "",
              "Servers (YAML below; PORT and PID are the kernel's picks):", "", "```"]
    for k, v in res["commands"].items():
        if k.startswith("server "):
            lines.append(f"# {k[7:]}")
            lines.append(" ".join(v))
    lines += ["```", "", "Loads:", "", "```"]
    for k, v in res["commands"].items():
        if not k.startswith("server "):
            lines.append(f"# {k}")
            lines.append(" ".join(v))
    lines += ["```"]
    for model, yaml in res["server_yaml"].items():
        lines += ["", f"`hello_{model}.yaml`:", "", "```yaml", yaml.rstrip(), "```"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--rate", type=int, default=20000, help="(b): messages/s on the one stream")
    ap.add_argument("--c-streams", type=int, default=1000, help="(c): streams in all")
    ap.add_argument("--c-connections", type=int, default=10, help="(c): connections")
    ap.add_argument("--c-rate", type=int, default=10, help="(c): messages/s per stream")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results"))
    ap.add_argument("--smoke", action="store_true",
                    help="every step on a tiny budget (1 round of 0.3 s runs): checks the script "
                         "works; the figures mean nothing")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.smoke:
        args.rounds, args.duration, args.warmup = 1, 0.3, 0.1
    for path in ("benchmark/trpc_bench/trpc_bench", "examples/helloworld/helloworld_server"):
        if not os.path.exists(os.path.join(args.build, path)):
            sys.exit(f"stream_bench: {args.build}/{path} is missing: cmake --build {args.build} "
                     f"--target {os.path.basename(path)}")
    started = time.monotonic()
    res = run(args)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "streams.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(args.out, "streams.md"), "w") as f:
        f.write(md)
    print(md)
    log(f"wrote {args.out}/streams.md and streams.json ({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
