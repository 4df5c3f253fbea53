"""The MongoDB Storage (controllers plus ping, gc (zq.storage.mongo.gc), close) and open_mongo."""

from __future__ import annotations

from zq.clock import Clock, SystemClock
from zq.storage.base import Storage
from zq.storage.mongo import gc
from zq.storage.mongo.breakers import MongoBreakers
from zq.storage.mongo.claims import MongoClaims
from zq.storage.mongo.connection import Connection, connect
from zq.storage.mongo.consumers import MongoConsumers
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.cursors import MongoNotificationCursors
from zq.storage.mongo.events import MongoEventLog
from zq.storage.mongo.indexes import ensure_indexes
from zq.storage.mongo.messages import MongoMessages
from zq.storage.mongo.queues import MongoQueues
from zq.storage.mongo.subscriptions import MongoSubscriptions
from zq.storage.mongo.unit import UnitRunner
from zq.storage.mongo.wakeups import MongoWakeups
from zq.storage.records import Collected


class MongoStorage(Storage):
    has_breaker = True

    def __init__(self, connection: Connection, *, clock: Clock) -> None:
        self._connection = connection
        ensure_indexes(connection.database)
        units = UnitRunner(
            connection.client, connection.database, transactions=connection.transactions
        )
        self._ctx = MongoContext(connection.database, clock, units)
        self.queues = MongoQueues(self._ctx)
        self.messages = MongoMessages(self._ctx)
        self.claims = MongoClaims(self._ctx)
        self.consumers = MongoConsumers(connection.database)
        self.events = MongoEventLog(connection.database, transactions=connection.transactions)
        self.notification_cursors = MongoNotificationCursors(connection.database, clock)
        self.subscriptions = MongoSubscriptions(self._ctx)
        self.breakers = MongoBreakers(self._ctx)
        self.wakeups = MongoWakeups(self._ctx)

    @property
    def transactions(self) -> bool:
        """Whether events are written in the same transaction as their change."""
        return self._connection.transactions

    def ping(self) -> bool:
        try:
            self._connection.database.command("ping")
        except Exception:
            return False
        return True

    def gc(self) -> Collected:
        return gc.collect(self._ctx) + Collected(subscriptions=self.subscriptions.collect())

    def close(self) -> None:
        if not self._connection.shared:
            self._connection.client.close()


def open_mongo(uri: str, *, clock: Clock | None = None) -> MongoStorage:
    """Connect to ``mongodb://``, ``mongodb+srv://`` or ``mongomock://NAME``; create indexes."""
    return MongoStorage(connect(uri), clock=clock or SystemClock())
