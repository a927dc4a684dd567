#!/usr/bin/env bash
# HTTPS: our HTTP server (examples/http_hello, merged model, one worker) against nginx (one
# worker process), each pinned to one CPU, on the same ECDSA P-256 certificate, TLS 1.3. CPU is
# the server's processes' utime+stime from /proc, before and after the run. MODE picks the load:
#   keepalive  wrk (100 connections, on another CPU) asking for "/" ({}): requests/s and
#              server CPU per request (the default)
#   new        `openssl s_time -new`: one connection after another, each a full handshake and
#              one request: connections/s and server CPU per connection
#   resumed    `openssl s_time -reuse`: the same, each resuming the first one's session (a
#              TLS 1.3 ticket); the script checks that every one was resumed
#
#   benchmark/https_vs_nginx.sh [BUILD_DIR]     Env: MODE (keepalive), DURATION (s, default 5),
#                                               CONNS (100), SERVER_CPU (0), CLIENT_CPU (1)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mode=${MODE:-keepalive}
duration=${DURATION:-5}
conns=${CONNS:-100}
server_cpu=${SERVER_CPU:-0}
client_cpu=${CLIENT_CPU:-1}
server=$build/examples/http_hello/http_hello_server
for p in wrk nginx openssl; do
  command -v "$p" >/dev/null || { echo "https_vs_nginx: $p not installed" >&2; exit 1; }
done
[ -x "$server" ] || { echo "https_vs_nginx: $server not built" >&2; exit 1; }

# $work, $pids (stopped on exit), free_port.
source benchmark/bench_lib.sh

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# CPU ticks (utime+stime) of a process and its children's threads: /proc/PID/stat fields 14, 15.
ticks() {
  local sum=0 p
  for p in "$@"; do
    read -r -a f <"/proc/$p/stat"
    sum=$((sum + f[13] + f[14]))
  done
  echo "$sum"
}
wait_port() {
  for _ in $(seq 1 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# load PORT SECONDS: runs MODE's client; prints how many requests (connections) it made.
load() {
  local port=$1 secs=$2 out
  if [ "$mode" = keepalive ]; then
    out=$(taskset -c "$client_cpu" wrk -t1 -c"$conns" -d"${secs}s" "https://127.0.0.1:$port/")
    awk '/requests in/ {print $1}' <<<"$out"
    return
  fi
  local flag=-new
  [ "$mode" = resumed ] && flag=-reuse
  # s_time prints a '*' per full handshake and an 'r' per resumed one.
  out=$(taskset -c "$client_cpu" openssl s_time -connect "127.0.0.1:$port" "$flag" \
    -time "$secs" -www / -CAfile "$work/cert.pem" -verify 1 2>&1)
  if [ "$mode" = resumed ]; then
    local full
    full=$(tr -cd '*' <<<"$out" | wc -c)
    # (one full handshake first, whose session the others resume)
    [ "$full" -le 1 ] || { echo "https_vs_nginx: $full connections were not resumed" >&2; exit 1; }
  fi
  awk '/connections in .* real seconds/ {print $1}' <<<"$out"
}

# measure NAME PORT PID...: warm-up 1 s, then DURATION s; prints "NAME per-second us-each".
measure() {
  local name=$1 port=$2
  shift 2
  load "$port" 1 >/dev/null
  local before after total
  before=$(ticks "$@")
  total=$(load "$port" "$duration")
  after=$(ticks "$@")
  /usr/bin/python3 -c "
t = $total; ticks = $after - $before; hz = $(getconf CLK_TCK)
print('%s %.0f %.2f' % ('$name', t / $duration, ticks / hz * 1e6 / t))"
}

port=$(free_port)
cat >"$work/trpc.yaml" <<EOF
global:
  threadmodel:
    default:
      - instance_name: m
        io_handle_type: merge
        io_thread_num: 1
server:
  app: bench
  server: https
  service:
    - name: trpc.test.http_hello.Http
      protocol: http
      ip: 127.0.0.1
      port: $port
      max_conn_num: 20000
      ssl:
        enable: true
        cert_path: $work/cert.pem
        private_key_path: $work/key.pem
plugins:
  log:
    level: warn
EOF
taskset -c "$server_cpu" "$server" --config "$work/trpc.yaml" >"$work/trpc.log" 2>&1 &
tpid=$!
pids+=("$tpid")
wait_port "$port"
ours=$(measure ours "$port" "$tpid")
kill "$tpid"

nport=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; use epoll; }
http {
  access_log off;
  server_tokens off;
  keepalive_requests 100000000;
  keepalive_timeout 600s;
  client_body_temp_path $work/nginx;
  proxy_temp_path $work/nginx;
  fastcgi_temp_path $work/nginx;
  uwsgi_temp_path $work/nginx;
  scgi_temp_path $work/nginx;
  server {
    listen 127.0.0.1:$nport ssl;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / { default_type application/json; return 200 '{}'; }
  }
}
EOF
taskset -c "$server_cpu" nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
npid=$!
pids+=("$npid")
wait_port "$nport"
workers=$(pgrep -P "$npid" | tr '\n' ' ')
# shellcheck disable=SC2086
theirs=$(measure nginx "$nport" "$npid" $workers)

read -r _ o_qps o_cpu <<<"$ours"
read -r _ n_qps n_cpu <<<"$theirs"
unit=request
[ "$mode" = keepalive ] || unit=connection
echo "MODE=$mode"
echo "| server | ${unit}s/s | server CPU µs/$unit | ${unit}s per server CPU second |"
echo "|---|---|---|---|"
/usr/bin/python3 -c "
print('| ours (http, merged, 1 worker) | $o_qps | $o_cpu | %.0f |' % (1e6 / $o_cpu))
print('| nginx 1 worker | $n_qps | $n_cpu | %.0f |' % (1e6 / $n_cpu))
print('\nours / nginx, CPU per $unit: %.2fx; ${unit}s per CPU second: %.2fx' %
      ($o_cpu / $n_cpu, $n_cpu / $o_cpu))"
