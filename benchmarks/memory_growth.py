"""Worker memory under a long mixed load: RSS at minute 1 vs at the end.

    python -m benchmarks.memory_growth --backend redis [--minutes 10] [--rate 40]
    (from the repository root; --backend redis, postgresql or sqlite)

Starts ``zq serve`` (``--workers`` processes x ``--threads`` threads, as
benchmarks/zaqar_side_by_side.py runs it) on a fresh Redis key prefix, a
fresh PostgreSQL database or a fresh SQLite file, and drives a mixed load at
a fixed rate of operations per second (open loop) for ``--minutes``:

- ``post``: 10 messages to one of the work queues, one in ten poison;
- ``claim``: claim 10, delete the good ones, release the claim when it held
  poison (a poison message moves to its queue's dead letter queue on its
  third claim, as in the ``poison`` workload of benchmarks/loadgen);
- ``stats`` of a work queue or of a dead letter queue, ``list`` of queues;
- ``churn``: create a queue of a name never used before, post to it, delete
  it (a per-queue table that is never trimmed shows here).

Every ``--sample`` seconds it reads the resident set size of each of the
server's child processes from /proc (the workers, the notifier). At the end
it prints, per worker and for the workers together, the RSS at minute 1
(the first sample after 60 s of load: imports, pools and caches are warm by
then) and at the end, and the growth between them in %. The issue's target
is less than 10 %. One JSON line per process, then a Markdown table.

RSS growth does not depend on the machine's speed, only on the work done:
several backends may run at once (one invocation each).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.loadgen.client import Client
from benchmarks.loadgen.stats import Recorder
from benchmarks.loadgen.workloads import (
    MAX_CLAIM_COUNT,
    Settings,
    claim,
    claim_id_of,
    delete_claimed,
    message_bodies,
)
from benchmarks.zaqar_side_by_side import (
    REDIS,
    Target,
    free_port,
    postgres_database,
    redis_keys,
    remove_redis_keys,
    running,
)

WORK_QUEUES = 8
# The mix, repeated: claims outnumber posts so that no backlog builds up.
MIX = ("post", "claim", "stats", "post", "claim", "list", "post", "claim", "claim", "churn")
REDIS_DB = 11
MINUTE = 60.0


@dataclass
class Sample:
    at: float  # seconds since the load started
    rss_kib: dict[int, int]  # pid -> VmRSS


@dataclass
class Load:
    """What the mixed load did, per operation: done and failed."""

    done: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    late: int = 0  # operations skipped because too many were still in flight
    dead_lettered: int = 0  # messages in the dead letter queues at the end


def children(pid: int) -> dict[int, str]:
    """The server's child processes by pid, each labelled worker, notifier or other."""
    parent_command = command_line(pid)
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid != pid:
            continue
        command = command_line(int(entry.name))
        if command == parent_command:
            found[int(entry.name)] = "worker"
        elif "spawn_main" in command:
            found[int(entry.name)] = "notifier"
        else:
            found[int(entry.name)] = "other"
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


async def sample_memory(pids: list[int], every: float, started: float, until: float,
                        samples: list[Sample]) -> None:
    while True:
        now = time.monotonic()
        readings = {pid: rss_kib(pid) for pid in pids}
        samples.append(Sample(now - started, {p: r for p, r in readings.items() if r}))
        if now >= until:
            return
        await asyncio.sleep(min(every, max(0.0, until - now)))


async def prepare(client: Client, run: str) -> list[str]:
    """The work queues, each with a dead letter queue after MAX_CLAIM_COUNT claims."""
    names = []
    for n in range(WORK_QUEUES):
        name = f"mem-{run}-{n}"
        for path, metadata in ((f"/v2/queues/{name}-dlq", {}),
                               (f"/v2/queues/{name}", {"_max_claim_count": MAX_CLAIM_COUNT,
                                                        "_dead_letter_queue": f"{name}-dlq"})):
            answer = await client.request("PUT", path, body=metadata)
            if answer.status not in (201, 204):
                raise RuntimeError(f"creating {path} answered {answer.status}")
        names.append(name)
    return names


async def operate(kind: str, n: int, client: Client, settings: Settings, recorder: Recorder,
                  queues: list[str]) -> bool:
    """One operation of the mix on the n-th queue in turn; whether every request succeeded."""
    queue = f"/v2/queues/{queues[n % len(queues)]}"
    if kind == "post":
        body = {"messages": message_bodies(settings, 10, first=n, poison=True)}
        return await client.timed(recorder, "POST", f"{queue}/messages", body=body) is not None
    if kind == "claim":
        claimed = await claim(client, recorder, queue, settings, None)
        if claimed is None or claimed.status == 204:
            return claimed is not None
        messages = claimed.document["messages"]
        good = [m["id"] for m in messages if not m["body"]["p"]]
        claim_id = claim_id_of(claimed)
        ok = not good or await delete_claimed(client, recorder, queue, good, claim_id)
        if len(good) < len(messages):  # a failing consumer gives the poison back
            ok = await client.timed(recorder, "DELETE", f"{queue}/claims/{claim_id}") \
                is not None and ok
        return ok
    if kind == "stats":
        which = queue if n % 2 else f"{queue}-dlq"
        return await client.timed(recorder, "GET", f"{which}/stats") is not None
    if kind == "list":
        params = {"limit": "20", "detailed": "true"}
        return await client.timed(recorder, "GET", "/v2/queues", params=params) is not None
    # churn: a queue never seen before, used once and deleted
    fresh = f"/v2/queues/churn-{uuid.uuid4().hex[:12]}"
    body = {"messages": message_bodies(settings, 1)}
    posted = await client.timed(recorder, "POST", f"{fresh}/messages", body=body)
    gone = await client.timed(recorder, "DELETE", fresh)
    return posted is not None and gone is not None


async def mixed_load(url: str, rate: float, seconds: float, every: float,
                     pids: list[int]) -> tuple[Load, list[Sample]]:
    settings = Settings(url=url, batch=10, body_size=512)
    recorder = Recorder(max_requests=10**9, duration=seconds)
    client = Client(url, settings.project, 32)
    load, samples = Load(), []
    in_flight: set[asyncio.Task[None]] = set()
    try:
        queues = await prepare(client, settings.project[-8:])
        started = time.monotonic()
        sampler = asyncio.create_task(
            sample_memory(pids, every, started, started + seconds, samples))

        async def one(kind: str, n: int) -> None:
            try:
                ok = await operate(kind, n, client, settings, recorder, queues)
            except Exception:  # a failed operation is counted, the load goes on
                ok = False
            table = load.done if ok else load.failed
            table[kind] = table.get(kind, 0) + 1

        for n in itertools.count():
            due = started + n / rate
            if due >= started + seconds:
                break
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            if len(in_flight) >= 32:  # the server fell far behind: skip, never pile up
                load.late += 1
                continue
            task = asyncio.create_task(one(MIX[n % len(MIX)], n))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        await asyncio.gather(*in_flight)
        await sampler
        for name in queues:
            stats = await client.request("GET", f"/v2/queues/{name}-dlq/stats")
            load.dead_lettered += int(stats.document["messages"]["total"])
    finally:
        await client.close()
    return load, samples


def at_minute_one(samples: list[Sample]) -> Sample:
    return next((s for s in samples if s.at >= MINUTE), samples[-1])


def growth(first: int, last: int) -> float:
    return round(100.0 * (last - first) / first, 1) if first else 0.0


def report(backend: str, labels: dict[int, str], load: Load, samples: list[Sample],
           minutes: float, rate: float) -> list[dict]:
    base, end = at_minute_one(samples), samples[-1]
    lines = []
    for pid, label in sorted(labels.items(), key=lambda item: (item[1], item[0])):
        if pid not in base.rss_kib or pid not in end.rss_kib:
            continue
        lines.append({"backend": backend, "process": label, "pid": pid,
                      "rss_minute1_mib": round(base.rss_kib[pid] / 1024, 1),
                      "rss_end_mib": round(end.rss_kib[pid] / 1024, 1),
                      "growth_pct": growth(base.rss_kib[pid], end.rss_kib[pid])})
    workers = [pid for pid, label in labels.items() if label == "worker"
               and pid in base.rss_kib and pid in end.rss_kib]
    first, last = sum(base.rss_kib[p] for p in workers), sum(end.rss_kib[p] for p in workers)
    lines.append({"backend": backend, "process": "workers together", "pid": None,
                  "rss_minute1_mib": round(first / 1024, 1), "rss_end_mib": round(last / 1024, 1),
                  "growth_pct": growth(first, last), "minutes": minutes, "rate": rate,
                  "minute1_at_s": round(base.at, 1), "end_at_s": round(end.at, 1),
                  "operations": load.done, "failed": load.failed, "skipped_late": load.late,
                  "dead_lettered": load.dead_lettered,
                  "timeline_mib": timeline(samples, workers)})
    return lines


def timeline(samples: list[Sample], workers: list[int]) -> list[float]:
    """The workers' summed RSS (MiB) at the first sample of each minute, and at the end."""
    points, minute = [], 0
    for sample in samples:
        if sample.at >= minute * MINUTE:
            points.append(round(sum(sample.rss_kib.get(p, 0) for p in workers) / 1024, 1))
            minute += 1
    points.append(round(sum(samples[-1].rss_kib.get(p, 0) for p in workers) / 1024, 1))
    return points


def markdown(lines: list[dict]) -> str:
    rows = ["| backend | process | RSS at minute 1 MiB | RSS at end MiB | growth |",
            "|---|---|---|---|---|"]
    rows += [f"| {line['backend']} | {line['process']} | {line['rss_minute1_mib']} "
             f"| {line['rss_end_mib']} | {line['growth_pct']:+.1f}% |" for line in lines]
    return "\n".join(rows)


@contextlib.contextmanager
def storage_uri(backend: str, scratch: Path) -> Iterator[str]:
    """A storage nobody else uses, removed afterwards."""
    if backend == "postgresql":
        with postgres_database() as uri:
            yield uri
    elif backend == "sqlite":
        yield f"sqlite:///{scratch / 'memory.sqlite3'}"
    else:
        prefix = f"zqmem-{uuid.uuid4().hex[:8]}"
        try:
            yield f"redis://{REDIS}/{REDIS_DB}?prefix={prefix}"
        finally:
            remove_redis_keys(REDIS_DB, redis_keys(REDIS_DB, f"{prefix}:*"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python -m benchmarks.memory_growth --backend redis --minutes 10\n"
               "  python -m benchmarks.memory_growth --backend postgresql --minutes 10",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("redis", "postgresql", "sqlite"), required=True,
                        help="storage of the zq serve under load")
    parser.add_argument("--minutes", type=float, default=10.0,
                        help="minutes of load (default: %(default)s)")
    parser.add_argument("--rate", type=float, default=40.0,
                        help="operations started per second (default: %(default)s)")
    parser.add_argument("--sample", type=float, default=5.0,
                        help="seconds between RSS samples (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2,
                        help="zq serve worker processes (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=4,
                        help="threads per worker (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.rate <= 0 or args.sample <= 0 or args.workers < 1 \
            or args.threads < 1:
        parser.error("--minutes, --rate, --sample, --workers and --threads must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="zq-memory-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZQ_", "OS_"))}
    env.update(ZQ_SERVER_THREADS=str(args.threads), XDG_DATA_HOME=str(scratch))
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; backend {args.backend}, "
          f"{args.workers} workers x {args.threads} threads, {args.rate:g} operations/s "
          f"for {args.minutes:g} min", flush=True)
    with storage_uri(args.backend, scratch) as uri:
        port = free_port()
        target = Target(f"zq-{args.backend}", f"http://127.0.0.1:{port}",
                        [sys.executable, "-m", "zq", "serve", "--workers", str(args.workers),
                         "--port", str(port), "--storage", uri], env)
        with running(target, scratch):
            assert target.process is not None
            labels = children(target.process.pid)
            load, samples = asyncio.run(mixed_load(
                target.url, args.rate, args.minutes * MINUTE, args.sample, list(labels)))
    lines = report(args.backend, labels, load, samples, args.minutes, args.rate)
    for line in lines:
        print(json.dumps(line), flush=True)
    print(f"\nload average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print(markdown(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
