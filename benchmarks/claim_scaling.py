"""Claim latency as work grows: a queue of 1k vs 100k messages, and behind 10k held ones.

    python -m benchmarks.claim_scaling postgresql://postgres@127.0.0.1:5432 [--claims 200]
    python -m benchmarks.claim_scaling "redis://127.0.0.1:6379/11"
    (from the repository root)

Three cases, each on its own queue, through the storage contract (no HTTP):

- ``1k``: a queue of 1,000 free messages;
- ``100k``: a queue of 100,000 free messages;
- ``held10k``: 10,000 messages held by live claims at the head of the
  queue, then 1,000 free ones behind them (what a claim meets when many
  consumers hold long claims).

In each, ``--claims`` claims of 10 run one after another; each is released
again untimed, so the queue keeps its shape. Prints one JSON line per case
(claim p50 and p99 in ms) and each case's p50/p99 over the ``1k`` case's
(the issue's target: within 2x). On PostgreSQL also ``statement_ms``: the
median execution time of the claim statement inside the database
(EXPLAIN ANALYZE, rolled back), which the machine's load and the
commit's WAL flush do not blur. PostgreSQL: a database created for the
run (no ANALYZE: the plans a new deployment gets) and dropped at the end;
the URI names the server only. Redis: a fresh key prefix, deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from zq.events import fingerprint
from zq.storage import open_storage
from zq.storage.base import NewMessage, Storage

PROJECT = "scaling"
POST_BATCH = 100
HOLD_BATCH = 1000
HOLD_TTL = 43200  # every hold of the run stays live


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fill(storage: Storage, queue: str, count: int) -> None:
    body = json.dumps({"event": "benchmark", "payload": "x" * 100})
    message = NewMessage(body=body, ttl=HOLD_TTL, delay=0, fingerprint=fingerprint(body))
    for start in range(0, count, POST_BATCH):
        storage.messages.post(PROJECT, queue, [message] * min(POST_BATCH, count - start),
                              client_id="producer")


def hold(storage: Storage, queue: str, count: int) -> None:
    """Claim ``count`` messages from the head with claims that outlive the run."""
    while count > 0:
        claim = storage.claims.create(PROJECT, queue, ttl=HOLD_TTL, grace=60,
                                      limit=min(HOLD_BATCH, count), client_id="holder",
                                      dead_letter=None)
        assert claim is not None
        count -= len(claim.messages)


def time_claims(storage: Storage, queue: str, claims: int) -> list[float]:
    taken = []
    for _ in range(claims):
        started = time.perf_counter()
        claim = storage.claims.create(PROJECT, queue, ttl=60, grace=60, limit=10,
                                      client_id="consumer", dead_letter=None)
        taken.append((time.perf_counter() - started) * 1000)
        assert claim is not None and len(claim.messages) == 10
        storage.claims.release(PROJECT, queue, claim.id, client_id="consumer")
    return taken


def database_ms(storage: Storage, queue: str, runs: int = 20) -> float | None:
    """PostgreSQL: the claim statement's own execution time (median ms).

    EXPLAIN ANALYZE of the claim's statement, ``runs`` times, each rolled
    back: the database's part of a claim without the round trips and the
    commit's WAL flush, which on a loaded machine swamp it.
    """
    engine = getattr(storage, "engine", None)
    if engine is None or engine.dialect.name != "postgresql":
        return None
    from sqlalchemy import event
    seen: list[tuple[str, dict]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        seen.append((statement, dict(parameters)))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        claim = storage.claims.create(PROJECT, queue, ttl=60, grace=60, limit=10,
                                      client_id="consumer", dead_letter=None)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert claim is not None
    statement, parameters = seen[-1]
    storage.claims.release(PROJECT, queue, claim.id, client_id="consumer")
    times = []
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        for _ in range(runs):
            fresh = {k: (uuid.uuid4().hex if v == claim.id else v) for k, v in parameters.items()}
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, fresh)
            plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            times.append(plan[0]["Execution Time"])
            raw.rollback()
    finally:
        raw.close()
    return statistics.median(times)


@contextmanager
def scratch(uri: str) -> Iterator[str]:
    """A storage URI nobody else uses, removed afterwards."""
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
    else:
        import redis
        prefix = f"claimscale{tag}"
        try:
            yield f"{uri}{'&' if '?' in uri else '?'}prefix={prefix}"
        finally:
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


CASES = (("1k", 1000, 0), ("100k", 100000, 0), ("held10k", 1000, 10000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("uri", help="postgresql://server (no database) or redis://host:port/db")
    parser.add_argument("--claims", type=int, default=200, help="timed claims per case")
    parser.add_argument("--case", action="append", choices=[c[0] for c in CASES],
                        help="repeatable; default: all")
    args = parser.parse_args()
    wanted = args.case or [c[0] for c in CASES]
    results: dict[str, tuple[float, float]] = {}
    with scratch(args.uri) as uri:
        storage = open_storage(uri)
        try:
            for name, free, held in CASES:
                if name not in wanted:
                    continue
                queue = f"q-{name}"
                fill(storage, queue, held + free)
                hold(storage, queue, held)
                taken = time_claims(storage, queue, args.claims)
                p50, p99 = statistics.median(taken), percentile(taken, 0.99)
                results[name] = (p50, p99)
                in_database = database_ms(storage, queue)
                line = {"backend": uri.split(":")[0], "case": name, "free": free,
                        "held": held, "claims": len(taken), "claim_p50_ms": round(p50, 3),
                        "claim_p99_ms": round(p99, 3)}
                if in_database is not None:
                    line["statement_ms"] = round(in_database, 3)
                if "1k" in results:
                    base = results["1k"]
                    line.update(p50_over_1k=round(p50 / base[0], 2),
                                p99_over_1k=round(p99 / base[1], 2))
                print(json.dumps(line), flush=True)
        finally:
            storage.close()


if __name__ == "__main__":
    main()
