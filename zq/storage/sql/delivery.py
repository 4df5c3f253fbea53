"""Taking deliverable messages off a queue: the walk shared by claim and pop.

``take_deliverable`` runs inside the caller's write transaction. It locks
free candidates in queue order (FOR UPDATE SKIP LOCKED on the servers, so
concurrent claimers pass each other instead of waiting; SQLite's write
transaction already excludes other writers), moves the exhausted ones to the
dead letter queue (zq.storage.sql.moves, with the policy's move), and goes on until it holds up to
``limit`` deliverable messages or the queue has no more free ones. The
caller then marks or deletes what it got, in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.sql import predicates
from zq.storage.sql.moves import move_expired, move_rows
from zq.storage.sql.schema import messages as m

# Expired messages a claim or pop moves at most (``_dead_letter_expired``),
# so that its own work stays bounded.
EXPIRED_PER_DELIVERY = 100


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
    """Lock up to ``limit`` deliverable messages, dead lettering exhausted ones.

    With a policy that moves expired messages, up to EXPIRED_PER_DELIVERY of
    the queue's expired messages move first (gc moves the rest).
    """
    taken = Taken()
    expiry = None if dead_letter is None else dead_letter.expiry_move
    if expiry is not None:
        taken.events += move_expired(conn, project, queue, expiry, now,
                                     limit=EXPIRED_PER_DELIVERY)
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
            taken.events += move_rows(conn, project, queue, exhausted, dead_letter.move,
                                      now, claim_id=None, client_id=client_id)
        if len(candidates) < wanted:
            break
    return taken
