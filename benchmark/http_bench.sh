#!/usr/bin/env bash
# The HTTP benchmark: wrk against each HTTP server we have, pinned, on loopback.
#
# Servers (each on CPU 1, one thread or worker): raw_http_server (benchmark/baseline, the
# syscall-path limit), nginx `return 200 '{}'` (benchmark/http/nginx.conf.in, from a private
# prefix in a temporary directory), and the framework's examples/http_hello in each thread model.
# Load: one wrk thread on CPU 0, at 1, 10, 100 and 1000 connections, and pipelining depth 16 at
# 100 connections (benchmark/http/pipeline.lua); each run WARMUP s of wrk not counted, then
# DURATION s. ROUNDS rounds, each running every setting on every server in turn (A B A B ...);
# the report gives medians and the QPS spread. The CPU ratios to raw_http and nginx are medians
# of per-round ratios: runs seconds apart share the machine's state, and a shared VM here
# switches between speed levels ~25% apart every few seconds, which moves every server alike. Reported: QPS, wrk's P99 (indicative only: wrk
# adds synthetic samples to its histogram, docs/benchmark.md), and the server's CPU µs per request
# (utime+stime of all its processes from /proc/PID/stat before and after the run / requests).
#
# C10K (--c10k N, default 10000; 0 skips it): per server, a fresh server loaded by wrk at 100
# connections; then N idle keep-alive connections, each having completed one request
# (benchmark/http/idle_connections.py, on CPU 0); then wrk at 100 connections beside them.
# Reported: server RSS per idle connection (VmRSS before/after opening them; kernel socket memory
# is not in it), QPS, P99 and CPU µs per request with them, the QPS ratio to the run just before
# without them, and how many idle connections still answered at the end.
#
# Writes benchmark/results/http_latest.{md,json}.
#
#   benchmark/http_bench.sh [--build DIR] [--duration S] [--warmup S] [--rounds N]
#       [--connections "1 10 100 1000"] [--servers "raw_http nginx http_hello_merge http_hello_fiber"]
#       [--c10k N] [--out-dir DIR] [--smoke]
#
# --smoke runs every step on a tiny budget (one round of 1 s wrk runs without warm-up, 10
# connections and the pipelined setting, 50 idle connections for C10K) to check the script
# works; its figures mean nothing, and it writes to BUILD/results unless --out-dir says where.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HTTP_DIR="$ROOT/benchmark/http"
BUILD="$ROOT/build"
DURATION=2
WARMUP=1
ROUNDS=7
CONNECTIONS="1 10 100 1000"
PIPELINE_CONNECTIONS=100
PIPELINE_DEPTH=16
SERVERS="raw_http nginx http_hello_merge http_hello_fiber"
C10K=10000
OUT_DIR=""
SMOKE=0
# shellcheck source=benchmark/http/pinned_runs.sh
source "$HTTP_DIR/pinned_runs.sh"

while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --servers) SERVERS=$2; shift 2 ;;
    --c10k) C10K=$2; shift 2 ;;
    --out-dir) OUT_DIR=$2; shift 2 ;;
    --smoke) SMOKE=1; shift ;;
    *) usage ;;
  esac
done
if [ "$SMOKE" = 1 ]; then
  DURATION=1 WARMUP=0 ROUNDS=1 CONNECTIONS=10 C10K=50
  OUT_DIR=${OUT_DIR:-$BUILD/results}
else
  [ "$DURATION" -ge 2 ] && [ "$WARMUP" -ge 1 ] && [ "$ROUNDS" -ge 1 ] || usage
  OUT_DIR=${OUT_DIR:-$ROOT/benchmark/results}
fi
begin_runs http_bench
# 1000 connections, and C10K: the idle connections plus the load's, in wrk, the helper and the
# servers (which inherit this limit).
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((C10K + 2000)) ]; then
  echo "ulimit -n is $(ulimit -n): too low for --c10k $C10K" >&2
  exit 1
fi

declare -A PORT PIDS DESCRIPTION

# ---- The servers: start_<name> starts one on SERVER_CPU and sets PORT, PIDS (every process
# whose CPU counts) and DESCRIPTION for it. Returns non-zero to skip the server.

start_raw_http() {
  local bin="$BUILD/benchmark/baseline/raw_http_server"
  [ -x "$bin" ] || { log "missing $bin: cmake --build $BUILD --target raw_http_server"; return 1; }
  start_server raw_http "$SERVER_CPU" "$bin" --port 0 --threads 1 || return 1
  PORT[raw_http]=$SERVER_PORT PIDS[raw_http]=$SERVER_PID
  DESCRIPTION[raw_http]="benchmark/baseline/raw_http_server --threads 1 (raw epoll, canned reply)"
}

start_nginx() {
  local bin port dir="$TMP/nginx"
  bin=$(command -v nginx || echo /usr/sbin/nginx)
  [ -x "$bin" ] || { log "nginx is missing (apt-get install nginx-light): skipped"; return 1; }
  port=$(free_port)  # nginx cannot report a port it picked
  mkdir -p "$dir"
  sed "s#@DIR@#$dir#g; s#@PORT@#$port#g; s#@CONNECTIONS@#$((C10K + 4096))#g" \
    "$HTTP_DIR/nginx.conf.in" >"$dir/nginx.conf"
  taskset -c "$SERVER_CPU" "$bin" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" \
    >"$TMP/nginx.out" 2>&1 &
  local master=$!
  SERVER_PIDS+=("$master")
  wait_port "$port" "$master" || { log "nginx did not start: $(cat "$dir/error.log")"; return 1; }
  # The master listens before it forks the worker, whose CPU is the one that counts.
  local worker=""
  for _ in $(seq 100); do
    worker=$(pgrep -P "$master" | head -1)
    [ -n "$worker" ] && break
    sleep 0.1
  done
  [ -n "$worker" ] || { log "nginx started no worker"; return 1; }
  PORT[nginx]=$port PIDS[nginx]="$master $worker"
  DESCRIPTION[nginx]="$("$bin" -v 2>&1 | sed 's/.*: //'), 1 worker, return 200 '{}' (nginx.conf.in)"
}

# ---- The framework's HTTP server, examples/http_hello, once per thread model (one worker on
# SERVER_CPU; the YAML differs only in global.threadmodel). GET / answers "{}". It listens on
# port 0 and says which port in its listen file.
http_hello_yaml() {  # model listen_file
  local tm
  if [ "$1" = merge ]; then
    tm="    default:
      - instance_name: bench
        io_handle_type: merge
        io_thread_num: 1"
  else
    tm="    fiber:
      - instance_name: bench
        concurrency_hint: 1"
  fi
  cat <<EOF
global:
  threadmodel:
$tm
server:
  app: bench
  server: http_hello
  listen_file: $2
  service:
    - name: trpc.test.http_hello.Http
      protocol: http
      ip: 127.0.0.1
      port: 0
      max_conn_num: 100000
      idle_time: 600000
plugins:
  log:
    level: warn
EOF
}
start_http_hello_model() {  # model
  local name="http_hello_$1" bin="$BUILD/examples/http_hello/http_hello_server"
  local listen="$TMP/$name.listen"
  [ -x "$bin" ] || { log "missing $bin: cmake --build $BUILD --target http_hello_server"; return 1; }
  http_hello_yaml "$1" "$listen" >"$TMP/$name.yaml"
  rm -f "$listen"
  taskset -c "$SERVER_CPU" "$bin" --config "$TMP/$name.yaml" >"$TMP/$name.out" 2>&1 &
  local pid=$!
  SERVER_PIDS+=("$pid")
  if ! wait_listen_file "$listen" "$pid"; then
    log "$name did not start: $(cat "$TMP/$name.out")"
    return 1
  fi
  PORT[$name]=$(listen_port "$listen" trpc.test.http_hello.Http) PIDS[$name]=$pid
  DESCRIPTION[$name]="examples/http_hello/http_hello_server, $1 model, 1 worker, GET / -> {}"
}
start_http_hello_merge() { start_http_hello_model merge; }
start_http_hello_fiber() { start_http_hello_model fiber; }

MACHINE="$TMP/machine.md"
machine_md >"$MACHINE"
RUNNING=()
for s in $SERVERS; do
  if "start_$s"; then RUNNING+=("$s"); log "$s on 127.0.0.1:${PORT[$s]} (pids ${PIDS[$s]})"; fi
done
[ ${#RUNNING[@]} -gt 0 ] || { echo "no server started" >&2; exit 1; }

# One line per measured run: server connections depth round key=value...
RUNS="$TMP/runs.txt"
: >"$RUNS"
SETTINGS=()
for c in $CONNECTIONS; do SETTINGS+=("$c 1"); done
SETTINGS+=("$PIPELINE_CONNECTIONS $PIPELINE_DEPTH")

measure() {  # server connections depth: a warm-up run (unless --smoke), then the measured one
  local s=$1 c=$2 d=$3
  if [ "$WARMUP" != 0 ]; then
    run_wrk "$CLIENT_CPU" "${PORT[$s]}" "$c" "$d" "$WARMUP" "${PIDS[$s]}" >/dev/null
  fi
  run_wrk "$CLIENT_CPU" "${PORT[$s]}" "$c" "$d" "$DURATION" "${PIDS[$s]}"
}

# A server that ended during a run: say how (into the report too) and start it again, so one
# run is lost rather than the rest of the benchmark.
INCIDENTS="$TMP/incidents.txt"
: >"$INCIDENTS"
check_alive() {  # server what-was-running
  local s=$1 main=${PIDS[$1]%% *} rc=0
  kill -0 "$main" 2>/dev/null && return 0
  wait "$main" || rc=$?
  local line="$s (pid $main) ended during $2 with exit status $rc"
  line+="$( (tail -3 "$TMP/$s.err" "$TMP/$s.out" 2>/dev/null || true) | tr '\n' ' ')"
  log "  $line; starting it again"
  echo "$line" >>"$INCIDENTS"
  forget_server "$main"
  "start_$s"
}

for round in $(seq "$ROUNDS"); do
  log "== round $round of $ROUNDS"
  for setting in "${SETTINGS[@]}"; do
    read -r c d <<<"$setting"
    for s in "${RUNNING[@]}"; do
      r=$(measure "$s" "$c" "$d") || r="failed=1"
      kill -0 "${PIDS[$s]%% *}" 2>/dev/null || r="failed=1 $r"  # it ended during the run
      log "  $s c=$c depth=$d: $r"
      echo "$s $c $d $round $r" >>"$RUNS"
      check_alive "$s" "round $round, $c connections, depth $d" || exit 1
    done
  done
done

# C10K: per server, N idle connections opened from CPU 0, then the 100-connection load.
C10K_RUNS="$TMP/c10k.txt"
: >"$C10K_RUNS"
if [ "$C10K" -gt 0 ]; then
  for s in "${RUNNING[@]}"; do
    log "== C10K: $s, $C10K idle connections + wrk at 100"
    # A fresh server, warmed at 100 connections: the heap earlier runs left resident would
    # otherwise hide the idle connections' memory.
    main_pid=${PIDS[$s]%% *}
    stop_server "$main_pid"
    forget_server "$main_pid"
    "start_$s" || continue
    # Side by side: the 100-connection load without, then with, the idle connections.
    r0=$(measure "$s" 100 1) || r0="failed=1"
    # shellcheck disable=SC2086
    rss0=$(vm_rss_kb ${PIDS[$s]})
    out="$TMP/idle_$s.out"
    timeout 600 taskset -c "$CLIENT_CPU" python3 "$HTTP_DIR/idle_connections.py" \
      --port "${PORT[$s]}" --count "$C10K" --hold 300 >"$out" 2>"$TMP/idle_$s.err" &
    helper=$!
    for _ in $(seq 1200); do
      grep -q '^ready' "$out" && break
      kill -0 "$helper" 2>/dev/null || break
      sleep 0.1
    done
    opened=$(awk '/^ready/ {print $2}' "$out")
    # shellcheck disable=SC2086
    rss1=$(vm_rss_kb ${PIDS[$s]})
    r=$(measure "$s" 100 1) || r="failed=1"
    helper_child=$(pgrep -P "$helper" | head -1)
    kill -USR1 "$helper_child" 2>/dev/null || true
    wait "$helper" || true
    alive=$(awk '/^alive/ {print $2}' "$out")
    line="$s opened=${opened:-0} alive=${alive:-0} rss_before_kb=$rss0 rss_after_kb=$rss1 $r"
    line+=" qps_without_idle=$(field qps "$r0")"
    log "  $line $(cat "$TMP/idle_$s.err")"
    echo "$line" >>"$C10K_RUNS"
  done
fi

# ---- The report: medians over the rounds, Markdown and JSON.
mkdir -p "$OUT_DIR"
echo "- Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$MACHINE"
for s in "${RUNNING[@]}"; do echo "$s ${DESCRIPTION[$s]}"; done >"$TMP/servers.txt"
python3 - "$RUNS" "$C10K_RUNS" "$MACHINE" "$TMP/servers.txt" "$INCIDENTS" "$OUT_DIR" \
  "$DURATION" "$WARMUP" "$ROUNDS" "$CLIENT_CPU" "$SERVER_CPU" "$C10K" "$SMOKE" <<'EOF'
import json, statistics, sys

runs_path, c10k_path, machine_path, servers_path, incidents_path, out_dir = sys.argv[1:7]
duration, warmup, rounds, client_cpu, server_cpu, c10k, smoke = map(int, sys.argv[7:14])
incidents = open(incidents_path).read().splitlines()


def fields(words):
    out = {}
    for w in words:
        k, _, v = w.partition("=")
        out[k] = float(v) if v.replace(".", "", 1).isdigit() else v
    return out


servers = {}
for line in open(servers_path):
    name, _, desc = line.strip().partition(" ")
    servers[name] = desc
runs = []
for line in open(runs_path):
    w = line.split()
    runs.append({"server": w[0], "connections": int(w[1]), "depth": int(w[2]),
                 "round": int(w[3]), **fields(w[4:])})
c10k_runs = []
for line in open(c10k_path):
    w = line.split()
    c10k_runs.append({"server": w[0], **fields(w[1:])})

settings = []
for r in runs:
    if (r["connections"], r["depth"]) not in settings:
        settings.append((r["connections"], r["depth"]))

summary = []
for c, d in settings:
    for s in servers:
        rs = [r for r in runs if r["server"] == s and r["connections"] == c and r["depth"] == d
              and "qps" in r and "failed" not in r]
        if not rs:
            continue
        med = lambda k: statistics.median(r[k] for r in rs)
        summary.append({"server": s, "connections": c, "depth": d, "runs": len(rs),
                        "qps": round(med("qps")), "qps_min": round(min(r["qps"] for r in rs)),
                        "qps_max": round(max(r["qps"] for r in rs)),
                        # wrk prints 0 for some pipelined runs: those are left out.
                        "p99_us": statistics.median([r["p99_us"] for r in rs if r["p99_us"]]
                                                    or [0]) or None,
                        "server_us_per_request": round(med("server_us_per_req"), 2),
                        "client_cpu_percent": round(med("client_cpu_pct")),
                        "errors": int(sum(r["errors"] for r in rs))})

machine_lines = open(machine_path).read().strip().splitlines()
machine = {l[2:].partition(": ")[0].lower(): l[2:].partition(": ")[2] for l in machine_lines}
md = ["# HTTP benchmark: wrk against our HTTP servers and their peers", "",
      "Written by `benchmark/http_bench.sh` (docs/benchmark.md explains it).", ""]
if smoke:
    md += ["**Smoke run (`--smoke`): every step on a tiny budget, to check the script works; the "
           "figures mean nothing.**", ""]
md += [*machine_lines,
      f"- Settings: loopback; server on CPU {server_cpu}, one `wrk -t1` on CPU {client_cpu} "
      f"(`taskset`); each run `wrk -d{warmup}s` not counted, then `wrk -d{duration}s --latency`; "
      f"{rounds} rounds, each running every setting on every server in turn; medians over the "
      "rounds, QPS spread as min-max. Pipelining: `-s benchmark/http/pipeline.lua -- 16` (16 "
      "requests per write, the next 16 when all are answered).",
      "- Server CPU per request: utime+stime of all the server's processes from /proc/PID/stat "
      "just before and after the measured run, over the requests wrk completed (10 ms ticks). "
      "The CPU ratios to raw_http and nginx are medians of the per-round ratios (each round "
      "runs the servers seconds apart, so they share the machine's state), not ratios of the "
      "medians.",
      "- P99 is wrk's: indicative only (wrk adds synthetic samples to its histogram). With "
      "pipelining it times a batch of 16 from its first request's send, and some runs print 0: "
      "those are left out of the median (n/a when all are).", "", "Servers:", ""]
md += [f"- `{s}`: {desc}" for s, desc in servers.items()]
md += ["", "| connections | depth | server | QPS (median) | QPS min-max | P99 ms | server µs/req "
       "| CPU vs raw_http | CPU vs nginx | wrk CPU | errors |",
       "|---|---|---|---|---|---|---|---|---|---|---|"]


def cpu_ratio(e, other):
    """Median over the rounds of e's server CPU per request / other's in the same round."""
    def per_round(s):
        return {r["round"]: r["server_us_per_req"] for r in runs
                if r["server"] == s and r["connections"] == e["connections"]
                and r["depth"] == e["depth"] and "qps" in r and "failed" not in r
                and r.get("server_us_per_req")}
    mine, theirs = per_round(e["server"]), per_round(other)
    ratios = [mine[k] / theirs[k] for k in mine if k in theirs]
    return round(statistics.median(ratios), 3) if ratios else None


def times(x):
    return f"{x:.2f}x" if x is not None else ""


for e in summary:
    e["cpu_vs_raw_http"] = cpu_ratio(e, "raw_http")
    e["cpu_vs_nginx"] = cpu_ratio(e, "nginx")
    p99 = f"{e['p99_us'] / 1000:.2f}" if e["p99_us"] else "n/a"
    md.append(f"| {e['connections']} | {e['depth']} | {e['server']} | {e['qps']} | "
              f"{e['qps_min']}-{e['qps_max']} | {p99} | {e['server_us_per_request']:.2f} | "
              f"{times(e['cpu_vs_raw_http'])} | {times(e['cpu_vs_nginx'])} | "
              f"{e['client_cpu_percent']}% | {e['errors']} |")
if c10k_runs:
    md += ["", f"## C10K: {c10k} idle keep-alive connections, then wrk at 100 connections", "",
           "Each idle connection completed one request first (benchmark/http/idle_connections.py, "
           f"on CPU {client_cpu}). The server is started afresh and loaded at 100 connections "
           "(warm-up, then a measured run: the last column) before they are opened; RSS per idle "
           "connection = (server VmRSS after opening them - "
           "before) / opened; kernel socket buffers are not in VmRSS. One run per server.", "",
           "| server | opened | alive at the end | RSS before MiB | RSS per idle conn (bytes) | "
           "QPS at 100 | P99 ms | server µs/req | vs just before without them (QPS) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in c10k_runs:
        per = (r["rss_after_kb"] - r["rss_before_kb"]) * 1024 / r["opened"] if r["opened"] else 0
        r["rss_per_idle_connection_bytes"] = round(per)
        if "qps" not in r:
            md.append(f"| {r['server']} | {int(r['opened'])} | {int(r['alive'])} | | | failed "
                      "| | | |")
            continue
        vs = (f"{r['qps'] / r['qps_without_idle']:.2f}x ({r['qps_without_idle']:.0f})"
              if r.get("qps_without_idle") else "")
        p99 = f"{r['p99_us'] / 1000:.2f}" if r["p99_us"] else "n/a"
        md.append(f"| {r['server']} | {int(r['opened'])} | {int(r['alive'])} | "
                  f"{r['rss_before_kb'] / 1024:.1f} | {per:.0f} | {r['qps']:.0f} | {p99} | "
                  f"{r['server_us_per_req']:.2f} | {vs} |")
# The targets of the HTTP work (docs/benchmark.md), for the framework's servers.
checks = []
for e in summary:
    if not e["server"].startswith("http_hello"):
        continue
    if (e["connections"], e["depth"]) == (100, 1):
        checks.append((e["server"], "100 connections: CPU/request <= nginx's", e["cpu_vs_nginx"],
                       1.0))
        checks.append((e["server"], "100 connections: CPU/request <= 1.3x raw_http's",
                       e["cpu_vs_raw_http"], 1.3))
    if (e["connections"], e["depth"]) == (100, 16):
        checks.append((e["server"], "pipelined x16: CPU/request <= 2x raw_http's",
                       e["cpu_vs_raw_http"], 2.0))
for r in c10k_runs:
    if r["server"].startswith("http_hello") and "rss_per_idle_connection_bytes" in r:
        checks.append((r["server"], "C10K: RSS per idle connection <= 8 KiB (bytes)",
                       r["rss_per_idle_connection_bytes"], 8192))
        checks.append((r["server"], "C10K: idle connections alive at the end (of opened)",
                       int(r["alive"]), int(r["opened"])))
if checks:
    md += ["", "## Targets", "", "| server | target | measured | bound | met |", "|---|---|---|---|---|"]
    for server, what, got, bound in checks:
        if "alive" in what:
            met = got == bound
        else:
            met = got is not None and got <= bound
        shown = "n/a" if got is None else (f"{got:.2f}x" if isinstance(got, float) else str(got))
        md.append(f"| {server} | {what} | {shown} | {bound} | {'yes' if met else '**no**'} |")
if incidents:
    md += ["", "## Incidents", "", "Servers that ended during a run (the run is left out of the "
           "medians; the server was started again):", ""] + [f"- {i}" for i in incidents]
md.append("")
with open(f"{out_dir}/http_latest.md", "w") as f:
    f.write("\n".join(md))
result = {"machine": machine, "servers": servers,
          "settings": {"duration_s": duration, "warmup_s": warmup, "rounds": rounds,
                       "smoke": bool(smoke),
                       "client_cpu": client_cpu, "server_cpu": server_cpu, "wrk_threads": 1,
                       "pipeline_depth": 16, "c10k_idle_connections": c10k},
          "summary": summary, "runs": runs, "c10k": c10k_runs, "incidents": incidents}
with open(f"{out_dir}/http_latest.json", "w") as f:
    json.dump(result, f, indent=1)
print("\n".join(md))
EOF
