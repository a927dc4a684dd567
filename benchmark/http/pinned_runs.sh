# Shell functions shared by benchmark/client_efficiency.sh and benchmark/http_bench.sh, and some by
# the other benchmark scripts (sourced, not run): start a server pinned to a CPU and learn its port
# (the kernel's pick), run wrk pinned and read its figures, read a process's CPU time, describe the
# machine. Every wait is bounded.
#
# The caller sources it first, parses its options, then calls begin_runs.

CLK_TCK=$(getconf CLK_TCK)
SERVER_PIDS=()
# Pinning on a 2-core machine (docs/benchmark.md): the load client on CPU 0, the server on CPU 1.
CLIENT_CPU=0
SERVER_CPU=1

log() { echo "$*" >&2; }

# Prints the calling script's header comment (its usage) and exits 2.
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }

# begin_runs NAME: checks for wrk, shares CPU 0 when there is one CPU only, makes TMP (a private
# temporary directory) and stops every server started here, and removes TMP, on exit.
begin_runs() {
  command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
  if [ "$(nproc)" -lt 2 ]; then SERVER_CPU=0; fi
  TMP=$(mktemp -d "/tmp/$1.XXXXXX")
  trap 'stop_servers; rm -rf "$TMP"' EXIT
}

# utime + stime of the PIDs, summed, in clock ticks (fields 14 and 15 of /proc/PID/stat,
# counted after the command name, which may hold spaces). A PID that is gone counts 0.
cpu_ticks() {
  local pid stat total=0
  for pid in "$@"; do
    # (An empty pid would read /proc//stat, which is the system's /proc/stat.)
    [ -n "$pid" ] || continue
    stat=$(head -1 "/proc/$pid/stat" 2>/dev/null) || continue
    total=$((total + $(echo "${stat##*) }" | awk '{print $12 + $13}')))
  done
  echo "$total"
}

# VmRSS of the PIDs, summed, in KiB.
vm_rss_kb() {
  local pid total=0 kb
  for pid in "$@"; do
    [ -n "$pid" ] || continue
    kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
    total=$((total + ${kb:-0}))
  done
  echo "$total"
}

now() { date +%s.%N; }

# start_server NAME CPU ARGV... : runs ARGV pinned to CPU with stdout in $TMP/NAME.out and waits
# (10 s at most) for its "... ready on IP:PORT" line. Sets SERVER_PID and SERVER_PORT.
start_server() {
  local name=$1 cpu=$2
  shift 2
  taskset -c "$cpu" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
  local i
  for i in $(seq 100); do
    if grep -q " ready on " "$TMP/$name.out" 2>/dev/null; then
      SERVER_PORT=$(sed -n 's/.* ready on [0-9.]*:\([0-9]*\).*/\1/p' "$TMP/$name.out")
      return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  log "$name did not start: $(cat "$TMP/$name.err")"
  return 1
}

# wait_listen_file FILE PID [TENTHS]: waits (TENTHS/10 s at most, default 10 s) for the
# server.listen_file of a framework server started on port 0 (written whole once every listener is
# up; docs/config.md). Fails if PID ends first. The caller removes an old FILE before the start.
wait_listen_file() {
  local i
  for i in $(seq "${3:-100}"); do
    [ -s "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# listen_port FILE NAME: the port of service NAME ("admin": the admin service) in a listen file.
listen_port() { awk -v n="$2" '$1 == n {sub(/.*:/, "", $2); print $2}' "$1"; }

# wait_port PORT PID: waits (10 s at most) until something accepts on 127.0.0.1:PORT, for servers
# that print no ready line and write no listen file (nginx).
wait_port() {
  local i
  for i in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

stop_server() {
  kill "$1" 2>/dev/null || true
  local i
  for i in $(seq 50); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# Drops PID from the servers stop_servers stops (after stop_server stopped it).
forget_server() {
  local pid kept=()
  for pid in "${SERVER_PIDS[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
  SERVER_PIDS=("${kept[@]}")
}

stop_servers() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do stop_server "$pid"; done
  SERVER_PIDS=()
}

# A free loopback port (the kernel's pick for a socket bound to port 0, then released), for a
# program that cannot say which port it bound (nginx). Our servers take port 0 and say it.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# wrk latency like "842.00us", "10.49ms" or "1.02s" in µs.
to_us() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) print int(n); else if (v ~ /ms$/) print int(n * 1000); else print int(n * 1e6)
  }'
}

# run_wrk CPU PORT CONNECTIONS DEPTH SECONDS "SERVER_PID..." : one wrk thread pinned to CPU against
# 127.0.0.1:PORT, pipelining DEPTH requests per connection (benchmark/http/pipeline.lua) when
# DEPTH > 1. Prints one line:
#   qps=Q p99_us=P requests=N errors=E client_cpu_pct=C server_us_per_req=S
# (p99_us is 0 where wrk prints 0, as it does with pipelining.) The server's CPU (all its
# processes) is read from /proc just before wrk starts and just after it ends (wrk has no
# warm-up of its own: the caller runs a short wrk first). The client's CPU is read from wrk's own
# /proc/PID/stat between 0.5 s after its start and 0.5 s before its end (steady state only; in
# a run shorter than 2 s, a smoke run's: between 0.25 s and 0.75 s).
run_wrk() {
  local cpu=$1 port=$2 conns=$3 depth=$4 secs=$5 spid=$6
  local script=()
  if [ "$depth" -gt 1 ]; then script=(-s "$HTTP_DIR/pipeline.lua"); fi
  local out="$TMP/wrk.$RANDOM.out"
  local s0 s1 c0 c1 t0 t1 wpid
  # shellcheck disable=SC2086  # spid: a list of pids
  s0=$(cpu_ticks $spid)
  timeout $((secs + 30)) taskset -c "$cpu" wrk -t1 -c"$conns" -d"${secs}s" --timeout 10s --latency \
    "${script[@]}" "http://127.0.0.1:$port/" -- "$depth" >"$out" 2>&1 &
  wpid=$!
  local long=0
  [ "$secs" -ge 2 ] && long=1
  if [ "$long" = 1 ]; then sleep 0.5; else sleep 0.25; fi
  # $! is timeout's pid; wrk is its child.
  local child
  child=$(pgrep -P "$wpid" | head -1)
  c0=$(cpu_ticks "$child")
  t0=$(now)
  if [ "$long" = 1 ]; then sleep "$((secs - 1))"; else sleep 0.5; fi
  c1=$(cpu_ticks "$child")
  t1=$(now)
  wait "$wpid" || true
  # shellcheck disable=SC2086
  s1=$(cpu_ticks $spid)
  local qps requests errors p99
  qps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  requests=$(awk '/ requests in / {print $1}' "$out")
  errors=$(awk '/Socket errors:/ {gsub(",", ""); e += $4 + $6 + $8 + $10}
                /Non-2xx or 3xx responses:/ {e += $5}
                END {print e + 0}' "$out")
  p99=$(to_us "$(awk '$1 == "99%" {print $2}' "$out")")
  if [ -z "$qps" ] || [ -z "$requests" ]; then
    log "wrk failed: $(cat "$out")"
    return 1
  fi
  awk -v qps="$qps" -v p99="$p99" -v n="$requests" -v e="$errors" -v c0="$c0" -v c1="$c1" \
      -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hz="$CLK_TCK" 'BEGIN {
    printf "qps=%.0f p99_us=%d requests=%d errors=%d client_cpu_pct=%.0f server_us_per_req=%.2f\n",
      qps, p99, n, e, (c1 - c0) / hz / (t1 - t0) * 100, (s1 - s0) / hz * 1e6 / n
  }'
}

# field KEY "k=v k=v ..." : the value of KEY.
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# median V... and spread V... (min-max), of numbers.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {
  print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
spread() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "-" hi}'; }

# Machine, commit and date, as Markdown lines.
machine_md() {
  local model cores commit dirty
  model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
  cores=$(grep -c '^processor' /proc/cpuinfo)
  commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | head -1)
  [ -n "$dirty" ] && commit="$commit (with uncommitted changes)"
  echo "- Machine: $model, $cores CPUs (/proc/cpuinfo), Linux $(uname -r)"
  echo "- Commit: $commit"
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- Load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
}
