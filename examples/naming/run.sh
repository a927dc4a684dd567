#!/usr/bin/env bash
# Service discovery through etcd, end to end (examples/naming/README.md):
#   1. starts etcd on free loopback ports below the kernel's ephemeral range, with a temporary
#      data dir;
#   2. starts three naming_server instances (weights 100, 200, 300) on ports the kernel picks
#      (`port: 0`; each tells its address in its listen file); they register in etcd;
#   3. runs naming_client: calls spread 1:2:3 by weight, and one hash key -> one instance;
#   4. SIGTERMs the weight-300 instance while a client is calling (no call fails), then runs the
#      client again: two instances answer.
# Everything it started is stopped, and the temporary files removed, on any exit.
#
#   examples/naming/run.sh [--build-dir DIR] [--no-build] [--count N]
#
# ETCD_ENDPOINTS=ip:port[,ip:port...] uses that etcd instead of starting one (its /trpc keys
# for trpc.test.helloworld.Greeter get three instances for the run's duration).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=examples/naming

build=build
do_build=1
count=30
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --count) count=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done

step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

# (a) The tools.
if [ -z "${ETCD_ENDPOINTS:-}" ] && ! command -v etcd >/dev/null; then
  fail "etcd is not installed: run third_party/setup.sh --with-test-tools (or set ETCD_ENDPOINTS)"
fi
command -v etcdctl >/dev/null ||
  fail "etcdctl is not installed: run third_party/setup.sh --with-test-tools"
export ETCDCTL_API=3

# (b) The binaries.
server_bin=$build/examples/naming/naming_server
client_bin=$build/examples/naming/naming_client
if [ "$do_build" = 1 ]; then
  step "building naming_server and naming_client in $build/"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    third_party/setup.sh
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$build" --target naming_server naming_client
fi
[ -x "$server_bin" ] && [ -x "$client_bin" ] || fail "no $server_bin or $client_bin (build first)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/trpc-naming.XXXXXX")
etcd_pid=
client_pid=
server_pids=()

# Sends SIGTERM to the processes given, waits for them up to $1 seconds, then SIGKILLs the rest.
stop_pids() {
  local limit=$1 pid alive
  shift
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 $((limit * 10))); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "$@"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "pid $pid did not stop within ${limit}s: killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  # Servers first, so that they deregister while etcd still runs.
  local pids=("${server_pids[@]}")
  [ -n "$client_pid" ] && pids+=("$client_pid")
  [ "${#pids[@]}" -gt 0 ] && stop_pids 8 "${pids[@]}"
  [ -n "$etcd_pid" ] && stop_pids 5 "$etcd_pid"
  if [ "$rc" != 0 ]; then
    for log in "$tmp"/*.log; do
      [ -s "$log" ] || continue
      echo "--- last lines of $(basename "$log"):" >&2
      tail -n 15 "$log" >&2
    done
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# (c) etcd. It cannot report the ports it got, so it is given two: below the kernel's ephemeral
# range, which outgoing connections (and their TIME_WAITs) never take, that nothing listens on
# now. Another process may still take one first: etcd then fails to bind, and starts again on
# two others.
read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range || ephemeral_low=32768
port_lo=10000
[ "$ephemeral_low" -gt $((port_lo + 1000)) ] || port_lo=1024
taken=" "
# Sets $port to a loopback TCP port in [port_lo, ephemeral_low) that nothing listens on and this
# run has not taken yet.
low_port() {
  for _ in $(seq 1 200); do
    port=$((port_lo + (RANDOM * 32768 + RANDOM) % (ephemeral_low - port_lo)))
    case "$taken" in *" $port "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      taken="$taken$port "
      return 0
    fi
  done
  fail "no free loopback port found below $ephemeral_low"
}
etcdctl_() { etcdctl --endpoints "$endpoints" --dial-timeout 1s --command-timeout 2s "$@"; }

if [ -n "${ETCD_ENDPOINTS:-}" ]; then
  endpoints=$ETCD_ENDPOINTS
  step "using etcd at $endpoints"
  healthy=0
  for _ in $(seq 1 20); do  # up to 10 s
    if etcdctl_ endpoint health >/dev/null 2>&1; then healthy=1; break; fi
    sleep 0.5
  done
  [ "$healthy" = 1 ] || fail "etcd at $endpoints not healthy within 10 s"
else
  healthy=0
  for attempt in 1 2 3 4 5; do
    low_port; client_port=$port
    low_port; peer_port=$port
    endpoints=127.0.0.1:$client_port
    step "starting etcd on $endpoints (peer port $peer_port, data in $tmp/etcd)"
    rm -rf "$tmp/etcd"
    etcd --name naming-example --data-dir "$tmp/etcd" \
      --listen-client-urls "http://127.0.0.1:$client_port" \
      --advertise-client-urls "http://127.0.0.1:$client_port" \
      --listen-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-cluster "naming-example=http://127.0.0.1:$peer_port" \
      >"$tmp/etcd.log" 2>&1 &
    etcd_pid=$!
    for _ in $(seq 1 40); do  # up to 10 s
      kill -0 "$etcd_pid" 2>/dev/null || break
      if etcdctl_ endpoint health >/dev/null 2>&1; then healthy=1; break; fi
      sleep 0.25
    done
    [ "$healthy" = 1 ] && break
    kill -0 "$etcd_pid" 2>/dev/null && fail "etcd at $endpoints not healthy within 10 s"
    wait "$etcd_pid" || true
    etcd_pid=
    grep -qi "address already in use" "$tmp/etcd.log" || fail "etcd exited at start"
    echo "etcd could not bind port $client_port or $peer_port (another process took it):" \
      "try $attempt of 5"
  done
  [ "$healthy" = 1 ] || fail "etcd could not bind its ports in 5 tries"
fi
echo "etcd is healthy"

# The concrete YAMLs: the etcd endpoints.
set_endpoints() { sed "s|endpoints: \"[^\"]*\"|endpoints: \"$endpoints\"|" "$@"; }
set_endpoints "$here/client.yaml" >"$tmp/client.yaml"

# (d) Three servers, each on a port the kernel picks (`port: 0`). A server writes its listen
# file ("<service> <ip>:<port>") once it listens and is registered, and prints "naming_server
# ready" once its replies name that address: both are waited for, then the file is read.
weights=(100 200 300)
addrs=()
for i in 0 1 2; do
  n=$((i + 1))
  sed -e "s|@LISTEN_FILE@|$tmp/server$n.listen|" -e "s/@WEIGHT@/${weights[i]}/" \
    "$here/server.yaml.in" | set_endpoints >"$tmp/server$n.yaml"
done
step "starting three servers (weights 100, 200, 300) on ports the kernel picks"
for i in 0 1 2; do
  n=$((i + 1))
  "$server_bin" --config "$tmp/server$n.yaml" >"$tmp/server$n.log" 2>&1 &
  server_pids[i]=$!
done
for i in 0 1 2; do
  n=$((i + 1))
  ready=0
  for _ in $(seq 1 100); do  # up to 10 s
    if [ -s "$tmp/server$n.listen" ] && grep -q "naming_server ready" "$tmp/server$n.log"; then
      ready=1
      break
    fi
    kill -0 "${server_pids[i]}" 2>/dev/null || fail "server $n exited at start"
    sleep 0.1
  done
  [ "$ready" = 1 ] || fail "server $n not ready within 10 s"
  addrs[i]=$(awk '$1 == "trpc.test.helloworld.Greeter" { print $2 }' "$tmp/server$n.listen")
  [ -n "${addrs[i]}" ] || fail "server $n: no Greeter line in its listen file"
done
echo "listening: ${addrs[0]} (weight 100), ${addrs[1]} (weight 200), ${addrs[2]} (weight 300)"
key_prefix=/trpc/default/trpc.test.helloworld.Greeter/
echo "registered (etcdctl --endpoints $endpoints get --prefix $key_prefix):"
etcdctl_ get --prefix "$key_prefix" | paste - - | sed 's/^/  /'

hash_keys=alice,bob,carol,dave,erin,frank
client() { timeout 60 "$client_bin" --config "$tmp/client.yaml" "$@"; }

# (e) The weighted spread and the hash keys.
step "client: $count calls by weight (expect about 1:2:3), then one hash key -> one instance"
client --count "$count" --expect-instances 3 --hash-keys "$hash_keys" ||
  fail "the client with three instances"

# (f) One server stops gracefully while a client calls.
step "client: 100 calls 20 ms apart; meanwhile server 3 (${addrs[2]}) gets SIGTERM"
timeout 60 "$client_bin" --config "$tmp/client.yaml" --count 100 --interval-ms 20 \
  >"$tmp/client_during_stop.log" 2>&1 &
client_pid=$!
sleep 0.7
kill -TERM "${server_pids[2]}"
stopped=0
for _ in $(seq 1 100); do  # up to 10 s: deregister, deregister_wait (1 s), stop
  if ! kill -0 "${server_pids[2]}" 2>/dev/null; then stopped=1; break; fi
  sleep 0.1
done
[ "$stopped" = 1 ] || fail "server 3 did not stop within 10 s of SIGTERM"
wait "${server_pids[2]}" || fail "server 3 exited with status $?"
unset 'server_pids[2]'
[ ! -e "$tmp/server3.listen" ] || fail "server 3 stopped but left its listen file"
echo "server 3 stopped (and removed its listen file)"
client_rc=0
wait "$client_pid" || client_rc=$?
client_pid=
cat "$tmp/client_during_stop.log"
[ "$client_rc" = 0 ] || fail "calls failed while server 3 stopped (status $client_rc)"

echo "registered now:"
etcdctl_ get --prefix "$key_prefix" | paste - - | sed 's/^/  /'
step "client again: server 3 is gone (expect about 1:2 over the other two)"
client --count "$count" --expect-instances 2 --hash-keys "$hash_keys" ||
  fail "the client with two instances"

step "PASSED"
