"""Garbage collection of expired claims and messages.

Each batch is one transaction that locks the expired rows it will remove
(SKIP LOCKED on the servers, the write lock on SQLite), records their
``expired`` events and deletes them (or, for a queue with
``_dead_letter_expired``, moves them to its dead letter queue with their
``dead_lettered`` events); a second collector running at the same
time never sees the same rows, so no event is recorded twice.
"""

from __future__ import annotations

import sqlalchemy as sa

from zq import events
from zq.clock import Clock
from zq.storage.records import Collected
from zq.storage.sql import predicates
from zq.storage.sql.database import Database
from zq.storage.sql.events import event_row, record
from zq.storage.sql.moves import expiry_moves, move_rows
from zq.storage.sql.schema import claims as c
from zq.storage.sql.schema import messages as m

BATCH = 500


def collect(db: Database, clock: Clock) -> Collected:
    """Remove expired claims and messages; returns how many of each went."""
    claims = 0
    while True:
        count = db.write(lambda conn: _claims_batch(conn, clock.now()))
        claims += count
        if count < BATCH:
            break
    messages = moved = 0
    while True:
        removed, went = db.write(lambda conn: _messages_batch(conn, clock.now()))
        messages += removed
        moved += went
        if removed + went < BATCH:
            return Collected(messages, claims, moved)


def _claims_batch(conn: sa.Connection, now: float) -> int:
    expired = conn.execute(
        sa.select(c).where(c.c.expires <= now).limit(BATCH).with_for_update(skip_locked=True)
    ).all()
    if not expired:
        return 0
    ids = [claim.id for claim in expired]
    # The alive messages each claim still pointed at when it lapsed.
    held = dict(conn.execute(
        sa.select(m.c.claim_id, sa.func.count())
        .where(m.c.claim_id.in_(ids), predicates.alive(now))
        .group_by(m.c.claim_id)
    ).all())
    record(conn, [
        event_row(events.EXPIRED, claim.project, claim.queue, now, claim_id=claim.id,
                  client_id=claim.client_id,
                  detail=events.claim_expired_detail(held[claim.id]))
        for claim in expired if held.get(claim.id)
    ])
    conn.execute(sa.delete(c).where(c.c.id.in_(ids)))
    return len(expired)


def _messages_batch(conn: sa.Connection, now: float) -> tuple[int, int]:
    """(expired messages removed, moved): those of queues with
    ``_dead_letter_expired`` move to their dead letter queue instead."""
    found = conn.execute(
        sa.select(m.c.marker, m.c.id, m.c.project, m.c.queue, m.c.claim_count)
        .where(m.c.expires <= now)
        .limit(BATCH)
        .with_for_update(skip_locked=True)
    ).all()
    if not found:
        return 0, 0
    moving = expiry_moves(conn, {(row.project, row.queue) for row in found})
    expired = [row for row in found if (row.project, row.queue) not in moving]
    recorded = [
        event_row(events.EXPIRED, row.project, row.queue, now, message_id=row.id,
                  claim_count=row.claim_count)
        for row in expired
    ]
    if expired:
        conn.execute(sa.delete(m).where(m.c.marker.in_([row.marker for row in expired])))
    moved = 0
    for (project, queue), move in moving.items():
        # The whole rows (already locked above) that the move rewrites.
        rows = conn.execute(sa.select(m).where(m.c.marker.in_([
            row.marker for row in found if (row.project, row.queue) == (project, queue)
        ])).order_by(m.c.marker)).all()
        recorded += move_rows(conn, project, queue, rows, move, now,
                              claim_id=None, client_id=None)
        moved += len(rows)
    record(conn, recorded)
    return len(expired), moved
