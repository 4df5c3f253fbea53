"""An outage, a crashing fleet and real poison: is the dead letter queue poison and nothing else?

    PYTHONPATH=$PWD python benchmarks/outage.py URI [--outage 60] [--messages 2000]
    PYTHONPATH=$PWD python benchmarks/outage.py sqlite:///tmp/outage.sqlite3
    PYTHONPATH=$PWD python benchmarks/outage.py postgresql://postgres@127.0.0.1:5432/outage
    PYTHONPATH=$PWD python benchmarks/outage.py "redis://127.0.0.1:6379/0?prefix=outage"

One ``zq serve --workers 2`` on URI (SQL databases are migrated first),
and the same workload twice in one run, each in a project of its own:
features **off** (Zaqar's semantics: every failed delivery counts toward
``_max_claim_count``) and **on** (the breaker, blame split under
``_suspect_lapsed_consumers``, automatic redrive; docs/poison.md).

The workload (issue 27, part 4): ``--messages`` (2,000) posted at a steady
rate over ``--post-seconds``; 1% true poison (always fails, one
description) and 2 messages that crash whichever consumer takes them (the
process exits while holding its claim); 8 consumer processes running
``zq.client.Consumer`` (claims of ``--batch`` messages, 1 by default, ttl
10 s: the server's minimum claim ttl is lowered to 5 s so that a lapse
costs seconds, not a minute; with larger batches each crash also lapses
the good messages claimed with the crashing one, which then come last); a
dependency outage of ``--outage`` seconds from ``--outage-start``, during
which every message fails with another description; one consumer SIGKILLed
every ``--kill-every`` seconds (its claims lapse) and replaced by a new
process with a new Client-ID, as an orchestrator would; crashed consumers
are replaced the same way. A mode ends when everything was posted, the
outage is over and the queue is empty, or after ``--max-seconds``.

Printed per mode, from the consumers' own logs (each line written before
the next request) and the backend's event log:

- dead letter precision (poison / everything dead lettered) and recall
  (poison dead lettered / poison posted; the crashing messages are poison);
- good messages lost (neither deleted nor in any queue) and delivered
  again after a delete of them was acknowledged (both must be 0);
- seconds from the outage's end to the last good message deleted;
- deliveries (claims of a message) made during the outage.

It leaves nothing behind on URI's server: on Redis it works under URI's
``prefix`` (a fresh ``zqoutage-<id>`` one when URI names none) and deletes
at the end every key under it that was not there before; on PostgreSQL it
creates a database of its own beside URI's (``zq_outage_<id>``) and drops
it; on SQLite it removes the file (and its -wal and -shm) unless it was
there before. Other backends are used as given.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: this checkout's zq and tests

QUEUE = "orders"
DLQ = "orders-dlq"
CLAIM_TTL = 10
POISON_EVERY = 100  # 1%
CRASHERS = 2
POISON_DESCRIPTION = "malformed order: no customer"
OUTAGE_DESCRIPTION = "orders-db unreachable: connection refused"

# Backoff up to 12 s, as in the runs of docs/benchmarks.md. It is no longer
# what lets the breaker close past a poison message at the head of the
# queue: the breaker holds a failed probe's message back itself
# (docs/poison.md); before that hold, a backoff of 4 s kept it open.
COMMON = {"_max_claim_count": 5, "_dead_letter_queue": DLQ, "_retry_delay": 1,
          "_retry_max_delay": 12}
# A 10 s window: the ratio compares the outage's failures with the
# successes of the window, so the longer the window the more of the
# outage's traffic it takes to trip (with 60 s, about 400 deliveries here).
FEATURES = {"_breaker_failure_ratio": 0.5, "_breaker_min_failures": 20,
            "_breaker_window": 10, "_breaker_probe_interval": 5, "_breaker_close_after": 3,
            "_auto_redrive_max": 1, "_suspect_lapsed_consumers": True}
SERVER_ENV = {"ZQ_LIMITS_MIN_CLAIM_TTL": "5", "ZQ_LIMITS_MAX_MESSAGES_PER_PAGE": "1000",
              "ZQ_GC_INTERVAL": "5"}


# -- the consumer process -------------------------------------------------------


class DependencyDown(Exception):
    """The outage: the handler's database does not answer."""


class MalformedOrder(Exception):
    """True poison: no retry can fix it (the consumer does not know that)."""


def consumer_main(url: str, project: str, log_path: str, outage_flag: str, work: float,
                  batch: int) -> None:
    """One consumer process: zq.client.Consumer, every step logged before the next request."""
    from zq.client import Client, Consumer

    log = open(log_path, "a", buffering=1)  # noqa: SIM115 -- open for the process's life

    def note(kind: str, message_id: str, extra: Any = "") -> None:
        log.write(f"{time.time():.4f} {kind} {message_id} {extra}\n")

    class LoggingClient(Client):
        def claim(self, queue: str, **kwargs: Any):  # type: ignore[no-untyped-def]
            claim = super().claim(queue, **kwargs)
            for message in claim.messages if claim else ():
                note("claimed", message.id, message.claim_count)
            return claim

        def delete_message(self, queue: str, message_id: str, *,
                           claim_id: str | None = None) -> None:
            super().delete_message(queue, message_id, claim_id=claim_id)
            note("deleted", message_id)

    def handle(message: Any) -> None:
        kind = message.body["kind"]
        if kind == "crash":
            note("crash", message.id)
            os._exit(3)  # dies holding its claim: the claim lapses
        time.sleep(work)
        if os.path.exists(outage_flag):
            raise DependencyDown(OUTAGE_DESCRIPTION)
        if kind == "poison":
            raise MalformedOrder(POISON_DESCRIPTION)
        note("handled", message.id)

    client = LoggingClient(url, project=project)
    note("ready", "-")
    Consumer(url, QUEUE, handle, project=project, batch=batch, claim_ttl=CLAIM_TTL, grace=60,
             idle_wait=(0.1, 1.0), client=client).run()


# -- the driver -----------------------------------------------------------------


@dataclass
class Fleet:
    """The consumer processes of one mode, replaced when they die or are killed."""

    url: str
    project: str
    scratch: Path
    outage_flag: Path
    work: float
    batch: int
    processes: list[subprocess.Popen] = field(default_factory=list)
    started: int = 0
    killed: int = 0
    crashed: int = 0

    def spawn(self) -> None:
        self.started += 1
        log = self.scratch / f"consumer-{self.started}.log"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.processes.append(subprocess.Popen(
            [sys.executable, __file__, "--consumer", self.url, self.project, str(log),
             str(self.outage_flag), str(self.work), str(self.batch)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.scratch / f"consumer-{self.started}.err", "wb")))  # noqa: SIM115

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until every consumer started so far has imported zq.client and is claiming."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            logs = [self.scratch / f"consumer-{n}.log" for n in range(1, self.started + 1)]
            if all(path.exists() and " ready " in path.read_text() for path in logs):
                return
            time.sleep(0.1)
        raise SystemExit("the consumers did not start")

    def replace_dead(self) -> None:
        for process in list(self.processes):
            if process.poll() is not None:
                self.processes.remove(process)
                if process.returncode == 3:
                    self.crashed += 1
                self.spawn()

    def kill_one(self, rng: random.Random) -> None:
        alive = [p for p in self.processes if p.poll() is None]
        if alive:
            victim = rng.choice(alive)
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            self.processes.remove(victim)
            self.killed += 1
            self.spawn()

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@dataclass
class Outcome:
    mode: str
    poison: set[str]
    good: set[str]
    dead: set[str]
    left: set[str]
    deleted_events: Counter
    acked: dict[str, list[float]]
    claimed_after_ack: set[str]
    outage: tuple[float, float]
    last_good_delete: float | None
    outage_deliveries: int
    open_deliveries: int  # while the breaker was open or half-open
    trip_after: float | None  # seconds from the outage's start to the trip
    closed_after: float | None  # seconds from the outage's end to the close
    open_intervals: int  # probe intervals while it was open
    seconds: float
    fleet: Fleet
    breaker_events: int
    auto_redriven: int

    def figures(self) -> dict[str, Any]:
        caught = self.dead & self.poison
        precision = len(caught) / len(self.dead) if self.dead else 1.0
        lost = {m for m in self.good
                if not self.deleted_events[m] and m not in self.dead and m not in self.left}
        twice = {m for m, acks in self.acked.items() if len(acks) > 1} | self.claimed_after_ack
        recovery = (None if self.last_good_delete is None
                    else self.last_good_delete - self.outage[1])
        return {
            "mode": self.mode,
            "dead lettered": len(self.dead),
            "poison dead lettered": len(caught),
            "good dead lettered": len(self.dead & self.good),
            "precision": round(precision, 4),
            "recall": round(len(caught) / len(self.poison), 4),
            "good deleted": sum(1 for m in self.good if self.deleted_events[m]),
            "good posted": len(self.good),
            "left in the queue": len(self.left),
            "good lost": len(lost),
            "good delivered again after an acknowledged delete": len(twice),
            "outage end -> last good delete s": None if recovery is None else round(recovery, 1),
            "deliveries during the outage": self.outage_deliveries,
            "outage start -> trip s": _rounded(self.trip_after),
            "deliveries while open": self.open_deliveries,
            "probe intervals while open": self.open_intervals,
            "outage end -> closed s": _rounded(self.closed_after),
            "breaker events": self.breaker_events,
            "auto-redriven": self.auto_redriven,
            "consumers killed": self.fleet.killed,
            "consumers crashed": self.fleet.crashed,
            "seconds": round(self.seconds, 1),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def post_all(client: Any, count: int, seconds: float, posted: dict[str, str],
             done: threading.Event, rng: random.Random) -> None:
    """``count`` messages at a steady rate, 10 a request; kinds recorded in ``posted``."""
    crashers = set(rng.sample([n for n in range(count) if n % POISON_EVERY], CRASHERS))
    started = time.monotonic()
    for start in range(0, count, 10):
        wait = started + seconds * start / count - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        kinds = ["poison" if n % POISON_EVERY == POISON_EVERY // 2 else
                 "crash" if n in crashers else "good" for n in range(start, min(count, start + 10))]
        bodies = [{"n": start + i, "kind": kind} for i, kind in enumerate(kinds)]
        for attempt in range(20):
            try:
                ids = client.post(QUEUE, *bodies, ttl=3600)
                break
            except Exception:  # a worker restarting: the post is retried, never lost
                if attempt == 19:
                    raise
                time.sleep(0.5)
        posted.update(zip(ids, kinds, strict=True))
    done.set()


def read_logs(scratch: Path) -> list[tuple[float, str, str]]:
    lines = []
    for path in scratch.glob("consumer-*.log"):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3:  # a SIGKILL may cut the last line short
                try:
                    lines.append((float(parts[0]), parts[1], parts[2]))
                except ValueError:
                    continue
    return sorted(lines)


def run_mode(mode: str, url: str, uri: str, args: argparse.Namespace, scratch: Path) -> Outcome:
    from tests.crash.audit import project_events
    from zq import events
    from zq.client import Client
    from zq.storage import open_storage

    project = f"outage-{mode}-{uuid.uuid4().hex[:8]}"
    client = Client(url, project=project)
    client.create_queue(QUEUE, {**COMMON, **(FEATURES if mode == "on" else {})})
    rng = random.Random(args.seed)
    flag = scratch / "outage"
    fleet = Fleet(url, project, scratch, flag, args.work, args.batch)
    posted: dict[str, str] = {}
    posted_all = threading.Event()
    poster = threading.Thread(target=post_all, daemon=True, args=(
        client, args.messages, args.post_seconds, posted, posted_all, rng))
    for _ in range(args.consumers):
        fleet.spawn()
    fleet.wait_ready()  # a loaded machine takes seconds to start 8 Pythons
    began = time.time()
    outage = (began + args.outage_start, began + args.outage_start + args.outage)
    poster.start()
    next_kill = time.time() + args.kill_every
    last_report = 0.0
    try:
        while True:
            now = time.time()
            if outage[0] <= now < outage[1]:
                flag.touch()
            elif flag.exists():
                flag.unlink()
            if now >= next_kill:
                fleet.kill_one(rng)
                next_kill += args.kill_every
            fleet.replace_dead()
            if now - last_report >= 10:
                last_report = now
                stats = client.stats(QUEUE)
                dead = client.stats(DLQ).total
                phase = ("before the outage" if now < outage[0] else
                         "outage" if now < outage[1] else "after the outage")
                print(f"  {mode} {now - began:5.0f} s ({phase}): posted {len(posted)}, "
                      f"queue {stats.total} ({stats.claimed} claimed, {stats.delayed} delayed), "
                      f"dead letters {dead}, consumers killed {fleet.killed}, "
                      f"crashed {fleet.crashed}", flush=True)
            if posted_all.is_set() and now > outage[1] + 1 and client.stats(QUEUE).total == 0:
                break
            if now - began > args.max_seconds:
                print(f"  {mode}: --max-seconds reached", flush=True)
                break
            time.sleep(0.2)
    finally:
        fleet.stop()
        if flag.exists():
            flag.unlink()
    ended = time.time()

    dead = {m.id for m in client.list_messages(DLQ, limit=1000, include_claimed=True)}
    left = {m.id for m in client.list_messages(QUEUE, limit=1000, include_claimed=True)}
    poison = {m for m, kind in posted.items() if kind != "good"}
    good = {m for m, kind in posted.items() if kind == "good"}
    storage = open_storage(uri)
    try:
        logged = project_events(storage, project)
    finally:
        storage.close()
    deleted_events = Counter(e.message_id for e in logged if e.kind == events.DELETED)
    outage_deliveries = sum(1 for e in logged if e.kind == events.CLAIMED
                            and outage[0] <= e.time < outage[1])
    changes = [e for e in logged if e.kind == "breaker"]
    breaker_events = len(changes)
    trip = next((e.time for e in changes if e.detail.get("previous") == "closed"), None)
    close = next((e.time for e in reversed(changes) if e.detail.get("state") == "closed"),
                 None)
    interval = FEATURES["_breaker_probe_interval"]
    open_deliveries, open_intervals = 0, 0
    if trip is not None:
        until = close if close is not None else ended
        open_deliveries = sum(1 for e in logged if e.kind == events.CLAIMED
                              and trip < e.time < until)
        open_intervals = int((until - trip) // interval) + 1
    auto_redriven = sum(1 for e in logged if e.kind == events.REDRIVEN
                        and e.detail.get(events.REASON) == "auto_redriven")

    acked: dict[str, list[float]] = {}
    claimed_after_ack: set[str] = set()
    last_good_delete = None
    for when, kind, message_id in read_logs(scratch):
        if kind == "deleted":
            acked.setdefault(message_id, []).append(when)
            if message_id in good:
                last_good_delete = when
        elif kind == "claimed" and acked.get(message_id):
            claimed_after_ack.add(message_id)
    for path in scratch.glob("consumer-*"):
        path.unlink()
    return Outcome(mode, poison, good, dead, left, deleted_events, acked, claimed_after_ack,
                   outage, last_good_delete, outage_deliveries, open_deliveries,
                   None if trip is None else trip - outage[0],
                   None if close is None else close - outage[1], open_intervals,
                   ended - began, fleet, breaker_events, auto_redriven)


def serve(uri: str, scratch: Path):  # type: ignore[no-untyped-def]
    from tests.e2e.server import ServerProcess, clean_environment, run_zq
    from zq.storage import scheme_of

    env = {**clean_environment(scratch / "data"), **SERVER_ENV}
    if scheme_of(uri) in ("sqlite", "postgresql", "mysql"):
        upgraded = run_zq("db", "upgrade", "--storage", uri, env=env)
        if upgraded.returncode != 0:
            raise SystemExit(f"zq db upgrade failed:\n{upgraded.stderr}")
    return ServerProcess(scratch / "server.log", env, "--workers", "2",
                         "--storage", uri).start()


def print_table(outcomes: list[Outcome]) -> None:
    rows = [o.figures() for o in outcomes]
    names = [key for key in rows[0] if key != "mode"]
    print("\n| figure | " + " | ".join(f"features {r['mode']}" for r in rows) + " |")
    print("| --- |" + " --- |" * len(rows))
    for name in names:
        print(f"| {name} | " + " | ".join(str(r[name]) for r in rows) + " |")
    for row in rows:
        print(json.dumps(row))


@contextlib.contextmanager
def run_storage(uri: str) -> Iterator[str]:
    """The storage URI the run uses, for a part of ``uri``'s server that is removed
    afterwards (the module docstring says which)."""
    parts = urlsplit(uri)
    if parts.scheme in ("redis", "rediss"):
        import redis

        query = dict(parse_qsl(parts.query))
        prefix = query.setdefault("prefix", f"zqoutage-{uuid.uuid4().hex[:8]}")
        client = redis.Redis.from_url(urlunsplit(parts._replace(query="")))
        try:
            before = set(client.scan_iter(match=f"{prefix}:*", count=1000))
            try:
                yield urlunsplit(parts._replace(query=urlencode(query)))
            finally:
                keys = [key for key in client.scan_iter(match=f"{prefix}:*", count=1000)
                        if key not in before]
                for start in range(0, len(keys), 500):
                    client.delete(*keys[start:start + 500])
                print(f"removed {len(keys)} Redis keys of the run under {prefix}:", flush=True)
        finally:
            client.close()
    elif parts.scheme.startswith("postgres"):
        import psycopg
        from psycopg import sql

        name = f"zq_outage_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(uri, autocommit=True, connect_timeout=10) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            try:
                yield urlunsplit(parts._replace(path=f"/{name}"))
            finally:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                              .format(sql.Identifier(name)))
                print(f"dropped database {name}", flush=True)
    elif parts.scheme == "sqlite":
        path = Path(uri.removeprefix("sqlite:///").split("?")[0])  # sqlite:////abs, :///rel
        existed = path.exists()
        try:
            yield uri
        finally:
            if not existed:
                for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                    leftover.unlink(missing_ok=True)
    else:
        yield uri


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--consumer":
        url, project, log_path, flag, work, batch = sys.argv[2:8]
        consumer_main(url, project, log_path, flag, float(work), int(batch))
        return
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  PYTHONPATH=$PWD python benchmarks/outage.py sqlite:////tmp/outage/bench.sqlite3\n"
               '  PYTHONPATH=$PWD python benchmarks/outage.py '
               '"redis://127.0.0.1:6379/0?prefix=outagebench"')
    parser.add_argument("uri", help="storage URI (SQL databases are migrated first)")
    parser.add_argument("--messages", type=int, default=2000,
                        help="messages posted per mode (default: %(default)s)")
    parser.add_argument("--consumers", type=int, default=8,
                        help="consumer processes of the fleet (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=1, help="messages per claim (1)")
    parser.add_argument("--post-seconds", type=float, default=100.0,
                        help="seconds over which the messages are posted (100)")
    parser.add_argument("--outage-start", type=float, default=20.0,
                        help="seconds after the start of a mode the outage begins (20)")
    parser.add_argument("--outage", type=float, default=60.0, help="outage seconds (60)")
    parser.add_argument("--kill-every", type=float, default=10.0,
                        help="seconds between two consumer SIGKILLs (10)")
    parser.add_argument("--work", type=float, default=0.01,
                        help="seconds a handler spends on a message (0.01)")
    parser.add_argument("--max-seconds", type=float, default=300.0,
                        help="end a mode after this long whatever is left (300)")
    parser.add_argument("--modes", default="off,on", help="which modes, in order (off,on)")
    parser.add_argument("--seed", type=int, default=27,
                        help="seed of the run's random choices, such as which consumer is "
                             "killed (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zq-outage-") as tmp, \
            run_storage(args.uri) as uri:
        scratch = Path(tmp)
        server = serve(uri, scratch)
        print(f"zq serve --workers 2 on {uri.split(':', 1)[0]} at {server.url}; "
              f"{args.messages} messages over {args.post_seconds:g} s, {args.consumers} "
              f"consumers claiming {args.batch}, outage {args.outage:g} s from "
              f"{args.outage_start:g} s, a SIGKILL every {args.kill_every:g} s", flush=True)
        outcomes = []
        try:
            for mode in args.modes.split(","):
                print(f"features {mode}:", flush=True)
                outcomes.append(run_mode(mode, server.url, uri, args, scratch))
        finally:
            server.stop()
    print_table(outcomes)


if __name__ == "__main__":
    main()
