#!/usr/bin/env bash
# Sets up (installs missing Debian packages), builds and runs every test.
#   test/run_tests.sh            Release build in build/
#   test/run_tests.sh --asan     ASan+UBSan build in build-asan/
#   test/run_tests.sh --tsan     TSan build of the concurrency-heavy layers (base, fiber, future,
#                                reactor, runtime, client, codec, naming, e2e, fault, server,
#                                tracing) in
#                                build-tsan/
set -euo pipefail
cd "$(dirname "$0")/.."

mode=Release
dir=build
# Tests per CPU: most of them wait on sockets and timers (the Release suite keeps 2 CPUs about
# half busy), so two per CPU finish sooner; the benchmark scripts' smoke runs still run alone
# (RUN_SERIAL), and TSan's much slower tests keep one per CPU.
per_cpu=2
# -U: an old build dir keeps no stale list of test folders.
dirs=(-UTRPC_TEST_DIRS)
case "${1:-}" in
  --asan) mode=Asan; dir=build-asan ;;
  --tsan) mode=Tsan; dir=build-tsan; per_cpu=1; dirs=(-DTRPC_TEST_DIRS="base;fiber;future;reactor;runtime;client;codec;e2e;naming;fault;server;tracing") ;;
  "") ;;
  *) echo "usage: $0 [--asan|--tsan]" >&2; exit 2 ;;
esac

third_party/setup.sh --with-test-tools
jobs=$(nproc)
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$mode" "${dirs[@]}" >/dev/null
cmake --build "$dir" -j "$jobs"
cd "$dir"
ctest --output-on-failure -j $((jobs * per_cpu)) --timeout 300
