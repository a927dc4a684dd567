# Shared by the shell benchmarks that start their own servers: a temporary folder ($work),
# the processes to stop on exit ($pids), and a free loopback port. Sourced, not run.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A free loopback port (the kernel's pick, released at once).
free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
