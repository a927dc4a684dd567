#!/usr/bin/env bash
# Installs the framework from BUILD_DIR into a temporary prefix and uses it as an outside user
# would:
#   1. configures and builds OUTSIDE_PROJECT (find_package(trpc), trpc_proto_library()) and runs
#      its echo_roundtrip program, a server and a client of a generated service over loopback;
#   2. compiles pkg_config_main.cc with nothing but `pkg-config --cflags --libs trpc` and runs it.
#
#   install_test.sh BUILD_DIR OUTSIDE_PROJECT CXX [COMPILER_LAUNCHER]
set -euo pipefail
build=$1
project=$2
cxx=$3
launcher=${4:-}
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# Runs a step with its output in a log, shown only if the step fails.
step() {
  local log=$tmp/step.log
  if ! "$@" >"$log" 2>&1; then
    echo "FAILED: $*"
    cat "$log"
    exit 1
  fi
}

echo "== cmake --install $build --prefix $prefix"
step cmake --install "$build" --prefix "$prefix"
for f in bin/protoc-gen-trpc include/trpc/server/service.h include/trpc/fiber/detail/context.h \
         lib/cmake/trpc/trpcConfig.cmake lib/cmake/trpc/trpcConfigVersion.cmake \
         lib/cmake/trpc/trpcTargets.cmake lib/cmake/trpc/trpc_proto.cmake; do
  if [ ! -e "$prefix/$f" ]; then
    echo "not installed: $f"
    exit 1
  fi
done

echo "== find_package(trpc): build $project"
launcher_arg=()
[ -n "$launcher" ] && launcher_arg=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
step cmake -S "$project" -B "$tmp/outside" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" "${launcher_arg[@]}"
step cmake --build "$tmp/outside" -j 2
if ! grep -qF "$prefix/bin/protoc-gen-trpc" "$tmp/outside/build.ninja"; then
  echo "the outside build did not run the installed protoc-gen-trpc"
  exit 1
fi
echo "== run echo_roundtrip"
"$tmp/outside/echo_roundtrip"

echo "== pkg-config --cflags --libs trpc"
pc_dir=$(dirname "$(find "$prefix" -name trpc.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs trpc)
echo "$flags"
# shellcheck disable=SC2086  # the flags are words
step $launcher "$cxx" -std=c++20 "$here/pkg_config_main.cc" $flags -o "$tmp/pkg_config_main"
"$tmp/pkg_config_main"
echo "install test passed"
