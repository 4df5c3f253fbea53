"""The SQL Storage: controllers over one engine, and ``open_sql``."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import exc

from zq.clock import Clock
from zq.config import SqlConfig
from zq.errors import StorageUnavailable
from zq.storage.base import Storage
from zq.storage.records import Collected
from zq.storage.sql import dialects, gc, migrate, postgresql, subscriptions
from zq.storage.sql.breakers import SqlBreakers
from zq.storage.sql.claims import SqlClaims
from zq.storage.sql.consumers import SqlConsumers
from zq.storage.sql.cursors import SqlNotificationCursors
from zq.storage.sql.database import Database
from zq.storage.sql.events import SqlEventLog
from zq.storage.sql.messages import SqlMessages
from zq.storage.sql.queues import SqlQueues
from zq.storage.sql.wakeups import SqlWakeups
from zq.storage.uri import redact


class SqlStorage(Storage):
    """SQLite, PostgreSQL or MariaDB/MySQL through SQLAlchemy Core."""

    has_breaker = True  # zq.storage.sql.breakers

    def __init__(self, engine: sa.Engine, clock: Clock, *,
                 one_statement: bool | None = None, settings: SqlConfig | None = None) -> None:
        """``one_statement``: use zq.storage.sql.postgresql's writes (default: on PostgreSQL).

        ``settings``: the ``[sql]`` settings (group commit).
        """
        settings = settings or SqlConfig()
        self._db = Database(engine, group_commit=settings.group_commit,
                            group_window=settings.group_commit_window)
        self._clock = clock
        if one_statement is None:
            one_statement = postgresql.applies_to(self._db.dialect)
        self.queues = SqlQueues(self._db, clock)
        self.messages = SqlMessages(self._db, clock, one_statement=one_statement)
        self.claims = SqlClaims(self._db, clock, one_statement=one_statement)
        self.events = SqlEventLog(self._db)
        self.notification_cursors = SqlNotificationCursors(self._db, clock)
        self.subscriptions = subscriptions.SqlSubscriptions(self._db, clock)
        self.consumers = SqlConsumers(self._db)
        self.breakers = SqlBreakers(self._db, clock)
        self.wakeups = SqlWakeups(self._db, clock)

    @property
    def engine(self) -> sa.Engine:
        return self._db.engine

    def ping(self) -> bool:
        try:
            self._db.read(lambda conn: conn.execute(sa.text("SELECT 1")).scalar())
        except Exception:
            return False
        return True

    def gc(self) -> Collected:
        collected = gc.collect(self._db, self._clock)
        return collected + Collected(subscriptions=subscriptions.collect(self._db, self._clock))

    def close(self) -> None:
        self._db.close()


def open_sql(uri: str, *, clock: Clock, one_statement: bool | None = None,
             settings: SqlConfig | None = None) -> Storage:
    """Connect to a SQL backend and check (SQLite: bring up to date) its schema."""
    engine = dialects.create_engine(uri)
    try:
        if engine.dialect.name == "sqlite":
            migrate.ensure_current(engine, uri)
        else:
            migrate.require_current(engine, uri)
    except exc.DBAPIError as error:
        engine.dispose()
        raise StorageUnavailable(
            "Cannot use the storage backend.",
            detail=f"{engine.dialect.name} at {redact(uri)}: {error.orig}",
        ) from error
    except BaseException:
        engine.dispose()
        raise
    return SqlStorage(engine, clock, one_statement=one_statement, settings=settings)

