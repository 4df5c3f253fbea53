"""Messages: post, list, get, delete, pop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from zq import events
from zq.clock import Clock
from zq.errors import MessageNotFound
from zq.poison.backoff import release_delay
from zq.poison.breaker import CLOSED, stored_description
from zq.poison.moves import REASON_REJECTED, Move
from zq.storage.base import MessageController
from zq.storage.checks import check_delete, check_move
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.records import MessageRecord, NewMessage, random_id
from zq.storage.sql import postgresql, predicates
from zq.storage.sql.breakers import BreakerStep
from zq.storage.sql.consumers import settle_many, write_settle
from zq.storage.sql.database import Database
from zq.storage.sql.delivery import take_deliverable
from zq.storage.sql.events import event_row, record
from zq.storage.sql.moves import move_rows
from zq.storage.sql.queues import ensure_queue, queue_row
from zq.storage.sql.records import live_claim_id, message_record
from zq.storage.sql.schema import messages as m


def new_id() -> str:
    """A message or claim id, unique across the backend."""
    return random_id()


def _deleted_events(
    project: str, queue: str, rows: Sequence[sa.Row[Any]], now: float,
    client_id: str | None,
) -> list[dict[str, Any]]:
    return [
        event_row(events.DELETED, project, queue, now, message_id=row.id,
                  claim_id=live_claim_id(row, now),
                  client_id=client_id, claim_count=row.claim_count)
        for row in rows
    ]


def _delete_rows(conn: sa.Connection, rows: Sequence[sa.Row[Any]]) -> None:
    if rows:
        conn.execute(sa.delete(m).where(m.c.marker.in_([row.marker for row in rows])))


def _post_rows(
    conn: sa.Connection, project: str, queue: str, now: float,
    rows: list[dict[str, Any]], recorded: list[dict[str, Any]],
) -> None:
    """A post as executemany inserts, in posting order, in the caller's transaction."""
    ensure_queue(conn, project, queue, now)
    conn.execute(sa.insert(m), rows)
    record(conn, recorded)


def _by_ids(
    conn: sa.Connection, project: str, queue: str, ids: Sequence[str], now: float, *,
    lock: bool = False,
) -> list[sa.Row[Any]]:
    """The queue's live messages with these ids, in queue order.

    Looked up by id alone (the unique id index); queue and expiry are checked
    on the rows. With them in the WHERE clause a planner without statistics
    (a fresh PostgreSQL database) takes the (project, queue, marker) index
    and walks the whole queue for every call, and SQLite does the same to
    serve an ORDER BY: a redrive of 100,000 dead letters went quadratic.
    """
    query = sa.select(m).where(m.c.id.in_(list(ids)))
    rows = conn.execute(query.with_for_update() if lock else query).all()
    return sorted((row for row in rows
                   if row.project == project and row.queue == queue and row.expires > now),
                  key=lambda row: row.marker)


def _retry(
    conn: sa.Connection, project: str, queue: str, row: sa.Row[Any], now: float, *,
    claim_id: str, client_id: str | None, description: str | None, retry_after: int | None,
    step: BreakerStep | None, held: bool = False,
) -> list[dict[str, Any]]:
    """A retry reject of the locked ``row`` (with the breaker's failure); its events.

    The message leaves its claim and is claimable again ``retry_after`` from
    now, or its claim's backoff from now. With a breaker ``step`` it is a
    failure: forgiven while the breaker is open, and ``last_failure`` is set.
    """
    wait = (release_delay(row.delay_until, row.claim_expires)
            if retry_after is None else retry_after)
    values: dict[str, Any] = {"claim_id": None, "claim_expires": None,
                              "delay_until": now + wait}
    if step is not None:
        forgiven = step.failure(row.id, description, at=now, claim_id=claim_id)
        values.update(forgiven_count=m.c.forgiven_count + (1 if forgiven else 0),
                      last_failure=stored_description(description))
        if step.held_until is not None:
            # A failed probe: held back, so that the next probe is another message.
            values["delay_until"] = max(now + wait, step.held_until)
            step.held_until = None
    conn.execute(sa.update(m).where(m.c.marker == row.marker).values(values))
    return [event_row(
        events.REJECTED, project, queue, now, message_id=row.id,
        claim_id=claim_id, client_id=client_id, claim_count=row.claim_count,
        detail=events.rejected_detail(description, retry_after, held=held),
    )] + ([] if step is None else step.events)


def _terminal_rejects(
    conn: sa.Connection, project: str, queue: str, rows: Sequence[sa.Row[Any]], move: Move,
    now: float, *, claim_id: str, client_id: str | None, step: BreakerStep,
) -> tuple[list[sa.Row[Any]], list[dict[str, Any]]]:
    """Terminal rejects on a queue with a breaker: (the rows still to move, events).

    Each is a failure. One forgiven (the breaker is open) is held as a retry
    reject instead (the ``rejected`` event says ``held``); the others move,
    with ``last_failure`` set first (move_rows keeps it).
    """
    moving: list[sa.Row[Any]] = []
    recorded: list[dict[str, Any]] = []
    for row in rows:
        if step.locked_state() != CLOSED:
            recorded += _retry(conn, project, queue, row, now, claim_id=claim_id,
                               client_id=client_id, description=move.description,
                               retry_after=None, step=step, held=True)
            step.events.clear()
            continue
        step.failure(row.id, move.description, at=now, claim_id=claim_id)
        conn.execute(sa.update(m).where(m.c.marker == row.marker).values(
            last_failure=stored_description(move.description)))
        moving.append(row)
    return moving, recorded + step.events


class SqlMessages(MessageController):
    def __init__(self, db: Database, clock: Clock, *, one_statement: bool) -> None:
        self._db = db
        self._clock = clock
        self._one_statement = one_statement  # zq.storage.sql.postgresql's writes

    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,  # nothing in them applies to a post here
    ) -> list[str]:
        now = self._clock.now()
        ids = [msg.id or self.new_id() for msg in messages]
        rows = [
            {
                "id": message_id, "project": project, "queue": queue, "body": msg.body,
                "fingerprint": msg.fingerprint, "ttl": msg.ttl, "created": now,
                "expires": now + msg.ttl, "delay_until": now + msg.delay,
                "client_id": client_id, "claim_count": 0, "history": "[]",
            }
            for message_id, msg in zip(ids, messages, strict=True)
        ]
        recorded = [
            event_row(events.POSTED, project, queue, now, message_id=message_id,
                      client_id=client_id, claim_count=0,
                      detail=events.posted_detail(msg.ttl, msg.delay, msg.fingerprint, msg.body,
                                                 with_body=msg.event_body))
            for message_id, msg in zip(ids, messages, strict=True)
        ]

        if not rows:
            return ids
        if self._one_statement and len(rows) <= postgresql.ONE_STATEMENT_POST:
            self._db.write_statement(lambda conn: postgresql.post(
                conn, queue_row(project, queue, now), rows, recorded))
            return ids
        self._db.write(lambda conn: _post_rows(conn, project, queue, now, rows, recorded))
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
            # A held message's delay_until is its backoff after the claim: it
            # is claimed, not delayed.
            where.append(sa.or_(predicates.held(now), m.c.delay_until <= now))
        query = sa.select(m).where(*where).order_by(m.c.marker).limit(limit)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [message_record(row, now) for row in rows]

    def get(self, project: str, queue: str, message_id: str) -> MessageRecord:
        found = self.get_many(project, queue, [message_id])
        if not found:
            raise MessageNotFound.gone(message_id)
        return found[0]

    def get_many(
        self, project: str, queue: str, message_ids: Sequence[str]
    ) -> list[MessageRecord]:
        if not message_ids:
            return []
        now = self._clock.now()
        rows = self._db.read(lambda conn: _by_ids(conn, project, queue, message_ids, now))
        return [message_record(row, now) for row in rows]

    def delete(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str | None,
        client_id: str | None,
        settle_claim: bool = False,
        rules: DeliveryRules = NO_RULES,
    ) -> None:
        def work(conn: sa.Connection) -> None:
            now = self._clock.now()
            if settle_claim and claim_id is not None:
                # The consumer log's settle, in the delete's transaction.
                write_settle(conn, project, queue, claim_id, now=now, ended=False)
            row = conn.execute(
                sa.select(m)
                .where(predicates.in_queue(project, queue), predicates.alive(now),
                       m.c.id == message_id)
                .with_for_update()
            ).first()
            if row is None:
                return
            check_delete(message_id, claim_id,
                         live_claim_id(row, now))
            _delete_rows(conn, [row])
            recorded = _deleted_events(project, queue, [row], now, client_id)
            if rules.breaker is not None and claim_id is not None:
                # A delete by the claim's holder: a success, in the same step.
                step = BreakerStep(conn, project, queue, rules.breaker, now)
                step.successes([claim_id])
                recorded += step.events
            record(conn, recorded)

        self._db.write(work)

    def delete_many(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        *,
        claim_ids: Sequence[str] | None = None,
        client_id: str | None,
        settle_claims: bool = False,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        if not message_ids or (claim_ids is not None and not claim_ids):
            return []
        settling = bool(settle_claims and claim_ids)

        # The breaker counts each delete by a claim's holder: the general path.
        one_statement = self._one_statement and (rules.breaker is None or claim_ids is None)

        def work(conn: sa.Connection) -> list[str]:
            now = self._clock.now()
            if one_statement:
                return postgresql.delete_many(
                    conn, project, queue, list(message_ids),
                    None if claim_ids is None else list(claim_ids), now, client_id,
                    settle=settling)
            if settling:
                # The consumer log's settle of the claims named, in the delete's step.
                conn.execute(settle_many(project, queue, claim_ids or [], now))
            rows = _by_ids(conn, project, queue, message_ids, now, lock=True)
            if claim_ids is not None:
                rows = [row for row in rows if live_claim_id(row, now) in claim_ids]
            _delete_rows(conn, rows)
            recorded = _deleted_events(project, queue, rows, now, client_id)
            if rules.breaker is not None and claim_ids is not None and rows:
                step = BreakerStep(conn, project, queue, rules.breaker, now)
                step.successes([row.claim_id for row in rows])
                recorded += step.events
            record(conn, recorded)
            return [row.id for row in rows]

        return (self._db.write_statement if one_statement else self._db.write)(work)

    def reject(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str,
        client_id: str | None,
        description: str | None,
        retry_after: int | None,
        rules: DeliveryRules = NO_RULES,
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
                raise MessageNotFound.gone(message_id)
            check_move(message_id, claim_id,
                       live_claim_id(row, now))
            step = None if rules.breaker is None else BreakerStep(
                conn, project, queue, rules.breaker, now)
            record(conn, _retry(conn, project, queue, row, now, claim_id=claim_id,
                                client_id=client_id, description=description,
                                retry_after=retry_after, step=step))

        self._db.write(work)

    def _move(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        move: Move,
        *,
        claim_id: str | None = None,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:

        def work(conn: sa.Connection) -> list[str]:
            now = self._clock.now()
            rows = _by_ids(conn, project, queue, message_ids, now, lock=True)
            # Every row checked before any moves: a mismatch moves nothing.
            chosen = [
                row for row in rows
                if check_move(row.id, claim_id,
                              live_claim_id(row, now))
            ]
            recorded: list[dict[str, Any]] = []
            moving = chosen
            if (rules.breaker is not None and claim_id is not None
                    and move.reason == REASON_REJECTED):
                moving, recorded = _terminal_rejects(
                    conn, project, queue, chosen, move, now, claim_id=claim_id,
                    client_id=client_id, step=BreakerStep(conn, project, queue,
                                                          rules.breaker, now))
            record(conn, recorded + move_rows(conn, project, queue, moving, move, now,
                                              claim_id=claim_id, client_id=client_id))
            return [row.id for row in chosen]

        return self._db.write(work)

    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[MessageRecord]:
        def work(conn: sa.Connection) -> list[MessageRecord]:
            now = self._clock.now()
            step = None if rules.breaker is None else BreakerStep(
                conn, project, queue, rules.breaker, now)
            if step is not None and step.state != CLOSED:
                return []  # an open breaker lets only a claim's probe through
            taken = take_deliverable(conn, project, queue, limit=limit, now=now,
                                     client_id=client_id, dead_letter=rules.dead_letter,
                                     breaker=step, blame_split=rules.blame_split)
            _delete_rows(conn, taken.rows)
            popped = [
                replace(message_record(row, now), claim_count=row.claim_count + 1)
                for row in taken.rows
            ]
            record(conn, taken.events + [
                event_row(events.DELETED, project, queue, now, message_id=msg.id,
                          client_id=client_id, claim_count=msg.claim_count,
                          detail=events.popped_detail())
                for msg in popped
            ] + ([] if step is None else step.events))
            return popped

        return self._db.write(work)
