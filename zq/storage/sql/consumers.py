"""The consumer log on SQL: the ``consumer_claims`` table, one row per claim."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from zq.storage.consumer_log import ConsumerLog
from zq.storage.records import ConsumerClaim
from zq.storage.sql.database import Database
from zq.storage.sql.schema import consumer_claims as t


def write_record(conn: sa.Connection, project: str, queue: str, claim: ConsumerClaim, *,
                 forget_before: float) -> None:
    """ConsumerLog.record inside the caller's transaction (also a claim's own)."""
    conn.execute(sa.delete(t).where(
        t.c.project == project, t.c.queue == queue, t.c.expires < forget_before))
    conn.execute(sa.insert(t).values(
        claim_id=claim.claim_id, project=project, queue=queue,
        client_id=claim.client_id, ttl=claim.ttl, claimed=claim.claimed,
        expires=claim.expires, settled=claim.settled))


def write_settle(conn: sa.Connection, project: str, queue: str, claim_id: str, *,
                 now: float, ended: bool) -> None:
    """ConsumerLog.settle inside the caller's transaction (also a delete's own)."""
    mine = (t.c.claim_id == claim_id, t.c.project == project, t.c.queue == queue)
    conn.execute(sa.update(t).where(*mine, t.c.settled.is_(None)).values(settled=now))
    if ended:
        conn.execute(sa.update(t).where(*mine, t.c.expires > now).values(expires=now))


def settle_many(project: str, queue: str, claim_ids: Sequence[str], now: float) -> sa.Update:
    """ConsumerLog.settle (not ended) of each of ``claim_ids`` as one statement
    (a batch delete's own, MessageController.delete_many's ``settle_claims``)."""
    return (sa.update(t)
            .where(t.c.claim_id.in_(list(claim_ids)), t.c.project == project,
                   t.c.queue == queue, t.c.settled.is_(None))
            .values(settled=now))


class SqlConsumers(ConsumerLog):
    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, project: str, queue: str, claim: ConsumerClaim, *,
               forget_before: float) -> None:
        self._db.write(lambda conn: write_record(conn, project, queue, claim,
                                                 forget_before=forget_before))

    def settle(self, project: str, queue: str, claim_id: str, *, now: float,
               ended: bool) -> None:
        self._db.write(lambda conn: write_settle(conn, project, queue, claim_id, now=now,
                                                 ended=ended))

    def extend(self, project: str, queue: str, claim_id: str, *, ttl: int,
               now: float) -> None:
        mine = (t.c.claim_id == claim_id, t.c.project == project, t.c.queue == queue)

        def work(conn: sa.Connection) -> None:
            conn.execute(sa.update(t).where(*mine, t.c.expires > now)
                         .values(expires=now + ttl, ttl=ttl))
            conn.execute(sa.update(t).where(*mine, t.c.expires <= now,
                                            t.c.settled.is_(None)).values(settled=now))
        self._db.write(work)

    def forget(self, project: str, queue: str) -> None:
        self._db.write(lambda conn: conn.execute(
            sa.delete(t).where(t.c.project == project, t.c.queue == queue)))

    def claims(self, project: str, queue: str, *, expires_after: float,
               client_id: str | None = None) -> list[ConsumerClaim]:
        query = sa.select(t.c.client_id, t.c.claim_id, t.c.ttl, t.c.claimed, t.c.expires,
                          t.c.settled).where(t.c.project == project, t.c.queue == queue,
                                             t.c.expires >= expires_after)
        if client_id is not None:
            query = query.where(t.c.client_id == client_id)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [ConsumerClaim(client_id=r.client_id, claim_id=r.claim_id, ttl=r.ttl,
                              claimed=r.claimed, expires=r.expires, settled=r.settled)
                for r in rows]
