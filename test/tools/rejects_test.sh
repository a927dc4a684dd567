#!/usr/bin/env bash
# protoc-gen-trpc refuses what it cannot generate: for each PROTO_DIR/*.proto, protoc must fail
# and its error output must contain the text of the file's "// expect: TEXT" line.
#
#   rejects_test.sh PROTOC PLUGIN PROTO_DIR
set -euo pipefail
protoc=$1
plugin=$(realpath "$2")  # the scripts run protoc from another directory
dir=$3

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for proto in "$dir"/*.proto; do
  name=$(basename "$proto")
  expect=$(sed -n 's|^// expect: ||p' "$proto")
  if [ -z "$expect" ]; then
    echo "$name: no '// expect: ' line"
    status=1
    continue
  fi
  if (cd "$dir" && "$protoc" --plugin=protoc-gen-trpc="$plugin" --trpc_out="$out" -I . "$name") \
      2>"$out/stderr"; then
    echo "$name: protoc succeeded; expected it to fail with: $expect"
    status=1
  elif ! grep -qF -- "$expect" "$out/stderr"; then
    echo "$name: protoc failed, but not with: $expect"
    sed 's/^/  stderr: /' "$out/stderr"
    status=1
  else
    echo "$name: refused: $(head -n 1 "$out/stderr")"
  fi
done
exit $status
