"""PostgreSQL: claim and bulk delete plans that need no statistics (issue 20).

A freshly created database has no statistics on ``messages`` until
autovacuum's first visit; every estimate is then one row. These tests
run the real statements there (EXPLAIN ANALYZE, rolled back) and check
what they touched: a claim behind messages held at the head of the queue
passes none of them, and a delete by ids never walks the queue. Then the
same after ANALYZE, since statistics must not make it worse either.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.backends import empty_database, selected_backends
from tests.contract.helpers import claim, post
from zq.clock import ManualClock
from zq.poison.backoff import BackoffPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.sql import SqlStorage, migrate, open_sql

pytestmark = pytest.mark.skipif("postgresql" not in selected_backends(),
                                reason="PostgreSQL plans")

HELD = 300  # messages held by live claims at the head of the queue
FREE = 80
# What a claim may pass: none, a dead letter policy (never reached here), a backoff.
POLICIES = {
    "plain": {"dead_letter": None},
    "dead letter": {"dead_letter": DeadLetterPolicy(max_claim_count=5, queue="dlq")},
    "backoff": {"dead_letter": None, "backoff": BackoffPolicy(delay=10, max_delay=100)},
}


def database_with_a_head(*, expired: bool) -> Iterator[SqlStorage]:
    """A new database, migrated, with HELD claimed messages ahead of FREE free ones.

    ``expired``: those claims have expired (a crashed consumer's backlog).
    """
    with empty_database("postgresql") as uri:
        migrate.upgrade(uri)
        clock = ManualClock()
        storage = open_sql(uri, clock=clock)
        try:
            post(storage, "p", "q", HELD + FREE)
            for _ in range(HELD // 100):
                hold = claim(storage, "p", "q", 100, ttl=60 if expired else 3600, grace=0)
                assert len(hold.messages) == 100
            if expired:
                clock.advance(150)  # past the holds, not the messages' ttl (300)
            yield storage
        finally:
            storage.close()


@pytest.fixture
def fresh() -> Iterator[SqlStorage]:
    """HELD messages held by live claims ahead of FREE free ones."""
    yield from database_with_a_head(expired=False)


@pytest.fixture
def expired_backlog() -> Iterator[SqlStorage]:
    """HELD messages whose claims expired ahead of FREE free ones."""
    yield from database_with_a_head(expired=True)


def captured_statement(storage: SqlStorage, action: Any) -> tuple[Any, str, dict]:
    """Run ``action``; its result and its last statement with parameters."""
    seen: list[tuple[str, dict]] = []

    def before(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, dict(parameters)))

    sa.event.listen(storage.engine, "before_cursor_execute", before)
    try:
        result = action()
    finally:
        sa.event.remove(storage.engine, "before_cursor_execute", before)
    return result, *seen[-1]


def analyzed(storage: SqlStorage, statement: str, parameters: dict) -> dict:
    """EXPLAIN (ANALYZE, FORMAT JSON) of ``statement``, rolled back."""
    raw = storage.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters)
        plan = cursor.fetchone()[0]
        raw.rollback()
    finally:
        raw.close()
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def scans_of_messages(node: dict) -> Iterator[dict]:
    """The scans of ``messages`` that look for rows of the queue.

    Leaves out the lookups by marker of rows already chosen (which a table
    this small may also make with a sequential scan and a hash join).
    """
    conditions = node.get("Index Cond", "") + node.get("Filter", "")
    if (node.get("Relation Name") == "messages" and "Scan" in node["Node Type"]
            and "queue" in conditions):
        yield node
    for child in node.get("Plans", []):
        yield from scans_of_messages(child)


def has_statistics(storage: SqlStorage) -> bool:
    with storage.engine.connect() as conn:
        return bool(conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stats WHERE tablename = 'messages'").scalar())


def check_claim_passes_no_held_message(storage: SqlStorage, policy: dict[str, Any]) -> None:
    """A claim reads about its batch, whatever is held or expired ahead of it."""
    taken, statement, parameters = captured_statement(
        storage, lambda: storage.claims.create("p", "q", ttl=60, grace=60, limit=10,
                                               client_id=None, rules=DeliveryRules(**policy)))
    assert len(taken.messages) == 10
    # The same claim again under another id (the first one committed).
    parameters = {k: (uuid.uuid4().hex if v == taken.id else v) for k, v in parameters.items()}
    scans = list(scans_of_messages(analyzed(storage, statement, parameters)))
    assert scans
    for scan in scans:
        visited = scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0)
        # The old walk read the HELD held (or expired) messages.
        assert visited * scan["Actual Loops"] <= 20, json.dumps(scan)[:1500]
        if policy.get("dead_letter") is None:
            # Only the search for exhausted messages filters rows (the batch's own).
            assert scan.get("Rows Removed by Filter", 0) == 0, scan


def check_delete_does_not_walk_the_queue(storage: SqlStorage) -> None:
    first = claim(storage, "p", "q", 10)
    second = claim(storage, "p", "q", 10)
    _, statement, parameters = captured_statement(
        storage, lambda: storage.messages.delete_many(
            "p", "q", [m.id for m in first.messages], claim_ids=[first.id], client_id=None))
    swap = {first.id: second.id}
    swap.update({a.id: b.id for a, b in zip(first.messages, second.messages, strict=True)})
    parameters = {k: swap.get(v, v) if isinstance(v, str) else v for k, v in parameters.items()}
    plan = analyzed(storage, statement, parameters)
    scans = list(scans_of_messages(plan))
    assert all(scan.get("Index Name") != "ix_messages_queue_marker" for scan in scans), scans
    assert sum(scan["Actual Rows"] * scan["Actual Loops"] for scan in scans) <= 40, scans


def test_claim_and_delete_plans_without_statistics(fresh):
    assert not has_statistics(fresh)
    for policy in POLICIES.values():
        check_claim_passes_no_held_message(fresh, policy)
    check_delete_does_not_walk_the_queue(fresh)
    assert not has_statistics(fresh)


def test_claims_pass_no_backlog_of_expired_claims(expired_backlog):
    """Behind HELD messages whose claims expired, each claim reads about its batch."""
    for statistics in (False, True):
        if statistics:
            with expired_backlog.engine.connect().execution_options(
                    isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("ANALYZE messages")
        assert has_statistics(expired_backlog) is statistics
        for policy in POLICIES.values():
            check_claim_passes_no_held_message(expired_backlog, policy)


def test_claim_and_delete_plans_with_statistics(fresh):
    with fresh.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ANALYZE messages")
    assert has_statistics(fresh)
    for policy in POLICIES.values():
        check_claim_passes_no_held_message(fresh, policy)
    check_delete_does_not_walk_the_queue(fresh)
