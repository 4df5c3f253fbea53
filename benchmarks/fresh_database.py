"""Claims and deletes on a freshly created PostgreSQL database (no ANALYZE ever run).

    python -m benchmarks.fresh_database [--server postgresql://postgres@127.0.0.1:5432]
        [--backlog 30000] [--consumers 16] [--messages 10000] [--explain]
    (from the repository root)

What a new deployment sees: a database created and migrated by the run,
``--backlog`` messages posted into one queue (batches of 10, 4 producers),
then at once, before autovacuum's first visit gives the planner any
statistics, ``--consumers`` threads each claiming 10 and deleting them by
id and claim (``delete_many``), as consumers do, until ``--messages`` are
deleted. Prints one JSON line: messages/s, claim and delete p50/p99 in ms,
the rate of the posts that built the backlog (``post_msgs_per_s``),
and whether the table had statistics when the run ended (it must not: the
point is the plans chosen without them). ``--explain`` also prints
``EXPLAIN (ANALYZE, BUFFERS)`` of one claim and one delete taken after the
run (rolled back). The database is dropped at the end.

Storage level, no HTTP: the figure is the storage's own cost, and the
same script runs against another checkout of zq by PYTHONPATH (A/B).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from zq.events import fingerprint
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.records import NewMessage
from zq.storage.sql import migrate

BATCH = 10
PROJECT, QUEUE = "bench", "fresh"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def post_backlog(storage: Storage, total: int, producers: int = 4) -> None:
    body = json.dumps({"event": "benchmark", "payload": "x" * 1000})
    batch = [NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))] * BATCH

    def produce(count: int) -> None:
        for _ in range(count):
            storage.messages.post(PROJECT, QUEUE, batch, client_id="producer")

    posts = total // BATCH
    shares = [posts // producers + (1 if i < posts % producers else 0) for i in range(producers)]
    threads = [threading.Thread(target=produce, args=(n,)) for n in shares]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def consume(storage: Storage, consumers: int, total: int) -> dict[str, Any]:
    claim_ms: list[float] = []
    delete_ms: list[float] = []
    deleted = [0]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            while True:
                with lock:
                    if deleted[0] >= total:
                        return
                started = time.perf_counter()
                claim = storage.claims.create(PROJECT, QUEUE, ttl=300, grace=60, limit=BATCH,
                                              client_id="consumer")
                claimed = time.perf_counter()
                if claim is None:
                    return
                gone = storage.messages.delete_many(
                    PROJECT, QUEUE, [m.id for m in claim.messages], claim_ids=[claim.id],
                    client_id="consumer")
                done = time.perf_counter()
                with lock:
                    claim_ms.append((claimed - started) * 1000)
                    delete_ms.append((done - claimed) * 1000)
                    deleted[0] += len(gone)
        except BaseException as error:  # reported after the join
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(consumers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if errors:
        raise errors[0]
    return {
        "messages": deleted[0], "seconds": round(seconds, 3),
        "msgs_per_s": round(deleted[0] / seconds) if seconds else None,
        "claim_p50_ms": round(statistics.median(claim_ms), 2),
        "claim_p99_ms": round(percentile(claim_ms, 0.99), 2),
        "delete_p50_ms": round(statistics.median(delete_ms), 2),
        "delete_p99_ms": round(percentile(delete_ms, 0.99), 2),
    }


def has_statistics(engine: sa.Engine) -> bool:
    with engine.connect() as conn:
        return bool(conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stats WHERE tablename = 'messages'").scalar())


def explain(storage: Storage) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) one claim and its delete, rolled back."""
    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
                executemany: bool) -> None:
        captured.append((statement, parameters))

    event.listen(storage.engine, "before_cursor_execute", capture)
    try:
        claim = storage.claims.create(PROJECT, QUEUE, ttl=300, grace=60, limit=BATCH,
                                      client_id="consumer")
        assert claim is not None
        claim_sql = captured[-1]
        other = storage.claims.create(PROJECT, QUEUE, ttl=300, grace=60, limit=BATCH,
                                      client_id="consumer")
        assert other is not None
        storage.messages.delete_many(PROJECT, QUEUE, [m.id for m in claim.messages],
                                     claim_ids=[claim.id], client_id="consumer")
        delete_sql = captured[-1]
    finally:
        event.remove(storage.engine, "before_cursor_execute", capture)
    # The delete is explained on the other claim, whose rows are still there.
    swap = {claim.id: other.id}
    swap.update({a.id: b.id for a, b in zip(claim.messages, other.messages, strict=False)})
    raw = storage.engine.raw_connection()
    try:
        cursor = raw.cursor()
        for title, (statement, parameters) in (("claim", claim_sql), ("delete", delete_sql)):
            if title == "claim":
                # A new claim id: the claim that ran already holds this one.
                parameters = {k: (uuid.uuid4().hex if v == claim.id else v)
                              for k, v in parameters.items()}
            else:
                parameters = {k: swap.get(v, v) if isinstance(v, str) else v
                              for k, v in parameters.items()}
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
            print(f"-- {title}")
            for (line,) in cursor.fetchall():
                print(line)
            raw.rollback()
    finally:
        raw.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.fresh_database\n"
               "  python -m benchmarks.fresh_database --explain   # the plans",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432",
                        help="PostgreSQL server URI without a database (default: %(default)s)")
    parser.add_argument("--backlog", type=int, default=30000,
                        help="messages posted before the consumers start (default: %(default)s)")
    parser.add_argument("--consumers", type=int, default=16,
                        help="consumer threads claiming and deleting (default: %(default)s)")
    parser.add_argument("--messages", type=int, default=10000,
                        help="stop after this many are deleted (default: %(default)s)")
    parser.add_argument("--explain", action="store_true",
                        help="also print the claim's and delete's query plans")
    args = parser.parse_args()
    name = f"zq_fresh_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(args.server.replace("postgresql://", "postgresql+psycopg://", 1)
                             + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    uri = f"{args.server}/{name}"
    try:
        migrate.upgrade(uri)
        storage = open_storage(uri)
        try:
            started = time.perf_counter()
            post_backlog(storage, args.backlog)
            posting = time.perf_counter() - started
            result = consume(storage, args.consumers, min(args.messages, args.backlog))
            result.update(post_msgs_per_s=round(args.backlog / posting),
                          backlog=args.backlog, consumers=args.consumers,
                          statistics=has_statistics(storage.engine))
            print(json.dumps(result), flush=True)
            if args.explain:
                explain(storage)
        finally:
            storage.close()
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
        admin.dispose()


if __name__ == "__main__":
    main()
