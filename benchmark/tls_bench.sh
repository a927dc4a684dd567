#!/usr/bin/env bash
# trpc over TLS against trpc in plaintext: the echo server (merged model, one worker, pinned to
# one core) under trpc_bench (pinned to another), closed loop, 1 KiB messages; the server's CPU
# time per request from /proc. Writes a markdown table to stdout (benchmark/results/tls.md keeps
# one). Certificates: ECDSA P-256, made here with openssl.
#
#   benchmark/tls_bench.sh [BUILD_DIR]      (default build; Release)
#
# Env: DURATION (s, default 5), CONNS (default 16), INFLIGHT (default 4), SERVER_CPU (default 0),
# CLIENT_CPU (default 1), PAYLOAD (bytes, default 1024), QPS (0 = closed loop, the default; else
# an open loop at that rate, where both servers see the same batches), SILENT (N > 0: instead,
# TLS alone, with and without N clients that connect and never send a byte), HANDSHAKES (N > 0:
# instead, TLS alone, with and without N `openssl s_time -new` clients on the client CPU that
# make full handshakes back to back with the same worker, a handshake flood that completes).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
duration=${DURATION:-5}
conns=${CONNS:-16}
inflight=${INFLIGHT:-4}
server_cpu=${SERVER_CPU:-0}
client_cpu=${CLIENT_CPU:-1}
payload=${PAYLOAD:-1024}
qps=${QPS:-0}
server=$build/examples/echo/echo_server
bench=$build/benchmark/trpc_bench/trpc_bench
for b in "$server" "$bench"; do
  [ -x "$b" ] || { echo "tls_bench: $b not built" >&2; exit 1; }
done
command -v openssl >/dev/null || { echo "tls_bench: openssl not installed" >&2; exit 1; }

# $work, $pids (stopped on exit), free_port.
source benchmark/bench_lib.sh

# A CA and a server certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf "subjectAltName=IP:127.0.0.1\n" >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
  -CAcreateserial -days 2 -extfile "$work/san.ext" -out "$work/server.pem" 2>/dev/null


# run NAME TLS(0|1) [SILENT]: starts the server, loads it, prints "NAME req/s us/req p50 p99".
# With SILENT > 0, that many clients connect first and never send a byte (a handshake flood that
# stalls), and stay for the whole run.
run() {
  local name=$1 tls=$2 silent=${3:-0} port
  port=$(free_port)
  {
    printf "global:\n  threadmodel:\n    default:\n      - instance_name: m\n        io_handle_type: merge\n        io_thread_num: 1\n"
    printf "server:\n  app: bench\n  server: tls\n  service:\n    - name: trpc.test.helloworld.Greeter\n"
    printf "      protocol: trpc\n      ip: 127.0.0.1\n      port: %s\n      timeout: 1000\n" "$port"
    if [ "$tls" = 1 ]; then
      printf "      ssl:\n        enable: true\n        cert_path: %s\n        private_key_path: %s\n" \
        "$work/server.pem" "$work/server.key"
      printf "        handshake_timeout: 60000\n        max_handshakes: 4096\n"
    fi
    printf "plugins:\n  log:\n    level: warn\n"
  } >"$work/$name.yaml"
  taskset -c "$server_cpu" "$server" --config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
  local spid=$!
  pids+=("$spid")
  for _ in $(seq 1 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  local silent_pid=""
  local shakers=()
  for i in $(seq 1 "${4:-0}"); do
    chrt -i 0 taskset -c "$client_cpu" openssl s_time -connect "127.0.0.1:$port" -new \
      -time "$((duration + 3))" >"$work/$name.shaker$i" 2>&1 &
    shakers+=($!)
    pids+=($!)
  done
  if [ "$silent" -gt 0 ]; then
    /usr/bin/python3 - "$port" "$silent" "$((duration + 5))" <<'EOF2' &
import socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
for _ in range(n):
    s = socket.socket()
    s.connect(("127.0.0.1", port))
    socks.append(s)
time.sleep(hold)
EOF2
    silent_pid=$!
    pids+=("$silent_pid")
    sleep 1
  fi
  local tls_args=()
  [ "$tls" = 1 ] && tls_args=(--tls --tls-ca "$work/ca.pem")
  taskset -c "$client_cpu" "$bench" --target "127.0.0.1:$port" --connections "$conns" \
    --inflight "$inflight" --duration "$duration" --warmup 1 --payload-size "$payload" --qps "$qps" \
    --server-pid "$spid" --quiet --json "$work/$name.json" "${tls_args[@]}" >"$work/$name.out" 2>&1 ||
    { cat "$work/$name.out" >&2; exit 1; }
  [ -n "$silent_pid" ] && kill "$silent_pid" 2>/dev/null
  local shakes=0
  for i in "${!shakers[@]}"; do
    wait "${shakers[$i]}" 2>/dev/null || true
    n=$(awk '/connections in .* real seconds/ {print $1}' "$work/$name.shaker$((i + 1))")
    shakes=$((shakes + ${n:-0}))
  done
  [ "${#shakers[@]}" -gt 0 ] && echo "$shakes" >"$work/$name.handshakes"
  kill "$spid"
  wait "$spid" 2>/dev/null || true
  /usr/bin/python3 - "$work/$name.json" "$name" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
lat = r.get("latency_us", {})
print("%s %.0f %.2f %s %s" % (sys.argv[2], r["qps"], r["server"]["cpu_us_per_request"],
                              lat.get("p50"), lat.get("p99")))
EOF
}

# compare QUIET FLOOD LABEL: the table of established TLS clients alone (QUIET) and beside
# others (FLOOD, described by LABEL), then the P99 ratio.
compare() {
  read -r _ q_qps q_cpu q_p50 q_p99 <<<"$1"
  read -r _ f_qps f_cpu f_p50 f_p99 <<<"$2"
  echo "| | requests/s | server CPU µs/request | P50 µs | P99 µs |"
  echo "|---|---|---|---|---|"
  echo "| trpc over TLS | $q_qps | $q_cpu | $q_p50 | $q_p99 |"
  echo "| ... $3 | $f_qps | $f_cpu | $f_p50 | $f_p99 |"
  /usr/bin/python3 -c "print('\nP99 with / without them: %.2fx' % ($f_p99 / $q_p99))"
}
if [ "${HANDSHAKES:-0}" -gt 0 ]; then
  # Established TLS clients' latency with and without HANDSHAKES clients handshaking back to back.
  compare "$(run quiet 1)" "$(run shaken 1 0 "$HANDSHAKES")" \
    "beside $HANDSHAKES clients handshaking back to back"
  /usr/bin/python3 -c "print('full handshakes meanwhile: %.0f/s' % (
    $(cat "$work/shaken.handshakes") / ($duration + 3)))"
  exit 0
fi
if [ "${SILENT:-0}" -gt 0 ]; then
  # Established TLS clients' latency with and without SILENT silent connections on the worker.
  compare "$(run quiet 1)" "$(run flood 1 "$SILENT")" "with $SILENT silent clients"
  exit 0
fi
plain=$(run plain 0)
tls=$(run tls 1)
read -r _ p_qps p_cpu p_p50 p_p99 <<<"$plain"
read -r _ t_qps t_cpu t_p50 t_p99 <<<"$tls"
echo "| | requests/s | server CPU µs/request | P50 µs | P99 µs |"
echo "|---|---|---|---|---|"
echo "| trpc, plaintext | $p_qps | $p_cpu | $p_p50 | $p_p99 |"
echo "| trpc over TLS 1.3 | $t_qps | $t_cpu | $t_p50 | $t_p99 |"
/usr/bin/python3 -c "print('\nTLS / plaintext, server CPU per request: %.2fx' % ($t_cpu / $p_cpu))"
