#!/usr/bin/env bash
# The main job: sets up, builds, then runs the helloworld server and client on loopback, once in
# the merged thread model and once in the fiber model (the same binaries; only the YAML differs).
# (The seed benchmark table replaces this once the load client exists.)
set -euo pipefail
cd "$(dirname "$0")/.."

third_party/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target helloworld_server helloworld_client

ex=examples/helloworld
for model in merge fiber; do
  echo "== helloworld, $model model"
  build/$ex/helloworld_server --config $ex/server_$model.yaml &
  server=$!
  trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
  # Wait (bounded) for the server to listen.
  for _ in $(seq 1 100); do
    (exec 3<>/dev/tcp/127.0.0.1/12345) 2>/dev/null && break
    sleep 0.05
  done
  build/$ex/helloworld_client --config $ex/client_$model.yaml --count 100
  kill -TERM $server
  wait $server
  trap - EXIT
done
echo "main job: OK"
