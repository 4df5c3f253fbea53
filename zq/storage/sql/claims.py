"""Claims: leases on batches of messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from zq import events
from zq.clock import Clock
from zq.errors import ClaimNotFound
from zq.storage.base import ClaimController
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.records import ClaimRecord, ConsumerEntry
from zq.storage.sql import postgresql, predicates
from zq.storage.sql.breakers import BreakerStep
from zq.storage.sql.consumers import write_record
from zq.storage.sql.database import Database
from zq.storage.sql.delivery import Taken, hold_lapsed_probe, take_deliverable
from zq.storage.sql.events import event_row, record
from zq.storage.sql.messages import new_id
from zq.storage.sql.records import message_record
from zq.storage.sql.schema import claims as c
from zq.storage.sql.schema import messages as m


def _live_claim(project: str, queue: str, claim_id: str, now: float) -> sa.Select[Any]:
    return sa.select(c).where(
        c.c.id == claim_id, c.c.project == project, c.c.queue == queue, c.c.expires > now
    )


def _held_by(project: str, queue: str, claim_id: str, now: float) -> sa.Select[Any]:
    """The alive messages a live claim holds, in queue order."""
    return (
        sa.select(m)
        .where(predicates.in_queue(project, queue), predicates.alive(now),
               predicates.held(now), m.c.claim_id == claim_id)
        .order_by(m.c.marker)
    )


def _record_consumer(conn: sa.Connection, project: str, queue: str,
                     made: ClaimRecord | None, consumer: ConsumerEntry | None) -> None:
    """The claim's consumer record, in the claim's transaction (ConsumerEntry)."""
    if made is None or consumer is None:
        return
    write_record(conn, project, queue, consumer.record(made.id, made.ttl, made.created),
                 forget_before=consumer.forget_before(made.created))


class SqlClaims(ClaimController):
    def __init__(self, db: Database, clock: Clock, *, one_statement: bool) -> None:
        self._db = db
        self._clock = clock
        self._one_statement = one_statement  # zq.storage.sql.postgresql's writes

    def create(
        self,
        project: str,
        queue: str,
        *,
        ttl: int,
        grace: int,
        limit: int,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> ClaimRecord | None:
        claim_id = new_id()
        backoff, consumer = rules.backoff, rules.consumer
        if self._one_statement and postgresql.one_statement_claims(rules):
            statement = postgresql.ClaimRules.of(rules.dead_letter, backoff, limit)
            # The consumer record rides in the claim's statement too: one
            # round trip, no BEGIN or COMMIT (ConsumerEntry).
            return self._db.write_statement(lambda conn: postgresql.claim(
                conn, project, queue, claim_id, now=self._clock.now(), ttl=ttl,
                grace=grace, limit=limit, client_id=client_id, rules=statement,
                consumer=consumer))

        def work(conn: sa.Connection) -> ClaimRecord | None:
            now = self._clock.now()
            step = None if rules.breaker is None else BreakerStep(
                conn, project, queue, rules.breaker, now)
            # An open breaker lets one probe through at a time, or nothing.
            allowed = limit if step is None else step.allowance(limit)
            if step is not None:
                hold_lapsed_probe(conn, project, queue, step, now, claimer=client_id,
                                  blame_split=rules.blame_split)
            taken = Taken() if allowed == 0 else take_deliverable(
                conn, project, queue, limit=allowed, now=now, client_id=client_id,
                dead_letter=rules.dead_letter, breaker=step, blame_split=rules.blame_split)
            if step is not None:
                if taken.rows:
                    step.delivered(claim_id)
                taken.events += step.events
            if not taken.rows:
                record(conn, taken.events)
                return None
            expires = now + ttl
            lives_until = expires + grace
            conn.execute(sa.insert(c).values(
                id=claim_id, project=project, queue=queue, ttl=ttl, grace=grace,
                created=now, expires=expires, client_id=client_id,
            ))
            marked = (
                sa.update(m)
                .values(
                    claim_id=claim_id,
                    claim_expires=expires,
                    claim_count=m.c.claim_count + 1,
                    expires=predicates.at_least(m.c.expires, lives_until),
                )
            )
            if backoff is None:
                conn.execute(marked.where(m.c.marker.in_([row.marker for row in taken.rows])))
            else:
                # Claimable again at the claim's expiry plus each message's
                # backoff: an expiry of the claim implies it (zq.poison.backoff).
                conn.execute(
                    marked.where(m.c.marker == sa.bindparam("b_marker"))
                    .values(delay_until=sa.bindparam("b_delay_until")),
                    [{"b_marker": row.marker,
                      "b_delay_until": expires + backoff.delay_for(row.claim_count + 1)}
                     for row in taken.rows],
                )
            held = [
                replace(message_record(row, now), claim_id=claim_id,
                        claim_count=row.claim_count + 1,
                        expires=max(row.expires, lives_until))
                for row in taken.rows
            ]
            record(conn, taken.events + [
                event_row(events.CLAIMED, project, queue, now, message_id=msg.id,
                          claim_id=claim_id, client_id=client_id,
                          claim_count=msg.claim_count)
                for msg in held
            ])
            made = ClaimRecord(id=claim_id, queue=queue, ttl=ttl, grace=grace,
                               created=now, expires=expires, messages=held)
            _record_consumer(conn, project, queue, made, consumer)
            return made

        return self._db.write(work)

    def get(self, project: str, queue: str, claim_id: str) -> ClaimRecord:
        def work(conn: sa.Connection) -> ClaimRecord:
            now = self._clock.now()
            claim = conn.execute(_live_claim(project, queue, claim_id, now)).first()
            if claim is None:
                raise ClaimNotFound.gone(claim_id)
            rows = conn.execute(_held_by(project, queue, claim_id, now)).all()
            return ClaimRecord(
                id=claim.id, queue=claim.queue, ttl=claim.ttl, grace=claim.grace,
                created=claim.created, expires=claim.expires,
                messages=[message_record(row, now) for row in rows],
            )

        return self._db.read(work)

    def renew(
        self,
        project: str,
        queue: str,
        claim_id: str,
        *,
        ttl: int,
        grace: int,
        client_id: str | None,
    ) -> None:
        def work(conn: sa.Connection) -> None:
            now = self._clock.now()
            expires = now + ttl
            renewed = conn.execute(
                sa.update(c)
                .where(c.c.id == claim_id, c.c.project == project, c.c.queue == queue,
                       c.c.expires > now)
                .values(ttl=ttl, grace=grace, expires=expires)
            ).rowcount
            if not renewed:
                raise ClaimNotFound.gone(claim_id)
            rows = conn.execute(
                _held_by(project, queue, claim_id, now).with_for_update()
            ).all()
            if not rows:
                return
            conn.execute(
                sa.update(m)
                .where(m.c.marker.in_([row.marker for row in rows]))
                # delay_until first: it reads the old claim_expires (MariaDB
                # assigns left to right); the backoff moves with the claim.
                .ordered_values(
                    (m.c.delay_until, expires + predicates.carried_backoff()),
                    (m.c.claim_expires, expires),
                    (m.c.expires, predicates.at_least(m.c.expires, expires + grace)),
                )
            )
            record(conn, [
                event_row(events.RENEWED, project, queue, now, message_id=row.id,
                          claim_id=claim_id, client_id=client_id,
                          claim_count=row.claim_count)
                for row in rows
            ])

        self._db.write(work)

    def release(
        self, project: str, queue: str, claim_id: str, *, client_id: str | None
    ) -> None:
        def work(conn: sa.Connection) -> None:
            now = self._clock.now()
            # Only a live claim is removed: an expired one stays for gc, which
            # records that it expired.
            released = conn.execute(
                sa.delete(c).where(c.c.id == claim_id, c.c.project == project,
                                   c.c.queue == queue, c.c.expires > now)
            ).rowcount
            if not released:
                return
            rows = conn.execute(
                _held_by(project, queue, claim_id, now).with_for_update()
            ).all()
            if not rows:
                return
            conn.execute(
                sa.update(m)
                .where(m.c.marker.in_([row.marker for row in rows]))
                # delay_until first (see renew): the backoff starts now.
                .ordered_values(
                    (m.c.delay_until, now + predicates.carried_backoff()),
                    (m.c.claim_id, None),
                    (m.c.claim_expires, None),
                )
            )
            record(conn, [
                event_row(events.RELEASED, project, queue, now, message_id=row.id,
                          claim_id=claim_id, client_id=client_id,
                          claim_count=row.claim_count)
                for row in rows
            ])

        self._db.write(work)
