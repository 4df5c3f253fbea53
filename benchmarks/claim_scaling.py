"""Claim latency as work grows: queues of 1k to 1M messages, behind 10k held or expired ones.

    python -m benchmarks.claim_scaling postgresql://postgres@127.0.0.1:5432 [--claims 200]
    python -m benchmarks.claim_scaling "redis://127.0.0.1:6379/11" --policy dlq
    python -m benchmarks.claim_scaling sqlite:////tmp/x.db --case 1k --case expired10k
    python -m benchmarks.claim_scaling postgresql://... --sizes 1k,1m --case 1k --case 1m
    (from the repository root)

Cases, each on its own queue, through the storage contract (no HTTP):

- ``1k``, ``100k`` (and ``1m`` with ``--sizes``): a queue of that many free
  messages;
- ``held10k``: 10,000 messages held by live claims at the head of the
  queue, then 1,000 free ones behind them (what a claim meets when many
  consumers hold long claims);
- ``expired10k``: 10,000 messages at the head whose claims have expired
  (a crashed consumer's), then 1,000 free ones. The run's clock is moved
  past those claims' expiry (an offset on the wall clock, no sleeping).

``--policy`` is what the timed claims pass: ``none``, ``dlq`` (a dead letter
policy whose ``_max_claim_count`` is never reached, so the check is paid and
nothing moves) or ``backoff`` (``_retry_delay``). In each case, ``--claims``
claims of 10 run one after another; each is released again untimed (with
``backoff``, whose release would delay the messages: deleted and replaced by
as many new ones at the tail), so the queue keeps its shape, except in
``expired10k``, where each claim takes 10 of the expired ones, as it would
(with ``backoff`` they are deleted, not replaced). Prints one JSON line per
case (claim p50 and p99 in ms, queue stats p50) and each case's p50/p99 over
the ``1k`` case's (the issue's target: within 2x). On PostgreSQL also
``database_ms``: the median execution time of the claim's statements inside
the database (EXPLAIN ANALYZE, rolled back), which the machine's load and
the commit's WAL flush do not blur, and ``statements``: how many a claim
sends (BEGIN and COMMIT not counted).
PostgreSQL: a database created for the run (no ANALYZE: the plans a new
deployment gets) and dropped at the end; the URI names the server only.
Redis: a fresh key prefix, deleted at the end. MariaDB
(``mysql+pymysql://root@127.0.0.1:3306/test``) and SQLite: the URI's
database, queues under a fresh project, emptied at the end.

Loading: PostgreSQL copies the messages in with COPY (one post through the
contract first creates the queue); elsewhere posts of 1,000 through the
contract. The 1M case loads in about a minute on PostgreSQL.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from zq.events import fingerprint
from zq.poison.backoff import BackoffPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import NewMessage

PROJECT = "scaling"
POST_BATCH = 1000
HOLD_BATCH = 1000
HOLD_TTL = 43200  # every hold of the run stays live
EXPIRING_TTL = 60  # the expired10k case's holds, expired by moving the clock
BODY = json.dumps({"event": "benchmark", "payload": "x" * 100})
SIZES = {"1k": 1000, "100k": 100_000, "1m": 1_000_000}


class ShiftedClock:
    """The wall clock plus an offset the run moves forward (no sleeping)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return time.time() + self.offset


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def policies(name: str) -> dict[str, Any]:
    """What the timed claims pass for ``--policy``."""
    if name == "dlq":
        # Never reached: the check (and the path it selects) is paid, nothing moves.
        return {"dead_letter": DeadLetterPolicy(max_claim_count=1_000_000, queue="q-dead")}
    if name == "backoff":
        return {"dead_letter": None, "backoff": BackoffPolicy(delay=30, max_delay=600)}
    return {"dead_letter": None}


def fill(storage: Storage, queue: str, count: int) -> None:
    """``count`` free messages: COPY on PostgreSQL, posts of 1,000 elsewhere."""
    message = NewMessage(body=BODY, ttl=HOLD_TTL, delay=0, fingerprint=fingerprint(BODY))
    engine = getattr(storage, "engine", None)
    if engine is not None and engine.dialect.name == "postgresql" and count > POST_BATCH:
        storage.messages.post(PROJECT, queue, [message], client_id="producer")
        copy_messages(engine, queue, count - 1)
        return
    for start in range(0, count, POST_BATCH):
        storage.messages.post(PROJECT, queue, [message] * min(POST_BATCH, count - start),
                              client_id="producer")


def copy_messages(engine: sa.Engine, queue: str, count: int) -> None:
    """PostgreSQL: append ``count`` free messages with COPY (no events: setup only)."""
    now = time.time()
    rest = "\t".join([PROJECT, queue, BODY, fingerprint(BODY), str(HOLD_TTL),
                      repr(now), repr(now + HOLD_TTL), repr(now), "producer", "0", "[]"]) + "\n"
    columns = ("id, project, queue, body, fingerprint, ttl, created, expires, "
               "delay_until, client_id, claim_count, history")
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        with cursor.copy(f"COPY messages ({columns}) FROM STDIN") as copy:
            for start in range(0, count, 10_000):
                chunk = io.StringIO()
                for _ in range(min(10_000, count - start)):
                    chunk.write(f"{uuid.uuid4()}\t{rest}")
                copy.write(chunk.getvalue())
        raw.commit()
    finally:
        raw.close()


def hold(storage: Storage, queue: str, count: int, ttl: int = HOLD_TTL) -> None:
    """Claim ``count`` messages from the head with claims of ``ttl`` seconds."""
    while count > 0:
        claim = storage.claims.create(PROJECT, queue, ttl=ttl, grace=60,
                                      limit=min(HOLD_BATCH, count), client_id="holder",
                                      rules=DeliveryRules(dead_letter=None))
        assert claim is not None
        count -= len(claim.messages)


def time_claims(storage: Storage, queue: str, claims: int, policy: dict[str, Any],
                *, keep_shape: bool) -> list[float]:
    taken = []
    message = NewMessage(body=BODY, ttl=HOLD_TTL, delay=0, fingerprint=fingerprint(BODY))
    for _ in range(claims):
        started = time.perf_counter()
        claim = storage.claims.create(PROJECT, queue, ttl=60, grace=60, limit=10,
                                      client_id="consumer", rules=DeliveryRules(**policy))
        taken.append((time.perf_counter() - started) * 1000)
        assert claim is not None and len(claim.messages) == 10
        if "backoff" in policy:
            # A release would hold them back for the backoff: deleted instead,
            # and replaced at the tail unless the case drains its backlog.
            storage.messages.delete_many(PROJECT, queue, [m.id for m in claim.messages],
                                         claim_ids=[claim.id], client_id="consumer")
            if keep_shape:
                storage.messages.post(PROJECT, queue, [message] * len(claim.messages),
                                      client_id="producer")
        else:
            storage.claims.release(PROJECT, queue, claim.id, client_id="consumer")
    return taken


def time_stats(storage: Storage, queue: str, runs: int = 20) -> float:
    taken = []
    for _ in range(runs):
        started = time.perf_counter()
        storage.queues.stats(PROJECT, queue)
        taken.append((time.perf_counter() - started) * 1000)
    return statistics.median(taken)


def database_ms(storage: Storage, queue: str, policy: dict[str, Any],
                runs: int = 20) -> tuple[int, float] | None:
    """PostgreSQL: statements per claim, and their execution time in the database (ms).

    One claim's statements are captured, then replayed ``runs`` times with
    EXPLAIN ANALYZE in a transaction that is rolled back (a fresh claim id
    each time); the median of the summed execution times is the database's
    part of a claim without the round trips and the commit's WAL flush,
    which on a loaded machine swamp it. An executemany (the general path's
    events and backoff updates) cannot be explained and is left out, which
    flatters the general path.
    """
    engine = getattr(storage, "engine", None)
    if engine is None or engine.dialect.name != "postgresql":
        return None
    from sqlalchemy import event
    seen: list[tuple[str, dict | None]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        seen.append((statement, None if executemany else dict(parameters or {})))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        claim = storage.claims.create(PROJECT, queue, ttl=60, grace=60, limit=10,
                                      client_id="consumer", rules=DeliveryRules(**policy))
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert claim is not None
    storage.claims.release(PROJECT, queue, claim.id, client_id="consumer")
    times = []
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        for _ in range(runs):
            fresh_id = uuid.uuid4().hex
            total = 0.0
            for statement, parameters in seen:
                if parameters is None:
                    continue
                fresh = {k: (fresh_id if v == claim.id else v) for k, v in parameters.items()}
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, fresh)
                plan = cursor.fetchone()[0]
                plan = json.loads(plan) if isinstance(plan, str) else plan
                total += plan[0]["Execution Time"]
            times.append(total)
            raw.rollback()
    finally:
        raw.close()
    return len(seen), statistics.median(times)


def _drop_redis_prefix(uri: str, prefix: str) -> None:
    import redis
    client = redis.Redis.from_url(uri.split("?")[0])
    batch: list[bytes] = []
    for key in client.scan_iter(match=f"{prefix}*", count=10000):
        batch.append(key)
        if len(batch) >= 10000:
            client.unlink(*batch)
            batch.clear()
    if batch:
        client.unlink(*batch)
    client.close()


@contextmanager
def scratch(uri: str) -> Iterator[str]:
    """A storage URI nobody else uses, removed afterwards (see the module's text)."""
    tag = uuid.uuid4().hex[:8]
    if uri.startswith("postgresql"):
        name = f"zq_scaling_{tag}"
        admin = sa.create_engine(uri.replace("postgresql://", "postgresql+psycopg://", 1)
                                 .rstrip("/") + "/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        try:
            from zq.storage.sql import migrate
            scratch_uri = f"{uri.rstrip('/')}/{name}"
            migrate.upgrade(scratch_uri)
            yield scratch_uri
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
            admin.dispose()
    elif uri.startswith("redis"):
        prefix = f"claimscale{tag}"
        try:
            yield f"{uri}{'&' if '?' in uri else '?'}prefix={prefix}"
        finally:
            _drop_redis_prefix(uri, prefix)
    else:
        yield uri  # SQLite, MariaDB: the caller empties its queues


def cases(sizes: list[str]) -> list[tuple[str, int, int, int]]:
    """(name, free, held, ttl of the held claims) per case."""
    return ([(size, SIZES[size], 0, 0) for size in sizes]
            + [("held10k", 1000, 10_000, HOLD_TTL), ("expired10k", 1000, 10_000, EXPIRING_TTL)])


def run_case(storage: Storage, clock: ShiftedClock, name: str, free: int, held: int,
             ttl: int, args: argparse.Namespace) -> dict[str, Any]:
    queue = f"q-{name}"
    started = time.perf_counter()
    fill(storage, queue, held + free)
    hold(storage, queue, held, ttl)
    if ttl == EXPIRING_TTL:
        clock.offset += 2 * (EXPIRING_TTL + 60)  # past the claims and their grace
    setup_s = time.perf_counter() - started
    policy = policies(args.policy)
    taken = time_claims(storage, queue, args.claims, policy,
                        keep_shape=ttl != EXPIRING_TTL)
    line = {"case": name, "free": free, "held": held, "expired": ttl == EXPIRING_TTL,
            "claims": len(taken), "claim_p50_ms": round(statistics.median(taken), 3),
            "claim_p99_ms": round(percentile(taken, 0.99), 3),
            # expired10k: the first claim after the expiry (Redis settles there).
            "first_claim_ms": round(taken[0], 3),
            "stats_p50_ms": round(time_stats(storage, queue), 3),
            "setup_s": round(setup_s, 1)}
    in_database = database_ms(storage, queue, policy)
    if in_database is not None:
        line["statements"], line["database_ms"] = in_database[0], round(in_database[1], 3)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               '  python -m benchmarks.claim_scaling "redis://127.0.0.1:6379/11" --claims 200 '
               "--sizes 1k,1m\n"
               "  python -m benchmarks.claim_scaling postgresql://postgres@127.0.0.1:5432 "
               "--claims 50 --sizes 1k,1m",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uri", help="postgresql://server (no database), redis://host:port/db, "
                                    "a MariaDB or SQLite URI")
    parser.add_argument("--claims", type=int, default=200,
                        help="timed claims per case (default: %(default)s)")
    parser.add_argument("--sizes", default="1k,100k",
                        help="comma list of queue sizes among " + ",".join(SIZES)
                        + " (default: %(default)s)")
    parser.add_argument("--case", action="append",
                        help="repeatable (a size, held10k, expired10k); default: all")
    parser.add_argument("--policy", choices=("none", "dlq", "backoff"), default="none",
                        help="what the timed claims pass (default none)")
    args = parser.parse_args()
    sizes = [size for size in args.sizes.split(",") if size]
    unknown = [size for size in sizes if size not in SIZES]
    if unknown:
        parser.error(f"unknown size {unknown[0]!r}; choose among {', '.join(SIZES)}")
    all_cases = cases(sizes)
    wanted = args.case or [c[0] for c in all_cases]
    known = {c[0] for c in all_cases}
    if any(name not in known for name in wanted):
        parser.error(f"unknown case; choose among {', '.join(sorted(known))}")
    results: dict[str, tuple[float, float]] = {}
    clock = ShiftedClock()
    global PROJECT
    PROJECT = f"scaling-{uuid.uuid4().hex[:8]}"
    with scratch(args.uri) as uri:
        storage = open_storage(uri, clock=clock)
        try:
            for name, free, held, ttl in all_cases:
                if name not in wanted:
                    continue
                line = {"backend": uri.split(":")[0], "policy": args.policy,
                        **run_case(storage, clock, name, free, held, ttl, args)}
                results[name] = (line["claim_p50_ms"], line["claim_p99_ms"])
                if "1k" in results:
                    base = results["1k"]
                    line.update(p50_over_1k=round(line["claim_p50_ms"] / base[0], 2),
                                p99_over_1k=round(line["claim_p99_ms"] / base[1], 2))
                print(json.dumps(line), flush=True)
        finally:
            if not uri.startswith(("postgresql", "redis")):
                for name in results:
                    storage.queues.delete(PROJECT, f"q-{name}")
            storage.close()


if __name__ == "__main__":
    main()
