#!/usr/bin/env python3
"""Holds N idle HTTP/1.1 keep-alive connections to a server on loopback (the C10K phase of
benchmark/http_bench.sh).

Each connection first completes one request (GET /), so the server holds it as a real keep-alive
connection, not a half-open one. Prints "ready N" once all are open, then waits for SIGUSR1 (or
--hold seconds), sends one more request on every connection, prints "alive M" (how many were
answered: a server that dropped idle connections shows here), and exits.

  idle_connections.py --port P [--count 10000] [--hold 300]
"""

import argparse
import resource
import signal
import socket
import sys
import time

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def exchange(sock):
    """Sends REQUEST and reads one whole reply (head + Content-Length body); True on a 200."""
    try:
        sock.sendall(REQUEST)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                return False
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = sock.recv(4096)
            if not chunk:
                return False
            body += chunk
        return head.startswith(b"HTTP/1.1 200")
    except (OSError, ValueError):
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--hold", type=float, default=300.0, help="seconds at most to hold them")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.count + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])  # taken by sigtimedwait below

    start = time.monotonic()
    conns = []
    for i in range(args.count):
        try:
            s = socket.create_connection(("127.0.0.1", args.port), timeout=10)
        except OSError as e:
            print(f"connection {i} failed: {e}", file=sys.stderr)
            break
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if not exchange(s):
            print(f"connection {i}: no reply to its first request", file=sys.stderr)
            s.close()
            break
        conns.append(s)
    print(f"ready {len(conns)} in {time.monotonic() - start:.1f} s", flush=True)

    signal.sigtimedwait([signal.SIGUSR1], args.hold)
    alive = sum(exchange(s) for s in conns)
    print(f"alive {alive}", flush=True)
    for s in conns:
        s.close()
    return 0 if len(conns) == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
