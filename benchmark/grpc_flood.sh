#!/usr/bin/env bash
# A gRPC connection flooding empty DATA frames against one worker, and a trpc probe's P99 on
# another connection of that worker: with the same flood sent to a sink, then to the server
# (test/e2e/grpc_flood_e2e_test.cc, run for SECONDS per phase in both thread models).
#
#   benchmark/grpc_flood.sh [--build DIR] [--seconds S]     (defaults: build, 10)
#   benchmark/grpc_flood.sh --smoke [--build DIR]
#
# --smoke: 0.2 s per phase, and the test binary must be built already (nothing is built): a
# check that the script works, whose figures mean nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
seconds=10
smoke=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --smoke) smoke=1; seconds=0.2; shift ;;
    *) echo "usage: $0 [--build DIR] [--seconds S] [--smoke]" >&2; exit 2 ;;
  esac
done
if [ "$smoke" = 1 ]; then
  [ -x "$build/test/e2e/grpc_flood_e2e_test" ] ||
    { echo "missing $build/test/e2e/grpc_flood_e2e_test" >&2; exit 1; }
else
  cmake --build "$build" --target grpc_flood_e2e_test >/dev/null
fi
for model in merge fiber; do
  TRPC_E2E_THREAD_MODEL=$model TRPC_FLOOD_SECONDS=$seconds \
    "$build/test/e2e/grpc_flood_e2e_test" 2>&1 | grep -E "probe P99|Failure|Expected|OK \]|FAILED \]"
done
