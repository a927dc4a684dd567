#!/usr/bin/env python3
"""Runs one benchmark script the way its usage says, in its --smoke mode (every step, the real
binaries, a tiny budget), with its outputs in a temporary directory, and checks what it wrote:
the files exist and parse, and the rows every step should have produced are there.

  script_smoke_test.py SCRIPT --build DIR     (SCRIPT: a name from CHECKS below)

Exit status: 0 when it ran and every check passed, 1 on a failure, 77 (which ctest reports as
skipped) when a program the script drives is missing: nginx, wrk, valgrind, etcd, gnuplot or
grpc++'s echo server. Under CI=true a missing program fails the test instead (the message starts
with "peer missing:" either way), so CI cannot pass by skipping. Steps that do not need the
missing program still run and are checked first.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIPPED = 77
# Under the ctest TIMEOUT (test/benchmark/CMakeLists.txt), so a hang is reported as ours.
RUN_LIMIT_S = 150


class Failure(Exception):
    pass


class Smoke:
    def __init__(self, build, tmp):
        self.build = build
        self.tmp = tmp
        self.missing = []  # peers this run could not use

    def need(self, program, package):
        """True if `program` is on PATH; else it is recorded as a missing peer."""
        if shutil.which(program):
            return True
        self.missing.append(f"{program} (Debian: {package})")
        return False

    def binary(self, path):
        return os.path.join(self.build, path)

    def have_grpcpp(self):
        if os.path.exists(self.binary("benchmark/baseline/grpc_echo_server")):
            return True
        self.missing.append("grpc++'s echo server, not built (Debian: libgrpc++-dev "
                            "protobuf-compiler-grpc)")
        return False

    def run(self, argv):
        """Runs a script from the checkout's root; returns its stdout. Fails on a non-zero exit."""
        print("+ " + " ".join(argv), flush=True)
        # No __pycache__ left in the checkout by the scripts that import seed_table.py.
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=RUN_LIMIT_S)
        except subprocess.TimeoutExpired as e:
            raise Failure(f"still running after {RUN_LIMIT_S} s: {e.stderr or ''}")
        sys.stderr.write(p.stderr[-4000:])
        if p.returncode != 0:
            raise Failure(f"exit status {p.returncode}\nstdout:\n{p.stdout[-4000:]}")
        return p.stdout

    def script(self, name):
        return os.path.join(ROOT, "benchmark", name)

    def out(self, name):
        return os.path.join(self.tmp, name)


def check(cond, what):
    if not cond:
        raise Failure(what)


def read(path):
    check(os.path.exists(path), f"{path} was not written")
    with open(path) as f:
        return f.read()


def read_json(path):
    try:
        return json.loads(read(path))
    except ValueError as e:
        raise Failure(f"{path}: not JSON: {e}")


def contains(text, needles, where):
    for n in needles:
        check(n in text, f"{where}: no '{n}' in:\n{text[-3000:]}")


def png(s, path):
    """The plot, where gnuplot is there to draw it."""
    if s.need("gnuplot", "gnuplot-nox"):
        check(os.path.exists(path) and os.path.getsize(path) > 0, f"{path}: none, or empty")


def report_script(s, script, stem, *args):
    """Runs a Python script that writes STEM.md and STEM.json to --out; returns the folder, the
    Markdown and the parsed JSON."""
    out = s.out(stem)
    s.run([sys.executable, s.script(script), "--smoke", "--build", s.build, "--out", out, *args])
    return out, read(os.path.join(out, f"{stem}.md")), read_json(os.path.join(out, f"{stem}.json"))


# ---- One function per script: run it in its smoke mode, check its outputs.

def seed_table(s):
    out, md, res = report_script(s, "seed_table.py", "latest")
    contains(md, ["Smoke run", "## Pure server", "| baseline |", "| merge |", "| fiber |",
                  "## gRPC", "| ours grpc merge |", "| ours grpc fiber |", "## Forward",
                  "## Long tail", "| merge | spin |", "| fiber | sleep |", "## Worker scaling",
                  "Noise guard"], "latest.md")
    check(set(res["pure"]) == {"baseline", "merge", "fiber"}, f"pure: {list(res['pure'])}")
    check(set(res["forward"]) == {"merge", "fiber"}, f"forward: {list(res['forward'])}")
    for model in ("merge", "fiber"):
        check({"none", "sleep", "spin"} <= set(res["longtail"][model]), "long-tail kinds")
    check(res["runs"] and all(r["qps"] > 0 for r in res["runs"]), "a load run measured nothing")
    if s.have_grpcpp():
        check("grpc++ async (cq)" in res["grpc"], f"grpc: {list(res['grpc'])}")
    png(s, os.path.join(out, "latest_longtail.png"))


def overload(s):
    out, md, res = report_script(s, "overload.py", "overload", "--kinds", "cpu", "--models",
                                 "merge", "--levels", "0.5,2")
    contains(md, ["Smoke run", "## cpu handler (100us), merge model", "| none | 0.5x",
                  "| none | 2.0x", "| fixed | 2.0x", "| auto | 2.0x", "late OK"], "overload.md")
    entry = res["kinds"]["cpu"]["models"]["merge"]
    check(entry["capacity_qps"] > 0, "no capacity measured")
    for limit in ("none", "fixed", "auto"):
        rows = entry["rows"][limit]
        check([r["level"] for r in rows] == [0.5, 2.0], f"{limit}: levels")
        for r in rows:
            # (goodput comes rounded to 0.1/s)
            check(r["goodput"] <= r["ok_per_s"] + 0.1, f"{limit}: goodput above the OK rate")
        check(rows[1].get("after_p99_us") is not None, f"{limit}: no probe after the 2x load")
    png(s, os.path.join(out, "overload.png"))


def grpc_bench(s):
    _, md, res = report_script(s, "grpc_bench.py", "grpc")
    labels = ["ours grpc merge", "ours grpc fiber", "ours trpc merge", "ours trpc fiber"]
    if s.have_grpcpp():
        labels += ["grpc++ async (cq)", "grpc++ callback"]
    contains(md, ["Smoke run"] + [f"| {label} |" for label in labels], "grpc.md")
    for label in labels:
        check(res["closed_loop"][label]["qps"] > 0, f"{label}: closed loop measured nothing")
        check(len(res["cpu_us_per_request"][label]) == 1, f"{label}: rounds")


def naming_bench(s):
    if not s.need("etcd", "etcd-server"):
        return
    out = s.run([sys.executable, s.script("naming_bench.py"), "--smoke", "--build", s.build])
    contains(out, ["round 1 direct", "round 1 etcd", "median direct", "median etcd",
                   "etcd vs direct: QPS"], "naming_bench.py's output")
    check(", 0 errors" in out and "errors" not in out.replace(", 0 errors", ""),
          f"calls failed:\n{out}")


def echo_e2e(s):
    out = s.run(["bash", s.script("echo_e2e.sh"), "--smoke", "--build", s.build])
    contains(out, ["machine:", "server: helloworld_server, merge model", "client: trpc_bench",
                   "requests,", "goodput", "errors: none", "server:"], "echo_e2e.sh's output")


def http_bench(s):
    if not s.need("wrk", "wrk"):
        return
    # Two servers keep the run short: http_hello and nginx each start their own way here;
    # raw_http_server's way (start_server, pinned_runs.sh) runs in client_efficiency's test.
    servers = ["http_hello_fiber"] + (["nginx"] if s.need("nginx", "nginx-light") else [])
    out = s.out("http")
    s.run(["bash", s.script("http_bench.sh"), "--smoke", "--build", s.build, "--out-dir", out,
           "--servers", " ".join(servers)])
    md = read(os.path.join(out, "http_latest.md"))
    res = read_json(os.path.join(out, "http_latest.json"))
    contains(md, ["Smoke run", "## C10K", "## Targets"], "http_latest.md")
    for server in servers:
        for conns, depth in ((10, 1), (100, 16)):
            check(f"| {conns} | {depth} | {server} |" in md, f"no row {server} {conns}x{depth}")
        check(any(r["server"] == server and r.get("opened") == 50 for r in res["c10k"]),
              f"{server}: C10K opened no idle connections")
    check(not res["incidents"], f"incidents: {res['incidents']}")


def client_efficiency(s):
    if not s.need("wrk", "wrk"):
        return
    # Each protocol at one depth: wrk without and with pipelining, trpc_bench speaking trpc to
    # raw_echo_server and HTTP to raw_http_server.
    for protocol, depths in (("trpc", [1]), ("http", [16])):
        out = s.out(f"client_efficiency_{protocol}.md")
        s.run(["bash", s.script("client_efficiency.sh"), "--smoke", "--build", s.build,
               "--protocol", protocol, "--depths", " ".join(map(str, depths)), "--out", out])
        md = read(out)
        contains(md, ["Smoke run", "Medians: **A/B QPS"] + [f"## Depth {d} " for d in depths],
                 out)
        check("errors:" not in md, f"{out}: errors")
        for line in md.splitlines():
            if line.startswith("| 1 |"):  # the pair's row: no figure may be negative
                check("| -" not in line, f"{out}: a negative figure: {line}")


def callgrind_per_request(s):
    if not (s.need("valgrind", "valgrind") and s.need("wrk", "wrk")):
        return
    out = s.run(["bash", s.script("callgrind_per_request.sh"), "--smoke", "--build", s.build])
    rows = [line for line in out.splitlines()
            if line.startswith(("| trpc |", "| http |", "| grpc |", "| forward |"))]
    check(len(rows) == 4, f"expected 4 rows:\n{out}")
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        check(int(cells[3]) > 0 and int(cells[4]) > 0, f"empty row: {row}")


def soak(s):
    out = s.out("soak")
    s.run(["bash", s.script("soak.sh"), "--smoke", "--build", s.build, "--out", out])
    md = read(os.path.join(out, "soak.md"))
    contains(md, ["Smoke run", "| trpc_mix |", "| trpc_spin |", "| trpc_unknown |",
                  "| http_hello |", "| http_missing |", "| trpc_rss_kb |",
                  "unexpected errors: 0"], "soak.md")
    samples = read(os.path.join(out, "soak.csv")).splitlines()
    check(samples[0].startswith("t_s,") and len(samples) >= 2, "soak.csv has no samples")


def grpc_flood(s):
    out = s.run(["bash", s.script("grpc_flood.sh"), "--smoke", "--build", s.build])
    # One line per round; a model measures a second or third round when a loaded machine
    # put the first out of bounds.
    models = [m for line in out.splitlines() if "probe P99:" in line
              for m in ("merge", "fiber") if f"{m} model" in line]
    check(models and models[0] == "merge" and models[-1] == "fiber"
          and models == sorted(models, key=("merge", "fiber").index),
          f"expected probe lines for the merge model, then the fiber model:\n{out}")
    check("FAILED" not in out and "Failure" not in out, out)


def grpc_stalled_streams(s):
    out = s.run([sys.executable, s.script("grpc_stalled_streams.py"), "--smoke",
                 "--server", s.binary("examples/helloworld/helloworld_server")])
    contains(out, ["20 connections x 10 stalled streams", "RSS", "trpc_server_buffered_bytes",
                   "streams refused"], "grpc_stalled_streams.py's output")


def stream_bench(s):
    # trpc_bench --stream over trpc and gRPC against helloworld_server in both models (and
    # grpc++'s streaming echo), each load of every section.
    _, md, res = report_script(s, "stream_bench.py", "streams")
    labels = ["trpc stream, merge", "trpc stream, fiber", "our gRPC stream, merge",
              "our gRPC stream, fiber"]
    unary = ["trpc unary, merge", "trpc unary, fiber", "raw epoll echo (kernel floor)"]
    if s.have_grpcpp():
        labels.append("grpc++ stream (callback)")
    contains(md, ["Smoke run", "## (a)", "## (b)", "## (c)", "## Goals", "### The kernel floor",
                  "## Commands"]
             + [f"| {label} |" for label in labels + unary], "streams.md")
    for section in ("a", "b", "c"):
        for label in labels + (unary if section != "c" else []):
            row = res["medians"][section].get(label)
            check(row is not None, f"({section}) {label}: no row")
            check(row["qps"] > 0, f"({section}) {label}: measured nothing")
            check(row["errors"] == 0, f"({section}) {label}: errors {row['error_codes']}")
    check(res["runs"] and all(r["settings"]["stream"] == (r["label"] not in unary)
                              for r in res["runs"]), "a run in the wrong mode")


CHECKS = {f.__name__: f for f in (seed_table, overload, grpc_bench, naming_bench, echo_e2e,
                                  http_bench, client_efficiency, callgrind_per_request, soak,
                                  grpc_flood, grpc_stalled_streams, stream_bench)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("script", choices=sorted(CHECKS))
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix=f"{args.script}_smoke.")
    s = Smoke(os.path.abspath(args.build), tmp)
    try:
        CHECKS[args.script](s)
    except Failure as e:
        print(f"FAILED: {args.script}: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if s.missing:
        ci = os.environ.get("CI") in ("true", "1")
        print("peer missing: " + "; ".join(s.missing)
              + (" (CI=true: a missing peer fails the test)" if ci else ""))
        return 1 if ci else SKIPPED
    print(f"{args.script}: OK")
    return 0


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    sys.exit(main())
