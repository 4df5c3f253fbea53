#!/bin/bash
# CPU time per request of zq's workers and of Redis during one workload.
#
#   bash benchmarks/cpu_per_request.sh [WORKLOAD] [THREADS]
#
# Starts `zq serve --workers $WORKERS` (default 2; THREADS threads each, default 4) on Redis
# db 11 under a fresh key prefix, runs the load generator's WORKLOAD (post,
# claim-delete, ...; default post) for D seconds (default 8; claim-delete
# first posts its backlog, untimed), reads the CPU ticks of the worker
# processes and of redis-server and the voluntary context switches of the
# workers' threads from /proc over the timed part, and prints
# msgs/s, req/s, p99, microseconds of CPU per request for each and thread
# switches per request, then
# Redis's INFO commandstats for the same window. Removes its keys after.
set -euo pipefail
W=${1:-post}; T=${2:-4}; D=${D:-8}; REQ=${REQ:-30000}; WORKERS=${WORKERS:-2}
cd "$(dirname "$0")/.."
. benchmarks/serve_on_redis.sh
serve_on_redis "$WORKERS" "$T"
WORKER_PIDS=$(pgrep -P "$SERVER" -d ' ' || true)
WORKER_PIDS="$WORKER_PIDS $(for p in $WORKER_PIDS; do pgrep -P "$p" -d ' ' || true; done)"
REDIS=$(pgrep -x redis-server | head -1)
# Voluntary context switches of every thread: each wait of one thread for
# another (a GIL hand-off, a wake-up through a queue) is one, whatever the load.
switches() { cat $(for p in "$@"; do echo /proc/$p/task/*/status; done) 2>/dev/null \
  | awk '/^voluntary_ctxt_switches/ {s += $2} END {print s + 0}'; }
ticks() { local s=0; for p in "$@"; do s=$((s + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $s; }
OUT=$(mktemp)
python -m benchmarks.loadgen --url "http://127.0.0.1:$PORT" --workload "$W" \
  --requests "$REQ" --duration "$D" >"$OUT" &
LOADGEN=$!
if [ "$W" = claim-delete ]; then  # wait for the first claim: the backlog is posted
  while [ "$(redis-cli -n 11 exists "$PREFIX:xc")" = 0 ]; do sleep 0.1; done
fi
sleep 0.5
redis-cli config resetstat >/dev/null
w0=$(ticks $WORKER_PIDS $SERVER); r0=$(ticks "$REDIS"); t0=$(date +%s.%N); c0=$(switches $WORKER_PIDS)
sleep $((D - 2))
w1=$(ticks $WORKER_PIDS $SERVER); r1=$(ticks "$REDIS"); t1=$(date +%s.%N); c1=$(switches $WORKER_PIDS)
STATS=$(redis-cli info commandstats | grep -v '^#' || true)
wait $LOADGEN
python3 - "$w0" "$w1" "$r0" "$r1" "$t0" "$t1" "$OUT" "$c0" "$c1" <<'PY'
import json, os, sys
w0, w1, r0, r1 = map(int, sys.argv[1:5]); t0, t1 = map(float, sys.argv[5:7])
c0, c1 = map(int, sys.argv[8:10])
d = json.loads(open(sys.argv[7]).read().splitlines()[-1])
hz = os.sysconf("SC_CLK_TCK")
reqs = d["req_per_s"] * (t1 - t0)
print(f'{d["workload"]}: {d["msgs_per_s"]:.0f} msgs/s, {d["req_per_s"]:.0f} req/s, '
      f'p99 {d["p99_ms"]} ms; CPU per request: workers {(w1 - w0) / hz / reqs * 1e6:.0f} us, '
      f'redis {(r1 - r0) / hz / reqs * 1e6:.0f} us; '
      f'worker thread switches per request {(c1 - c0) / reqs:.1f}')
PY
echo "$STATS"
rm -f "$OUT"
