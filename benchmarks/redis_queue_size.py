"""Redis: latency of stats, list, claim and pop as one queue grows.

    python -m benchmarks.redis_queue_size --spawn-redis [--sizes 1000,100000,1000000]
        [--repeat 5] [--seconds 1] [--out run.jsonl] [--baseline earlier.jsonl]
    python -m benchmarks.redis_queue_size --url redis://127.0.0.1:6390/0
    (from the repository root)

For each size N, a fresh key prefix gets one queue of N messages, half of
them held by live claims (claimed from the head, as consumers do); then
each operation runs at least ``--repeat`` times and ``--seconds`` through
the storage contract: ``stats``, ``list`` (one default page of 10),
``claim`` (10 messages, released again untimed) and ``pop`` (10, posted
back untimed). Meanwhile another process keeps
asking another project's small queue for its stats (the "ping"): what
every other tenant of the same Redis waits while one big queue is served.
Prints one JSON line per (size, operation) and a Markdown table;
``--baseline`` (the JSON lines of an earlier run, e.g. the previous code on
the same machine) adds the ratio baseline / this run.

``--spawn-redis`` starts a private ``redis-server`` (no persistence) on a
free port and stops it at the end, so a slow baseline never blocks anyone
else's Redis; its SLOWLOG then also gives the longest single script call
of each phase, as Redis timed it. With ``--url``, every key the run wrote is deleted at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path

import redis

from zq.clock import SystemClock
from zq.errors import StorageUnavailable
from zq.events import fingerprint
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import NewMessage

PROJECT, QUEUE = "big-project", "big"
OTHER_PROJECT, OTHER_QUEUE = "other-project", "small"
HOLD_TTL = 43200  # seconds: every claim of the run stays live
POST_BATCH = 1000
HOLD_BATCH = 50000
PING_PAUSE = 0.002  # seconds between two pings of the other project


def messages(count: int) -> list[NewMessage]:
    body = json.dumps({"event": "benchmark", "payload": "x" * 40}, sort_keys=True)
    return [NewMessage(body=body, ttl=86400, delay=0, fingerprint=fingerprint(body))] * count


def fill(storage: Storage, size: int) -> None:
    """``size`` messages, the first half held by live claims."""
    for start in range(0, size, POST_BATCH):
        storage.messages.post(PROJECT, QUEUE, messages(min(POST_BATCH, size - start)),
                              client_id="bench")
    held = 0
    while held < size // 2:
        claim = storage.claims.create(PROJECT, QUEUE, ttl=HOLD_TTL, grace=0,
                                      limit=min(HOLD_BATCH, size // 2 - held),
                                      client_id="bench")
        assert claim is not None, "the queue ran out of free messages"
        held += len(claim.messages)
    storage.messages.post(OTHER_PROJECT, OTHER_QUEUE, messages(10), client_id="other")


Operation = tuple[Callable[[], object], Callable[[object], object]]


def operations(storage: Storage) -> dict[str, Operation]:
    """name -> (the timed call, the untimed undo that keeps the queue's size)."""

    def claim() -> object:
        made = storage.claims.create(PROJECT, QUEUE, ttl=HOLD_TTL, grace=0, limit=10,
                                     client_id="bench")
        assert made is not None and len(made.messages) == 10
        return made.id

    def release(claim_id: object) -> None:
        storage.claims.release(PROJECT, QUEUE, str(claim_id), client_id="bench")

    def post_back(popped: object) -> None:
        storage.messages.post(PROJECT, QUEUE, messages(len(popped)), client_id="bench")

    def nothing(_: object) -> None:
        pass

    return {
        "stats": (lambda: storage.queues.stats(PROJECT, QUEUE), nothing),
        "list": (lambda: storage.messages.list(PROJECT, QUEUE, limit=10), nothing),
        "claim": (claim, release),
        "pop": (lambda: storage.messages.pop(PROJECT, QUEUE, limit=10, client_id="bench",
                                             rules=DeliveryRules(dead_letter=None)), post_back),
    }


def ping_loop(uri: str, ready: Event, stop: Event, out: Connection) -> None:
    """Another project's stats, asked in a loop; sends [(start, seconds)] at the end."""
    storage = open_storage(uri, clock=SystemClock())
    storage.queues.stats(OTHER_PROJECT, OTHER_QUEUE)  # scripts loaded before timing
    ready.set()
    samples = []
    while not stop.is_set():
        started = time.monotonic()
        # An error (e.g. BUSY) counts as a ping that took until it came.
        with contextlib.suppress(StorageUnavailable):
            storage.queues.stats(OTHER_PROJECT, OTHER_QUEUE)
        samples.append((started, time.monotonic() - started))
        time.sleep(PING_PAUSE)
    storage.close()
    out.send(samples)


class Pinger:
    """The ping loop in its own process: the GIL of the measuring one never delays it."""

    def __init__(self, uri: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.ready, self.stop = context.Event(), context.Event()
        self.receiver, sender = context.Pipe(duplex=False)
        self.process = context.Process(target=ping_loop,
                                       args=(uri, self.ready, self.stop, sender))

    def __enter__(self) -> Pinger:
        self.process.start()
        self.ready.wait(60)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.samples: list[tuple[float, float]] = self.receiver.recv()
        self.process.join()

    def between(self, start: float, end: float) -> list[float]:
        """Latencies of the pings that overlapped [start, end]."""
        return [took for began, took in self.samples
                if began <= end and began + took >= start]


def ms(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


class Slowlog:
    """Server-side time of each script call (SLOWLOG, on a private server only)."""

    def __init__(self, uri: str | None) -> None:
        self.client = redis.Redis.from_url(uri.split("?")[0]) if uri else None
        if self.client is not None:
            self.client.config_set("slowlog-log-slower-than", 0)
            self.client.config_set("slowlog-max-len", 100000)

    def reset(self) -> None:
        if self.client is not None:
            self.client.slowlog_reset()

    def longest_ms(self, project: str) -> float | None:
        """The longest script call that named ``project`` since the reset."""
        if self.client is None:
            return None
        mine = [entry["duration"] for entry in self.client.slowlog_get(100000)
                if entry["command"].startswith(b"EVALSHA")
                and project.encode() in entry["command"]]
        return round(max(mine, default=0) / 1000, 2)


def measure(uri: str, size: int, repeat: int, seconds: float, slowlog: Slowlog) -> list[dict]:
    storage = open_storage(uri, clock=SystemClock())
    try:
        started = time.monotonic()
        fill(storage, size)
        filled = time.monotonic() - started
        ops = operations(storage)
        phases = []
        with Pinger(uri) as pinger:
            for name in ("stats", "list", "claim", "pop"):
                call, undo = ops[name]
                took: list[float] = []
                slowlog.reset()
                first = time.monotonic()
                while len(took) < repeat or time.monotonic() - first < seconds:
                    began = time.monotonic()
                    answer = call()
                    took.append(time.monotonic() - began)
                    undo(answer)
                phases.append((name, took, first, time.monotonic(),
                               slowlog.longest_ms(PROJECT)))
                time.sleep(0.05)  # a few pings between phases
    finally:
        storage.close()
    rows = []
    for name, took, first, last, longest in phases:
        pings = pinger.between(first, last)
        rows.append({"size": size, "op": name, "calls": len(took),
                     "p50_ms": ms(took, 0.5), "p99_ms": ms(took, 0.99),
                     "max_ms": ms(took, 1.0), "longest_script_ms": longest,
                     "ping_p50_ms": ms(pings, 0.5), "ping_p99_ms": ms(pings, 0.99),
                     "ping_max_ms": ms(pings, 1.0),
                     "pings": len(pings), "fill_s": round(filled, 1)})
    return rows


@contextlib.contextmanager
def private_redis() -> Iterator[str]:
    """A redis-server of our own on a free port, without persistence."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on PATH; give --url instead of --spawn-redis")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="zq-bench-redis-") as directory:
        server = subprocess.Popen(
            # Past busy-reply-threshold (5 s by default) Redis answers BUSY to
            # everyone while a script runs; the old layout's scripts on 1M
            # messages run longer, and the pings should wait for them.
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", directory, "--busy-reply-threshold", "600000"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            for _ in range(100):
                with contextlib.suppress(redis.ConnectionError):
                    client.ping()
                    break
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.terminate()  # deferred by Redis while a script runs
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def drop_prefix(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=10000))
        for start in range(0, len(keys), 1000):
            client.unlink(*keys[start:start + 1000])
    finally:
        client.close()


def table(rows: list[dict], baseline: dict[tuple[int, str], dict]) -> str:
    head = ("| messages | op | calls | p50 / p99 / max ms | longest script ms "
            "| other project's stats p50 / p99 / max ms |")
    rule = "|---|---|---|---|---|---|"
    if baseline:
        head += " baseline p50 ms | baseline ping max ms | p50 ratio (baseline / this) |"
        rule += "---|---|---|"
    lines = [head, rule]
    for row in rows:
        line = (f"| {row['size']:,} | {row['op']} | {row.get('calls', row.get('repeat'))} | "
                f"{row['p50_ms']} / {row.get('p99_ms', '-')} / {row['max_ms']} | "
                f"{row.get('longest_script_ms') or '-'} | {row['ping_p50_ms']} / "
                f"{row.get('ping_p99_ms', '-')} / {row['ping_max_ms']} |")
        before = baseline.get((row["size"], row["op"]))
        if baseline:
            if before:
                ratio = before["p50_ms"] / row["p50_ms"] if row["p50_ms"] else float("inf")
                line += f" {before['p50_ms']} | {before['ping_max_ms']} | {ratio:.0f}x |"
            else:
                line += " | | |"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.redis_queue_size --spawn-redis\n"
               "  python -m benchmarks.redis_queue_size --url redis://127.0.0.1:6390/0",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a Redis to use (keys under a fresh prefix, removed after)")
    where.add_argument("--spawn-redis", action="store_true",
                       help="start a private redis-server for the run")
    parser.add_argument("--sizes", default="1000,100000,1000000",
                        help="queue sizes, comma separated (default %(default)s)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="least calls per operation and size (default %(default)s)")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="least time per operation and size (default %(default)s)")
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file")
    parser.add_argument("--baseline", type=Path,
                        help="JSON lines of an earlier run: adds baseline figures and ratios")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    baseline = {}
    if args.baseline:
        for line in args.baseline.read_text().splitlines():
            row = json.loads(line)
            baseline[(row["size"], row["op"])] = row
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(private_redis()) if args.spawn_redis else args.url
        for size in sizes:
            prefix = f"bench-{secrets.token_hex(4)}"
            try:
                uri = f"{url}?prefix={prefix}&socket_timeout=600"
                slowlog = Slowlog(url if args.spawn_redis else None)
                for row in measure(uri, size, args.repeat, args.seconds, slowlog):
                    print(json.dumps(row), flush=True)
                    rows.append(row)
                    if args.out:
                        with args.out.open("a") as out:
                            out.write(json.dumps(row) + "\n")
            finally:
                drop_prefix(url, prefix)
    print()
    print(table(rows, baseline))


if __name__ == "__main__":
    main()
