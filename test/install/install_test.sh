#!/usr/bin/env bash
# Installs the framework from BUILD_DIR into a prefix A, moves it to B (`mv A B`: the package must
# be relocatable) and uses B as an outside user would:
#   1. no installed text file names A, the build tree or the source tree, the CMake and
#      pkg-config files name no absolute path at all, and docs/install.md lists every library;
#   2. configures and builds OUTSIDE_PROJECT (find_package(trpc), trpc_proto_library()) and runs
#      its echo_roundtrip program, a server and a client of a generated service over loopback;
#   3. compiles pkg_config_main.cc with nothing but `pkg-config --cflags --libs trpc` and runs it;
#   4. the quick start of docs/getting_started.md: writes the files it shows to a folder and runs
#      its command block as written (HOME is set so that its "$HOME/trpc" is B), expecting
#      "Hello, world" from every server_*.yaml. So that nothing races for the YAML files' port,
#      the servers listen on port 0 and write the port they got to a listen file, and each
#      client run is pointed at that port.
#
#   install_test.sh BUILD_DIR OUTSIDE_PROJECT CXX [COMPILER_LAUNCHER]
set -euo pipefail
build=$1
project=$2
cxx=$3
launcher=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

# In the build tree rather than /tmp: a compiler cache whose base directory covers the tree then
# reuses the outside builds' objects from one run to the next.
tmp=$(mktemp -d "$build/install_test.XXXXXX")
quickstart_group=""
cleanup() {
  # A server the quick start left running (its block failed half-way): its process group.
  [ -z "$quickstart_group" ] || kill -- "-$quickstart_group" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
installed=$tmp/installed  # A
mkdir "$tmp/home"
prefix=$tmp/home/trpc     # B

# Runs a step with its output in a log, shown only if the step fails.
step() {
  local log=$tmp/step.log
  if ! "$@" >"$log" 2>&1; then
    echo "FAILED: $*"
    cat "$log"
    exit 1
  fi
}

echo "== cmake --install $build --prefix $installed, then mv to $prefix"
step cmake --install "$build" --prefix "$installed"
mv "$installed" "$prefix"
for f in bin/protoc-gen-trpc include/trpc/server/service.h include/trpc/fiber/detail/context.h \
         include/trpc/app/trpc_app.h lib/cmake/trpc/trpcConfig.cmake \
         lib/cmake/trpc/trpcConfigVersion.cmake lib/cmake/trpc/trpcTargets.cmake \
         lib/cmake/trpc/trpc_proto.cmake lib/cmake/trpc/trpc_gperftools.cmake \
         lib/pkgconfig/trpc.pc; do
  if [ ! -e "$prefix/$f" ]; then
    echo "not installed: $f"
    exit 1
  fi
done

echo "== no installed text file names the install prefix, the build tree or the source tree"
for path in "$installed" "$build" "$src"; do
  if grep -rIlF -- "$path" "$prefix"; then
    echo "the files above contain $path: the installed package is not relocatable"
    exit 1
  fi
done
# Nor any absolute path (outside comments) in the package's CMake and pkg-config files: what they
# need from the system is looked up on the machine that uses them.
if grep -rnE "(^|[[:space:]\"';=(:])/[A-Za-z]" "$prefix/lib/cmake/trpc" "$prefix/lib/pkgconfig/trpc.pc" |
   grep -vE '^[^:]*:[0-9]+:[[:space:]]*#'; then
  echo "the lines above name absolute paths: the installed package depends on the build machine"
  exit 1
fi
for lib in $(cd "$prefix" && find . -name 'libtrpc_*.a' -printf '%f\n' | sort); do
  if ! grep -qF "\`$lib\`" "$src/docs/install.md"; then
    echo "$lib is installed but docs/install.md does not list it"
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
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs trpc)
echo "$flags"
# shellcheck disable=SC2086  # the flags are words
step $launcher "$cxx" -std=c++20 "$here/pkg_config_main.cc" $flags -o "$tmp/pkg_config_main"
"$tmp/pkg_config_main"

# Writes the fenced blocks of the markdown file $1 that follow a line
# `<!-- quickstart-file: NAME -->` to $2/NAME, and those that follow `<!-- quickstart-run -->` to
# the script $3, in order.
extract_quickstart() {
  awk -v dir="$2" -v run="$3" '
    function fail(msg) {
      printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
      bad = 1
      exit 1
    }
    in_block && /^```/ { in_block = 0; close(out); next }
    in_block && out == run { print >> out; next }
    in_block { print > out; next }
    pending != "" {
      if ($0 !~ /^```/) fail("a quickstart marker must be on the line before a fenced block")
      out = pending; pending = ""; in_block = 1; next
    }
    /^<!-- quickstart-file: [A-Za-z0-9_.-]+ -->$/ {
      if ($3 in seen) fail("two blocks for the file " $3)
      seen[$3] = 1; pending = dir "/" $3; files++; next
    }
    /^<!-- quickstart-run -->$/ { pending = run; runs++; next }
    /^<!-- *quickstart/ { fail("not a quickstart marker: " $0) }
    END {
      if (bad) exit 1
      if (in_block || pending != "") fail("the file ends inside a quickstart block")
      if (!files || !runs) fail("no quickstart-file or no quickstart-run block")
    }' "$1"
}

echo "== docs/getting_started.md: its files, and its run block as written"
quickstart=$tmp/quickstart
mkdir "$quickstart"
extract_quickstart "$src/docs/getting_started.md" "$quickstart" "$tmp/quickstart_run.sh"
(cd "$quickstart" && ls)
# Other runs of this test may share the machine, so the servers do not take the YAML files' port
# (which must agree): they listen on port 0 and write the port they got to server.addr
# (server.listen_file, written before the server logs that it started, which the block waits
# for). Each client run of the block then uses client_run.yaml: client.yaml with that port.
doc_port=$(sed -n 's/^ *port: *\([0-9][0-9]*\) *$/\1/p' "$quickstart"/*.yaml | sort -u)
if [ "$(echo "$doc_port" | wc -w)" -ne 1 ]; then
  echo "the quick start's YAML files name servers on ports '$doc_port', not one port"
  exit 1
fi
for f in "$quickstart"/server_*.yaml; do
  sed -i -e "s/^\( *port:\) *$doc_port *\$/\1 0/" -e 's/^server:$/server:\n  listen_file: server.addr/' "$f"
  if ! grep -q '^  listen_file: server.addr$' "$f" || grep -q "$doc_port" "$f"; then
    echo "$(basename "$f"): no 'server:' line, or port $doc_port left: update install_test.sh"
    exit 1
  fi
done
client_run='build/hello_client client.yaml'
if ! grep -q "^ *$client_run\$" "$tmp/quickstart_run.sh"; then
  echo "the quick start's run block has no line '$client_run': update install_test.sh"
  exit 1
fi
{
  echo "# install_test.sh: client_run.yaml is client.yaml with the port the server wrote to server.addr."
  echo "point_client() {"
  echo "  sed \"s/:$doc_port\\\$/:\$(sed -n 's/^.*:\\([0-9]*\\)\$/\\1/p' server.addr)/\" client.yaml >client_run.yaml"
  echo "}"
  sed "s|^\( *\)$client_run\$|\1point_client\n\1build/hello_client client_run.yaml|" "$tmp/quickstart_run.sh"
} >"$tmp/quickstart_run.sh.new"
mv "$tmp/quickstart_run.sh.new" "$tmp/quickstart_run.sh"
echo "(servers on port 0; the client's port $doc_port -> the one in server.addr)"
quickstart_env=(HOME="$tmp/home" CXX="$cxx" CMAKE_BUILD_PARALLEL_LEVEL=2)
# The launcher keeps the real HOME: the compiler cache finds its configuration there.
[ -n "$launcher" ] && quickstart_env+=(CMAKE_CXX_COMPILER_LAUNCHER="env;HOME=$HOME;$launcher")
# `timeout` puts the block in a process group of its own: killed whole on a timeout, and by
# cleanup() if a server outlives it.
(cd "$quickstart" && exec env "${quickstart_env[@]}" timeout 600 sh -eu "$tmp/quickstart_run.sh") \
  </dev/null >"$tmp/quickstart.log" 2>&1 &
quickstart_group=$!
status=0
wait "$quickstart_group" || status=$?
kill -- "-$quickstart_group" 2>/dev/null || true
quickstart_group=""
servers=$(find "$quickstart" -maxdepth 1 -name 'server_*.yaml' | wc -l)
hellos=$(grep -c '^Hello, world$' "$tmp/quickstart.log" || true)
if [ "$status" -ne 0 ] || [ "$hellos" -ne "$servers" ]; then
  echo "FAILED: the quick start's run block (exit status $status, $hellos of $servers" \
       "\"Hello, world\"):"
  cat "$tmp/quickstart.log"
  [ -f "$quickstart/server.log" ] && { echo "-- server.log:"; cat "$quickstart/server.log"; }
  exit 1
fi
grep '^Hello, world$' "$tmp/quickstart.log"
echo "install test passed"
