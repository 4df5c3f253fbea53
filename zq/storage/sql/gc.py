"""Garbage collection of expired claims and messages.

Each batch is one transaction that locks the expired rows it will remove
(SKIP LOCKED on the servers, the write lock on SQLite), records their
``expired`` events and deletes them; a second collector running at the same
time never sees the same rows, so no event is recorded twice.
"""

from __future__ import annotations

import sqlalchemy as sa

from zq import events
from zq.clock import Clock
from zq.storage.base import Collected
from zq.storage.sql import predicates
from zq.storage.sql.database import Database
from zq.storage.sql.events import event_row, record
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
    messages = 0
    while True:
        count = db.write(lambda conn: _messages_batch(conn, clock.now()))
        messages += count
        if count < BATCH:
            return Collected(messages, claims)


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


def _messages_batch(conn: sa.Connection, now: float) -> int:
    expired = conn.execute(
        sa.select(m.c.marker, m.c.id, m.c.project, m.c.queue, m.c.claim_count)
        .where(m.c.expires <= now)
        .limit(BATCH)
        .with_for_update(skip_locked=True)
    ).all()
    if not expired:
        return 0
    record(conn, [
        event_row(events.EXPIRED, row.project, row.queue, now, message_id=row.id,
                  claim_count=row.claim_count)
        for row in expired
    ])
    conn.execute(sa.delete(m).where(m.c.marker.in_([row.marker for row in expired])))
    return len(expired)
