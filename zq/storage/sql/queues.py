"""Queues: metadata, listing, stats, purge and delete."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from zq import events
from zq.clock import Clock
from zq.errors import MetadataChanged, QueueNotFound
from zq.storage.base import QueueController
from zq.storage.records import (
    MISSING_VERSION,
    MessageStamp,
    MetadataRead,
    QueueRecord,
    QueueStats,
    random_version,
)
from zq.storage.sql import dialects, predicates
from zq.storage.sql.database import Database
from zq.storage.sql.events import event_row, record
from zq.storage.sql.records import dump_json, load_json
from zq.storage.sql.schema import breaker_outcomes, breakers, claims, links, messages, queues


def queue_row(
    project: str, queue: str, now: float, metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The row of a new queue (created implicitly: empty metadata)."""
    return {"project": project, "name": queue, "metadata": dump_json(metadata or {}),
            "created": now, "metadata_version": random_version()}


def ensure_queue(conn: sa.Connection, project: str, queue: str, now: float) -> bool:
    """Create the queue with empty metadata unless it exists; True if created."""
    return dialects.insert_if_absent(conn, queues, queue_row(project, queue, now))


def _remove_messages(
    conn: sa.Connection, project: str, queue: str, now: float, *, queue_deleted: bool
) -> None:
    """Delete the queue's messages and claims, with one ``purged`` event."""
    removed = conn.execute(
        sa.delete(messages).where(predicates.in_queue(project, queue))
    ).rowcount
    conn.execute(
        sa.delete(claims).where(claims.c.project == project, claims.c.queue == queue)
    )
    # The breaker starts over with the queue's messages (zq.storage.breakers).
    for table in (breakers, breaker_outcomes):
        conn.execute(sa.delete(table).where(table.c.project == project, table.c.queue == queue))
    if removed:
        record(conn, [event_row(events.PURGED, project, queue, now,
                                detail=events.purged_detail(removed, queue_deleted=queue_deleted))])


def _advance_links(conn: sa.Connection, project: str, expected: str) -> None:
    """Move the project's links version on from ``expected``; MetadataChanged if it moved.

    The conditional UPDATE (or the INSERT of the first row) is the check:
    a concurrent writer's transaction holds the row until it ends, and
    then this one finds the version changed.
    """
    if expected == "0":
        moved = not dialects.insert_if_absent(conn, links, {"project": project, "version": 1})
    else:
        moved = conn.execute(
            sa.update(links)
            .where(links.c.project == project, links.c.version == int(expected))
            .values(version=links.c.version + 1)
        ).rowcount == 0
    if moved:
        raise MetadataChanged("The project's dead letter links changed; read them again.")


def _name_filter(project: str, name: str | None) -> list[sa.ColumnElement[bool]]:
    where = [queues.c.project == project]
    if name:
        where.append(queues.c.name.contains(name, autoescape=True))
    return where


class SqlQueues(QueueController):
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def create(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        links_version: str | None = None,
    ) -> bool:
        row = queue_row(project, queue, self._clock.now(), metadata)

        def work(conn: sa.Connection) -> bool:
            if links_version is not None:
                if self._exists(conn, project, queue):
                    return False
                _advance_links(conn, project, links_version)
            return dialects.insert_if_absent(conn, queues, row)

        return self._db.write(work)

    def exists(self, project: str, queue: str) -> bool:
        return self._db.read(lambda conn: self._exists(conn, project, queue))

    @staticmethod
    def _exists(conn: sa.Connection, project: str, queue: str) -> bool:
        query = sa.select(queues.c.name).where(
            queues.c.project == project, queues.c.name == queue
        )
        return conn.execute(query).first() is not None

    def get_metadata(self, project: str, queue: str) -> dict[str, Any]:
        query = sa.select(queues.c.metadata).where(
            queues.c.project == project, queues.c.name == queue
        )
        text = self._db.read(lambda conn: conn.execute(query).scalar())
        if text is None:
            raise QueueNotFound.gone(queue)
        return load_json(text) or {}

    def read_metadata(self, project: str, queue: str) -> MetadataRead:
        query = sa.select(queues.c.metadata, queues.c.metadata_version).where(
            queues.c.project == project, queues.c.name == queue
        )
        row = self._db.read(lambda conn: conn.execute(query).first())
        if row is None:
            return MetadataRead({}, MISSING_VERSION)
        return MetadataRead(load_json(row.metadata) or {}, row.metadata_version)

    def set_metadata(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        expected_version: str | None = None,
        links_version: str | None = None,
    ) -> None:
        where = [queues.c.project == project, queues.c.name == queue]
        if expected_version is not None:
            where.append(queues.c.metadata_version == expected_version)
        statement = sa.update(queues).where(*where).values(
            metadata=dump_json(metadata), metadata_version=random_version()
        )

        def work(conn: sa.Connection) -> None:
            if links_version is not None:
                _advance_links(conn, project, links_version)
            if conn.execute(statement).rowcount:
                return
            if self._exists(conn, project, queue):
                raise MetadataChanged("The queue's metadata changed; read it again.")
            raise QueueNotFound.gone(queue)

        self._db.write(work)

    def links_version(self, project: str) -> str:
        query = sa.select(links.c.version).where(links.c.project == project)
        version = self._db.read(lambda conn: conn.execute(query).scalar())
        return str(version or 0)

    def delete(self, project: str, queue: str) -> None:
        def work(conn: sa.Connection) -> None:
            _remove_messages(conn, project, queue, self._clock.now(), queue_deleted=True)
            conn.execute(
                sa.delete(queues).where(queues.c.project == project, queues.c.name == queue)
            )

        self._db.write(work)

    def purge(self, project: str, queue: str) -> None:
        self._db.write(
            lambda conn: _remove_messages(conn, project, queue, self._clock.now(),
                                           queue_deleted=False)
        )

    def list(
        self,
        project: str,
        *,
        marker: str | None = None,
        limit: int = 10,
        name: str | None = None,
    ) -> list[QueueRecord]:
        where = _name_filter(project, name)
        if marker is not None:
            where.append(queues.c.name > marker)
        query = (
            sa.select(queues.c.name, queues.c.metadata)
            .where(*where)
            .order_by(queues.c.name)
            .limit(limit)
        )
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [QueueRecord(name=row.name, metadata=load_json(row.metadata) or {})
                for row in rows]

    def count(self, project: str, *, name: str | None = None) -> int:
        query = sa.select(sa.func.count()).select_from(queues).where(
            *_name_filter(project, name)
        )
        return self._db.read(lambda conn: conn.execute(query).scalar_one())

    def stats(self, project: str, queue: str) -> QueueStats:
        now = self._clock.now()
        m = messages.c
        where = (predicates.in_queue(project, queue), predicates.alive(now))
        totals = sa.select(
            sa.func.count().label("total"),
            sa.func.coalesce(
                sa.func.sum(sa.case((predicates.held(now), 1), else_=0)), 0
            ).label("claimed"),
            sa.func.coalesce(
                sa.func.sum(sa.case((predicates.delayed(now), 1), else_=0)), 0
            ).label("delayed"),
            sa.func.min(m.marker).label("first"),
            sa.func.max(m.marker).label("last"),
        ).where(*where)

        def work(conn: sa.Connection) -> QueueStats:
            row = conn.execute(totals).one()
            if not row.total:
                return QueueStats(free=0, claimed=0)
            ends = conn.execute(
                sa.select(m.marker, m.id, m.created).where(m.marker.in_([row.first, row.last]))
            ).all()
            stamps = {end.marker: MessageStamp(id=end.id, created=end.created) for end in ends}
            claimed = int(row.claimed)
            return QueueStats(
                free=row.total - claimed,
                claimed=claimed,
                delayed=int(row.delayed),
                # .get: a concurrent delete between the two reads leaves a gap.
                oldest=stamps.get(row.first),
                newest=stamps.get(row.last),
            )

        return self._db.read(work)

    def volume(self) -> QueueStats:
        now = self._clock.now()
        totals = sa.select(
            sa.func.count().label("total"),
            sa.func.coalesce(
                sa.func.sum(sa.case((predicates.held(now), 1), else_=0)), 0
            ).label("claimed"),
        ).where(predicates.alive(now))
        row = self._db.read(lambda conn: conn.execute(totals).one())
        claimed = int(row.claimed)
        return QueueStats(free=row.total - claimed, claimed=claimed)
