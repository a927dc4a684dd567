#!/usr/bin/env python3
"""The per-call cost of a registry-selected callee against a fixed list, in the forward benchmark.

Starts an etcd (loopback, temporary data dir) and echo_server (examples/echo, merged model,
registered with etcd), then alternates rounds of forward_server (merged model, one worker) calling
the echo server through a `direct` target and through the `etcd` selector, each loaded by
trpc_bench in a closed loop. Prints QPS and the forward server's CPU per request of every round,
their medians, and the difference. Needs a Release build (build/) and etcd (third_party/setup.sh
--with-test-tools). Server processes on CPU 1, trpc_bench on CPU 0, as the seed table.

  benchmark/naming_bench.py [--rounds 3] [--duration 5] [--build build]
                            [--baseline-build DIR] [--smoke]

--baseline-build adds a third kind of round: the forward server of another build (an older
commit's, for the per-call cost of a change) with the direct target, against the same backend.
--smoke runs every step on a tiny budget (one round of 0.2 s runs) to check the script works;
its figures mean nothing.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_table import read_listen_file  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_line(proc, needle, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if needle in line:
            return line.strip()
    raise RuntimeError(f"{proc.args[0]} did not say '{needle}'")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build", default="")
    ap.add_argument("--smoke", action="store_true",
                    help="every step on a tiny budget (1 round of 0.2 s runs): checks the script "
                         "works; the figures mean nothing")
    a = ap.parse_args()
    warmup = 1
    if a.smoke:
        a.rounds, a.duration, warmup = 1, 0.2, 0.05
        print("smoke run: every step on a tiny budget; the figures mean nothing", flush=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.join(root, a.build)
    etcd_bin = shutil.which("etcd")
    if not etcd_bin:
        sys.exit("etcd is not installed: run third_party/setup.sh --with-test-tools")
    tmp = tempfile.mkdtemp(prefix="naming_bench.")
    procs = []
    try:
        cport, pport = free_port(), free_port()  # etcd cannot report ports it picked
        etcd = subprocess.Popen(
            [etcd_bin, "--data-dir", f"{tmp}/etcd", "--name", "default",
             "--listen-client-urls", f"http://127.0.0.1:{cport}",
             "--advertise-client-urls", f"http://127.0.0.1:{cport}",
             "--listen-peer-urls", f"http://127.0.0.1:{pport}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{pport}",
             "--initial-cluster", f"default=http://127.0.0.1:{pport}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(etcd)
        for _ in range(100):
            try:
                urllib.request.urlopen(urllib.request.Request(
                    f"http://127.0.0.1:{cport}/v3/kv/range", data=b'{"key":"AA=="}'), timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        endpoint = f"127.0.0.1:{cport}"
        echo_yaml = f"{tmp}/echo.yaml"
        with open(echo_yaml, "w") as f:
            f.write(f"""global:
  threadmodel:
    default:
      - {{instance_name: m, io_handle_type: merge, io_thread_num: 1}}
server:
  registry_name: etcd
  service:
    - {{name: trpc.test.helloworld.Greeter, ip: 127.0.0.1, port: 0}}
plugins:
  log: {{level: warn}}
  registry:
    etcd: {{endpoints: "{endpoint}"}}
""")
        echo = subprocess.Popen(["taskset", "-c", "1", f"{build}/examples/echo/echo_server",
                                 "--config", echo_yaml], stdout=subprocess.PIPE, text=True)
        procs.append(echo)
        echo_addr = wait_line(echo, "ready on").split("ready on ")[1]

        def forward_yaml(mode, port, listen_file):
            sel = (f"target: {echo_addr}" if mode == "direct" else
                   "target: trpc.test.helloworld.Greeter, selector_name: etcd")
            listen = f"  listen_file: {listen_file}\n" if listen_file else ""
            path = f"{tmp}/forward_{mode}.yaml"
            with open(path, "w") as f:
                f.write(f"""global:
  threadmodel:
    default:
      - {{instance_name: m, io_handle_type: merge, io_thread_num: 1}}
server:
{listen}  service:
    - {{name: trpc.test.forward.Forward, ip: 127.0.0.1, port: {port}}}
client:
  service:
    - {{name: trpc.test.helloworld.Greeter, {sel}}}
    - {{name: trpc.test.helloworld.Greeter2, {sel}}}
plugins:
  log: {{level: warn}}
  selector:
    etcd: {{endpoints: "{endpoint}"}}
""")
            return path

        modes = ["direct", "etcd"] + (["baseline"] if a.baseline_build else [])
        results = {m: [] for m in modes}
        for r in range(a.rounds):
            for mode in modes:
                # Port 0 and the port from server.listen_file, except for another build's
                # server, which may predate that key: it gets a free port chosen for it.
                port, listen_file = 0, f"{tmp}/listen_forward.txt"
                if mode == "baseline":
                    port, listen_file = free_port(), None
                elif os.path.exists(listen_file):
                    os.unlink(listen_file)
                fwd_build = os.path.abspath(a.baseline_build) if mode == "baseline" else build
                yaml_mode = "direct" if mode == "baseline" else mode
                fwd = subprocess.Popen(["taskset", "-c", "1",
                                        f"{fwd_build}/examples/forward/forward_server",
                                        "--config", forward_yaml(yaml_mode, port, listen_file)],
                                       stdout=subprocess.PIPE, text=True)
                try:
                    if listen_file:
                        port = read_listen_file(listen_file, fwd)["trpc.test.forward.Forward"][1]
                    else:
                        wait_line(fwd, "ready")
                    out = subprocess.run(
                        [f"{build}/benchmark/trpc_bench/trpc_bench", "--target", f"127.0.0.1:{port}",
                         "--func", "/trpc.test.forward.Forward/Route", "--connections", "8",
                         "--inflight", "4", "--duration", str(a.duration),
                         "--warmup", str(warmup), "--cpus", "0", "--server-pid", str(fwd.pid),
                         "--json", "-", "--quiet"],
                        capture_output=True, text=True, check=True).stdout
                    j = json.loads(out)
                    qps = j["requests"] / j["window_s"] if j.get("window_s") else 0
                    cpu = j["server"]["cpu_us_per_request"]
                    errors = j.get("errors", 0)
                    if isinstance(errors, dict):
                        errors = sum(v for v in errors.values() if isinstance(v, int))
                    results[mode].append((qps, cpu, errors))
                    print(f"round {r + 1} {mode:8s}: {qps:9.0f} calls/s, forward server "
                          f"{cpu:6.2f} us CPU per call, {errors} errors", flush=True)
                finally:
                    fwd.send_signal(signal.SIGTERM)
                    fwd.wait(timeout=15)
        med = {m: (statistics.median(q for q, _, _ in v), statistics.median(c for _, c, _ in v))
               for m, v in results.items()}
        for m in modes:
            cpus = [c for _, c, _ in results[m]]
            spread = (max(cpus) - min(cpus)) / med[m][1] * 100
            print(f"median {m:8s}: {med[m][0]:9.0f} calls/s, {med[m][1]:.3f} us CPU per call "
                  f"(round-to-round spread {spread:.1f}%)")
        for m in modes[1:]:
            print(f"{m} vs direct: QPS {100 * (med[m][0] / med['direct'][0] - 1):+.1f}%, "
                  f"CPU per call {100 * (med[m][1] / med['direct'][1] - 1):+.1f}%")
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
