#!/usr/bin/env bash
# Golden test of protoc-gen-trpc: runs protoc with the plug-in over GOLDEN_DIR/*.proto and
# compares every generated file byte for byte with its checked-in copy NAME.golden.
#
#   golden_test.sh PROTOC PLUGIN GOLDEN_DIR
#
# After an intended change to the generated code, rewrite the goldens and review their diff:
#   TRPC_UPDATE_GOLDENS=1 ctest --test-dir build -R protoc_gen_trpc_golden_test
set -euo pipefail
protoc=$1
plugin=$(realpath "$2")  # the scripts run protoc from another directory
dir=$3

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Relative names, as a build would pass them: they end up in the generated includes.
(cd "$dir" && "$protoc" --plugin=protoc-gen-trpc="$plugin" --trpc_out="$out" -I . ./*.proto)

status=0
for f in "$out"/*; do
  golden="$dir/$(basename "$f").golden"
  if [ -n "${TRPC_UPDATE_GOLDENS:-}" ]; then
    cp "$f" "$golden"
    echo "wrote $golden"
  elif [ ! -f "$golden" ]; then
    echo "no golden file for generated $(basename "$f") (run with TRPC_UPDATE_GOLDENS=1)"
    status=1
  elif ! diff -u "$golden" "$f"; then
    echo "generated $(basename "$f") differs from $golden (diff above)"
    status=1
  fi
done
for golden in "$dir"/*.golden; do
  if [ ! -f "$out/$(basename "$golden" .golden)" ]; then
    echo "$golden: nothing generates this file any more"
    status=1
  fi
done
[ $status -eq 0 ] && echo "every generated file matches its golden"
exit $status
