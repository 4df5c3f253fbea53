"""Notification cursors in the ``notification_cursors`` table (migration 0008).

The lease is one conditional UPDATE (``owner`` is the caller, or the lease
ran out): the row lock every SQL database takes for it makes two takers
race to one winner. A missing row is inserted; a duplicate key there means
another process inserted it first and holds the lease.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import exc

from zq.clock import Clock
from zq.storage.cursors import CursorLease, NotificationCursors
from zq.storage.sql import dialects
from zq.storage.sql.database import Database
from zq.storage.sql.schema import notification_cursors as nc


class SqlNotificationCursors(NotificationCursors):
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def acquire(self, subscription_id: str, owner: str, lease_seconds: float) -> CursorLease | None:
        now = self._clock.now()
        until = now + lease_seconds
        take = (
            sa.update(nc)
            .where(nc.c.id == subscription_id,
                   sa.or_(nc.c.owner == owner, nc.c.lease_until < now))
            .values(owner=owner, lease_until=until)
        )

        def work(conn: sa.Connection) -> tuple[bool, str | None]:
            if conn.execute(take).rowcount:
                cursor = conn.execute(
                    sa.select(nc.c.cursor).where(nc.c.id == subscription_id)).scalar_one()
                return True, cursor
            exists = conn.execute(
                sa.select(nc.c.id).where(nc.c.id == subscription_id)).first()
            if exists is not None:
                return False, None
            conn.execute(sa.insert(nc).values(id=subscription_id, cursor=None, owner=owner,
                                              lease_until=until))
            return True, None

        try:
            taken, cursor = self._db.write(work)
        except exc.IntegrityError:
            return None  # another process inserted the row (and its lease) first
        return CursorLease(subscription_id, cursor, owner, until) if taken else None

    def start(self, subscription_id: str, cursor: str) -> None:
        row = {"id": subscription_id, "cursor": cursor, "owner": "", "lease_until": 0.0}
        self._db.write(lambda conn: dialects.insert_if_absent(conn, nc, row))

    def advance(self, subscription_id: str, owner: str, cursor: str, lease_seconds: float) -> bool:
        statement = (
            sa.update(nc)
            .where(nc.c.id == subscription_id, nc.c.owner == owner)
            .values(cursor=cursor, lease_until=self._clock.now() + lease_seconds)
        )
        return bool(self._db.write(lambda conn: conn.execute(statement).rowcount))

    def release(self, subscription_id: str, owner: str) -> None:
        statement = (
            sa.update(nc)
            .where(nc.c.id == subscription_id, nc.c.owner == owner)
            .values(lease_until=0.0)
        )
        self._db.write(lambda conn: conn.execute(statement))

    def positions(self) -> dict[str, str | None]:
        rows = self._db.read(lambda conn: conn.execute(sa.select(nc.c.id, nc.c.cursor)).all())
        return {row.id: row.cursor for row in rows}

    def forget(self, subscription_id: str) -> None:
        statement = sa.delete(nc).where(nc.c.id == subscription_id)
        self._db.write(lambda conn: conn.execute(statement))
