#!/usr/bin/env bash
# A generated *.trpc.pb.h brings in only public headers: compiles a translation unit that
# includes one, lists every header the compiler opened (-H), and fails on any trpc/ header that
# is internal (detail/, reactor/, transport/, fiber/) or that docs/api.md does not name as
# public. The one internal folder allowed through is trpc/future/detail/, the template
# implementation of Future (docs/api.md says why).
#
#   public_headers_test.sh CXX SOURCE_DIR GENERATED_HEADER INCLUDE_DIR...
set -euo pipefail
cxx=$1
src=$2
header=$3
shift 3
includes=()
for dir in "$@"; do includes+=(-I "$dir"); done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "#include \"$header\"" >"$tmp/tu.cc"
"$cxx" -std=c++20 -fsyntax-only -H "${includes[@]}" "$tmp/tu.cc" 2>"$tmp/h.txt"

# Every trpc/ header opened, as trpc/...: the part of its path from the last "trpc/" layer on.
grep -E '^\.+ ' "$tmp/h.txt" | sed -E 's/^\.+ //' |
  sed -nE 's#^(.*/)?(trpc/(base|config|fiber|future|reactor|runtime|transport|codec|client|server|admin|app)/.*)$#\2#p' |
  sort -u >"$tmp/opened.txt"
if [ ! -s "$tmp/opened.txt" ]; then
  echo "no trpc/ header was opened: is $header the generated header?"
  exit 1
fi
grep -oE 'trpc/[a-z_/]+\.h' "$src/docs/api.md" | sort -u >"$tmp/public.txt"

bad=0
while IFS= read -r h; do
  case "$h" in
    trpc/future/detail/*) continue ;;
    */detail/* | trpc/reactor/* | trpc/transport/* | trpc/fiber/*)
      echo "internal header reached a generated header: $h"
      bad=1
      continue
      ;;
  esac
  if ! grep -qxF "$h" "$tmp/public.txt"; then
    echo "not named as public in docs/api.md: $h"
    bad=1
  fi
done <"$tmp/opened.txt"
echo "$(wc -l <"$tmp/opened.txt") trpc/ headers opened by $(basename "$header")"
exit $bad
