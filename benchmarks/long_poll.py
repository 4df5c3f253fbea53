"""Long-poll claims (``POST .../claims?wait=S``) measured against polling, on one storage.

    python benchmarks/long_poll.py URI [--waiters 50] [--rate 20] [--seconds 30]
                                       [--idle 2000] [--idle-seconds 60] [--rounds 3]
    (from the repository root; URI: redis://..., postgresql://..., sqlite:///FILE)

Starts ``zq serve --workers 2`` (``--workers`` x ``--threads``) on the
storage URI (a Redis URI gets a fresh key prefix, deleted afterwards; a
PostgreSQL URI names the server on which a fresh database is created and
dropped afterwards; a SQLite file is created and removed, or kept if it was
there) and runs three measurements, each printed as JSON lines, then a
Markdown summary:

1. **post-to-claim latency.** ``--waiters`` consumers claim one message at
   a time from one queue while a producer posts one message every
   1/``--rate`` s for ``--seconds``; latency runs from just before the post
   is sent to the claim's answer in the consumer. Three kinds of consumers,
   one after the other on fresh queues, ``--rounds`` times in turn: waiting
   claims (``wait=--wait``) and today's best polling clients, which sleep
   100 ms or 1 s after an empty claim. Also: claim requests per second and
   messages not delivered.
2. **idle waiters.** ``--idle`` consumers wait on an empty queue (each
   re-issues its waiting claim when it ends with a 204) for
   ``--idle-seconds``, measured once all of them wait: the server's CPU (all
   its processes, in % of one core), the growth of its resident memory, the
   requests per second the backend served (Redis: ``total_commands_processed``
   of the whole Redis server, so use a Redis nobody else uses; PostgreSQL:
   transactions of the run's database; SQLite: not measurable from outside)
   and zq's own ``zq_claims_waiting`` and ``zq_claim_wakeups_total``; the
   same CPU and backend figures are first measured for ``--baseline-seconds``
   with nobody waiting (what gc, the notifier and the metrics cost anyway).
3. **claim-delete throughput**: the side-by-side benchmark's ``claim-delete``
   workload (benchmarks/loadgen) with every claim asking ``wait`` and
   without, alternating, ``--throughput-rounds`` times each; medians, their
   ratio, and the ratio within each round (its two runs follow each other).

The machine's load average is printed before and after each part: on a
shared machine read the figures with it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: python benchmarks/long_poll.py
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from benchmarks.loadgen.stats import percentile  # noqa: E402
from benchmarks.zaqar_side_by_side import (  # noqa: E402
    Target,
    cpu_seconds,
    free_port,
    process_tree,
    running,
    spent_since,
)

CLAIM_BODY = {"ttl": 60, "grace": 60}
POLL_SLEEPS = (0.1, 1.0)  # the polling clients' sleep after an empty claim


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def emit(line: dict) -> None:
    print(json.dumps(line), flush=True)


# -- the storage -----------------------------------------------------------------


@dataclass
class Storage:
    uri: str  # what zq serve is given
    kind: str  # redis, postgresql, sqlite, other
    counter: str = ""  # how backend requests are counted, for the report


@contextlib.contextmanager
def storage(uri: str, scratch: Path) -> Iterator[Storage]:
    """The storage of the run: a fresh part of what ``uri`` names, removed afterwards."""
    scheme = urlsplit(uri).scheme
    if scheme in ("redis", "rediss"):
        import redis

        parts = urlsplit(uri)
        query = dict(parse_qsl(parts.query))
        prefix = query.setdefault("prefix", f"zqlp-{uuid.uuid4().hex[:8]}")
        fresh = urlunsplit(parts._replace(query=urlencode(query)))
        try:
            yield Storage(fresh, "redis", "Redis total_commands_processed (whole server)")
        finally:
            client = redis.Redis.from_url(urlunsplit(parts._replace(query="")))
            keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
            for start in range(0, len(keys), 500):
                client.delete(*keys[start:start + 500])
            client.close()
    elif scheme.startswith("postgres"):
        import psycopg
        from psycopg import sql

        name = f"zq_longpoll_{uuid.uuid4().hex[:12]}"
        admin = psycopg.connect(uri, autocommit=True, connect_timeout=10)
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            fresh = urlunsplit(urlsplit(uri)._replace(path=f"/{name}"))
            subprocess.run([sys.executable, "-m", "zq", "db", "upgrade", "--storage", fresh],
                           cwd=ROOT, check=True, capture_output=True)
            yield Storage(fresh, "postgresql", f"PostgreSQL transactions of database {name}")
        finally:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                          .format(sql.Identifier(name)))
            admin.close()
    elif scheme == "sqlite":
        path = Path(uri.removeprefix("sqlite:///").split("?")[0])  # sqlite:////abs, sqlite:///rel
        existed = path.exists()
        try:
            yield Storage(uri, "sqlite", "")
        finally:
            if not existed:
                for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                    leftover.unlink(missing_ok=True)
    else:
        yield Storage(uri, "other", "")


def backend_requests(store: Storage) -> int | None:
    """The backend's request count now (module docstring), None when not measurable."""
    if store.kind == "redis":
        import redis

        parts = urlsplit(store.uri)
        client = redis.Redis.from_url(urlunsplit(parts._replace(query="")))
        try:
            return int(client.info("stats")["total_commands_processed"])
        finally:
            client.close()
    if store.kind == "postgresql":
        import psycopg

        parts = urlsplit(store.uri)
        name = parts.path.lstrip("/")
        admin = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                               "WHERE datname = %s", (name,)).fetchone()
            return int(row[0]) if row else None
    return None


# -- the server's processes ------------------------------------------------------


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


async def scrape(session: aiohttp.ClientSession, url: str) -> dict[str, float]:
    """zq's long-poll series from ``GET /metrics`` (absent ones left out)."""
    async with session.get(f"{url}/metrics") as answer:
        text = await answer.text()
    wanted = ("zq_claims_waiting", "zq_claim_wakeups_total")
    found: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.split("{")[0] in wanted:
            found[name] = found.get(name, 0.0) + float(value)
    return found


# -- consumers and producer ------------------------------------------------------


@dataclass
class Run:
    """What one latency run measured."""

    mode: str
    latencies: list[float] = field(default_factory=list)
    claims: int = 0  # claim requests answered
    claim_rate: float = 0.0  # claim requests answered per second while posts went on
    posted: int = 0
    errors: int = 0


def headers(project: str) -> dict[str, str]:
    return {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project,
            "Content-Type": "application/json", "Accept": "application/json"}


async def consume(session: aiohttp.ClientSession, url: str, queue: str, project: str,
                  run: Run, wait: float, sleep: float, stop: asyncio.Event) -> None:
    """One consumer: claim one message, note its latency, delete it; until ``stop``."""
    mine = headers(project)
    params = {"limit": "1", **({"wait": f"{wait:g}"} if wait else {})}
    claims = f"{url}/v2/queues/{queue}/claims"
    while not stop.is_set():
        try:
            async with session.post(claims, params=params, json=CLAIM_BODY,
                                    headers=mine) as answer:
                document = await answer.json() if answer.status == 201 else None
                status = answer.status
        except (aiohttp.ClientError, TimeoutError):
            run.errors += 1
            await asyncio.sleep(sleep or 0.1)
            continue
        arrived = time.time()
        run.claims += 1
        if status == 201 and document:
            for message in document["messages"]:
                run.latencies.append(arrived - message["body"]["t"])
                async with session.delete(f"{url}{message['href']}", headers=mine):
                    pass
        elif status == 204:
            if sleep:
                await asyncio.sleep(sleep)
        else:
            run.errors += 1
            await asyncio.sleep(sleep or 0.1)


async def produce(session: aiohttp.ClientSession, url: str, queue: str, project: str,
                  run: Run, rate: float, seconds: float) -> None:
    """One message every 1/rate s for ``seconds``, stamped just before it is sent."""
    mine = headers(project)
    started = time.monotonic()
    n = 0
    while (due := started + n / rate) < started + seconds:
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        body = {"messages": [{"ttl": 300, "body": {"n": n, "t": time.time()}}]}
        async with session.post(f"{url}/v2/queues/{queue}/messages", json=body,
                                headers=mine) as answer:
            if answer.status == 201:
                run.posted += 1
            else:
                run.errors += 1
        n += 1


async def latency_run(url: str, mode: str, wait: float, sleep: float,
                      args: argparse.Namespace) -> Run:
    project = f"longpoll-{uuid.uuid4().hex[:8]}"
    queue = f"latency-{uuid.uuid4().hex[:8]}"
    run = Run(mode)
    connector = aiohttp.TCPConnector(limit=args.waiters + 8)
    timeout = aiohttp.ClientTimeout(total=wait + 30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        stop = asyncio.Event()
        consumers = [asyncio.create_task(consume(session, url, queue, project, run, wait,
                                                 sleep, stop))
                     for _ in range(args.waiters)]
        await asyncio.sleep(1.0)  # every consumer has claimed once (and waits, or sleeps)
        claims_before, started = run.claims, time.monotonic()
        await produce(session, url, queue, project, run, args.rate, args.seconds)
        elapsed = time.monotonic() - started
        claim_rate = (run.claims - claims_before) / elapsed
        deadline = time.monotonic() + max(2.0, 2 * sleep)
        while len(run.latencies) < run.posted and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        for task in consumers:  # a waiting claim is dropped: the server gives up on it
            task.cancel()
        await asyncio.gather(*consumers, return_exceptions=True)
        async with session.delete(f"{url}/v2/queues/{queue}", headers=headers(project)):
            pass
    ordered = sorted(run.latencies)
    emit({"part": "latency", "mode": mode, "waiters": args.waiters, "rate": args.rate,
          "seconds": args.seconds, "posted": run.posted, "delivered": len(ordered),
          "p50_ms": round(percentile(ordered, 50) * 1000, 2),
          "p99_ms": round(percentile(ordered, 99) * 1000, 2),
          "max_ms": round(ordered[-1] * 1000, 2) if ordered else None,
          "claims_per_s": round(claim_rate, 1), "errors": run.errors, "load": load()})
    run.claim_rate = round(claim_rate, 1)
    return run


async def idle_run(url: str, pid: int, store: Storage, args: argparse.Namespace) -> dict:
    project = f"longpoll-{uuid.uuid4().hex[:8]}"
    queue = f"idle-{uuid.uuid4().hex[:8]}"
    run = Run("idle")
    connector = aiohttp.TCPConnector(limit=args.idle + 8)
    timeout = aiohttp.ClientTimeout(total=args.wait + 60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # The same figures with nobody waiting first: what the server and its
        # backend do anyway (gc, the notifier, the metrics), to subtract.
        pids = process_tree(pid)
        cpu0, backend0, started = cpu_seconds(pids), backend_requests(store), time.monotonic()
        await asyncio.sleep(args.baseline_seconds)
        elapsed = time.monotonic() - started
        cpu, backend1 = spent_since(cpu0, pids), backend_requests(store)
        quiet_cpu = round(100 * cpu / elapsed, 2)
        quiet_backend = (round((backend1 - backend0) / elapsed, 1)
                         if backend0 is not None and backend1 is not None else None)
        stop = asyncio.Event()
        consumers = []
        for n in range(args.idle):  # a ramp, not 2,000 connections in one instant
            consumers.append(asyncio.create_task(
                consume(session, url, queue, project, run, args.wait, 0.0, stop)))
            if n % 100 == 99:
                await asyncio.sleep(0.2)
        await asyncio.sleep(args.settle)
        pids = process_tree(pid)
        metrics_before = await scrape(session, url)
        cpu0, rss0, backend0 = cpu_seconds(pids), rss_mib(pids), backend_requests(store)
        claims0, started = run.claims, time.monotonic()
        await asyncio.sleep(args.idle_seconds)
        elapsed = time.monotonic() - started
        cpu, rss1, backend1 = spent_since(cpu0, pids), rss_mib(pids), backend_requests(store)
        claims = run.claims - claims0
        metrics_after = await scrape(session, url)
        stop.set()
        for task in consumers:
            task.cancel()
        await asyncio.gather(*consumers, return_exceptions=True)
    backend = None
    if backend0 is not None and backend1 is not None:
        backend = round((backend1 - backend0) / elapsed, 1)
    line = {"part": "idle", "waiters": args.idle, "wait": args.wait,
            "seconds": round(elapsed, 1), "server_processes": len(pids),
            "server_cpu_pct_of_one_core": round(100 * cpu / elapsed, 2),
            "server_cpu_pct_nobody_waiting": quiet_cpu,
            "rss_start_mib": round(rss0, 1), "rss_end_mib": round(rss1, 1),
            "rss_growth_mib": round(rss1 - rss0, 1),
            "claim_answers_per_s": round(claims / elapsed, 1),
            "backend_requests_per_s": backend,
            "backend_requests_per_s_nobody_waiting": quiet_backend,
            "backend_counter": store.counter or None,
            "errors": run.errors, "metrics_before": metrics_before,
            "metrics_after": metrics_after, "load": load()}
    emit(line)
    return line


def throughput(url: str, wait: float, args: argparse.Namespace) -> dict:
    """One claim-delete run of the side-by-side benchmark's load generator."""
    command = [sys.executable, "-m", "benchmarks.loadgen", "--url", url,
               "--workload", "claim-delete", "--batch", "10", "--concurrency",
               str(args.concurrency), "--duration", str(args.throughput_seconds),
               "--requests", "20000"]
    if wait:
        command += ["--wait", f"{wait:g}"]
    done = subprocess.run(command, cwd=ROOT, text=True, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"loadgen failed: {done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(part="throughput", wait=wait or None, load=load())
    emit(result)
    return result


# -- the run -----------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python benchmarks/long_poll.py redis://127.0.0.1:16399/0\n"
               "  python benchmarks/long_poll.py postgresql://postgres@127.0.0.1:5432/test "
               "--skip idle --skip throughput",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uri", help="storage URI: redis://..., postgresql://..., sqlite:///...")
    parser.add_argument("--workers", type=int, default=2,
                        help="zq serve worker processes (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=4,
                        help="threads per worker (default: %(default)s)")
    parser.add_argument("--wait", type=float, default=20.0,
                        help="seconds each waiting claim asks (default: %(default)s)")
    parser.add_argument("--waiters", type=int, default=50,
                        help="consumers in each latency run, waiting or polling "
                             "(default: %(default)s)")
    parser.add_argument("--rate", type=float, default=20.0,
                        help="posts per second (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="seconds of posts per latency run (default: %(default)s)")
    parser.add_argument("--idle", type=int, default=2000,
                        help="idle waiting consumers (default: %(default)s)")
    parser.add_argument("--idle-seconds", type=float, default=60.0,
                        help="seconds measured with the idle consumers waiting "
                             "(default: %(default)s)")
    parser.add_argument("--baseline-seconds", type=float, default=15.0,
                        help="seconds measured with nobody waiting, before the idle "
                             "consumers start (default: %(default)s)")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds between the last idle consumer's start and the "
                             "measurement (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="latency runs per mode, throughput runs per side "
                             "(default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="claim-delete consumers (default: %(default)s)")
    parser.add_argument("--throughput-seconds", type=float, default=6.0,
                        help="seconds of each claim-delete run (default: %(default)s)")
    parser.add_argument("--throughput-rounds", type=int, default=6,
                        help="claim-delete runs per side, alternating (default: %(default)s)")
    parser.add_argument("--skip", action="append", default=[],
                        choices=("latency", "idle", "throughput"),
                        help="leave out this part (repeatable; default: run all three)")
    parser.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment of zq serve (e.g. ZQ_LIMITS_MAX_CLAIM_WAIT=20)")
    args = parser.parse_args(argv)
    counts = (args.workers, args.threads, args.waiters, args.idle, args.rounds,
              args.concurrency, args.throughput_rounds)
    spans = (args.rate, args.seconds, args.idle_seconds, args.throughput_seconds, args.wait)
    if min(counts) < 1 or min(spans) <= 0:
        parser.error("counts, rates, seconds and --wait must be positive")
    return args


def summary(runs: list[Run], idle: dict | None, sides: dict[str, list[dict]]) -> str:
    lines = []
    if runs:
        lines += ["| consumers | runs | post-to-claim p50 ms | p99 ms | claim requests/s "
                  "| delivered |", "|---|---|---|---|---|---|"]
        for mode in dict.fromkeys(r.mode for r in runs):
            mine = [r for r in runs if r.mode == mode]
            p50 = statistics.median(percentile(sorted(r.latencies), 50) for r in mine)
            p99 = statistics.median(percentile(sorted(r.latencies), 99) for r in mine)
            lines.append(f"| {mode} | {len(mine)} | {p50 * 1000:.1f} | {p99 * 1000:.1f} "
                         f"| {statistics.median(r.claim_rate for r in mine):g} "
                         f"| {sum(len(r.latencies) for r in mine)}/"
                         f"{sum(r.posted for r in mine)} |")
    if idle:
        lines += ["", f"{idle['waiters']} idle waiting consumers for {idle['seconds']} s: "
                  f"server CPU {idle['server_cpu_pct_of_one_core']}% of one core "
                  f"({idle['server_cpu_pct_nobody_waiting']}% with nobody waiting), RSS "
                  f"{idle['rss_start_mib']} -> {idle['rss_end_mib']} MiB "
                  f"({idle['rss_growth_mib']:+} MiB), claim answers "
                  f"{idle['claim_answers_per_s']}/s, backend requests "
                  f"{idle['backend_requests_per_s']}/s "
                  f"({idle['backend_requests_per_s_nobody_waiting']}/s with nobody waiting; "
                  f"{idle['backend_counter']}), "
                  f"zq_claims_waiting {idle['metrics_after'].get('zq_claims_waiting')}"]
    if sides.get("without") and sides.get("with"):
        without = statistics.median(r["msgs_per_s"] for r in sides["without"])
        waiting = statistics.median(r["msgs_per_s"] for r in sides["with"])
        # Each round's two runs follow each other: their ratio cancels the
        # machine's slower drifts, which the medians of each side do not.
        pairs = [w["msgs_per_s"] / o["msgs_per_s"]
                 for w, o in zip(sides["with"], sides["without"], strict=False)
                 if o["msgs_per_s"]]
        lines += ["", f"claim-delete msgs/s, median of {len(sides['with'])}: with wait "
                  f"{waiting:g}, without {without:g}, ratio of the medians "
                  f"{waiting / without:.3f}; per round with/without "
                  f"{', '.join(f'{p:.2f}' for p in pairs)}, median "
                  f"{statistics.median(pairs):.3f}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="zq-long-poll-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZQ_", "OS_"))}
    env.update(ZQ_SERVER_THREADS=str(args.threads), XDG_DATA_HOME=str(scratch),
               PYTHONPATH=str(ROOT))
    for item in args.server_env:
        key, _, value = item.partition("=")
        env[key] = value
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}; nproc {os.cpu_count()}; "
          f"load average {load()}; command: python benchmarks/long_poll.py "
          f"{' '.join(argv if argv is not None else sys.argv[1:])}", flush=True)
    runs: list[Run] = []
    idle = None
    sides: dict[str, list[dict]] = {"with": [], "without": []}
    with storage(args.uri, scratch) as store:
        port = free_port()
        target = Target("zq", f"http://127.0.0.1:{port}",
                        [sys.executable, "-m", "zq", "serve", "--workers", str(args.workers),
                         "--port", str(port), "--storage", store.uri], env)
        with running(target, scratch):
            assert target.process is not None
            print(f"zq serve --workers {args.workers} (x {args.threads} threads) on "
                  f"{store.kind}, pid {target.process.pid}", flush=True)
            if "latency" not in args.skip:
                modes = [(f"waiting claims (wait={args.wait:g})", args.wait, 0.0)] + [
                    (f"polling, sleep {s * 1000:g} ms", 0.0, s) for s in POLL_SLEEPS]
                for _ in range(args.rounds):
                    for mode, wait, sleep in modes:
                        runs.append(asyncio.run(latency_run(target.url, mode, wait, sleep,
                                                            args)))
            if "idle" not in args.skip:
                idle = asyncio.run(idle_run(target.url, target.process.pid, store, args))
            if "throughput" not in args.skip:
                for n in range(args.throughput_rounds):
                    order = ("without", "with") if n % 2 == 0 else ("with", "without")
                    for side in order:
                        sides[side].append(throughput(target.url, args.wait if side == "with"
                                                      else 0.0, args))
    print(f"\nload average at the end {load()}\n")
    print(summary(runs, idle, sides))
    return 0


if __name__ == "__main__":
    sys.exit(main())
