#!/usr/bin/env bash
# Instructions per request of a one-worker server under callgrind (user space only, so the figure
# does not move with the machine's noise). For each of trpc echo (examples/echo's echo_server,
# loaded by trpc_bench), http_hello (loaded by wrk) and the gRPC echo (echo_server with its service
# on `protocol: grpc`, loaded by trpc_bench --protocol grpc: unary calls, each connection's calls
# multiplexed as HTTP/2 streams), the trpc forward proxy (examples/forward's forward_server, one
# worker, each request a downstream call to an echo_server that runs outside valgrind: the server
# and client paths together), each thread model and each depth, it starts
# the server under valgrind, zeroes its counters once it listens, drives the load, dumps the
# counters (callgrind_control) and divides the Ir of that window by the requests the client
# completed: start-up and shutdown are not counted, so the figure does not depend on how many
# requests the (slowed-down) server answered.
#
#   benchmark/callgrind_per_request.sh [--build DIR] [--seconds S] [--only trpc|http|grpc|forward]
#                                      [--tracing RATIO] [--smoke]
#
# --tracing RATIO: the forward rows run with the `tracing` filter on the forward server's service
# and its callee, and plugins.tracing at sampler_ratio RATIO (0..1), exporting to the test
# collector (third_party/otelcol/bin/otelcol, started here; without it, to no endpoint: spans
# made and dropped). The exporter thread's work is in the figure: it is the process's.
#                                      [--port P]
#
# --port P: the server listens on the fixed port P (free on 127.0.0.1) instead of port 0 and a
# listen file, for builds older than `server.listen_file` (f3897f9, the baseline of issue 26).
#
# Prints one markdown table. Installs what it needs (valgrind, wrk) through third_party/setup.sh.
# --smoke runs four rows only, 1 s each (trpc, merged model, depth 1; http, fiber model, depth 16;
# grpc, merged model, depth 1; forward, fiber model, depth 1: every step of the script once),
# installs nothing, and says so in a line before the table: a check that the script works, whose
# figures mean nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
seconds=8
only=""
smoke=0
fixed_port=""
tracing=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --smoke) smoke=1; seconds=1; shift ;;
    --port) fixed_port=$2; shift 2 ;;
    --tracing) tracing=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--seconds S] [--only trpc|http|grpc|forward]" \
            "[--tracing RATIO] [--smoke]" >&2
       exit 2 ;;
  esac
done
if [ "$smoke" = 1 ]; then
  for tool in valgrind callgrind_control wrk; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is missing" >&2; exit 1; }
  done
else
  third_party/setup.sh --with-bench
fi
# wait_listen_file, listen_port and stop_server, shared with the HTTP benchmark.
source benchmark/http/pinned_runs.sh

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# The one-worker YAML of `model` (the committed templates), on port 0 with a listen file.
one_worker_yaml() {
  local template=$1 listen=$2 out=$3
  if [ -n "$fixed_port" ]; then
    sed -E -e "s/port: [0-9]+/port: $fixed_port/; s/level: info/level: warn/" "$template" >"$out"
    return
  fi
  sed -E -e "s/port: [0-9]+/port: 0/; s/level: info/level: warn/" \
    -e "s/io_thread_num: [0-9]+/io_thread_num: 1/; s/concurrency_hint: [0-9]+/concurrency_hint: 1/" \
    -e "s#^server:\$#server:\n  listen_file: $listen#" "$template" >"$out"
}

# The echo backend of the forward rows, outside valgrind (merged model, one worker); sets
# backend_pid and backend_port.
start_backend() {
  local listen=$work/backend_listen.txt
  rm -f "$listen"
  one_worker_yaml examples/echo/server_merge.yaml "$listen" "$work/backend.yaml"
  "$build/examples/echo/echo_server" --config "$work/backend.yaml" >"$work/backend.log" 2>&1 &
  backend_pid=$!
  wait_listen_file "$listen" "$backend_pid" 100 || { echo "$0: the echo backend did not start" >&2; exit 1; }
  backend_port=$(listen_port "$listen" trpc.test.helloworld.Greeter)
}

# Waits (30 s at most: a server under valgrind takes seconds to start) for the server, then
# prints the port of `service`.
server_port() {
  local listen=$1 pid=$2 service=$3 i
  if [ -z "$fixed_port" ]; then
    wait_listen_file "$listen" "$pid" 300 || return 1
    listen_port "$listen" "$service"
    return
  fi
  for i in $(seq 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$fixed_port") 2>/dev/null; then
      echo "$fixed_port"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# run_one KIND MODEL DEPTH: prints "Ir requests".
run_one() {
  local kind=$1 model=$2 depth=$3 port yaml server out requests service
  local listen=$work/listen.txt
  rm -f "$listen"
  yaml=$work/$kind-$model.yaml
  out=$work/callgrind.$kind.$model.$depth
  local func=()
  if [ "$kind" = trpc ] || [ "$kind" = grpc ]; then
    one_worker_yaml "examples/echo/server_$model.yaml" "$listen" "$yaml"
    [ "$kind" = grpc ] && sed -i 's/protocol: trpc/protocol: grpc/' "$yaml"
    server=$build/examples/echo/echo_server service=trpc.test.helloworld.Greeter
  elif [ "$kind" = forward ]; then
    [ -n "$fixed_port" ] && { echo "$0: --port does not apply to the forward rows" >&2; exit 2; }
    one_worker_yaml "examples/forward/server_$model.yaml" "$listen" "$yaml"
    sed -i -E "s/target: 127.0.0.1:[0-9]+/target: 127.0.0.1:$backend_port/" "$yaml"
    if [ -n "$tracing" ]; then
      local endpoint=""
      [ -n "$collector_port" ] && endpoint="http://127.0.0.1:$collector_port/v1/traces"
      sed -i -E -e "s/^server:\$/server:\n  filter: [tracing]/" \
        -e "s/^client:\$/client:\n  filter: [tracing]/" \
        -e "s#^plugins:\$#plugins:\n  tracing: {sampler_ratio: $tracing, endpoint: '$endpoint'}#" "$yaml"
    fi
    server=$build/examples/forward/forward_server service=trpc.test.forward.Forward
    func=(--func /trpc.test.forward.Forward/Route)
  else
    one_worker_yaml "examples/http_hello/server_$model.yaml" "$listen" "$yaml"
    server=$build/examples/http_hello/http_hello_server service=trpc.test.http_hello.Http
  fi
  valgrind --tool=callgrind --callgrind-out-file="$out" "$server" --config "$yaml" \
    >"$work/server.log" 2>&1 &
  local pid=$!
  port=$(server_port "$listen" "$pid" "$service") || { echo "$0: $server did not start" >&2; exit 1; }
  callgrind_control -z "$pid" >/dev/null
  if [ "$kind" != http ]; then
    local protocol=$kind
    [ "$kind" = forward ] && protocol=trpc
    "$build/benchmark/trpc_bench/trpc_bench" --target "127.0.0.1:$port" --protocol "$protocol" "${func[@]}" \
      --connections 10 --inflight "$depth" --duration "$seconds" --warmup 0 --timeout 5000 --quiet \
      --json "$work/bench.json" >/dev/null 2>&1
    requests=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['ok'])" \
      "$work/bench.json")
  else
    local script=()
    [ "$depth" -gt 1 ] && script=(-s benchmark/http/pipeline.lua -- "$depth")
    requests=$(wrk -t1 -c10 -d"${seconds}s" "http://127.0.0.1:$port/" "${script[@]}" |
      awk '/requests in/ {print $1}')
  fi
  callgrind_control -d "$pid" >/dev/null
  stop_server "$pid"
  local ir
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$out".1)
  echo "$ir $requests"
}

rows=()
for kind in trpc http grpc forward; do
  [ -n "$only" ] && [ "$only" != "$kind" ] && continue
  for model in merge fiber; do
    for depth in 1 16; do rows+=("$kind $model $depth"); done
  done
done
if [ "$smoke" = 1 ]; then
  rows=("trpc merge 1" "http fiber 16" "grpc merge 1" "forward fiber 1")
  echo "Smoke run (--smoke): every step once on a tiny budget; the figures mean nothing."
  echo
fi
collector_port=""
if [ -n "$tracing" ] && [ -x third_party/otelcol/bin/otelcol ]; then
  collector_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  OTELCOL_HTTP_PORT=$collector_port third_party/otelcol/bin/otelcol \
    --config=third_party/otelcol/test_config.yaml >/dev/null 2>&1 &
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$collector_port") 2>/dev/null && break; sleep 0.1; done
fi
backend_pid=""
for row in "${rows[@]}"; do
  if [[ "$row" == forward* ]] && [ -z "$backend_pid" ]; then start_backend; fi
done
echo "| server | model | depth | requests | instructions per request |"
echo "|---|---|---|---|---|"
for row in "${rows[@]}"; do
  read -r kind model depth <<<"$row"
  read -r ir requests < <(run_one "$kind" "$model" "$depth")
  echo "| $kind | $model | $depth | $requests | $((ir / requests)) |"
done
