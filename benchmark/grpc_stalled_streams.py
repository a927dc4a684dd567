#!/usr/bin/env python3
"""Memory of a gRPC server held by stalled streams (issue 24): CONNS connections each open
STREAMS request streams whose bodies never come, against helloworld_server in the fiber model with
server.max_buffered_bytes = BOUND. Prints the server's RSS before and after, its
trpc_server_buffered_bytes gauge (admin port) and how many streams it refused (REFUSED_STREAM).

  benchmark/grpc_stalled_streams.py [--server build/examples/helloworld/helloworld_server]
      [--conns 2000] [--streams 100] [--bound 67108864] [--hold 3] [--smoke]

Loopback only; the server binds port 0 (its admin service too: admin_port auto) and the script
reads both ports from its server.listen_file. --smoke runs
every step on a tiny budget (20 connections x 10 streams, held 0.3 s) to check the script works;
its figures mean nothing."""

import argparse
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_table import read_listen_file  # noqa: E402

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, stream, payload):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, stream) + payload


def hpack_str(s):
    assert len(s) < 127
    return bytes([len(s)]) + s


def request_headers():
    h = b"\x83\x86"  # :method POST, :scheme http
    h += b"\x04" + hpack_str(b"/trpc.test.helloworld.Greeter/SayHello")
    h += b"\x01" + hpack_str(b"localhost")
    h += b"\x00" + hpack_str(b"content-type") + hpack_str(b"application/grpc")
    h += b"\x00" + hpack_str(b"te") + hpack_str(b"trailers")
    return h


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def gauge(admin_port, name):
    body = urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=5).read()
    m = re.search(rb"^" + name.encode() + rb" (\d+)", body, re.M)
    return int(m.group(1)) if m else -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="build/examples/helloworld/helloworld_server")
    ap.add_argument("--conns", type=int, default=2000)
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--bound", type=int, default=64 << 20)
    ap.add_argument("--hold", type=float, default=3.0)
    ap.add_argument("--smoke", action="store_true",
                    help="every step on a tiny budget (20 x 10 streams, 0.3 s): checks the "
                         "script works; the figures mean nothing")
    a = ap.parse_args()
    if a.smoke:
        a.conns, a.streams, a.hold = 20, 10, 0.3
        print("smoke run: every step on a tiny budget; the figures mean nothing")

    work = tempfile.mkdtemp(prefix="grpc_stalled_streams.")
    listen_file = os.path.join(work, "listen.txt")
    yaml = f"""global:
  threadmodel:
    fiber:
      - instance_name: fiber_instance
        concurrency_hint: 2
server:
  app: test
  server: stalled
  admin_port: auto
  listen_file: {listen_file}
  max_buffered_bytes: {a.bound}
  service:
    - name: greeter_grpc
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      max_conn_num: {a.conns + 100}
plugins:
  log:
    level: info
"""
    cfg = os.path.join(work, "server.yaml")
    with open(cfg, "w") as f:
        f.write(yaml)
    log = os.path.join(work, "server.log")
    with open(log, "w") as out:
        srv = subprocess.Popen([a.server, "--config", cfg], stdout=out, stderr=subprocess.STDOUT)
    try:
        # The listen file appears whole once every listener is up (docs/config.md).
        try:
            addrs = read_listen_file(listen_file, srv)
        except RuntimeError as e:
            with open(log) as f:
                raise RuntimeError(f"{e}; its log:\n{f.read()[-2000:]}") from None
        port, admin_port = addrs["greeter_grpc"][1], addrs["admin"][1]
        time.sleep(0.5)
        rss0 = rss_kib(srv.pid)
        head = request_headers()
        burst = PREFACE + frame(4, 0, 0, b"")
        burst += b"".join(frame(1, 4, 2 * i + 1, head) for i in range(a.streams))
        conns = []
        t0 = time.time()
        for _ in range(a.conns):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(burst)
            conns.append(s)
        time.sleep(a.hold)
        refused = reset = 0
        for s in conns:  # what each connection got: count RST_STREAM(REFUSED_STREAM)
            data = b""
            s.setblocking(False)
            while True:
                try:
                    chunk = s.recv(1 << 16)
                except BlockingIOError:
                    break
                except ConnectionResetError:  # closed for staying over the bound
                    reset += 1
                    break
                if not chunk:
                    break
                data += chunk
            i = 0
            while i + 9 <= len(data):
                n = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2]
                if data[i + 3] == 3 and struct.unpack(">I", data[i + 9:i + 13])[0] == 7:
                    refused += 1
                i += 9 + n
        rss1 = rss_kib(srv.pid)
        buffered = gauge(admin_port, "trpc_server_buffered_bytes")
        print(f"{a.conns} connections x {a.streams} stalled streams, fiber server, "
              f"max_buffered_bytes {a.bound} ({a.bound >> 20} MiB), {a.server}:")
        print(f"  RSS {rss0 / 1024:.0f} MiB idle -> {rss1 / 1024:.0f} MiB "
              f"(+{(rss1 - rss0) / 1024:.0f} MiB) after {time.time() - t0:.1f} s")
        print(f"  trpc_server_buffered_bytes {buffered / (1 << 20):.1f} MiB; "
              f"streams refused (REFUSED_STREAM) {refused} of {a.conns * a.streams}; "
              f"connections reset {reset}")
        for s in conns:
            s.close()
    finally:
        srv.terminate()
        srv.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
