# Sourced by the shell benchmarks: `zq serve` from the current directory on
# Redis db 11 under a fresh key prefix, removed (server and keys) at exit.
#
#   serve_on_redis WORKERS THREADS
#
# Sets PORT, PREFIX, SERVER (the master's pid) and SCRATCH (a directory
# removed at exit, holding the server's log); returns once it answers.
serve_on_redis() {
  PORT=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  PREFIX=bench$RANDOM
  SCRATCH=$(mktemp -d)
  ZQ_SERVER_THREADS=$2 python -m zq serve --workers "$1" --port "$PORT" \
    --storage "redis://127.0.0.1:6379/11?prefix=$PREFIX" >"$SCRATCH/serve.log" 2>&1 &
  SERVER=$!
  trap stop_serving EXIT
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/v2" && break; sleep 0.2; done
  sleep 1
}

stop_serving() {
  kill "$SERVER" 2>/dev/null || true
  sleep 1
  redis-cli -n 11 --scan --pattern "$PREFIX:*" | xargs -r -n 500 redis-cli -n 11 del >/dev/null
  rm -rf "$SCRATCH"
}
