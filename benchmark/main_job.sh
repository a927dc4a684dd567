#!/usr/bin/env bash
# The main job: sets up, builds, checks the examples on loopback in both thread models (the
# helloworld server and client, then client -> forward server -> helloworld server; the same
# binaries, only the YAML differs), then reproduces the seed benchmark table
# (benchmark/seed_table.py, about 6 minutes on 2 cores; the table is printed and written to
# build/results/latest.md, untracked). Arguments go to seed_table.py: --publish also updates
# the committed benchmark/results/latest.*; --server-cpus/--client-cpus/--workers set the
# machine's shape (docs/benchmark.md).
set -euo pipefail
cd "$(dirname "$0")/.."

third_party/setup.sh --with-bench
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target helloworld_server helloworld_client forward_server \
  forward_client echo_server echo_client raw_echo_server trpc_bench
# grpc++'s echo server, for the gRPC rows, when gRPC C++ is installed (the target exists then).
if cmake --build build --target help | grep -q '^grpc_echo_server:'; then
  cmake --build build -j "$(nproc)" --target grpc_echo_server
fi

hw=examples/helloworld
fw=examples/forward
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# Waits (bounded: 5 s) until something listens on 127.0.0.1:$1.
wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on port $1" >&2
  return 1
}

for model in merge fiber; do
  echo "== helloworld, $model model"
  build/$hw/helloworld_server --config $hw/server_$model.yaml &
  pids=($!)
  wait_port 12345
  build/$hw/helloworld_client --config $hw/client_$model.yaml --count 100
  echo "== forward, $model model"
  build/$fw/forward_server --config $fw/server_$model.yaml &
  pids+=($!)
  wait_port 12346
  build/$fw/forward_client --config $fw/client.yaml --count 100
  # A graceful stop of both servers (SIGTERM).
  for p in "${pids[@]}"; do kill -TERM "$p"; done
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
done
echo "examples: OK"
echo "== seed table"
python3 benchmark/seed_table.py --build build "$@"
