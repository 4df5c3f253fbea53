"""Taking deliverable messages off a queue: the walk shared by claim and pop.

``take_deliverable`` runs inside the caller's write transaction. It locks
free candidates in queue order (FOR UPDATE SKIP LOCKED on the servers, so
concurrent claimers pass each other instead of waiting; SQLite's write
transaction already excludes other writers), moves the exhausted ones to the
dead letter queue as the policy decides, and goes on until it holds up to
``limit`` deliverable messages or the queue has no more free ones. The
caller then marks or deletes what it got, in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from zq import events
from zq.dead_letter import DeadLetterPolicy
from zq.storage.sql import predicates
from zq.storage.sql.events import event_row
from zq.storage.sql.queues import ensure_queue
from zq.storage.sql.records import dump_json, load_json
from zq.storage.sql.schema import messages as m


@dataclass
class Taken:
    """Deliverable rows locked for the caller, and the events so far."""

    rows: list[sa.Row[Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


def take_deliverable(
    conn: sa.Connection,
    project: str,
    queue: str,
    *,
    limit: int,
    now: float,
    client_id: str | None,
    dead_letter: DeadLetterPolicy | None,
) -> Taken:
    """Lock up to ``limit`` deliverable messages, dead lettering exhausted ones."""
    taken = Taken()
    after = 0
    while len(taken.rows) < limit:
        wanted = limit - len(taken.rows)
        candidates = conn.execute(
            sa.select(m)
            .where(predicates.in_queue(project, queue), predicates.free(now), m.c.marker > after)
            .order_by(m.c.marker)
            .limit(wanted)
            .with_for_update(skip_locked=True)
        ).all()
        if not candidates:
            break
        after = candidates[-1].marker
        exhausted = []
        for row in candidates:
            if dead_letter is not None and dead_letter.is_exhausted(row.claim_count):
                exhausted.append(row)
            else:
                taken.rows.append(row)
        if exhausted:
            assert dead_letter is not None
            taken.events += _move_to_dead_letter(
                conn, project, queue, exhausted, dead_letter, now, client_id
            )
        if len(candidates) < wanted:
            break
    return taken


def _move_to_dead_letter(
    conn: sa.Connection,
    project: str,
    queue: str,
    rows: list[sa.Row[Any]],
    policy: DeadLetterPolicy,
    now: float,
    client_id: str | None,
) -> list[dict[str, Any]]:
    """Move ``rows`` into the policy's queue; returns their events."""
    ensure_queue(conn, project, policy.queue, now)
    changes = []
    recorded = []
    for row in rows:
        moved = policy.moved(row.ttl, now)
        history = (load_json(row.history) or []) + [policy.history_entry(queue, now)]
        changes.append({
            "b_marker": row.marker,
            "b_ttl": moved.ttl,
            "b_created": moved.created,
            "b_expires": moved.expires,
            "b_history": dump_json(history),
        })
        recorded.append(event_row(
            events.DEAD_LETTERED, project, queue, now,
            message_id=row.id, client_id=client_id, claim_count=row.claim_count,
            detail=events.dead_lettered_detail(policy.queue, policy.reason, row.fingerprint,
                                              row.body),
        ))
    conn.execute(
        sa.update(m)
        .where(m.c.marker == sa.bindparam("b_marker"))
        .values(
            queue=policy.queue,
            ttl=sa.bindparam("b_ttl"),
            created=sa.bindparam("b_created"),
            expires=sa.bindparam("b_expires"),
            delay_until=sa.bindparam("b_created"),
            claim_id=None,
            claim_expires=None,
            history=sa.bindparam("b_history"),
        ),
        changes,
    )
    return recorded
