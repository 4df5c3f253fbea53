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

from zq.poison import blame, moves
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.sql import predicates
from zq.storage.sql.breakers import BreakerStep
from zq.storage.sql.moves import move_expired, move_rows
from zq.storage.sql.records import dump_json, load_json
from zq.storage.sql.schema import claims as c
from zq.storage.sql.schema import consumer_claims as cc
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
    breaker: BreakerStep | None = None,
    blame_split: bool = False,
) -> Taken:
    """Lock up to ``limit`` deliverable messages, dead lettering exhausted ones.

    With a policy that moves expired messages, up to EXPIRED_PER_DELIVERY of
    the queue's expired messages move first (gc moves the rest). With a
    ``breaker`` step or ``blame_split``, the lapses the walk meets are
    judged first (``_judge_lapses``), so that exhaustion counts them.
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
        charged: set[int] = set()
        if breaker is not None or blame_split:
            candidates, charged = _judge_lapses(conn, project, queue, candidates, now,
                                                claimer=client_id, breaker=breaker,
                                                blame_split=blame_split)
        exhausted = []
        for row in candidates:
            if dead_letter is not None and dead_letter.is_exhausted(row.claim_count,
                                                                    row.forgiven_count):
                if row.marker in charged:
                    # Exhausted by a lapse charged to it: reason "lapsed" (zq.poison.blame).
                    taken.events += move_rows(
                        conn, project, queue, [row],
                        moves.lapsed(dead_letter.queue, dead_letter.ttl,
                                     blame.exhaustion_description(lapsed_with(row))),
                        now, claim_id=None, client_id=client_id)
                else:
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


def hold_lapsed_probe(conn: sa.Connection, project: str, queue: str, breaker: BreakerStep,
                      now: float, *, claimer: str | None, blame_split: bool) -> None:
    """The lapse of the probe ``breaker.allowance`` found: judged now, and held back.

    Its message is not claimable until ``breaker.held_until``, so the walk
    would not meet it for a while: its lapse is judged here (as the walk
    would) and its claim is cleared, so that the walk does not judge it again.
    """
    probe, held = breaker.lapsed_probe, breaker.held_until
    breaker.lapsed_probe = breaker.held_until = None
    if probe is None or held is None:
        return
    rows = conn.execute(sa.select(m).where(
        predicates.in_queue(project, queue), m.c.claim_id == probe,
        predicates.unheld(now)).with_for_update()).all()
    rows, _ = _judge_lapses(conn, project, queue, list(rows), now, claimer=claimer,
                            breaker=breaker, blame_split=blame_split)
    if rows:
        conn.execute(sa.update(m).where(m.c.marker.in_([row.marker for row in rows])).values(
            delay_until=sa.case((m.c.delay_until > held, m.c.delay_until), else_=held),
            claim_id=None, claim_expires=None))


def lapsed_with(row: sa.Row[Any]) -> tuple[str, ...]:
    """The row's ``lapsed_with`` column (JSON text, NULL: none) as a tuple."""
    return tuple(load_json(row.lapsed_with) or ())


def _judge_lapses(
    conn: sa.Connection,
    project: str,
    queue: str,
    candidates: list[sa.Row[Any]],
    now: float,
    *,
    claimer: str | None,
    breaker: BreakerStep | None,
    blame_split: bool,
) -> tuple[list[sa.Row[Any]], set[int]]:
    """Judge the lapses among the locked candidates; (the rows read again, the charged).

    A free candidate that still names a claim lapsed: its claim expired
    without a delete, reject or release. Each is a breaker failure at the
    claim's expiry (forgiven when the breaker was open then) and, with
    ``blame_split``, blamed on its consumer or on itself (zq.poison.blame),
    with a history entry. Returns the candidates with their new values, and
    the markers of those whose lapse was charged to the message.
    """
    lapsed = [row for row in candidates if row.claim_id is not None
              and row.claim_expires is not None and row.claim_expires <= now]
    if not lapsed:
        return candidates, set()
    charged: set[int] = set()
    changes = []
    for row in lapsed:
        outage = (breaker is not None
                  and breaker.failure(row.id, None, at=row.claim_expires))
        change = {"b_marker": row.marker, "b_forgiven": row.forgiven_count + int(outage),
                  "b_history": row.history, "b_lapsed_with": row.lapsed_with,
                  "b_last_failure": None if breaker is not None else row.last_failure}
        if blame_split:
            holder = _holder(conn, row.claim_id)
            suspected = holder is not None and _suspected(
                conn, project, queue, holder, row.claim_id, row.claim_expires, now,
                claiming=claimer == holder)
            lapse = blame.judge(lapsed_with(row), holder, suspected=suspected, outage=outage)
            if lapse.charged_to == blame.MESSAGE:
                charged.add(row.marker)
            entry = blame.lapse_entry(queue, row.claim_expires, holder, lapse)
            change.update(
                b_forgiven=row.forgiven_count + int(lapse.forgiven),
                b_history=dump_json(blame.with_lapse(load_json(row.history) or [], entry)),
                b_lapsed_with=dump_json(list(lapse.lapsed_with)) if lapse.lapsed_with else None)
        changes.append(change)
    conn.execute(
        sa.update(m).where(m.c.marker == sa.bindparam("b_marker")).values(
            forgiven_count=sa.bindparam("b_forgiven"), history=sa.bindparam("b_history"),
            lapsed_with=sa.bindparam("b_lapsed_with"),
            last_failure=sa.bindparam("b_last_failure")),
        changes)
    fresh = {row.marker: row for row in conn.execute(
        sa.select(m).where(m.c.marker.in_([row.marker for row in lapsed]))).all()}
    return [fresh.get(row.marker, row) for row in candidates], charged


def _holder(conn: sa.Connection, claim_id: str) -> str | None:
    """The Client-ID of a claim: the consumer log's, else the claim's own row."""
    found = conn.execute(sa.select(cc.c.client_id).where(cc.c.claim_id == claim_id)).scalar()
    if found is None:
        found = conn.execute(sa.select(c.c.client_id).where(c.c.id == claim_id)).scalar()
    return found


def _suspected(conn: sa.Connection, project: str, queue: str, client_id: str, claim_id: str,
               expired: float, now: float, *, claiming: bool) -> bool:
    """zq.poison.blame.suspects, from the consumer log (``claiming``: it claims now)."""
    lapses, since = conn.execute(
        sa.select(
            sa.func.coalesce(sa.func.sum(sa.case(
                (sa.and_(cc.c.claim_id != claim_id, cc.c.expires <= now,
                         cc.c.settled.is_(None)), 1), else_=0)), 0),
            sa.func.coalesce(sa.func.sum(sa.case((cc.c.claimed >= expired, 1), else_=0)), 0),
        ).where(cc.c.project == project, cc.c.queue == queue, cc.c.client_id == client_id)
    ).one()
    return blame.suspects(other_unsettled_lapses=int(lapses),
                          claims_since=int(since) + (1 if claiming else 0))
