#!/bin/bash
# CPU time per request of each thread of one zq worker, under one workload.
#
#   bash benchmarks/thread_cpu.sh [CHECKOUT] [WORKLOAD]
#
# Starts `zq serve --workers 1` from CHECKOUT (default: this one; 4 threads)
# on Redis db 11 under a fresh key prefix, runs the load generator's
# WORKLOAD (default ping) at concurrency 8 for 10 s, names the worker's
# threads with `py-spy dump` and prints, over 6 s of it, the CPU
# microseconds per request of each thread (utime+stime from
# /proc/PID/task): the event loop (MainThread), zq's app threads
# (zq-request-N), and granian's threads (native, no Python name). This
# shows which thread a serving path's cost lands on, which a per-process
# figure cannot. Removes its keys after.
set -euo pipefail
CHECKOUT=$(cd "${1:-$(dirname "$0")/..}" && pwd); W=${2:-ping}
cd "$CHECKOUT"
PORT=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PREFIX=thr$RANDOM
SCRATCH=$(mktemp -d)
ZQ_SERVER_THREADS=4 python -m zq serve --workers 1 --port "$PORT" \
  --storage "redis://127.0.0.1:6379/11?prefix=$PREFIX" >"$SCRATCH/serve.log" 2>&1 &
SERVER=$!
cleanup() {
  kill "$SERVER" 2>/dev/null || true
  sleep 1
  redis-cli -n 11 --scan --pattern "$PREFIX:*" | xargs -r -n 500 redis-cli -n 11 del >/dev/null
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/v2" && break; sleep 0.2; done
sleep 1
# The worker: the child with the most threads (the others are helpers).
WORKER=$(for p in $(pgrep -P "$SERVER"); do echo "$(ls "/proc/$p/task" | wc -l) $p"; done \
  | sort -n | tail -1 | cut -d' ' -f2)
snap() { for t in /proc/"$WORKER"/task/*; do echo "${t##*/} $(awk '{print $14+$15}' "$t/stat")"; done; }
python -m benchmarks.loadgen --url "http://127.0.0.1:$PORT" --workload "$W" --concurrency 8 \
  --duration 10 --requests 1000000 >"$SCRATCH/load.json" &
LOADGEN=$!
sleep 2
snap >"$SCRATCH/before"
py-spy dump -p "$WORKER" 2>/dev/null | grep '^Thread' >"$SCRATCH/names" || true
sleep 6
snap >"$SCRATCH/after"
wait $LOADGEN
python3 - "$SCRATCH" <<'PY'
import json, os, re, sys
scratch = sys.argv[1]
names = {}
for line in open(f"{scratch}/names"):
    tid, name = re.findall(r"\b(\d{3,})\b", line), re.findall(r'"([^"]*)"', line)
    if tid and name:
        names[tid[0]] = name[0]
before = dict(line.split() for line in open(f"{scratch}/before"))
load = json.loads(open(f"{scratch}/load.json").read().splitlines()[-1])
requests = load["req_per_s"] * 6
hz = os.sysconf("SC_CLK_TCK")
cells, total = [], 0
for line in open(f"{scratch}/after"):
    tid, ticks = line.split()
    used = int(ticks) - int(before.get(tid, 0))
    total += used
    if used:
        cells.append(f"{names.get(tid, 'native ' + tid)} {used / hz / requests * 1e6:.0f}")
print(f"{load['workload']}: {load['req_per_s']} req/s; CPU us/request by thread: "
      f"{', '.join(cells)}; total {total / hz / requests * 1e6:.0f}")
PY
