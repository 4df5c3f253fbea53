"""PostgreSQL's part of the SQL driver: posts, claims and bulk deletes as one statement.

PostgreSQL chains INSERT/UPDATE/DELETE ... RETURNING into the INSERT of
their events in one WITH query: one round trip instead of three per change.
SQLite and MariaDB have no data-modifying WITH queries; the driver's
general path (messages.py, claims.py) runs there. SqlStorage takes this
module's writes where ``applies_to`` its dialect (``one_statement=``
overrides it: tests/backends.py also runs PostgreSQL on the general path,
so the contract suite covers both paths there). Each function does exactly
what the general path does, in one statement; run them with
``Database.write_statement``.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa

from zq import events
from zq.storage.base import ClaimRecord
from zq.storage.sql import dialects, predicates
from zq.storage.sql.events import events_from
from zq.storage.sql.records import message_record
from zq.storage.sql.schema import claims as c
from zq.storage.sql.schema import events as event_table
from zq.storage.sql.schema import messages as m
from zq.storage.sql.schema import queues


def applies_to(dialect: str) -> bool:
    """Whether the driver uses this module's writes on ``dialect`` by default."""
    return dialect == "postgresql"


_MESSAGE_COLUMNS = ("id", "project", "queue", "body", "fingerprint", "ttl", "created",
                    "expires", "delay_until", "client_id", "claim_count", "history")
_EVENT_COLUMNS = ("time", "project", "queue", "kind", "message_id", "claim_id",
                  "client_id", "claim_count", "detail")
_QUEUE_COLUMNS = ("project", "name", "metadata", "created", "metadata_version")


# Most messages a PostgreSQL post writes as one WITH query; larger posts
# (the default max post size holds up to ~24,000 messages), and every post
# on SQLite and MariaDB, are executemany inserts in one transaction. One
# statement of every row passed PostgreSQL's 65,535 parameters (21 a
# message) and SQLite's 32,766 (12 a message), and SQLAlchemy compiles a
# multi-row VALUES in time growing faster than its rows: on PostgreSQL it
# wins up to ~50 messages, executemany from ~100; on SQLite and MariaDB
# executemany wins from 10 (benchmarks/large_posts.py).
ONE_STATEMENT_POST = 100


@functools.lru_cache(maxsize=64)
def _post_sql(dialect: sa.Dialect, count: int) -> str:
    """A post of ``count`` messages as one WITH query (PostgreSQL).

    Inserts the queue unless it exists, the messages and their events;
    multi-row VALUES keep markers and cursors in posting order. Compiled
    once per batch size: SQLAlchemy recompiles a multi-row VALUES statement
    on every execution (5 ms for 10 messages, more than the round trips it
    saves), and every value is a plain str, int or float the driver adapts.
    """
    return str(_post_statement(count).compile(dialect=dialect))


def _post_statement(count: int) -> sa.Insert:
    new_queue = dialects.insert_if_absent_cte(
        queues, {c: sa.bindparam(f"q_{c}") for c in _QUEUE_COLUMNS}, "new_queue")
    posted = sa.insert(m).values([
        {c: sa.bindparam(f"m{i}_{c}") for c in _MESSAGE_COLUMNS} for i in range(count)
    ]).cte("posted")
    return sa.insert(event_table).values([
        {c: sa.bindparam(f"e{i}_{c}") for c in _EVENT_COLUMNS} for i in range(count)
    ]).add_cte(new_queue, posted)


def _post_parameters(
    queue: dict[str, Any], rows: list[dict[str, Any]], recorded: list[dict[str, Any]]
) -> dict[str, Any]:
    """The values of ``_post_statement(len(rows))``."""
    values = {f"q_{c}": queue[c] for c in _QUEUE_COLUMNS}
    for i, (row, event) in enumerate(zip(rows, recorded, strict=True)):
        values.update({f"m{i}_{c}": row[c] for c in _MESSAGE_COLUMNS})
        values.update({f"e{i}_{c}": event[c] for c in _EVENT_COLUMNS})
    return values


def post(conn: sa.Connection, queue_row: dict[str, Any], rows: list[dict[str, Any]],
         recorded: list[dict[str, Any]]) -> None:
    """Insert the queue unless it exists, the messages and their events."""
    conn.exec_driver_sql(_post_sql(conn.dialect, len(rows)),
                         _post_parameters(queue_row, rows, recorded))


def delete_many(
    conn: sa.Connection,
    project: str,
    queue: str,
    where: list[sa.ColumnElement[bool]],
    now: float,
    client_id: str | None,
) -> list[str]:
    """Delete the matching messages with their events in one WITH query.

    ``where`` selects by message id (and claim); the rows are locked first,
    in id order, so two overlapping deletes wait for each other instead of
    deadlocking, and only rows of ``queue`` are then deleted. The queue is
    checked on the locked rows' own columns, never on ``messages`` in the
    DELETE: a condition on ``messages.project/queue`` there offers the
    planner the (project, queue, marker) index, and without statistics (a
    new or freshly loaded table, where every estimate is one row) it drove
    the DELETE from that index, a walk of the whole queue per delete (41 ms
    and 5,000 buffers with a 20k backlog; benchmarks/fresh_database.py).
    Joined on ``marker`` alone, the primary key is the only path there is.
    Ids are unique across projects, so the lock never holds more than the
    rows named.
    """
    locked = (
        sa.select(m.c.marker, m.c.project, m.c.queue)
        .where(*where)
        .order_by(m.c.id)
        .with_for_update()
        .cte("locked")
        .prefix_with("MATERIALIZED")
    )
    gone = (
        sa.delete(m)
        .where(m.c.marker == locked.c.marker,
               locked.c.project == project, locked.c.queue == queue)
        .returning(m.c.marker, m.c.id, m.c.claim_id, m.c.claim_count,
                   sa.case((predicates.held(now), m.c.claim_id)).label("holder"))
        .cte("gone")
    )
    deleted = events_from(gone, events.DELETED, project, queue, now,
                          claim_id=gone.c.holder, client_id=client_id).cte("deleted_events")
    return list(conn.execute(
        sa.select(gone.c.id).order_by(gone.c.marker).add_cte(deleted)
    ).scalars())


# The free index's key (migration 0009_claim_plans): ordering by this
# expression, which only ix_messages_free_marker holds, leaves the planner
# one ordered path, the partial index of unheld messages. Ordering by
# ``marker`` would let it walk the primary key or the queue index instead
# (chosen with statistics, measured: 20 ms behind 10,000 held messages).
FREE_ORDER = sa.case((m.c.claim_expires.is_(None), m.c.marker))
# An order no index holds: the expired set is read by its range in
# ix_messages_held_expiry and sorted, never by an ordered walk of the queue
# that would pass every held message (117 ms measured with statistics).
EXPIRED_ORDER = sa.case((m.c.claim_expires.is_not(None), m.c.marker))


def _free_candidates(project: str, queue: str, now: float, limit: int
                     ) -> tuple[sa.CTE, sa.CTE]:
    """Up to ``limit`` free messages of each kind, locked, as two WITH parts.

    ``never_held``: no claim holds them (never claimed, or released:
    ``claim_expires IS NULL``), in queue order from the free index. Held
    messages are not in that index, so none is passed over. ``expired``:
    their claim has expired; the range ``claim_expires <= now`` of the held
    index yields exactly those, sorted by marker. Its cost follows the
    number of messages whose claims expired and were not claimed again (a
    crashed consumer's), not the number held or queued. Together they are
    ``predicates.free(now)``.
    """
    common = (predicates.in_queue(project, queue), predicates.alive(now),
              m.c.delay_until <= now)
    never_held = (
        sa.select(m.c.marker)
        .where(*common, m.c.claim_expires.is_(None))
        .order_by(FREE_ORDER)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("never_held")
        .prefix_with("MATERIALIZED")
    )
    expired = (
        sa.select(m.c.marker)
        .where(*common, m.c.claim_expires <= now)
        .order_by(EXPIRED_ORDER)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("expired")
        .prefix_with("MATERIALIZED")
    )
    return never_held, expired


def claim(
    conn: sa.Connection,
    project: str,
    queue: str,
    claim_id: str,
    *,
    now: float,
    ttl: int,
    grace: int,
    limit: int,
    client_id: str | None,
) -> ClaimRecord | None:
    """A claim without a dead letter policy as one WITH query (PostgreSQL).

    The same steps as the general path, in one round trip: lock up to
    ``limit`` free messages in queue order (SKIP LOCKED; PostgreSQL rechecks
    the conditions on a row changed since the scan), mark them, insert the
    claim if any were marked, and their ``claimed`` events.

    The free messages are read as two disjoint sets, each through its own
    partial index (migration 0009_claim_plans), and the first ``limit`` of
    both in marker order are taken; the rows locked but not taken are
    unlocked when the statement ends. Neither read passes a message held by
    a live claim, so a claim costs the same behind 10,000 held messages as
    behind none (benchmarks/claim_scaling.py), and neither depends on
    statistics: see ``_free_candidates``.
    """
    expires = now + ttl
    lives_until = expires + grace
    never_held, expired = _free_candidates(project, queue, now, limit)
    candidates = sa.union_all(sa.select(never_held.c.marker),
                              sa.select(expired.c.marker)).subquery()
    picked = (
        sa.select(candidates.c.marker)
        .order_by(candidates.c.marker)
        .limit(limit)
        .cte("picked")
        .prefix_with("MATERIALIZED")
    )
    marked = (
        sa.update(m)
        .where(m.c.marker == picked.c.marker)
        .values(
            claim_id=claim_id,
            claim_expires=expires,
            claim_count=m.c.claim_count + 1,
            expires=predicates.at_least(m.c.expires, lives_until),
        )
        .returning(*m.c)
        .cte("marked")
    )
    new_claim = sa.insert(c).from_select(
        ["id", "project", "queue", "ttl", "grace", "created", "expires", "client_id"],
        sa.select(
            sa.literal(claim_id, c.c.id.type),
            sa.literal(project, c.c.project.type),
            sa.literal(queue, c.c.queue.type),
            sa.literal(ttl, sa.Integer()),
            sa.literal(grace, sa.Integer()),
            sa.literal(now, sa.Double()),
            sa.literal(expires, sa.Double()),
            sa.literal(client_id, c.c.client_id.type),
        ).where(sa.exists(sa.select(marked.c.marker))),
    ).cte("new_claim")
    claimed = events_from(
        marked, events.CLAIMED, project, queue, now,
        claim_id=sa.literal(claim_id, c.c.id.type), client_id=client_id,
    ).cte("claimed_events")
    rows = conn.execute(
        sa.select(marked).order_by(marked.c.marker).add_cte(new_claim, claimed)
    ).all()
    if not rows:
        return None
    return ClaimRecord(id=claim_id, queue=queue, ttl=ttl, grace=grace, created=now,
                       expires=expires, messages=[message_record(row, now) for row in rows])
