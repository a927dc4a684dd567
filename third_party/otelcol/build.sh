#!/usr/bin/env bash
# Build the minimal test collector: ./build.sh OUT_DIR  ->  OUT_DIR/otelcol
#
# Quiet on success. Does nothing when OUT_DIR/otelcol was already built from
# the same sources (go.mod, go.sum, *.go, this script) with the same Go.
# Environment: GO (path of the go command; default: go on PATH, else
# /usr/local/go/bin/go); GOFLAGS, GOMODCACHE, GOCACHE, GOPROXY and
# GOTOOLCHAIN are passed through to go as they are.
set -u -o pipefail

die() {
  echo "third_party/otelcol/build.sh: $*" >&2
  exit 1
}

[ $# -eq 1 ] && [ -n "$1" ] || die "usage: build.sh OUT_DIR"

src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || die "cannot find source dir"
mkdir -p "$1" || die "cannot create output dir $1"
out_dir=$(cd "$1" && pwd) || die "cannot enter output dir $1"
bin="$out_dir/otelcol"
stamp_file="$out_dir/otelcol.stamp"

go_cmd=${GO:-}
if [ -z "$go_cmd" ]; then
  if command -v go >/dev/null 2>&1; then
    go_cmd=$(command -v go)
  elif [ -x /usr/local/go/bin/go ]; then
    go_cmd=/usr/local/go/bin/go
  else
    die "no Go toolchain found (install Go >= 1.26 or set GO=/path/to/go)"
  fi
fi
go_version=$("$go_cmd" env GOVERSION 2>&1) || die "'$go_cmd env GOVERSION' failed: $go_version"

# The stamp covers the sources, this script and the Go version.
stamp=$(
  cd "$src_dir" &&
    { echo "$go_version"; sha256sum build.sh go.mod go.sum *.go; } | sha256sum | cut -d' ' -f1
) || die "cannot hash the sources in $src_dir"

if [ -x "$bin" ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
  exit 0
fi

log=$(mktemp) || die "mktemp failed"
tmp_bin="$bin.tmp.$$"
trap 'rm -f "$log" "$tmp_bin"' EXIT

# CGO off: a static binary that needs no C toolchain (as the collector's own
# builder does). -buildvcs=false: the sources sit inside the repo's git tree.
if ! (cd "$src_dir" && CGO_ENABLED=0 "$go_cmd" build -trimpath -buildvcs=false \
  -ldflags='-s -w' -o "$tmp_bin" .) >"$log" 2>&1; then
  echo "third_party/otelcol/build.sh: go build failed ($go_version):" >&2
  cat "$log" >&2
  exit 1
fi

mv -f "$tmp_bin" "$bin" || die "cannot move the binary to $bin"
echo "$stamp" >"$stamp_file" || die "cannot write $stamp_file"
