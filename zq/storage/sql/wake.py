"""PostgreSQL's wake-ups of waiting claims: NOTIFY in the change's transaction, LISTEN.

A transaction whose events may make a message claimable (the rule of
zq.storage.wake_events) sends ``NOTIFY zq_wake, '<wake_name>'`` for each
queue it wakes, inside itself: PostgreSQL delivers a notification when the
transaction commits and drops it when it rolls back, and delivers one of
several identical ones sent by a transaction, so a post of 10 messages is
one notification. The general path sends it from ``record`` (every
transaction writes its events there), the one-statement post and claim
(zq.storage.sql.postgresql) from within their WITH queries.

Each worker LISTENs on one connection of its own (``PostgresWakeListener``)
for all its waiters. SQLite and MariaDB/MySQL have no notification:
their waiters rely on the re-check of zq.storage.wakeups (docs/long-poll.md
gives the latency).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from zq.storage.sql.records import load_json
from zq.storage.wake_events import WAKING_KINDS, parse_wake_name, wake_name, woken_queues
from zq.storage.wake_listener import ThreadedListener
from zq.storage.wakeups import QueueKey, WakeCallback

# One channel per database: the payload names the queue (a channel name is
# at most 63 bytes, a project id alone may be 256).
CHANNEL = "zq_wake"
# A LISTEN connection quiet for this long runs a query: a server gone
# without a word (a cut network) is found, not waited on forever.
KEEPALIVE_SECONDS = 15.0


def applies_to(dialect: str) -> bool:
    """Whether a backend of ``dialect`` sends and hears wake-ups."""
    return dialect == "postgresql"


def notify_events(conn: sa.Connection, rows: Iterable[Mapping[str, Any]]) -> None:
    """NOTIFY, in ``conn``'s transaction, the queues these event rows wake (PostgreSQL)."""
    if not applies_to(conn.dialect.name):
        return
    decoded = [
        # Only a move's detail is read (its destination): the others wake by kind.
        {**row, "detail": None if row["kind"] in WAKING_KINDS else load_json(row["detail"])}
        for row in rows
    ]
    pairs = woken_queues(decoded)
    if pairs:
        conn.execute(sa.select(*[sa.func.pg_notify(CHANNEL, wake_name(project, queue))
                                 for project, queue in pairs]))


class PostgresWakeListener(ThreadedListener):
    """LISTEN zq_wake on one connection of the engine's own settings."""

    name = "PostgreSQL wake-ups"

    def __init__(self, engine: sa.Engine, wake: WakeCallback,
                 wake_all: Callable[[], None] | None) -> None:
        super().__init__(wake, wake_all)
        self._engine = engine

    def connect(self) -> Any:
        # A connection made as the pool makes them (host list, connect
        # timeout, TLS), then detached: it is this thread's alone.
        raw = self._engine.raw_connection()
        conn = raw.driver_connection
        raw.detach()
        try:
            conn.autocommit = True
            conn.execute(f"LISTEN {CHANNEL}")
        except BaseException:
            conn.close()
            raise
        return _Session(conn)

    def receive(self, session: Any, timeout: float) -> list[QueueKey]:
        conn = session.conn
        heard = list(conn.notifies(timeout=timeout, stop_after=1))
        if heard:
            heard += conn.notifies(timeout=0)
            session.quiet_since = time.monotonic()
        elif time.monotonic() - session.quiet_since > KEEPALIVE_SECONDS:
            conn.execute("SELECT 1")  # raises on a dead connection
            session.quiet_since = time.monotonic()
        return [key for key in (parse_wake_name(n.payload) for n in heard
                                if n.channel == CHANNEL) if key is not None]

    def disconnect(self, session: Any) -> None:
        # Already broken, say: then there is nothing to release.
        with contextlib.suppress(Exception):
            session.conn.close()


class _Session:
    def __init__(self, conn: Any) -> None:
        self.conn = conn  # a psycopg.Connection
        self.quiet_since = time.monotonic()

