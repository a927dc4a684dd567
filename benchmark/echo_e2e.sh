#!/usr/bin/env bash
# End-to-end echo figure: helloworld_server (1 worker, merge or fiber model) pinned to one CPU,
# trpc_bench (closed loop) pinned to another, on loopback. Prints the settings with the figures.
#   benchmark/echo_e2e.sh [--model merge|fiber] [--connections N] [--duration S] [--warmup S]
#                         [--server-cpu C] [--client-cpu C] [--build DIR] [--smoke]
# --smoke: 0.2 s after 0.05 s of warm-up, to check the script works (the figures mean nothing).
# Without --build, builds what it needs into build/ when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

model=merge
connections=100
duration=10
warmup=1
server_cpu=1
client_cpu=0
build=build
build_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --server-cpu) server_cpu=$2; shift 2 ;;
    --client-cpu) client_cpu=$2; shift 2 ;;
    --build) build=$2; build_given=1; shift 2 ;;
    --smoke) duration=0.2; warmup=0.05; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

for b in examples/helloworld/helloworld_server benchmark/trpc_bench/trpc_bench; do
  if [ ! -x "$build/$b" ] && [ "$build_given" = 1 ]; then
    echo "missing $build/$b: cmake --build $build --target $(basename "$b")" >&2
    exit 1
  fi
done
[ -x $build/examples/helloworld/helloworld_server ] && [ -x $build/benchmark/trpc_bench/trpc_bench ] || {
  third_party/setup.sh
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build $build --target helloworld_server trpc_bench
}

source benchmark/http/pinned_runs.sh  # wait_listen_file, listen_port
tmp=$(mktemp -d)
server=""
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
case "$model" in
  merge) threadmodel="    default:
      - instance_name: bench
        io_handle_type: merge
        io_thread_num: 1" ;;
  fiber) threadmodel="    fiber:
      - instance_name: bench
        concurrency_hint: 1" ;;
  *) echo "--model must be merge or fiber" >&2; exit 2 ;;
esac
cat > "$tmp/server.yaml" <<YAML
global:
  threadmodel:
$threadmodel
server:
  listen_file: $tmp/listen.txt
  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
plugins:
  log:
    level: warn
YAML
taskset -c "$server_cpu" $build/examples/helloworld/helloworld_server --config "$tmp/server.yaml" >/dev/null &
server=$!
# The server listens on a port the kernel picks and says which in its listen file.
wait_listen_file "$tmp/listen.txt" "$server" || { echo "helloworld_server did not start" >&2; exit 1; }
port=$(listen_port "$tmp/listen.txt" trpc.test.helloworld.Greeter)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; commit $(git rev-parse --short HEAD)"
echo "server: helloworld_server, $model model, 1 worker, pinned to CPU $server_cpu"
echo "client: trpc_bench closed loop, 1 thread, pinned to CPU $client_cpu"
taskset -c "$client_cpu" $build/benchmark/trpc_bench/trpc_bench --target 127.0.0.1:$port \
  --connections "$connections" --inflight 1 --payload-size 10 --duration "$duration" \
  --warmup "$warmup" --server-pid $server
