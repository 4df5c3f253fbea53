"""When a queue may next be claimed from, for waiting claims (zq.storage.wakeups)."""

from __future__ import annotations

from collections.abc import Callable, Collection

import sqlalchemy as sa

from zq.clock import Clock
from zq.poison.breaker import CLOSED
from zq.storage.sql import predicates, wake
from zq.storage.sql.database import Database
from zq.storage.sql.schema import breakers as b
from zq.storage.sql.schema import messages as m
from zq.storage.sql.wake import PostgresWakeListener
from zq.storage.wakeups import QueueKey, WakeCallback, WakeListener, Wakeups

# Queues per statement: a long IN list of (project, queue) pairs is split so
# that no dialect meets its bound on parameters.
KEYS_PER_STATEMENT = 400


def claimable_from() -> sa.ColumnElement[float]:
    """When a message may be claimed: the later of its delay and its claim's expiry.

    A message no claim holds has a NULL claim expiry: the comparison is then
    NULL and the delay is taken.
    """
    return sa.case((m.c.claim_expires > m.c.delay_until, m.c.claim_expires),
                   else_=m.c.delay_until)


class SqlWakeups(Wakeups):
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def earliest_claimable(self, keys: Collection[QueueKey]) -> dict[QueueKey, float]:
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        now = self._clock.now()
        moment = claimable_from()

        def read(conn: sa.Connection) -> dict[QueueKey, float]:
            found: dict[QueueKey, float] = {}
            for start in range(0, len(keys), KEYS_PER_STATEMENT):
                batch = keys[start:start + KEYS_PER_STATEMENT]
                rows = conn.execute(
                    sa.select(m.c.project, m.c.queue, sa.func.min(moment))
                    .where(sa.tuple_(m.c.project, m.c.queue).in_(batch),
                           predicates.alive(now), moment < m.c.expires)
                    .group_by(m.c.project, m.c.queue))
                found.update({(project, queue): when for project, queue, when in rows})
                # An open (or half-open) breaker delivers nothing before its
                # next probe: a waiter woken sooner would get nothing.
                held_back = conn.execute(
                    sa.select(b.c.project, b.c.queue, b.c.next_probe)
                    .where(sa.tuple_(b.c.project, b.c.queue).in_(batch),
                           b.c.state != CLOSED, b.c.next_probe.is_not(None)))
                for project, queue, next_probe in held_back:
                    if (project, queue) in found:
                        found[project, queue] = max(found[project, queue], next_probe)
            return found

        return self._db.read(read)

    def listen(
        self, wake_one: WakeCallback, wake_all: Callable[[], None] | None = None
    ) -> WakeListener | None:
        """PostgreSQL: LISTEN on a connection of its own; None on SQLite and MariaDB/MySQL."""
        if not wake.applies_to(self._db.dialect):
            return None
        return PostgresWakeListener(self._db.engine, wake_one, wake_all).start()
