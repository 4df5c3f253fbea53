"""The move of messages to another queue, inside the caller's write transaction.

One UPDATE of the locked rows and their events, recorded by the caller in
the same transaction: the claim walk (zq.storage.sql.delivery) and
``SqlMessages.move`` both use it. Every value comes from the zq.poison.moves.Move.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from zq.poison.dead_letter import expiry_move_from_metadata
from zq.poison.moves import Move
from zq.storage.sql import predicates
from zq.storage.sql.events import event_row
from zq.storage.sql.queues import ensure_queue
from zq.storage.sql.records import dump_json, load_json
from zq.storage.sql.schema import messages as m
from zq.storage.sql.schema import queues


def move_rows(
    conn: sa.Connection,
    project: str,
    queue: str,
    rows: Sequence[sa.Row[Any]],
    move: Move,
    now: float,
    *,
    claim_id: str | None,
    client_id: str | None,
) -> list[dict[str, Any]]:
    """Move the locked ``rows`` of ``queue`` as ``move`` says; returns their events."""
    if not rows:
        return []
    ensure_queue(conn, project, move.to, now)
    changes = []
    recorded = []
    for row in rows:
        values = move.values(row.ttl, now)
        history = (load_json(row.history) or []) + [move.history_entry(queue, now)]
        changes.append({
            "b_marker": row.marker,
            "b_ttl": values.ttl,
            "b_created": values.created,
            "b_expires": values.expires,
            "b_history": dump_json(history),
            "b_claim_count": 0 if move.reset_claim_count else row.claim_count,
            # Forgiven deliveries and lapse consumers go with the claims they
            # were part of (zq.poison.moves); last_failure stays.
            "b_forgiven_count": 0 if move.reset_claim_count else row.forgiven_count,
            "b_lapsed_with": None if move.reset_claim_count else row.lapsed_with,
            "b_redrive_count": row.redrive_count + (1 if move.count_redrive else 0),
        })
        recorded.append(event_row(
            move.event, project, queue, now,
            message_id=row.id, claim_id=claim_id, client_id=client_id,
            claim_count=row.claim_count,
            detail=move.event_detail(row.fingerprint, row.body),
        ))
    conn.execute(
        sa.update(m)
        .where(m.c.marker == sa.bindparam("b_marker"))
        .values(
            queue=move.to,
            ttl=sa.bindparam("b_ttl"),
            created=sa.bindparam("b_created"),
            expires=sa.bindparam("b_expires"),
            delay_until=sa.bindparam("b_created"),
            claim_id=None,
            claim_expires=None,
            claim_count=sa.bindparam("b_claim_count"),
            forgiven_count=sa.bindparam("b_forgiven_count"),
            lapsed_with=sa.bindparam("b_lapsed_with"),
            redrive_count=sa.bindparam("b_redrive_count"),
            history=sa.bindparam("b_history"),
        ),
        changes,
    )
    return recorded


def expiry_moves(
    conn: sa.Connection, pairs: set[tuple[str, str]]
) -> dict[tuple[str, str], Move]:
    """The (project, queue) pairs whose expired messages move, with their move.

    Read from each queue's stored metadata with zq.poison.dead_letter's rule, in
    the caller's transaction (gc, which no caller hands a policy).
    """
    if not pairs:
        return {}
    rows = conn.execute(
        sa.select(queues.c.project, queues.c.name, queues.c.metadata).where(sa.or_(*[
            sa.and_(queues.c.project == project, queues.c.name == name)
            for project, name in pairs
        ]))
    ).all()
    found = {}
    for row in rows:
        move = expiry_move_from_metadata(load_json(row.metadata) or {})
        if move is not None:
            found[(row.project, row.name)] = move
    return found


def move_expired(
    conn: sa.Connection,
    project: str,
    queue: str,
    move: Move,
    now: float,
    *,
    limit: int,
) -> list[dict[str, Any]]:
    """Move up to ``limit`` expired messages of the queue (a claim on it); their events.

    Locks them as gc does (SKIP LOCKED), so a message gc is moving meanwhile
    is left to it: each moves once.
    """
    rows = conn.execute(
        sa.select(m)
        .where(predicates.in_queue(project, queue), m.c.expires <= now)
        .order_by(m.c.marker)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    return move_rows(conn, project, queue, rows, move, now, claim_id=None, client_id=None)
