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
HERE=$(cd "$(dirname "$0")" && pwd)
CHECKOUT=$(cd "${1:-$HERE/..}" && pwd); W=${2:-ping}
cd "$CHECKOUT"
. "$HERE/serve_on_redis.sh"
serve_on_redis 1 4
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
