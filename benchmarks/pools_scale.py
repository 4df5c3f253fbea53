"""Pools over several servers, measured: 3 backends at once against one backend.

    PYTHONPATH=$PWD python -m benchmarks.pools_scale [--duration 8] [--queues 300]

What it does, all on this machine and on loopback addresses only:

1. starts 2 ``redis-server`` on spare loopback ports in a temporary
   directory (or takes ``--redis URI`` twice), and creates a fresh
   PostgreSQL database ``zq_bench_<hex>`` on ``ZQ_TEST_POSTGRES_URL``
   (default postgresql://postgres@127.0.0.1:5432/test) migrated for zq;
2. phase ``pools``: starts ``zq serve --pooling`` on a fresh SQLite
   management store, registers the 3 backends as pools (PUT /v2/pools,
   equal weights), and creates ``--queues`` queues (one in ten with a dead
   letter policy, ``_max_claim_count`` 3, and its own dead letter queue,
   which the catalog puts on its source's pool), spread by the catalog;
3. phase ``one``: the same with one pool only (the first Redis), in the same
   run, so the two phases meet the same machine load;
4. in each phase, the side-by-side workloads of benchmarks/loadgen, spread
   over all the phase's queues (each operation on a queue chosen at random):
   ``post b10``, ``cycle b10`` (producers post while consumers claim and
   delete) and ``poison b10`` (on the policed queues, 10% of the messages
   are never deleted: their claims are released until they dead letter);
5. reports per workload: messages/s, p50/p99, server CPU per 1,000
   messages (zq's process tree, both redis-servers and the PostgreSQL
   processes of the database, from /proc), and the requests that reached
   each backend (Redis INFO commandstats calls, PostgreSQL transactions
   from pg_stat_database, after minus before);
6. a conservation audit across all pools: every message posted (counted
   from the 201 answers) is deleted (counted from the 204 answers), dead
   lettered (in a dead letter queue) or still in its queue; per pool too,
   from the catalog.

Everything it starts is stopped (by pid) and everything it creates removed
(the temporary directory, the database), even on error. It never touches
the machine's Redis on 6379.

Example (the default run takes about two minutes):

    PYTHONPATH=$PWD python -m benchmarks.pools_scale --duration 8 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.loadgen import workloads as lw
from benchmarks.loadgen.client import Client
from benchmarks.loadgen.stats import Recorder
from benchmarks.zaqar_side_by_side import (
    POSTGRES_URL,
    cpu_seconds,
    free_port,
    machine,
    ping,
    postgres_database,
    postgres_pids,
    process_tree,
    spent_since,
)

ROOT = Path(__file__).resolve().parents[1]
POLICED_EVERY = 10  # one queue in ten has a dead letter policy
ADMIN = {"X-Roles": "admin"}
SCRIPT_COMMANDS = ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall")


@dataclass
class Backend:
    name: str
    uri: str  # the pool URI zq uses
    kind: str  # "redis" or "postgresql"

    def pids(self) -> list[int]:
        if self.kind == "redis":
            return [int(self._redis().info("server")["process_id"])]
        return postgres_pids(self.uri)()

    def _redis(self) -> Any:  # redis is imported lazily: the module loads without it
        import redis

        return redis.Redis.from_url(self.uri.split("?")[0])

    def requests(self) -> Counter[str]:
        """What the backend served so far: Redis ``commands`` (those scripts run
        inside included) and ``scripts`` (EVAL/EVALSHA/FCALL calls, one round
        trip each); PostgreSQL ``transactions`` (committed or rolled back)."""
        if self.kind == "redis":
            client = self._redis()
            try:
                stats = client.info("commandstats")
            finally:
                client.close()
            # The INFO calls of this benchmark itself are left out.
            return Counter(
                commands=sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info"),
                scripts=sum(int(stats[k]["calls"]) for k in SCRIPT_COMMANDS if k in stats))
        import psycopg

        database = urlsplit(self.uri).path.lstrip("/")
        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10) as admin:
            row = admin.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                "WHERE datname = %s", (database,)).fetchone()
        return Counter(transactions=int(row[0]) if row else 0)


@dataclass
class Phase:
    name: str
    backends: list[Backend]
    project: str = field(default_factory=lambda: f"pools-scale-{uuid.uuid4().hex[:8]}")
    plain: list[str] = field(default_factory=list)
    policed: list[str] = field(default_factory=list)
    posted: Counter[str] = field(default_factory=Counter)
    deleted: Counter[str] = field(default_factory=Counter)
    results: list[dict] = field(default_factory=list)
    audit: dict = field(default_factory=dict)


@contextlib.contextmanager
def redis_servers(count: int, scratch: Path) -> Iterator[list[str]]:
    """``count`` redis-server on spare loopback ports, stopped by pid afterwards."""
    started: list[subprocess.Popen] = []
    uris = []
    try:
        for index in range(count):
            port = free_port()
            home = scratch / f"redis-{index}"
            home.mkdir()
            with open(home / "log", "wb") as log:
                started.append(subprocess.Popen(
                    ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir",
                     str(home), "--save", "", "--appendonly", "no"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True))
            uris.append(f"redis://127.0.0.1:{port}/0")
        import redis

        for uri in uris:
            deadline = time.monotonic() + 20
            while True:
                try:
                    redis.Redis.from_url(uri).ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server at {uri} did not start") from None
                    time.sleep(0.1)
        yield uris
    finally:
        for process in started:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)


@contextlib.contextmanager
def zq_server(phase: Phase, scratch: Path, args: argparse.Namespace) -> Iterator[
        tuple[str, subprocess.Popen, Path]]:
    """``zq serve --pooling`` on its own management store, stopped by pid afterwards."""
    port = free_port()
    management = scratch / f"management-{phase.name}.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZQ_", "OS_"))}
    env.update(ZQ_SERVER_THREADS=str(args.threads), PYTHONPATH=str(ROOT))
    log = scratch / f"zq-{phase.name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "zq", "serve", "--workers", str(args.workers), "--port",
             str(port), "--pooling", "--management", f"sqlite:///{management}"],
            env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not ping(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"zq serve did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield url, process, management
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


async def prepare(url: str, phase: Phase, queues: int) -> None:
    """Register the phase's pools and create its queues (the catalog spreads them)."""
    client = Client(url, phase.project, 8, headers=ADMIN)
    try:
        for backend in phase.backends:
            answer = await client.request("PUT", f"/v2/pools/{backend.name}",
                                          body={"uri": backend.uri, "weight": 100})
            if answer.status not in (201, 204):
                raise RuntimeError(f"pool {backend.name}: {answer.status} {answer.document}")
        names = [f"q{i:04d}" for i in range(queues)]

        async def create(name: str) -> None:
            policed = names.index(name) % POLICED_EVERY == 0
            metadata = ({"_max_claim_count": lw.MAX_CLAIM_COUNT,
                         "_dead_letter_queue": f"{name}-dlq"} if policed else {})
            for queue, body in ((name, metadata), *(((f"{name}-dlq", {}),) if policed else ())):
                answer = await client.request("PUT", f"/v2/queues/{queue}", body=body)
                if answer.status not in (201, 204):
                    raise RuntimeError(f"queue {queue}: {answer.status} {answer.document}")
            (phase.policed if policed else phase.plain).append(name)

        for start in range(0, len(names), 20):
            await asyncio.gather(*(create(name) for name in names[start:start + 20]))
    finally:
        await client.close()


async def workload(url: str, phase: Phase, kind: str, settings: lw.Settings) -> dict:
    """``post``, ``cycle`` or ``poison`` spread over the phase's queues."""
    client = Client(url, phase.project, settings.concurrency)
    recorder = Recorder(max_requests=settings.requests, duration=settings.duration)
    queues = phase.policed if kind == "poison" else phase.plain
    chooser = random.Random(kind)
    posted = itertools.count(0, settings.batch)
    stop = asyncio.Event()
    moves_before = 0
    if kind == "poison":
        moves_before = sum((await dead_lettered(client, phase)).values())
    recorder.restart()

    async def post(_due: float | None) -> bool:
        queue = chooser.choice(queues)
        body = {"messages": lw.message_bodies(settings, settings.batch, first=next(posted),
                                              poison=kind == "poison")}
        answer = await client.timed(recorder, "POST", f"/v2/queues/{queue}/messages", body=body)
        if answer is not None:
            phase.posted[queue] += len(answer.document["resources"])
            if kind == "post":
                recorder.messages += settings.batch
        return True

    async def consumer() -> None:
        while not stop.is_set() and recorder.reserve(3):
            queue = chooser.choice(queues)
            claimed = await lw.claim(client, recorder, f"/v2/queues/{queue}", settings, None)
            if claimed is None or claimed.status == 204:
                continue
            messages = claimed.document["messages"]
            good = [m["id"] for m in messages if not m["body"]["p"]]
            claim_id = lw.claim_id_of(claimed)
            if good and await lw.delete_claimed(client, recorder, f"/v2/queues/{queue}", good,
                                                claim_id):
                recorder.messages += len(good)
                phase.deleted[queue] += len(good)
            if len(good) < len(messages):  # a failing consumer gives the rest back
                await client.timed(recorder, "DELETE", f"/v2/queues/{queue}/claims/{claim_id}")

    try:
        if kind == "post":
            await lw.drive(settings, recorder, post)
        else:
            async def producers_then_stop() -> None:
                await lw.drive(settings, recorder, post,
                               workers=max(1, settings.concurrency // 2))
                stop.set()

            await asyncio.gather(producers_then_stop(), *(
                consumer() for _ in range(max(1, settings.concurrency // 2))))
        summary = recorder.summary(f"{kind} b{settings.batch}")
        if kind == "poison":
            moved = sum((await dead_lettered(client, phase)).values()) - moves_before
            summary.update(dead_letter_moves=moved,
                           dead_letter_moves_per_s=round(moved / float(summary["seconds"]), 1))
        return summary
    finally:
        await client.close()


async def totals(client: Client, queues: list[str]) -> dict[str, int]:
    """Each queue's messages (claimed or not), from its stats."""
    found: dict[str, int] = {}

    async def one(queue: str) -> None:
        answer = await client.request("GET", f"/v2/queues/{queue}/stats")
        if answer.status != 200:
            raise RuntimeError(f"stats of {queue}: {answer.status} {answer.document}")
        found[queue] = int(answer.document["messages"]["total"])

    for start in range(0, len(queues), 20):
        await asyncio.gather(*(one(q) for q in queues[start:start + 20]))
    return found


async def dead_lettered(client: Client, phase: Phase) -> dict[str, int]:
    return await totals(client, [f"{q}-dlq" for q in phase.policed])


async def audit(url: str, phase: Phase, management: Path) -> dict:
    """Posted = deleted + dead lettered + still queued, overall and per pool."""
    client = Client(url, phase.project, 8)
    try:
        queued = await totals(client, phase.plain + phase.policed)
        dead = await dead_lettered(client, phase)
    finally:
        await client.close()
    with contextlib.closing(sqlite3.connect(management)) as db:
        pool_of = dict(db.execute("SELECT queue, pool FROM zq_catalog WHERE project = ?",
                                  (phase.project,)).fetchall())
    return account(phase, pool_of, queued, dead)


def account(phase: Phase, pool_of: dict[str, str], queued: dict[str, int],
            dead: dict[str, int]) -> dict:
    """The audit's arithmetic: per pool (from the catalog's ``pool_of``) and
    overall, posted - deleted - dead lettered - queued, which must be 0."""
    per_pool: dict[str, Counter[str]] = {}
    for queue in phase.plain + phase.policed:
        row = per_pool.setdefault(pool_of[queue], Counter())
        row["queues"] += 1
        row["posted"] += phase.posted[queue]
        row["deleted"] += phase.deleted[queue]
        row["queued"] += queued[queue]
        if queue in phase.policed:
            row["dead_lettered"] += dead[f"{queue}-dlq"]
            if pool_of[f"{queue}-dlq"] != pool_of[queue]:
                row["dead_letter_queue_elsewhere"] += 1
    result = {"phase": phase.name, "pools": {}}
    ok = True
    for pool, row in sorted(per_pool.items()):
        missing = row["posted"] - row["deleted"] - row["dead_lettered"] - row["queued"]
        # A dead letter queue must live on its source's pool (the move is atomic there).
        ok = ok and missing == 0 and not row["dead_letter_queue_elsewhere"]
        result["pools"][pool] = {**row, "unaccounted": missing}
    total = sum(per_pool.values(), Counter())
    result.update(posted=total["posted"], deleted=total["deleted"],
                  dead_lettered=total["dead_lettered"], queued=total["queued"],
                  unaccounted=total["posted"] - total["deleted"] - total["dead_lettered"]
                  - total["queued"], ok=ok)
    return result


def measured(url: str, server: subprocess.Popen, phase: Phase, kind: str,
             settings: lw.Settings) -> dict:
    """One workload with the CPU of zq and its backends and each backend's requests."""
    def backend_pids() -> list[int]:
        return [pid for b in phase.backends for pid in b.pids()]

    requests_before = {b.name: b.requests() for b in phase.backends}
    cpu_before = cpu_seconds(process_tree(server.pid) + backend_pids())
    result = asyncio.run(workload(url, phase, kind, settings))
    server_cpu = spent_since(cpu_before, process_tree(server.pid))
    backend_cpu = spent_since(cpu_before, backend_pids())
    if any(b.kind == "postgresql" for b in phase.backends):
        time.sleep(1.1)  # PostgreSQL publishes its counters at most once a second
    reached = {}
    for backend in phase.backends:
        after, before = backend.requests(), requests_before[backend.name]
        reached[backend.name] = {k: after[k] - before[k] for k in after}
    messages = int(result["messages"]) or 1
    result.update(phase=phase.name, server_cpu_s=round(server_cpu, 2),
                  backend_cpu_s=round(backend_cpu, 2),
                  server_cpu_ms_per_1k_msgs=round((server_cpu + backend_cpu) / messages * 1e6,
                                                  1),
                  backend_requests=reached,
                  backend_requests_per_1k_msgs={
                      name: {k: round(n / messages * 1000, 1) for k, n in counts.items()}
                      for name, counts in reached.items()})
    print(json.dumps(result), flush=True)
    return result


def run_phase(phase: Phase, scratch: Path, args: argparse.Namespace) -> None:
    print(f"== phase {phase.name}: pools {', '.join(b.name for b in phase.backends)}",
          flush=True)
    with zq_server(phase, scratch, args) as (url, server, management):
        asyncio.run(prepare(url, phase, args.queues))
        with contextlib.closing(sqlite3.connect(management)) as db:
            spread = dict(db.execute("SELECT pool, count(*) FROM zq_catalog WHERE project = ? "
                                     "GROUP BY pool", (phase.project,)).fetchall())
        print(f"   {len(phase.plain) + 2 * len(phase.policed)} queues "
              f"({len(phase.policed)} with a dead letter queue) spread: {spread}", flush=True)
        for kind in args.workloads:
            settings = lw.Settings(url=url, concurrency=args.concurrency,
                                   requests=args.requests, duration=args.duration,
                                   batch=args.batch, body_size=args.body_size,
                                   project=phase.project)
            phase.results.append(measured(url, server, phase, kind, settings))
        phase.audit = asyncio.run(audit(url, phase, management))
        print(json.dumps(phase.audit), flush=True)


def table(phases: list[Phase]) -> str:
    lines = ["| workload | phase | msgs/s | p50 ms | p99 ms | errors | server CPU ms / 1k msgs "
             "| backend requests / 1k msgs |", "|---|---|---|---|---|---|---|---|"]
    for index in range(len(phases[0].results)):
        for phase in phases:
            r = phase.results[index]
            reached = "; ".join(
                f"{name} " + ", ".join(f"{k} {v:g}" for k, v in counts.items())
                for name, counts in r["backend_requests_per_1k_msgs"].items())
            lines.append(f"| {r['workload']} | {phase.name} | {r['msgs_per_s']:g} "
                         f"| {r['p50_ms']:g} | {r['p99_ms']:g} | {r['errors']} "
                         f"| {r['server_cpu_ms_per_1k_msgs']:g} | {reached} |")
    lines.append("")
    for phase in phases:
        a = phase.audit
        lines.append(f"audit {phase.name}: posted {a['posted']} = deleted {a['deleted']} + dead "
                     f"lettered {a['dead_lettered']} + queued {a['queued']} "
                     f"(unaccounted {a['unaccounted']}) {'OK' if a['ok'] else 'MISMATCH'}")
        for pool, row in a["pools"].items():
            lines.append(f"  {pool}: " + ", ".join(f"{k} {v}" for k, v in row.items()))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example" + __doc__.split("Example")[1].rstrip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", action="append", default=None, metavar="URI",
                        help="use this Redis (give it twice) instead of starting 2 "
                             "redis-server; never the machine's own on 6379")
    parser.add_argument("--queues", type=int, default=300, help="queues per phase (300)")
    parser.add_argument("--workers", type=int, default=2,
                        help="zq serve worker processes (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=4,
                        help="threads per worker (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="loadgen's requests in flight (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=8.0,
                        help="seconds per workload (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=20000,
                        help="requests per workload (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=10,
                        help="messages per post and per claim (default: %(default)s)")
    parser.add_argument("--body-size", type=int, default=256,
                        help="bytes of each message body as JSON (default: %(default)s)")
    parser.add_argument("--workloads", type=lambda t: t.split(","), default=["post", "cycle",
                        "poison"], help="comma list of post, cycle, poison (all)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    if args.redis is not None and (len(args.redis) != 2 or any(
            urlsplit(u).port in (None, 6379) for u in args.redis)):
        parser.error("--redis is given twice, each with a port other than 6379")
    if set(args.workloads) - {"post", "cycle", "poison"} or args.queues < POLICED_EVERY:
        parser.error("--workloads takes post, cycle, poison; --queues at least 10")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="zq-pools-scale-"))
    load = os.getloadavg()
    header = [f"date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}", f"machine: {machine()}",
              f"command: python -m benchmarks.pools_scale {' '.join(argv or sys.argv[1:])}"]
    print("\n".join(header), flush=True)
    try:
        with contextlib.ExitStack() as stack:
            redis_uris = args.redis or stack.enter_context(redis_servers(2, scratch))
            prefix = f"zqbench-{uuid.uuid4().hex[:8]}"
            pg_uri = stack.enter_context(postgres_database())
            redis_a, redis_b = (Backend(f"redis-{i}", f"{uri}?prefix={prefix}", "redis")
                                for i, uri in zip("ab", redis_uris, strict=True))
            postgres = Backend("postgresql", pg_uri, "postgresql")
            phases = [Phase("one", [redis_a]), Phase("pools", [redis_a, redis_b, postgres])]
            for phase in phases:
                run_phase(phase, scratch, args)
            if args.redis:  # servers we did not start: remove our keys
                import redis

                for uri in args.redis:
                    client = redis.Redis.from_url(uri)
                    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
                    for start in range(0, len(keys), 500):
                        client.delete(*keys[start:start + 500])
                    client.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    after = os.getloadavg()
    header.append(f"load average at start {load[0]:.2f}, at end {after[0]:.2f}")
    report = "\n".join(header) + "\n\n" + table(phases) + "\n"
    print("\n" + report)
    if args.out:
        args.out.write_text(report)
    return 0 if all(p.audit["ok"] for p in phases) else 1


if __name__ == "__main__":
    raise SystemExit(main())
