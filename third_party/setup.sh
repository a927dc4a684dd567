#!/usr/bin/env bash
# Installs the Debian packages this project builds with, if any are missing.
# Idempotent: prints nothing and touches nothing when everything is present.
# Usage: third_party/setup.sh [--with-clang] [--with-bench] [--with-test-tools]
#   --with-clang       clang-14 and its runtimes (fuzz targets only)
#   --with-bench       python3 and gnuplot (the seed-table script and its plot), gRPC C++ (the
#                      table's grpc++ row), wrk and nginx (benchmark/http_bench.sh,
#                      client_efficiency.sh), valgrind (benchmark/callgrind_per_request.sh)
#   --with-test-tools  the outside programs some tests drive: curl (HTTP interop, HTTPS),
#                      openssl (s_client: TLS cases; tls_bench.sh's certificates), promtool
#                      (checks /metrics), google-pprof (reads the admin CPU profile), gRPC C++
#                      and its interop protos (the grpc++ interop peers), python3-grpcio and
#                      h2load (gRPC interop), etcd (the naming tests start their own), and wrk,
#                      nginx (TLS proxying tests too), valgrind and gnuplot (the benchmark
#                      scripts' smoke tests, test/benchmark); those tests skip, saying so, when one is missing (ctest
#                      reports them skipped), and fail under CI=true
# gRPC C++ is in both sets, and CMake looks for it at every configure (TRPC_BUILD_GRPC_PEER=AUTO),
# so the two README commands build the same tests in either order.
set -euo pipefail

pkgs=(libboost-context-dev libprotobuf-dev protobuf-compiler libprotoc-dev
      libgoogle-perftools-dev libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev
      libyaml-cpp-dev libnghttp2-dev libssl-dev zlib1g-dev libsnappy-dev liblz4-dev cmake ninja-build g++
      pkg-config)
for arg in "$@"; do
  case "$arg" in
    --with-clang) pkgs+=(clang-14 libclang-rt-14-dev) ;;
    --with-bench) pkgs+=(python3 gnuplot-nox libgrpc++-dev protobuf-compiler-grpc wrk nginx-light
                          valgrind) ;;
    --with-test-tools) pkgs+=(curl openssl prometheus google-perftools libgrpc++-dev protobuf-compiler-grpc
                              grpc-proto python3-grpcio nghttp2-client etcd-server etcd-client
                              wrk nginx-light valgrind gnuplot-nox) ;;
    *) echo "usage: $0 [--with-clang] [--with-bench] [--with-test-tools]" >&2; exit 2 ;;
  esac
done

# --with-test-tools also builds the OpenTelemetry Collector the tracing tests send spans to
# (third_party/otelcol/, from the collector's Go modules, into third_party/otelcol/bin/), with
# the machine's Go (1.26 or newer; not a Debian package: Debian's is older). Quiet and quick
# once built; without Go the tracing tests skip, saying so (and fail under CI=true).
build_collector() {
  local dir
  dir=$(cd "$(dirname "$0")" && pwd)/otelcol
  if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
    [ -x "$dir/bin/otelcol" ] || echo "setup: no Go toolchain: the tracing tests' collector is not built" >&2
    return 0
  fi
  "$dir/build.sh" "$dir/bin"
}
with_test_tools=0
for arg in "$@"; do [ "$arg" = --with-test-tools ] && with_test_tools=1; done

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  [ "$with_test_tools" = 0 ] || build_collector
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ "$with_test_tools" = 0 ] || build_collector
