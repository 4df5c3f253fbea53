"""Messages: post, list, get, delete, pop."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from zq import events as kinds
from zq.clock import Clock
from zq.dead_letter import DeadLetterPolicy
from zq.errors import ClaimMismatch, MessageIsClaimed, MessageNotFound
from zq.storage.base import MessageController, MessageRecord, NewMessage, refuse_metadata_version
from zq.storage.sql import dialects, predicates
from zq.storage.sql.database import Database
from zq.storage.sql.delivery import take_deliverable
from zq.storage.sql.events import event_row, events_from, record
from zq.storage.sql.queues import ensure_queue, queue_row
from zq.storage.sql.records import message_record
from zq.storage.sql.schema import events as event_table
from zq.storage.sql.schema import messages as m
from zq.storage.sql.schema import queues


def new_id() -> str:
    """A message or claim id, unique across the backend."""
    return uuid.uuid4().hex


def _deleted_events(
    project: str, queue: str, rows: Sequence[sa.Row[Any]], now: float,
    client_id: str | None,
) -> list[dict[str, Any]]:
    return [
        event_row(kinds.DELETED, project, queue, now, message_id=row.id,
                  claim_id=row.claim_id if (row.claim_expires or 0) > now else None,
                  client_id=client_id, claim_count=row.claim_count)
        for row in rows
    ]


def _delete_rows(conn: sa.Connection, rows: Sequence[sa.Row[Any]]) -> None:
    if rows:
        conn.execute(sa.delete(m).where(m.c.marker.in_([row.marker for row in rows])))


def _delete_in_one_statement(
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
    checked after the lock on purpose: without statistics (a new or freshly
    loaded table) the planner otherwise walks the whole queue through the
    (project, queue, marker) index and filters on the ids (15 ms and 6,000
    buffers per delete measured with a 50k backlog) instead of using the
    id or claim index. Ids are unique across projects, so the lock never
    holds more than the rows named.
    """
    locked = (
        sa.select(m.c.marker)
        .where(*where)
        .order_by(m.c.id)
        .with_for_update()
        .cte("locked")
        .prefix_with("MATERIALIZED")
    )
    gone = (
        sa.delete(m)
        .where(m.c.marker == locked.c.marker, predicates.in_queue(project, queue))
        .returning(m.c.marker, m.c.id, m.c.claim_id, m.c.claim_count,
                   sa.case((predicates.held(now), m.c.claim_id)).label("holder"))
        .cte("gone")
    )
    deleted = events_from(gone, kinds.DELETED, project, queue, now,
                          claim_id=gone.c.holder, client_id=client_id).cte("deleted_events")
    return list(conn.execute(
        sa.select(gone.c.id).order_by(gone.c.marker).add_cte(deleted)
    ).scalars())


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
    queue: dict[str, Any], rows: list[dict[str, Any]], events: list[dict[str, Any]]
) -> dict[str, Any]:
    """The values of ``_post_statement(len(rows))``."""
    values = {f"q_{c}": queue[c] for c in _QUEUE_COLUMNS}
    for i, (row, event) in enumerate(zip(rows, events, strict=True)):
        values.update({f"m{i}_{c}": row[c] for c in _MESSAGE_COLUMNS})
        values.update({f"e{i}_{c}": event[c] for c in _EVENT_COLUMNS})
    return values


def _post_rows(
    conn: sa.Connection, project: str, queue: str, now: float,
    rows: list[dict[str, Any]], events: list[dict[str, Any]],
) -> None:
    """A post as executemany inserts, in posting order, in the caller's transaction."""
    ensure_queue(conn, project, queue, now)
    conn.execute(sa.insert(m), rows)
    record(conn, events)


class SqlMessages(MessageController):
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
        metadata_version: str | None = None,
    ) -> list[str]:
        refuse_metadata_version(metadata_version)
        now = self._clock.now()
        ids = [new_id() for _ in messages]
        rows = [
            {
                "id": message_id, "project": project, "queue": queue, "body": msg.body,
                "fingerprint": msg.fingerprint, "ttl": msg.ttl, "created": now,
                "expires": now + msg.ttl, "delay_until": now + msg.delay,
                "client_id": client_id, "claim_count": 0, "history": "[]",
            }
            for message_id, msg in zip(ids, messages, strict=True)
        ]
        events = [
            event_row(kinds.POSTED, project, queue, now, message_id=message_id,
                      client_id=client_id, claim_count=0,
                      detail={"ttl": msg.ttl, "delay": msg.delay,
                              "fingerprint": msg.fingerprint,
                              "size": len(msg.body.encode())})
            for message_id, msg in zip(ids, messages, strict=True)
        ]

        if not rows:
            return ids
        if (dialects.writes_in_one_statement(self._db.dialect)
                and len(rows) <= ONE_STATEMENT_POST):
            self._db.write_statement(lambda conn: conn.exec_driver_sql(
                _post_sql(conn.dialect, len(rows)),
                _post_parameters(queue_row(project, queue, now), rows, events),
            ))
            return ids
        self._db.write(lambda conn: _post_rows(conn, project, queue, now, rows, events))
        return ids

    def list(
        self,
        project: str,
        queue: str,
        *,
        marker: int | None = None,
        limit: int = 10,
        echo: bool = False,
        client_id: str | None = None,
        include_claimed: bool = False,
        include_delayed: bool = False,
    ) -> list[MessageRecord]:
        now = self._clock.now()
        where = [predicates.in_queue(project, queue), predicates.alive(now)]
        if marker is not None:
            where.append(m.c.marker > marker)
        if not echo and client_id is not None:
            where.append(sa.or_(m.c.client_id.is_(None), m.c.client_id != client_id))
        if not include_claimed:
            where.append(predicates.unheld(now))
        if not include_delayed:
            where.append(m.c.delay_until <= now)
        query = sa.select(m).where(*where).order_by(m.c.marker).limit(limit)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [message_record(row, now) for row in rows]

    def get(self, project: str, queue: str, message_id: str) -> MessageRecord:
        found = self.get_many(project, queue, [message_id])
        if not found:
            raise MessageNotFound(f"Message {message_id!r} does not exist.")
        return found[0]

    def get_many(
        self, project: str, queue: str, message_ids: Sequence[str]
    ) -> list[MessageRecord]:
        if not message_ids:
            return []
        now = self._clock.now()
        query = (
            sa.select(m)
            .where(predicates.in_queue(project, queue), predicates.alive(now),
                   m.c.id.in_(list(message_ids)))
            .order_by(m.c.marker)
        )
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [message_record(row, now) for row in rows]

    def delete(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str | None,
        client_id: str | None,
    ) -> None:
        def work(conn: sa.Connection) -> None:
            now = self._clock.now()
            row = conn.execute(
                sa.select(m)
                .where(predicates.in_queue(project, queue), predicates.alive(now),
                       m.c.id == message_id)
                .with_for_update()
            ).first()
            if row is None:
                return
            holder = row.claim_id if (row.claim_expires or 0) > now else None
            if claim_id is None and holder is not None:
                raise MessageIsClaimed(
                    f"Message {message_id!r} is claimed; give its claim id to delete it."
                )
            if claim_id is not None and holder != claim_id:
                raise ClaimMismatch(
                    f"Claim {claim_id!r} does not hold message {message_id!r}."
                )
            _delete_rows(conn, [row])
            record(conn, _deleted_events(project, queue, [row], now, client_id))

        self._db.write(work)

    def delete_many(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        *,
        claim_ids: Sequence[str] | None = None,
        client_id: str | None,
    ) -> list[str]:
        if not message_ids or (claim_ids is not None and not claim_ids):
            return []

        one_statement = dialects.writes_in_one_statement(self._db.dialect)

        def work(conn: sa.Connection) -> list[str]:
            now = self._clock.now()
            where = [predicates.in_queue(project, queue), predicates.alive(now),
                     m.c.id.in_(list(message_ids))]
            if claim_ids is not None:
                where += [m.c.claim_id.in_(list(claim_ids)), predicates.held(now)]
            if one_statement:
                return _delete_in_one_statement(conn, project, queue, where[1:], now,
                                                client_id)
            rows = conn.execute(
                sa.select(m).where(*where).order_by(m.c.marker).with_for_update()
            ).all()
            _delete_rows(conn, rows)
            record(conn, _deleted_events(project, queue, rows, now, client_id))
            return [row.id for row in rows]

        return (self._db.write_statement if one_statement else self._db.write)(work)

    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        dead_letter: DeadLetterPolicy | None,
        metadata_version: str | None = None,
    ) -> list[MessageRecord]:
        refuse_metadata_version(metadata_version)
        def work(conn: sa.Connection) -> list[MessageRecord]:
            now = self._clock.now()
            taken = take_deliverable(conn, project, queue, limit=limit, now=now,
                                     client_id=client_id, dead_letter=dead_letter)
            _delete_rows(conn, taken.rows)
            popped = [
                replace(message_record(row, now), claim_count=row.claim_count + 1)
                for row in taken.rows
            ]
            record(conn, taken.events + [
                event_row(kinds.DELETED, project, queue, now, message_id=msg.id,
                          client_id=client_id, claim_count=msg.claim_count,
                          detail={"pop": True})
                for msg in popped
            ])
            return popped

        return self._db.write(work)
