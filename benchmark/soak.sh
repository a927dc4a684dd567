#!/usr/bin/env bash
# A soak run, by hand: two servers under steady load at about half their capacity for a long
# time, sampled every 10 s, to show that memory, descriptors and errors stay flat.
#
#   benchmark/soak.sh [--build DIR] [--minutes N] [--out DIR]     (default: build, 30, build/results)
#   benchmark/soak.sh --smoke [--build DIR] [--out DIR]
#
# - echo_server (examples/echo; trpc, fiber model) with the admin service: trpc_bench sends a mix at a
#   quarter of its measured capacity: fast echoes, 5% of calls that sleep 20 ms, 1% that spin
#   2 ms, and, from a second client, calls to a method that does not exist (expected ret 12).
# - http_hello_server (HTTP/1.1, merged model): GET /hello with keep-alive and pipelining, and
#   GET /nosuch (expected 404), at a quarter of its capacity.
# Servers on CPU 1, clients on CPU 0. Every 10 s: each server's RSS and open descriptors. At the
# end: every client's error counts; anything but the expected codes is an unexpected error.
# Writes soak.csv and soak.md to the out dir and prints the summary; exits 1 if RSS or the
# descriptor count moved more than 10% after the first minute or an unexpected error came.
# --smoke runs every step on a tiny budget (0.3 s capacity runs, 3 s of load sampled every 0.5 s)
# to check the script works: its figures mean nothing, and it exits 0 whatever the verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmark/http/pinned_runs.sh  # wait_listen_file, listen_port

build=build
minutes=30
out=build/results
smoke=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--minutes N] [--out DIR] [--smoke]" >&2; exit 2 ;;
  esac
done
# The load's length, the sampling period, how long before the load ends sampling stops, and the
# capacity runs' window and warm-up (seconds).
seconds=$((minutes * 60)) sample_every=10 sample_margin=10 cap_window=3 cap_warmup=1
if [[ $smoke == 1 ]]; then
  seconds=3 sample_every=0.5 sample_margin=2 cap_window=0.3 cap_warmup=0.1
fi
mkdir -p "$out"
tmp=$(mktemp -d /tmp/soak.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

bench=$build/benchmark/trpc_bench/trpc_bench
# Both servers on port 0 (the admin service too: auto); their listen files say which ports.
cat > "$tmp/echo.yaml" <<EOF
global:
  threadmodel:
    fiber:
      - instance_name: soak
        concurrency_hint: 1
server:
  app: soak
  server: echo
  admin_port: auto
  listen_file: $tmp/echo.listen
  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
      timeout: 5000
plugins:
  log:
    level: error
EOF
cat > "$tmp/http.yaml" <<EOF
global:
  threadmodel:
    default:
      - instance_name: soak
        io_handle_type: merge
        io_thread_num: 1
server:
  app: soak
  server: http
  listen_file: $tmp/http.listen
  service:
    - name: trpc.test.http_hello.Http
      protocol: http
      ip: 127.0.0.1
      port: 0
plugins:
  log:
    level: error
EOF
taskset -c 1 "$build/examples/echo/echo_server" --config "$tmp/echo.yaml" >/dev/null &
echo_pid=$!; pids+=("$echo_pid")
taskset -c 1 "$build/examples/http_hello/http_hello_server" --config "$tmp/http.yaml" >/dev/null &
http_pid=$!; pids+=("$http_pid")
wait_listen_file "$tmp/echo.listen" "$echo_pid" || { echo "echo_server did not start" >&2; exit 1; }
wait_listen_file "$tmp/http.listen" "$http_pid" || { echo "http_hello did not start" >&2; exit 1; }
trpc_port=$(listen_port "$tmp/echo.listen" trpc.test.helloworld.Greeter)
admin_port=$(listen_port "$tmp/echo.listen" admin)
http_port=$(listen_port "$tmp/http.listen" trpc.test.http_hello.Http)

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
# Descriptors before any client connects: after the clients close, the servers must be back here.
idle_fds="$(fds "$echo_pid") $(fds "$http_pid")"

capacity() {  # closed loop, cap_window seconds: OK replies per second
  taskset -c 0 "$bench" "$@" --duration "$cap_window" --warmup "$cap_warmup" --quiet \
    --json "$tmp/cap.json" >/dev/null 2>&1
  python3 -c "import json; d=json.load(open('$tmp/cap.json')); print(int(d['ok']/d['window_s']))"
}
# One call outstanding per connection (no pipelining): the capacity a request/response client sees.
trpc_cap=$(capacity --target "127.0.0.1:$trpc_port" --connections 50)
http_cap=$(capacity --protocol http --target "127.0.0.1:$http_port" --http-path /hello \
  --connections 50)
trpc_qps=$((trpc_cap / 4))
http_qps=$((http_cap / 4))
echo "soak: $seconds s; trpc capacity $trpc_cap/s, load $trpc_qps/s; http capacity" \
  "$http_cap/s, load $http_qps/s" >&2

run_client() {  # name, args...
  local name=$1; shift
  taskset -c 0 "$bench" "$@" --duration "$seconds" --warmup 0 --quiet --timeout 5000 \
    --json "$tmp/$name.json" >/dev/null 2>"$tmp/$name.log" &
  pids+=("$!")
}
run_client trpc_mix --target "127.0.0.1:$trpc_port" --qps "$trpc_qps" --connections 50 \
  --inflight 8 --tail-ratio 0.05 --tail-delay 20ms --tail-kind sleep
run_client trpc_spin --target "127.0.0.1:$trpc_port" --qps $((trpc_qps / 100 + 1)) \
  --connections 4 --tail-ratio 1 --tail-delay 2ms --tail-kind spin
run_client trpc_unknown --target "127.0.0.1:$trpc_port" --qps 100 --connections 2 \
  --func /trpc.test.helloworld.Greeter/NoSuchMethod
run_client http_hello --protocol http --target "127.0.0.1:$http_port" --http-path /hello \
  --qps "$http_qps" --connections 50 --inflight 4
run_client http_missing --protocol http --target "127.0.0.1:$http_port" --http-path /nosuch \
  --qps 100 --connections 2

echo "t_s,trpc_rss_kb,trpc_fds,http_rss_kb,http_fds" > "$out/soak.csv"
sleep 2  # the clients connect first
start=$(date +%s)
# Sample only while the clients run (they stop at about start + seconds - 2).
while (( $(date +%s) - start < seconds - sample_margin )); do
  t=$(( $(date +%s) - start ))
  echo "$t,$(rss_kb "$echo_pid"),$(fds "$echo_pid"),$(rss_kb "$http_pid"),$(fds "$http_pid")" \
    >> "$out/soak.csv"
  sleep "$sample_every"
done
# The clients end on their own (their duration), then report.
for p in "${pids[@]:2}"; do wait "$p" || true; done
sleep 1  # the servers see the clients' FINs
closed_fds="$(fds "$echo_pid") $(fds "$http_pid")"
curl -s "http://127.0.0.1:$admin_port/metrics" > "$out/soak_metrics.txt" || true

python3 - "$out" "$tmp" "$seconds" "$trpc_cap" "$trpc_qps" "$http_cap" "$http_qps" \
  "$idle_fds" "$closed_fds" "$smoke" <<'EOF'
import csv, json, sys
out, tmp, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
trpc_cap, trpc_qps, http_cap, http_qps = sys.argv[4:8]
idle_fds, closed_fds = [list(map(int, a.split())) for a in sys.argv[8:10]]
smoke = sys.argv[10] == "1"
rows = list(csv.DictReader(open(f"{out}/soak.csv")))
expected = {"trpc_mix": set(), "trpc_spin": set(), "trpc_unknown": {"12"},
            "http_hello": set(), "http_missing": {"http:404"}}
length = f"{seconds // 60} minutes" if seconds % 60 == 0 else f"{seconds} s"
lines = [f"# Soak run: {length}", ""]
if smoke:
    lines += ["**Smoke run (`--smoke`): every step on a tiny budget, to check the script works; "
              "the figures mean nothing and the verdict is not enforced.**", ""]
lines += [
         f"trpc (fiber, 1 worker): capacity {trpc_cap}/s, load {trpc_qps}/s (+1% spinning 2 ms, "
         f"5% sleeping 20 ms, 100/s to an unknown method); http (merged, 1 worker): capacity "
         f"{http_cap}/s, load {http_qps}/s (+100/s to a missing path).", "",
         "| client | requests | ok | errors (expected) | unexpected |", "|---|---|---|---|---|"]
unexpected_total = 0
for name, ok_codes in expected.items():
    d = json.load(open(f"{tmp}/{name}.json"))
    errs = d.get("errors") or {}
    unexpected = {k: v for k, v in errs.items() if k not in ok_codes}
    unexpected_total += sum(unexpected.values())
    lines.append(f"| {name} | {d['requests']} | {d['ok']} | "
                 f"{sum(v for k, v in errs.items() if k in ok_codes)} | {unexpected or 0} |")
after = [r for r in rows if int(r["t_s"]) >= 60] or rows
verdict = True
lines += ["", "| series | at 1 min | at the end | min..max after 1 min | within 10% |",
          "|---|---|---|---|---|"]
for key in ("trpc_rss_kb", "trpc_fds", "http_rss_kb", "http_fds"):
    vals = [int(r[key]) for r in after]
    ok = max(vals) <= vals[0] * 1.1 + 2 and min(vals) >= vals[0] * 0.9 - 2
    verdict &= ok
    lines.append(f"| {key} | {vals[0]} | {vals[-1]} | {min(vals)}..{max(vals)} | "
                 f"{'yes' if ok else 'NO'} |")
# No descriptor outlives its connection: once the clients have closed, each server holds what it
# held before they connected.
fds_back = all(c <= i for c, i in zip(closed_fds, idle_fds))
verdict &= fds_back
lines += ["", f"descriptors (trpc, http) before the clients: {idle_fds[0]}, {idle_fds[1]}; after "
          f"they closed: {closed_fds[0]}, {closed_fds[1]} ({'back' if fds_back else 'NOT back'})"]
verdict &= unexpected_total == 0
bound = [n for n in expected if json.load(open(f"{tmp}/{n}.json"))["client"]["bottleneck"]]
if bound:
    lines += ["", f"client-bound (rate below target): {', '.join(bound)}"]
lines += ["", f"unexpected errors: {unexpected_total}; verdict: {'flat' if verdict else 'NOT flat'}"]
open(f"{out}/soak.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(0 if verdict or smoke else 1)
EOF
