#!/usr/bin/env bash
# Client efficiency: is one trpc_bench thread as fast a load generator as one wrk thread?
#
#   A: trpc_bench, 1 thread on CPU 0, closed loop, 100 connections x DEPTH in flight, 10-byte
#      payload  ->  benchmark/baseline/raw_echo_server, 1 thread on CPU 1
#   B: wrk -t1 -c100 on CPU 0 (DEPTH > 1: benchmark/http/pipeline.lua)
#      ->  benchmark/baseline/raw_http_server, 1 thread on CPU 1
#
# Both servers are raw-epoll responders of the same shape (read until EAGAIN, one write per
# batch), so the pair compares the clients. With --protocol http, A is trpc_bench --protocol http
# against the same raw_http_server as B (`GET /`, the same bytes on the wire as wrk's), and the
# report goes to benchmark/results/client_efficiency_http.md. Runs alternate A B A B ... (PAIRS
# pairs per depth, each run WARMUP + DURATION seconds), and the script prints each pair's QPS
# ratio A/B and the medians; also each client's CPU (trpc_bench reports its own; wrk's is read
# from /proc/PID/stat), their ratio per request B/A (the client's own cost, which a busy machine
# disturbs less than QPS: time the client waits for a core is in neither), and each server's CPU
# per request. Writes benchmark/results/client_efficiency.md.
#
#   benchmark/client_efficiency.sh [--build DIR] [--duration S] [--warmup S] [--pairs N]
#                                  [--depths "1 16"] [--protocol trpc|http] [--out FILE] [--smoke]
#
# --smoke runs every step on a tiny budget (one pair per depth of 1 s runs without warm-up) to
# check the script works; its figures mean nothing, and it writes to BUILD/results unless --out
# says where.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HTTP_DIR="$ROOT/benchmark/http"
BUILD="$ROOT/build"
DURATION=5
WARMUP=1
PAIRS=3
DEPTHS="1 16"
OUT=""
PROTOCOL=trpc
CONNECTIONS=100
PAYLOAD=10
SMOKE=0
# shellcheck source=benchmark/http/pinned_runs.sh
source "$HTTP_DIR/pinned_runs.sh"

while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --depths) DEPTHS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --protocol) PROTOCOL=$2; shift 2 ;;
    --smoke) SMOKE=1; shift ;;
    *) usage ;;
  esac
done
RESULTS=$ROOT/benchmark/results
if [ "$SMOKE" = 1 ]; then
  DURATION=1 WARMUP=0 PAIRS=1
  RESULTS=$BUILD/results
else
  [ "$DURATION" -ge 2 ] && [ "$PAIRS" -ge 1 ] && [ "$WARMUP" -ge 1 ] || usage
fi
case $PROTOCOL in
  trpc) OUT=${OUT:-$RESULTS/client_efficiency.md} ;;
  http) OUT=${OUT:-$RESULTS/client_efficiency_http.md} ;;
  *) usage ;;
esac

TRPC_BENCH="$BUILD/benchmark/trpc_bench/trpc_bench"
RAW_ECHO="$BUILD/benchmark/baseline/raw_echo_server"
RAW_HTTP="$BUILD/benchmark/baseline/raw_http_server"
for b in "$TRPC_BENCH" "$RAW_ECHO" "$RAW_HTTP"; do
  [ -x "$b" ] || { echo "missing $b: cmake --build $BUILD --target $(basename "$b")" >&2; exit 1; }
done
begin_runs client_efficiency

# A: one trpc_bench run; prints the same fields as run_wrk.
run_trpc_bench() {
  local port=$1 depth=$2 spid=$3 json="$TMP/trpc_bench.json"
  timeout $((WARMUP + DURATION + 30)) taskset -c "$CLIENT_CPU" "$TRPC_BENCH" \
    --protocol "$PROTOCOL" \
    --target "127.0.0.1:$port" --connections "$CONNECTIONS" --inflight "$depth" --threads 1 \
    --cpus "$CLIENT_CPU" --duration "$DURATION" --warmup "$WARMUP" --payload-size "$PAYLOAD" \
    --timeout 5000 --server-pid "$spid" --quiet --json "$json" >/dev/null
  python3 - "$json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"qps={r['qps']:.0f} p99_us={r['latency_us']['p99']} requests={r['requests']} "
      f"errors={sum(r['errors'].values())} client_cpu_pct={r['client']['cpu_percent']:.0f} "
      f"server_us_per_req={r['server']['cpu_us_per_request']:.2f}")
EOF
}

# B: one wrk run after a WARMUP-second wrk run that is not counted (none with --smoke).
run_wrk_warm() {
  local port=$1 depth=$2 spid=$3
  if [ "$WARMUP" != 0 ]; then
    run_wrk "$CLIENT_CPU" "$port" "$CONNECTIONS" "$depth" "$WARMUP" "$spid" >/dev/null
  fi
  run_wrk "$CLIENT_CPU" "$port" "$CONNECTIONS" "$depth" "$DURATION" "$spid"
}

# Client CPU µs per request: the efficiency figure when a client is not saturated.
client_us() {
  awk -v c="$(field client_cpu_pct "$1")" -v q="$(field qps "$1")" 'BEGIN {
    printf "%.2f", c / 100 * 1e6 / q }'
}

start_server raw_http "$SERVER_CPU" "$RAW_HTTP" --port 0 --threads 1
HTTP_PID=$SERVER_PID HTTP_PORT=$SERVER_PORT
if [ "$PROTOCOL" = http ]; then
  # A and B load the same server.
  A_PID=$HTTP_PID A_PORT=$HTTP_PORT
  A_WHAT="\`trpc_bench --protocol http\` (\`GET /\` with a Host header, ~40 bytes, like wrk's)"
  A_SERVER="raw_http_server --threads 1"
else
  start_server raw_echo "$SERVER_CPU" "$RAW_ECHO" --port 0 --threads 1
  A_PID=$SERVER_PID A_PORT=$SERVER_PORT
  A_WHAT="\`trpc_bench\` (trpc frames of about 100 bytes per request and 30 per reply)"
  A_SERVER="raw_echo_server --threads 1"
fi

MD="$TMP/report.md"
{
  echo "# Client efficiency: one trpc_bench thread vs one wrk thread"
  echo
  echo "Written by \`benchmark/client_efficiency.sh\` (docs/benchmark.md explains it)."
  echo
  if [ "$SMOKE" = 1 ]; then
    echo "**Smoke run (\`--smoke\`): every step on a tiny budget, to check the script works;" \
      "the figures mean nothing.**"
    echo
  fi
  machine_md
  echo "- Settings: client on CPU $CLIENT_CPU, server on CPU $SERVER_CPU (\`taskset\`);" \
    "$CONNECTIONS connections; closed loop; $PAIRS alternating pairs (A B A B ...) per depth;" \
    "each run ${WARMUP} s warm-up + ${DURATION} s measured."
  echo "- A: \`trpc_bench --protocol $PROTOCOL --threads 1 --connections $CONNECTIONS" \
    "--inflight DEPTH --payload-size $PAYLOAD --duration $DURATION --warmup $WARMUP\` against" \
    "\`$A_SERVER\`: $A_WHAT."
  echo "- B: \`wrk -t1 -c$CONNECTIONS -d${DURATION}s\` (after a ${WARMUP} s wrk run not" \
    "counted; DEPTH > 1: \`-s benchmark/http/pipeline.lua -- DEPTH\`) against" \
    "\`raw_http_server --threads 1\` (\`GET / HTTP/1.1\` with a Host header, ~40 bytes;" \
    "a 72-byte reply)."
  echo "- Pipelining differs: trpc_bench keeps DEPTH calls outstanding per connection and sends" \
    "the next one as each reply arrives; wrk sends DEPTH requests in one write and the next" \
    "DEPTH when all have been answered."
  echo "- Client CPU: trpc_bench's own getrusage over its window; wrk's utime+stime from" \
    "/proc/PID/stat between 0.5 s after its start and 0.5 s before its end. Server CPU per" \
    "request: utime+stime from /proc/PID/stat over the measured window (10 ms ticks)."
} >"$MD"

for depth in $DEPTHS; do
  log "== depth $depth: A = trpc_bench ($PROTOCOL) -> ${A_SERVER%% *}, B = wrk -> raw_http_server"
  ratios=() cpu_ratios=() a_qps=() b_qps=() a_cus=() b_cus=()
  {
    echo
    echo "## Depth $depth ($CONNECTIONS connections x $depth)"
    echo
    echo "| pair | A trpc_bench QPS | client CPU | client µs/req | server µs/req |" \
      "B wrk QPS | client CPU | client µs/req | server µs/req | A/B QPS | B/A client µs/req |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  } >>"$MD"
  for pair in $(seq "$PAIRS"); do
    a=$(run_trpc_bench "$A_PORT" "$depth" "$A_PID")
    b=$(run_wrk_warm "$HTTP_PORT" "$depth" "$HTTP_PID")
    ratio=$(awk -v a="$(field qps "$a")" -v b="$(field qps "$b")" 'BEGIN {printf "%.3f", a / b}')
    ratios+=("$ratio")
    cpu_ratio=$(awk -v a="$(client_us "$a")" -v b="$(client_us "$b")" \
      'BEGIN {printf "%.3f", b / a}')
    cpu_ratios+=("$cpu_ratio")
    a_qps+=("$(field qps "$a")") b_qps+=("$(field qps "$b")")
    a_cus+=("$(client_us "$a")") b_cus+=("$(client_us "$b")")
    log "  pair $pair: A $a"
    log "          B $b"
    log "          A/B QPS = $ratio, B/A client CPU per request = $cpu_ratio"
    echo "| $pair | $(field qps "$a") | $(field client_cpu_pct "$a")% | $(client_us "$a") |" \
      "$(field server_us_per_req "$a") | $(field qps "$b") | $(field client_cpu_pct "$b")% |" \
      "$(client_us "$b") | $(field server_us_per_req "$b") | $ratio | $cpu_ratio |" >>"$MD"
    for r in "$a" "$b"; do
      [ "$(field errors "$r")" = 0 ] || echo "| | errors: $r | | | | | | | | | |" >>"$MD"
    done
  done
  summary="depth $depth: A/B QPS median $(median "${ratios[@]}") (pairs $(spread "${ratios[@]}"));"
  summary+=" A median $(median "${a_qps[@]}") QPS ($(spread "${a_qps[@]}")),"
  summary+=" B median $(median "${b_qps[@]}") QPS ($(spread "${b_qps[@]}"));"
  summary+=" client µs/request A $(median "${a_cus[@]}") vs B $(median "${b_cus[@]}"),"
  summary+=" B/A median $(median "${cpu_ratios[@]}") ($(spread "${cpu_ratios[@]}"))"
  log "$summary"
  {
    echo
    echo "Medians: **A/B QPS $(median "${ratios[@]}")** (pairs: $(spread "${ratios[@]}"));" \
      "A $(median "${a_qps[@]}") QPS ($(spread "${a_qps[@]}")), B $(median "${b_qps[@]}") QPS" \
      "($(spread "${b_qps[@]}")); client CPU per request A $(median "${a_cus[@]}") µs," \
      "B $(median "${b_cus[@]}") µs, **B/A $(median "${cpu_ratios[@]}")** (pairs:" \
      "$(spread "${cpu_ratios[@]}"); above 1: trpc_bench spends less CPU per request)."
  } >>"$MD"
done

echo >>"$MD"
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)." >>"$MD"
mkdir -p "$(dirname "$OUT")"
cp "$MD" "$OUT"
cat "$OUT"
