#!/usr/bin/env bash
# Sets up (installs missing Debian packages), builds and runs every test.
#   test/run_tests.sh            Release build in build/
#   test/run_tests.sh --asan     ASan+UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."

mode=Release
dir=build
if [ "${1:-}" = "--asan" ]; then
  mode=Asan
  dir=build-asan
fi

third_party/setup.sh
jobs=$(nproc)
# -U: an old build dir keeps no stale list of test folders.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$mode" -UTRPC_TEST_DIRS >/dev/null
cmake --build "$dir" -j "$jobs"
cd "$dir"
ctest --output-on-failure -j "$jobs" --timeout 300
