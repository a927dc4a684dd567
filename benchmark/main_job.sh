#!/usr/bin/env bash
# The main job: sets up, builds, then runs the helloworld server and client on loopback in the
# merged thread model. (The seed benchmark table replaces this once the load client exists.)
set -euo pipefail
cd "$(dirname "$0")/.."

third_party/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target helloworld_server helloworld_client

ex=examples/helloworld
build/$ex/helloworld_server --config $ex/server_merge.yaml &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
# Wait (bounded) for the server to listen.
for _ in $(seq 1 100); do
  (exec 3<>/dev/tcp/127.0.0.1/12345) 2>/dev/null && break
  sleep 0.05
done
build/$ex/helloworld_client --config $ex/client_merge.yaml --count 100
kill -TERM $server
wait $server
trap - EXIT
echo "main job: OK"
