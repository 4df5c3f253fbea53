"""Subscriptions on SQL: one row each, unique by (project, queue, subscriber key)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc

from zq.clock import Clock
from zq.errors import SubscriptionConflict, SubscriptionNotFound
from zq.storage.records import SubscriptionRecord
from zq.storage.sql import dialects
from zq.storage.sql.database import Database
from zq.storage.sql.records import dump_json, load_json
from zq.storage.sql.schema import subscriptions as s
from zq.storage.subscriptions import (
    SubscriptionController,
    new_subscription_id,
    subscriber_key,
    subscription_age,
)

# gc removes at most this many expired subscriptions per transaction.
GC_BATCH = 500


def _record(row: sa.Row[Any], now: float) -> SubscriptionRecord:
    return SubscriptionRecord(
        id=row.id, project=row.project, queue=row.queue, subscriber=row.subscriber,
        ttl=row.ttl, expires=row.expires, options=load_json(row.options) or {},
        confirmed=bool(row.confirmed), age=subscription_age(row.created, now),
    )


def _in_queue(project: str, queue: str, now: float) -> sa.ColumnElement[bool]:
    return sa.and_(s.c.project == project, s.c.queue == queue, s.c.expires > now)


class SqlSubscriptions(SubscriptionController):
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def create(
        self, project: str, queue: str, subscriber: str, ttl: int, options: dict[str, Any],
        *, subscription_id: str | None = None,
    ) -> str | None:
        key = subscriber_key(subscriber)
        sid = subscription_id or new_subscription_id()

        def work(conn: sa.Connection) -> str | None:
            now = self._clock.now()
            # An expired subscription of the same subscriber is gone already
            # for every reader: make room for the new one in this step.
            conn.execute(sa.delete(s).where(
                s.c.project == project, s.c.queue == queue, s.c.subscriber_key == key,
                s.c.expires <= now))
            row = {"id": sid, "project": project, "queue": queue, "subscriber": subscriber,
                   "subscriber_key": key, "ttl": ttl, "created": now, "expires": now + ttl,
                   "options": dump_json(options), "confirmed": False}
            # The unique (project, queue, subscriber_key) settles concurrent creates.
            return sid if dialects.insert_if_absent(conn, s, row) else None

        return self._db.write(work)

    def _one(self, where: sa.ColumnElement[bool]) -> SubscriptionRecord | None:
        def work(conn: sa.Connection) -> SubscriptionRecord | None:
            now = self._clock.now()
            row = conn.execute(sa.select(s).where(where, s.c.expires > now)).first()
            return None if row is None else _record(row, now)

        return self._db.read(work)

    def get(self, project: str, queue: str, subscription_id: str) -> SubscriptionRecord:
        found = self._one(sa.and_(s.c.id == subscription_id, s.c.project == project,
                                  s.c.queue == queue))
        if found is None:
            raise SubscriptionNotFound.gone(subscription_id)
        return found

    def find(self, project: str, queue: str, subscriber: str) -> SubscriptionRecord | None:
        return self._one(sa.and_(s.c.project == project, s.c.queue == queue,
                                 s.c.subscriber_key == subscriber_key(subscriber)))

    def exists(self, project: str, queue: str, subscription_id: str) -> bool:
        return self._one(sa.and_(s.c.id == subscription_id, s.c.project == project,
                                 s.c.queue == queue)) is not None

    def list(
        self, project: str, queue: str, *, marker: str | None = None, limit: int = 10
    ) -> list[SubscriptionRecord]:
        def work(conn: sa.Connection) -> list[SubscriptionRecord]:
            now = self._clock.now()
            query = sa.select(s).where(_in_queue(project, queue, now))
            if marker is not None:
                query = query.where(s.c.id > marker)
            rows = conn.execute(query.order_by(s.c.id).limit(limit)).all()
            return [_record(row, now) for row in rows]

        return self._db.read(work)

    def update(
        self,
        project: str,
        queue: str,
        subscription_id: str,
        *,
        subscriber: str | None = None,
        ttl: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        def work(conn: sa.Connection) -> None:
            now = self._clock.now()
            this = sa.and_(s.c.id == subscription_id, _in_queue(project, queue, now))
            values: dict[str, Any] = {}
            if subscriber is not None:
                key = subscriber_key(subscriber)
                other = conn.execute(sa.select(s.c.id, s.c.expires).where(
                    s.c.project == project, s.c.queue == queue, s.c.subscriber_key == key,
                    s.c.id != subscription_id)).first()
                if other is not None and other.expires > now:
                    if conn.execute(sa.select(s.c.id).where(this)).first() is None:
                        raise SubscriptionNotFound.gone(subscription_id)
                    raise SubscriptionConflict.duplicate()
                if other is not None:
                    conn.execute(sa.delete(s).where(s.c.id == other.id))
                values.update(subscriber=subscriber, subscriber_key=key)
            if ttl is not None:
                values.update(ttl=ttl, expires=now + ttl)
            if options is not None:
                values["options"] = dump_json(options)
            if not values:
                values["id"] = subscription_id  # a no-op write that still tells if it exists
            try:
                changed = conn.execute(sa.update(s).where(this).values(**values)).rowcount
            except exc.IntegrityError as error:
                # A concurrent create took the subscriber after our check.
                raise SubscriptionConflict.duplicate() from error
            if not changed and conn.execute(sa.select(s.c.id).where(this)).first() is None:
                raise SubscriptionNotFound.gone(subscription_id)

        self._db.write(work)

    def delete(self, project: str, queue: str, subscription_id: str) -> None:
        self._db.write_statement(lambda conn: conn.execute(sa.delete(s).where(
            s.c.id == subscription_id, s.c.project == project, s.c.queue == queue)))

    def confirm(
        self, project: str, queue: str, subscription_id: str, *, confirmed: bool
    ) -> None:
        def work(conn: sa.Connection) -> None:
            now = self._clock.now()
            this = sa.and_(s.c.id == subscription_id, _in_queue(project, queue, now))
            conn.execute(sa.update(s).where(this).values(confirmed=confirmed))
            # MariaDB counts only changed rows: ask rather than trust rowcount.
            if conn.execute(sa.select(s.c.id).where(this)).first() is None:
                raise SubscriptionNotFound.gone(subscription_id)

        self._db.write(work)

    def for_queue(self, project: str, queue: str) -> list[SubscriptionRecord]:
        def work(conn: sa.Connection) -> list[SubscriptionRecord]:
            now = self._clock.now()
            rows = conn.execute(
                sa.select(s).where(_in_queue(project, queue, now)).order_by(s.c.id)).all()
            return [_record(row, now) for row in rows]

        return self._db.read(work)

    def live(self) -> list[SubscriptionRecord]:
        def work(conn: sa.Connection) -> list[SubscriptionRecord]:
            now = self._clock.now()
            rows = conn.execute(sa.select(s).where(s.c.expires > now).order_by(
                s.c.project, s.c.queue, s.c.id)).all()
            return [_record(row, now) for row in rows]

        return self._db.read(work)


def collect(db: Database, clock: Clock) -> int:
    """Remove expired subscriptions, in batches; how many went."""
    removed = 0
    while True:
        def batch(conn: sa.Connection) -> int:
            now = clock.now()
            ids = conn.execute(sa.select(s.c.id).where(s.c.expires <= now).limit(GC_BATCH)
                               .with_for_update(skip_locked=True)).scalars().all()
            if not ids:
                return 0
            return conn.execute(sa.delete(s).where(s.c.id.in_(ids), s.c.expires <= now)).rowcount

        count = db.write(batch)
        removed += count
        if count < GC_BATCH:
            return removed
