#!/bin/sh
# example_test.sh SERVER CLIENT DIR: runs chat_server in each thread model (DIR's
# server_{merge,fiber}.yaml) with a client over trpc and one over gRPC, and checks what the
# second one reads back from the room: the lines both posted, in order, numbered.
set -eu
server=$1 client=$2 dir=$3
out=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -f "$out"' EXIT
for model in merge fiber; do
  "$server" --config "$dir/server_$model.yaml" > "$out" 2>&1 &
  pid=$!
  i=0
  until grep -q "chat_server ready" "$out"; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "chat_server ($model) did not start:"; cat "$out"; exit 1
    fi
    sleep 0.1
  done
  "$client" --config "$dir/client_trpc.yaml" --name ann --say hello --say "how are you"
  got=$("$client" --config "$dir/client_grpc.yaml" --name bob --say hi)
  echo "$got"
  want="  #1 ann: hello
  #2 ann: how are you
  #3 ann: anyone here?
  #4 ann: bye
  #5 bob: hi
  #6 bob: anyone here?
  #7 bob: bye"
  if [ "$(echo "$got" | grep '^  #')" != "$want" ]; then
    echo "FAIL ($model): the room's lines are not what both clients posted"; exit 1
  fi
  kill "$pid"
  wait "$pid" || true
  echo "PASS ($model)"
done
