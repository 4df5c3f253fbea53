"""Writing events inside a change's transaction, and reading the log."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from zq.errors import InvalidRequest
from zq.events import event_fields
from zq.storage.base import EventLog
from zq.storage.records import Event
from zq.storage.sql import commit_order, wake
from zq.storage.sql.database import Database
from zq.storage.sql.records import dump_json, load_json
from zq.storage.sql.schema import events


def event_row(kind: str, project: str, queue: str, now: float, **fields: Any) -> dict[str, Any]:
    """One row of the events table (``fields`` as for zq.events.event_fields)."""
    row = event_fields(kind, now, project, queue, **fields)
    row["detail"] = dump_json(row["detail"])
    return row


def record(conn: sa.Connection, rows: list[dict[str, Any]]) -> None:
    """Append events in the caller's transaction (one statement).

    And note the queues they may make claimable, whose waiting claims are
    woken once the transaction committed (PostgreSQL: zq.storage.sql.wake).
    """
    if rows:
        conn.execute(sa.insert(events), rows)
        wake.notify_events(conn, rows)


EVENT_COLUMNS = ["time", "project", "queue", "kind", "message_id", "claim_id",
                 "client_id", "claim_count", "detail"]


def event_select(
    rows: sa.CTE,
    kind: str,
    project: Any,
    queue: Any,
    now: Any,
    *,
    claim_id: sa.ColumnElement[Any],
    client_id: Any,
    detail: sa.ColumnElement[Any] | None = None,
) -> sa.Select[Any]:
    """One events row (``EVENT_COLUMNS``) per row of ``rows`` (a WITH query), unordered.

    ``rows`` has the message columns ``id`` and ``claim_count``; the detail
    is empty unless given, as ``event_row`` writes it for these kinds.
    ``project``, ``queue``, ``now`` and ``client_id``: values, or parameters.
    """
    return sa.select(
        _value(now, sa.Double()),
        _value(project, events.c.project.type),
        _value(queue, events.c.queue.type),
        sa.literal(kind, events.c.kind.type),
        rows.c.id,
        claim_id,
        _value(client_id, events.c.client_id.type),
        rows.c.claim_count,
        sa.literal(dump_json({}), events.c.detail.type) if detail is None else detail,
    )


def _value(value: Any, type_: Any) -> sa.ColumnElement[Any]:
    """A value for a statement: a literal, or a parameter passed as it is."""
    return value if isinstance(value, sa.ColumnElement) else sa.literal(value, type_)


def events_from(
    rows: sa.CTE,
    kind: str,
    project: str,
    queue: str,
    now: float,
    *,
    claim_id: sa.ColumnElement[Any],
    client_id: str | None,
) -> sa.Insert:
    """INSERT one event per row of ``rows`` (a WITH query), in marker order.

    ``rows`` has the message columns ``marker``, ``id`` and ``claim_count``
    (``event_select``).
    """
    source = event_select(rows, kind, project, queue, now, claim_id=claim_id,
                          client_id=client_id).order_by(rows.c.marker)
    return sa.insert(events).from_select(EVENT_COLUMNS, source)


class SqlEventLog(EventLog):
    """The ``events`` table, read in an order no later commit can break.

    SQLite serializes writers (BEGIN IMMEDIATE holds the write lock from the
    first insert to the commit), so ``seq`` order is commit order.
    PostgreSQL reads in (xid, seq) order and stops below the oldest
    transaction still in flight (zq.storage.sql.commit_order). MariaDB/MySQL
    give ``seq`` at insert time and expose no commit order: a reader leaves
    recent events for a settle window (``final_order`` False).
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._by_xid = db.dialect == "postgresql"
        self.final_order = db.dialect in ("sqlite", "postgresql")

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        if self._by_xid:
            query = commit_order.read_query(after, limit)
        else:
            query = sa.select(events).order_by(events.c.seq).limit(limit)
            if after is not None:
                query = query.where(events.c.seq > _seq(after))
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [
            Event(
                cursor=commit_order.cursor(row) if self._by_xid else str(row.seq),
                time=row.time,
                project=row.project,
                queue=row.queue,
                kind=row.kind,
                message_id=row.message_id,
                claim_id=row.claim_id,
                client_id=row.client_id,
                claim_count=row.claim_count,
                detail=load_json(row.detail) or {},
            )
            for row in rows
        ]

    def count(self, *, after: str | None = None) -> int:
        query = sa.select(sa.func.count()).select_from(events)
        if self._by_xid:
            query = query.where(commit_order.after_cursor(after))
        elif after is not None:
            query = query.where(events.c.seq > _seq(after))
        return int(self._db.read(lambda conn: conn.execute(query).scalar_one()))

    def sort_key(self, cursor: str) -> tuple[int, ...]:
        if not self._by_xid:
            return (_seq(cursor),)
        xid, sep, seq = cursor.partition(":")
        # A bare seq is a pre-0004 cursor: before every (xid, seq) one.
        return (int(xid), int(seq)) if sep else (0, int(xid))

    def end(self) -> str | None:
        if self._by_xid:
            row = self._db.read(lambda conn: conn.execute(commit_order.last_query()).first())
            return None if row is None else commit_order.cursor(row)
        seq = self._db.read(
            lambda conn: conn.execute(sa.select(sa.func.max(events.c.seq))).scalar_one())
        return None if seq is None else str(seq)

    def trim(self, *, up_to: str) -> int:
        if self._by_xid:
            statement = sa.delete(events).where(sa.not_(commit_order.after_cursor(up_to)))
        else:
            statement = sa.delete(events).where(events.c.seq <= _seq(up_to))
        return self._db.write(lambda conn: conn.execute(statement).rowcount)


def _seq(cursor: str) -> int:
    try:
        return int(cursor)
    except ValueError as exc:
        raise InvalidRequest(f"{cursor!r} is not a SQL event cursor.") from exc
