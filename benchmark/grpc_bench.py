#!/usr/bin/env python3
"""gRPC server cost: our server with `protocol: grpc` (merge and fiber models) against grpc++'s
echo servers (completion-queue and callback APIs) and against our own trpc echo, all driven by
the same client (trpc_bench) with the same settings.

Unary 10-byte echo (SayHello), 10 connections x 10 concurrent streams (trpc: 10 connections x
10 in flight), open loop at a fixed rate that no server saturates, server pinned to one core,
client to the other. Rounds alternate between the servers (docs/benchmark.md); the table gives
the median over rounds of the server's CPU time per request (from /proc, read by trpc_bench
--server-pid), its range, and the client's latency. At a rate this low every request costs a
wake-up and its own syscalls, which all servers pay alike; one closed-loop run per server then
gives its ceiling and its CPU per request at saturation, where the protocol work dominates.

With --tls, every server serves TLS 1.3 (ECDSA P-256 certificate made here with openssl;
ours with `ssl:`, grpc++ with SslServerCredentials) and the client speaks TLS to it (gRPC with
ALPN h2): the TLS comparison (benchmark/results/tls.md).

Usage: benchmark/grpc_bench.py [--build DIR] [--rounds N] [--qps R] [--duration S] [--out DIR]
                               [--smoke] [--tls]
Writes grpc.md and grpc.json (grpc_tls.* with --tls) into --out (default build/results). --smoke runs every step on a
tiny budget (one round of 0.2 s runs at 2000/s) to check the script works; its figures mean
nothing.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_table import (CLIENT_CPU, ROOT, SERVER_CPU, SMOKE_NOTE, Bench, log,  # noqa: E402
                        machine_info)

# (label, how to start it, protocol the client speaks)
SERVERS = [
    ("ours grpc merge", dict(kind="echo", model="merge", protocol="grpc"), "grpc"),
    ("ours grpc fiber", dict(kind="echo", model="fiber", protocol="grpc"), "grpc"),
    ("grpc++ async (cq)", dict(kind="grpc", extra=("--mode", "cq")), "grpc"),
    ("grpc++ callback", dict(kind="grpc"), "grpc"),
    ("ours trpc merge", dict(kind="echo", model="merge"), "trpc"),
    ("ours trpc fiber", dict(kind="echo", model="fiber"), "trpc"),
]


def run(args):
    tmp = tempfile.mkdtemp(prefix="grpc_bench_")
    bench = Bench(args.build, quick=False, tmp=tmp, smoke=args.smoke)
    if args.tls:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                       check=True, capture_output=True)
        bench.tls = (cert, key)
    if not args.smoke:
        bench.duration = args.duration
    servers = [s for s in SERVERS if s[1]["kind"] != "grpc" or os.path.exists(bench.bin["grpc"])]
    if len(servers) < len(SERVERS):
        log("grpc_bench: grpc_echo_server not built (libgrpc++-dev): grpc++ rows left out")
    cpu = {label: [] for label, _, _ in servers}
    lat = {label: [] for label, _, _ in servers}
    for rnd in range(args.rounds):
        order = servers if rnd % 2 == 0 else list(reversed(servers))
        log(f"round {rnd + 1}/{args.rounds}")
        for label, how, protocol in order:
            srv = bench.start(cpus=str(SERVER_CPU), **how)
            try:
                r = bench.load(srv, f"{label} {args.qps}/s", qps=args.qps, connections=10,
                               inflight=10, protocol=protocol)
            finally:
                srv.stop()
            if r["errors"]:
                raise RuntimeError(f"{label}: errors {r['errors']}")
            cpu[label].append(r["server"]["cpu_us_per_request"])
            lat[label].append(r["latency_us"])
    ceilings = {}
    for label, how, protocol in servers:
        srv = bench.start(cpus=str(SERVER_CPU), **how)
        try:
            r = bench.load(srv, f"{label} closed loop", connections=10, inflight=10,
                           protocol=protocol)
        finally:
            srv.stop()
        ceilings[label] = {"qps": r["qps"], "cpu_us_per_request": r["server"]["cpu_us_per_request"]}
    return {"machine": machine_info(), "qps": args.qps, "rounds": args.rounds,
            "duration_s": bench.duration, "smoke": args.smoke, "tls": args.tls, "cpu_us_per_request": cpu, "latency_us": lat,
            "closed_loop": ceilings, "runs": bench.runs}


def markdown(res):
    med = {k: statistics.median(v) for k, v in res["cpu_us_per_request"].items()}
    m = res["machine"]
    lines = [
        "# gRPC server cost" + (" over TLS" if res.get("tls") else ""),
        "",
        f"{m['cpu']} ({m['cpus']} CPUs), kernel {m['kernel']}, commit {m['commit']}, "
        f"{m['date']}. " + ("Every connection TLS 1.3 (ECDSA P-256). " if res.get("tls") else "") +
        "Unary SayHello echo, 10-byte payload, 10 connections x 10 "
        f"concurrent streams, open loop at {res['qps']}/s, server pinned to CPU {SERVER_CPU}, "
        f"client (trpc_bench) to CPU {CLIENT_CPU}; {res['rounds']} alternating rounds of "
        f"{res['duration_s']} s. Server CPU per request: median (range) over the rounds.",
        "",
    ]
    if res.get("smoke"):
        lines += [SMOKE_NOTE, ""]
    lines += [
        "| server | CPU us/request at the fixed rate | p50 us | p99 us | closed loop: QPS | "
        "closed loop: CPU us/request |",
        "|---|---|---|---|---|---|",
    ]
    sat = {k: v["cpu_us_per_request"] for k, v in res["closed_loop"].items()}
    for label, vals in res["cpu_us_per_request"].items():
        lats = res["latency_us"][label]
        p50 = statistics.median(x["p50"] for x in lats)
        p99 = statistics.median(x["p99"] for x in lats)
        lines.append(f"| {label} | {med[label]:.2f} ({min(vals):.2f}-{max(vals):.2f}) | "
                     f"{p50:.0f} | {p99:.0f} | {res['closed_loop'][label]['qps']:.0f} | "
                     f"{sat[label]:.2f} |")
    lines += ["", "Ratios of server CPU per request, at the fixed rate / in the closed loop:", ""]
    for model in ("merge", "fiber"):
        ours = f"ours grpc {model}"
        for peer in ("grpc++ async (cq)", "grpc++ callback", f"ours trpc {model}"):
            if ours in med and peer in med:
                lines.append(f"- {ours} / {peer}: {ratio(med[ours], med[peer])} / "
                             f"{ratio(sat[ours], sat[peer])}")
    return "\n".join(lines) + "\n"


def ratio(a, b):
    """a / b as "1.23x", or "n/a" when b measured 0 (a run too short to sample CPU: the smoke
    test's)."""
    return f"{a / b:.2f}x" if b else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--qps", type=int, default=20000)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "results"))
    ap.add_argument("--tls", action="store_true", help="every server and the client over TLS")
    ap.add_argument("--smoke", action="store_true",
                    help="every step on a tiny budget (1 round of 0.2 s runs at 2000/s): checks "
                         "the script works; the figures mean nothing")
    args = ap.parse_args()
    if args.smoke:
        args.rounds, args.qps = 1, 2000
    res = run(args)
    os.makedirs(args.out, exist_ok=True)
    name = "grpc_tls" if args.tls else "grpc"
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(args.out, f"{name}.md"), "w") as f:
        f.write(md)
    print(md)
    log(f"wrote {args.out}/{name}.md and {name}.json")


if __name__ == "__main__":
    main()
